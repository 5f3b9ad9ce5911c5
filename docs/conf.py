"""Sphinx configuration of the fray-jupyter docs (``scripts/docs`` builds them).

Rules: the build is offline (no intersphinx, no remote theme, font or script: furo ships its assets,
and the ipywidgets embed scripts myst-nb would take from a CDN are left out), warnings are errors
(``scripts/docs`` passes ``-W``), and the reference pages are generated from the code by
``_ext/fray_docs.py``. The example notebooks are executed at build time, on a private embedded
controller that the build stops when it ends.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path[:0] = [str(DOCS / "_ext"), str(REPO)]

project = "fray-jupyter"
author = "the fray-jupyter authors"
copyright = "the fray-jupyter authors"

extensions = ["myst_nb", "sphinx.ext.autodoc", "fray_docs"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]

smartquotes = False  # flags stay "--flag", never an en dash; quotes stay straight
html_theme = "furo"
html_title = "fray-jupyter"
html_static_path: list[str] = []
html_show_sourcelink = False

# MyST: ``{ref}``-able heading anchors (``page.md#anchor`` links are checked), GitHub-style tables.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

# Examples: executed at build time; a failing cell fails the build.
nb_execution_mode = "force"
nb_execution_timeout = 180
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_ipywidgets_js: dict[str, dict[str, str]] = {}  # no CDN scripts; widget views are shown as their text
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": False}
