"""A task's status text (markdown) → spans and inert HTML: the shared vectors
(``tests/data/status_text_vectors.json``, which the sidebar's ``statustext.ts`` runs too,
``tests/test_labextension.py``) and the HTML the panel shows."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from fray_jupyter.views.statustext import status_html, status_spans

VECTORS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "status_text_vectors.json").read_text())["status_text"]


@pytest.mark.parametrize("case", VECTORS, ids=[case["name"] for case in VECTORS])
def test_shared_status_text_vectors(case: dict[str, Any]) -> None:
    assert [asdict(span) | {"classes": list(span.classes)} for span in status_spans(case["text"])] == case["spans"]


def link(href: str, inner: str) -> str:
    """The anchor a web link becomes: escaped, in a new tab, no opener."""
    return f'<a href="{href}" target="_blank" rel="noopener noreferrer">{inner}</a>'


@pytest.mark.parametrize(("text", "html"), [
    ("see https://wandb.ai/a/b.", f"see {link('https://wandb.ai/a/b', 'https://wandb.ai/a/b')}."),
    ("[W&B](https://wandb.ai/r) **loss**",
     f'{link("https://wandb.ai/r", "W&amp;B")} <span class="fray-ansi-bold">loss</span>'),
    ("[run](javascript:alert(1))", "[run](javascript:alert(1))"),
    ("[**bold** run](http://x.io/?a=1&b=2)",
     '<a href="http://x.io/?a=1&amp;b=2" target="_blank" rel="noopener noreferrer" class="fray-ansi-bold">bold</a>'
     + link("http://x.io/?a=1&amp;b=2", " run")),
    ('https://x.io/"onmouseover="alert(1)', link("https://x.io/", "https://x.io/") + "&quot;onmouseover=&quot;alert(1)"),
    ("data:text/html,<b>x</b>", "data:text/html,&lt;b&gt;x&lt;/b&gt;"),
])
def test_only_web_links_come_alive_and_nothing_else_is_markup(text: str, html: str) -> None:
    assert status_html(text) == html
