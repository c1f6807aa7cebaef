"""The per-device module core (private): what ``install()`` puts behind ``Module``.

It mirrors ``mxnet/module/``: the wrappers and per-device classes (``binding``,
``sequential``), the executor group (``executor_group``), the shape specs and batches they
check (``shapes``, ``batches``), all-or-nothing state changes (``transactions``), the job-wide
sample count (``distributed``), oneDNN's cache bound (``memory``) and the reshape threads
(``parallel``). Public names are re-exported by ``mxpatch_bind``; docs/design.rst walks it.
"""
