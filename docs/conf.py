"""Sphinx configuration for the mxpatch_bind documentation."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

import mxpatch_bind  # noqa: E402
from mxpatch_bind._mxnet_env import MXNetEnvironmentError, import_mxnet  # noqa: E402
from mxpatch_bind.version import __version__  # noqa: E402

# The API page documents bind, reshape, PerDeviceIter and compat, whose modules import MXNet:
# without it autodoc would drop them and build a page that looks whole. Stop instead, in one
# line saying what to install (the docs extra leaves MXNet out so as not to replace a GPU
# build). Not a ConfigError: Sphinx 9 prints that as a crash report asking for a bug report.
try:
    import_mxnet()
except MXNetEnvironmentError as error:
    sys.stderr.write("docs/conf.py: error: the API reference needs MXNet, which autodoc "
                     "imports: %s. Install the docs with it: pip install -e \".[cpu,docs]\" "
                     "(beside an mxnet-cuXXX build: pip install -e \".[docs]\")\n" % error)
    sys.stderr.flush()
    os._exit(2)  # before Sphinx has written anything; SystemExit would become its crash report

project = "mxpatch_bind"
author = "the mxpatch_bind authors"
copyright = "2026, the mxpatch_bind authors"
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
# Defaults as the source writes them (logger=logging, not the module's path on this machine).
autodoc_preserve_defaults = True
intersphinx_mapping = {}
html_theme = "alabaster"
html_title = "mxpatch_bind %s" % release
html_static_path = ["_static"]
html_css_files = ["wide.css"]
# The sidebar shows the version under the name. No repository links: the project is not
# published yet (install.rst). A wider page: the benchmark chart is 1716 px wide and the
# default 940 px page squeezed it to 660 px; wide.css lets images fill the body.
html_theme_options = {
    "description": "version %s" % release,
    "page_width": "1260px",
    "body_max_width": "none",
    "show_relbars": True,
}
myst_heading_anchors = 3
# MXNet prints "Subgraph backend MKLDNN is activated" on stderr; the doctests need no GPU.
doctest_global_setup = "import mxnet as mx\nimport numpy as np\nimport mxpatch_bind"

# Names that are public without an entry of their own on the API page.
UNDOCUMENTED_PUBLIC = {"__version__"}


def _warn_about_undocumented_public_names(app, env):
    """Warn (an error under -W) for each name in ``mxpatch_bind.__all__`` the API page lacks."""
    from sphinx.util import logging

    documented = set(env.get_domain("py").objects)
    missing = [name for name in mxpatch_bind.__all__
               if name not in UNDOCUMENTED_PUBLIC and "mxpatch_bind." + name not in documented]
    for name in missing:
        logging.getLogger(__name__).warning(
            "mxpatch_bind.%s is in __all__ but not documented: add it to docs/api.rst", name)


def setup(app):
    app.connect("env-check-consistency", _warn_about_undocumented_public_names)
