"""Sphinx configuration for the mxpatch_bind documentation."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

from mxpatch_bind.version import __version__  # noqa: E402

project = "mxpatch_bind"
author = "mxpatch_bind developers"
release = version = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "sphinx.ext.intersphinx",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"
intersphinx_mapping = {}
html_theme = "alabaster"
html_static_path = ["_static"]
myst_heading_anchors = 3
# MXNet prints "Subgraph backend MKLDNN is activated" on stderr; the doctests need no GPU.
doctest_global_setup = "import mxnet as mx\nimport numpy as np\nimport mxpatch_bind"
