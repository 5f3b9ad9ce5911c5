"""Text a job wrote (a task's status text, which is markdown) → inert HTML in which its web links work.

Rules: everything is HTML-escaped first, so no markup the text carries ever reaches the page. Then
only these come alive: a markdown link ``[label](https://…)`` and a bare ``http://`` / ``https://``
URL become ``<a>`` opening in a new tab (``rel="noopener noreferrer"``), any other scheme
(``javascript:``, ``data:``) stays text; ``**bold**`` is bold. Punctuation that ends a sentence is
not part of a bare URL. Line breaks are kept by the caller's ``white-space: pre-wrap``.
"""

from __future__ import annotations

import re
from html import escape
from typing import Final

BARE_URL: Final[str] = r"https?://[^\s<>\"'()\[\]]+"
"""A bare web address, before its trailing ``TRAILING`` is cut: one rule for status text and log
lines (``views.ansi``) alike."""
LINK: Final[re.Pattern[str]] = re.compile(
    r"\[(?P<label>[^\]\n]{1,500})\]\((?P<target>https?://[^\s()<>]+)\)|(?P<bare>" + BARE_URL + ")")
BOLD: Final[re.Pattern[str]] = re.compile(r"\*\*([^*\n]+)\*\*")
TRAILING: Final[str] = ".,;:!?"


def anchor(url: str, inner_html: str, attrs: str = "") -> str:
    """``<a>`` to ``url`` (http or https only, the caller checked) around ``inner_html`` (inert
    already), opening in a new tab with no opener and no referrer; ``attrs`` (escaped already, each
    after a blank) are added: the one form of a link in status text and log lines (``views.ansi``)."""
    return f'<a href="{escape(url, quote=True)}" target="_blank" rel="noopener noreferrer"{attrs}>{inner_html}</a>'


def _bold(escaped: str) -> str:
    return BOLD.sub(r"<b>\1</b>", escaped)


def linked_html(text: str) -> str:
    """``text`` escaped, with its links and bold alive (see the module rules)."""
    out: list[str] = []
    last = 0
    for match in LINK.finditer(text):
        url = match["target"] or match["bare"]
        tail = ""
        if match["bare"]:
            stripped = url.rstrip(TRAILING)
            url, tail = stripped, url[len(stripped):]
        out.append(_bold(escape(text[last:match.start()])))
        out.append(anchor(url, _bold(escape(match["label"] or url))) + escape(tail))
        last = match.end()
    out.append(_bold(escape(text[last:])))
    return "".join(out)
