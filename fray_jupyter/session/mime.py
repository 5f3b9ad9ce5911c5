"""Objects as Jupyter mime bundles, the way IPython's display formatter makes them.

Rules (restating IPython's ``DisplayFormatter.format``):

* ``_repr_mimebundle_(include=None, exclude=None)`` comes first; it returns a bundle or a
  ``(bundle, metadata)`` pair. Every other ``_repr_*_`` method in :data:`REPR_METHODS` then fills
  in the types the bundle lacks; a method returning None offers nothing, one returning a
  ``(content, metadata)`` pair gives that type's metadata too.
* A matplotlib figure (``matplotlib.figure.Figure``) is ``image/png``, drawn by the Agg canvas.
* ``text/plain`` is always present: the object's ``pprint.pformat`` (dicts keep their order).
* Binary types (:data:`BINARY`) travel as base64 text, as on Jupyter's wire.
* A repr method that raises is skipped, and a note naming it goes to the cell's stderr; it never
  fails the cell.
"""

from __future__ import annotations

import base64
import pprint
from collections.abc import Callable
from typing import Any, Final

from fray_jupyter.session import figures
from fray_jupyter.session.outputs import Display

REPR_METHODS: Final[tuple[tuple[str, str], ...]] = (
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("application/pdf", "_repr_pdf_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"),
)
"""Mime type → the method IPython calls for it, in IPython's order."""
BINARY: Final = frozenset({"image/png", "image/jpeg", "application/pdf"})
"""Mime types whose content is bytes (sent base64-encoded)."""


def _encoded(mime: str, content: Any) -> Any:
    if mime in BINARY and isinstance(content, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(content)).decode("ascii")
    return content


def _method(obj: object, name: str) -> Callable[..., Any] | None:
    """The bound repr method, never one looked up on a class object itself (its unbound method)."""
    if isinstance(obj, type):
        return None
    method = getattr(obj, name, None)
    return method if callable(method) else None


def mime_bundle(obj: object, note: Callable[[str], None]) -> Display:
    """``obj`` as a mime bundle (see the module rules); ``note`` receives one line per repr method
    that raised."""
    data: dict[str, Any] = {}
    metadata: dict[str, Any] = {}

    def attempt(label: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - a user's repr method: report it, keep the others
            note(f"{type(obj).__name__}.{label} raised {type(exc).__name__}: {exc}")
            return None

    bundle_method = _method(obj, "_repr_mimebundle_")
    if bundle_method is not None:
        bundle = attempt("_repr_mimebundle_", lambda: bundle_method(include=None, exclude=None))
        if isinstance(bundle, tuple) and len(bundle) == 2:
            bundle, extra = bundle
            metadata.update(extra or {})
        if isinstance(bundle, dict):
            data.update({mime: _encoded(mime, content) for mime, content in bundle.items()})
    if figures.is_figure(obj):
        data.setdefault("image/png", _encoded("image/png", attempt("savefig", lambda: figures.png(obj))))
    for mime, name in REPR_METHODS:
        method = _method(obj, name)
        if mime in data or method is None:
            continue
        content = attempt(name, method)
        if isinstance(content, tuple) and len(content) == 2:
            content, metadata[mime] = content
        if content is not None:
            data[mime] = _encoded(mime, content)
    data = {mime: content for mime, content in data.items() if content is not None}
    if "text/plain" not in data:
        text = attempt("__repr__", lambda: pprint.pformat(obj, sort_dicts=False))
        data["text/plain"] = text if text is not None else f"<{type(obj).__name__} object>"
    return Display(data, metadata)
