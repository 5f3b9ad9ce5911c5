"""The matplotlib backend session hosts select (``figures.BACKEND``): Agg's canvas, and a ``show()``
that shows every open figure in the running cell (see ``fray_jupyter.session.figures``)."""

from __future__ import annotations

import importlib
from typing import Any

from fray_jupyter.session import figures

FigureCanvas: Any = importlib.import_module("matplotlib.backends.backend_agg").FigureCanvasAgg


def show(*args: Any, **kwargs: Any) -> None:
    """``plt.show()``: every open figure goes to the running cell as PNG and is closed (``block`` and
    other arguments mean nothing without a window)."""
    figures.show_open()
