"""Matplotlib on a session host: figures drawn headless and shown, as PNG, in the cell that made them.

Rules (IPython's inline backend, on a host with no display):

* Before its first cell a host selects :data:`BACKEND` (``MPLBACKEND``, or ``matplotlib.use`` when
  matplotlib is already imported): its canvases are Agg's, and ``plt.show()`` hands every open
  pyplot figure to the running cell as an ``image/png`` display, then closes it.
* When a cell ends, the pyplot figures still open are shown the same way and closed, so a cell
  that draws without calling ``show()`` still shows its figures; a figure the cell already showed
  (``display(fig)``, or as its value) is closed without being shown twice.
* Nothing here imports matplotlib: a host whose cells never import it never loads it.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from typing import Any, Final

BACKEND: Final = "module://fray_jupyter.session.mpl_backend"
_sink: Callable[[Any], None] | None = None


def is_figure(obj: object) -> bool:
    """``obj`` is a ``matplotlib.figure.Figure`` (tested by class, without importing matplotlib)."""
    return any(kind.__module__ == "matplotlib.figure" and kind.__name__ == "Figure" for kind in type(obj).__mro__)


def png(figure: Any) -> bytes:
    """The figure drawn as PNG, cropped to what it shows (``bbox_inches="tight"``, as inline does)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def use_backend() -> None:
    """Make :data:`BACKEND` matplotlib's backend in this process (see the module rules)."""
    os.environ["MPLBACKEND"] = BACKEND
    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is not None:
        matplotlib.use(BACKEND)


def set_sink(sink: Callable[[Any], None] | None) -> None:
    """Route shown figures to ``sink`` (the running cell's display), or nowhere (None: no cell)."""
    global _sink  # one matplotlib per process, one running cell per host
    _sink = sink


def show_open() -> None:
    """Hand every open pyplot figure to the sink, closing each; with no sink (no cell running)
    figures stay open."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    sink = _sink
    if pyplot is None or sink is None:
        return
    for number in pyplot.get_fignums():
        figure = pyplot.figure(number)
        sink(figure)
        pyplot.close(figure)
