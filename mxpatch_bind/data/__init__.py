"""The per-device data iterator (private): ``PerDeviceIter`` and what feeds it.

``io`` (the iterator), ``inputs`` (input declarations), ``planning`` (which samples go to
which device), ``loading`` and ``batch_loader`` (reading samples, in DataLoader workers too),
``prefetch`` (``PerDevicePrefetchingIter``) and ``limits``. Nothing here imports
``mxpatch_bind.module``: the iterator works with any module. Public names are re-exported by
``mxpatch_bind``; docs/data.rst describes it.
"""
