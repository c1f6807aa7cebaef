"""The pieces of ``benchmarks/migrate_family_run.py``: pipelines, data, tiny symbols, runs.

Not part of the test suite, not shipped: the family's raw trees run through ``migrate`` and
then through their own training, test and evaluation scripts. Each module has one job:

* ``pipelines``: what runs (repository, project, the repository's own config, the stages);
* ``edits``: the text edits applied after ``migrate`` (hand, set-up, fork, temporary);
* ``symbols``: a tiny backbone (and flow network) under each project's own head;
* ``data_still``, ``data_vid``: synthetic COCO, PASCAL VOC (detection, segmentation, SDS)
  and ImageNet VID folders in the layouts the family's dataset classes read;
* ``configs``: each pipeline's own config, shrunk to the tiny data;
* ``python_config``, ``deeplesion``, ``maskrcnn``: the set-up of mx-rcnn (a config that is a
  Python module), of 3DCE_new (its two YAML files, CT slices) and of mx-maskrcnn (a tiny
  backbone under its FPN heads, Cityscapes-like instance data);
* ``trees``, ``process``: copies of the raw trees, ``migrate``, the shim, one process;
* ``compare``: the MIGRATED tree against the FORK tree, bit for bit.
"""
