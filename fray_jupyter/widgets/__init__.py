"""Notebook surfaces built from stock ipywidgets: the ``ResourcePicker`` and the ``JobStatusPanel``."""

from fray_jupyter.widgets.picker import ResourcePicker
from fray_jupyter.widgets.status import JobStatusPanel

__all__ = ["JobStatusPanel", "ResourcePicker"]
