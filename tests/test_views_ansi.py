"""A log line as a terminal shows it (``views.ansi``): the shared vectors in
``tests/data/ansi_vectors.json`` (the sidebar's ``ansi.ts`` runs the same ones), the line cap, and
HTML that stays inert whatever the task wrote."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from fray_jupyter.views import ansi
from fray_jupyter.views.ansi import Span, line_html, line_spans

VECTORS: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "ansi_vectors.json").read_text())
HOSTILE = ("<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "\"'><svg onload=alert(1)>",
           "javascript:alert(1)", "https://x.io/\"onmouseover=alert(1)", "&lt;b&gt;")


def as_vector(span: Span) -> dict[str, Any]:
    fields: dict[str, Any] = {"text": span.text, "classes": list(span.classes), "style": span.style,
                              "href": span.href}
    return {key: value for key, value in fields.items() if value}


@pytest.mark.parametrize("case", VECTORS["render"], ids=[case["name"] for case in VECTORS["render"]])
def test_shared_render_vectors(case: dict[str, Any]) -> None:
    assert [as_vector(span) for span in line_spans(case["input"])] == case["spans"]


def test_the_line_cap_is_the_shared_one_and_says_the_line_was_cut() -> None:
    assert ansi.MAX_LINE_CHARS == VECTORS["max_line_chars"]
    spans = line_spans("x" * (ansi.MAX_LINE_CHARS + 10) + "\rab")
    assert spans == [Span("ab" + "x" * (ansi.MAX_LINE_CHARS - 2)), Span(ansi.CUT_NOTE, ("more",))]
    assert line_spans("\x1b[999999999Gfar") == [Span(ansi.CUT_NOTE, ("more",))]  # nothing within the cap


def test_html_has_prefixed_classes_inline_colours_and_safe_links() -> None:
    html = line_html("\x1b[1;31mred\x1b[0m \x1b[38;5;208mo\x1b[0m https://wandb.ai/r")
    assert html == ('<span class="fray-ansi-fg-1 fray-ansi-bold">red</span> <span style="color:#ff8700">o</span> '
                    '<a href="https://wandb.ai/r" target="_blank" rel="noopener noreferrer">https://wandb.ai/r</a>')


class Markup(HTMLParser):
    """The tags, attributes and text of an HTML fragment."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text += data


@pytest.mark.parametrize("payload", HOSTILE)
@pytest.mark.parametrize("wrap", ["{}", "\x1b[31m{}\x1b[0m", "\x1b]8;;{}\x07link\x1b]8;;\x07", "x\r{}",
                                  "\x1b[38;2;1;2;3m{}", "https://a.io/{}", "\x1b]8;;https://a.io/{}\x1b\\t\x1b]8;;\x1b\\"])
def test_nothing_a_task_writes_becomes_markup(payload: str, wrap: str) -> None:
    """The XSS payloads, bare and inside colours, OSC 8 targets, redraws and URLs: the only tags
    are the spans and links this module writes, with its attributes only, links go to http(s)
    URLs, and the text read back is exactly the text shown."""
    line = wrap.format(payload)
    markup = Markup()
    markup.feed(line_html(line))
    assert {tag for tag, _ in markup.tags} <= {"span", "a"}
    for tag, attrs in markup.tags:
        assert {name for name, _ in attrs} <= ({"class", "style"} | ({"href", "target", "rel"} if tag == "a" else set()))
        href = dict(attrs).get("href")
        assert href is None or (href.startswith(("http://", "https://")) and not set(href) & set("<>\"' "))
    assert markup.text == "".join(span.text for span in line_spans(line))
    if not wrap.startswith("\x1b]8"):  # an OSC 8 target is never shown; everything else is, as text
        assert payload in markup.text
