"""Objects as mime bundles, as IPython's formatter makes them (checked in-process: no host needed)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from fray_jupyter.session.mime import mime_bundle


def bundle(obj: object) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    notes: list[str] = []
    shown = mime_bundle(obj, notes.append)
    return dict(shown.data), dict(shown.metadata), notes


def test_text_plain_is_always_there_and_keeps_dict_order() -> None:
    data, metadata, notes = bundle({"b": 1, "a": 2})
    assert data == {"text/plain": "{'b': 1, 'a': 2}"} and metadata == {} and notes == []


def test_the_mimebundle_comes_first_and_other_repr_methods_fill_in() -> None:
    class Both:
        def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
            return {"text/html": "<p>from bundle</p>", "text/plain": "plain"}

        def _repr_html_(self) -> str:
            return "<p>from method</p>"

        def _repr_latex_(self) -> tuple[str, dict[str, bool]]:
            return "$x$", {"inline": True}

    data, metadata, _ = bundle(Both())
    assert data == {"text/html": "<p>from bundle</p>", "text/plain": "plain", "text/latex": "$x$"}
    assert metadata == {"text/latex": {"inline": True}}


def test_binary_types_travel_as_base64_and_none_offers_nothing() -> None:
    class Picture:
        def _repr_png_(self) -> bytes:
            return b"\x89PNG raw"

        def _repr_html_(self) -> None:
            return None

    data, _, _ = bundle(Picture())
    assert base64.b64decode(data["image/png"]) == b"\x89PNG raw" and "text/html" not in data


def test_a_class_is_shown_as_itself_not_through_its_unbound_methods() -> None:
    class Shown:
        def _repr_html_(self) -> str:
            return "<b>instance</b>"

    data, _, notes = bundle(Shown)
    assert list(data) == ["text/plain"] and "Shown" in data["text/plain"] and notes == []


def test_a_repr_method_that_raises_is_noted_and_skipped() -> None:
    class Flaky:
        def _repr_html_(self) -> str:
            raise RuntimeError("broken html")

        def __repr__(self) -> str:
            return "Flaky()"

    data, _, notes = bundle(Flaky())
    assert data == {"text/plain": "Flaky()"}
    assert notes == ["Flaky._repr_html_ raised RuntimeError: broken html"]


def test_a_matplotlib_figure_is_a_png() -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    figure = Figure()
    figure.add_subplot().plot([1, 2])
    data, _, _ = bundle(figure)
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG") and data["text/plain"].startswith("<Figure")
