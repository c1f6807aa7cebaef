"""``python -m mxpatch_bind migrate PATH``: what a Deformable-ConvNets-based codebase needs.

Reads every Python file under ``PATH`` (Python 3 with :mod:`ast`, Python 2 through fissix;
nothing is imported or run) and reports, ``file:line``, every vendored copy of the fork's
``module.py`` / ``DataParallelExecutorGroup.py`` (recognised by content, its revision by the
signatures of its methods, its freezing rule read from its code), every import and
construction of their classes, method calls with keywords stock MXNet does not take, the
arguments that need care, ``_preload_opt_states``, ``optimizer_params`` without
``rescale_grad``, ``mx.io.PrefetchingIter`` around a per-device loader, and Python 2 code.

``--write`` rewrites the imports to :mod:`mxpatch_bind.compat` (and writes the copy's
freezing rule into each construction whose copy differs from compat's default);
``--delete-vendored`` deletes the copies nothing else still imports; ``--to-python3`` ports
Python 2 files with the standard 2to3 fixers; ``--diff`` prints what they would change as a
patch (``git apply`` or ``patch -p1`` of it makes the same writes; the report then goes to
stderr) and writes nothing. The whole report is printed before the first write; writes are
atomic and keep every byte but the statements changed. The exit status is 0 when nothing is
left to do, 1 when something is (a pending change, or a finding a person has to look at), 2
on a usage or I/O error. This module does not import MXNet.
"""

from .command import (
    COMPAT_MODULE,
    VENDORED_GROUP,
    VENDORED_MODULE,
    Finding,
    add_arguments,
    apply,
    build_extensions,
    check_imports,
    main,
    run,
    scan,
    summary,
    vendored_kind,
)

__all__ = ["Finding", "scan", "apply", "check_imports", "build_extensions", "summary",
           "vendored_kind",
           "add_arguments", "run", "main", "VENDORED_MODULE", "VENDORED_GROUP", "COMPAT_MODULE"]

# Documented as mxpatch_bind.migrate.X, where users import them from.
for _public in (Finding, add_arguments, apply, build_extensions, check_imports, main, run,
                scan, summary, vendored_kind):
    _public.__module__ = __name__
del _public
