"""A task's status text (markdown: Levanter's step, loss, MFU, ETA, W&B link) → spans and inert
HTML in which its web links work. The sidebar's ``labextension/src/statustext.ts`` follows the same
rules; ``tests/data/status_text_vectors.json`` and a randomised comparison on every run
(``tests/test_labextension.py``) hold the two to one behaviour.

Rules:

* Only these come alive: a markdown link ``[label](https://…)`` and a bare ``http://`` /
  ``https://`` URL (``views.links.LINK``, found left to right) are links, ``**bold**`` is bold (in a
  link's label too); any other scheme (``javascript:``, ``data:``) and every other markup stays
  text as written. A bare URL loses its trailing ``views.links.TRAILING`` (kept as text after it).
* Spans are as ``views.ansi``'s (class ``bold``; ``href`` for a link); empty ones are left out and
  neighbours of one look are one span. Line breaks stay in the text (the caller shows them with
  ``white-space: pre-wrap``).
* HTML: ``views.ansi.spans_html``: every character escaped, links opening in a new tab.
"""

from __future__ import annotations

from fray_jupyter.views.ansi import Span, spans_html
from fray_jupyter.views.links import BOLD, LINK, TRAILING

BOLD_CLASSES = ("bold",)


def _marked(text: str, href: str, out: list[Span]) -> None:
    """``text`` with its ``**bold**`` runs, each span linking to ``href`` ('' for none)."""
    last = 0
    for match in BOLD.finditer(text):
        out.append(Span(text[last:match.start()], href=href))
        out.append(Span(match[1], BOLD_CLASSES, href=href))
        last = match.end()
    out.append(Span(text[last:], href=href))


def status_spans(text: str) -> list[Span]:
    """The spans of a status text (see the module rules)."""
    pieces: list[Span] = []
    last = 0
    for match in LINK.finditer(text):
        _marked(text[last:match.start()], "", pieces)
        if match["bare"]:
            url = match["bare"].rstrip(TRAILING)
            pieces += [Span(url, href=url), Span(match["bare"][len(url):])]
        else:
            _marked(match["label"], match["target"], pieces)
        last = match.end()
    _marked(text[last:], "", pieces)
    spans: list[Span] = []
    for piece in pieces:
        if not piece.text:
            continue
        if spans and (spans[-1].classes, spans[-1].href) == (piece.classes, piece.href):
            spans[-1] = Span(spans[-1].text + piece.text, piece.classes, piece.style, piece.href)
        else:
            spans.append(piece)
    return spans


def status_html(text: str) -> str:
    """A status text as inert HTML: ``spans_html(status_spans(text))``."""
    return spans_html(status_spans(text))
