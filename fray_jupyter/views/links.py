"""Web links in text a job wrote: what is one (in status text, ``views.statustext``, and log lines,
``views.ansi``) and the one form of the anchor it becomes.

Rules: a link is ``http://`` or ``https://`` only (any other scheme, ``javascript:``, ``data:``,
stays text). A bare URL runs up to a blank (``SPACES``: every character Python's and JavaScript's
``\\s`` match, spelled out so the sidebar's ``terminal.ts`` matches the same ones), a quote, an angle
bracket or a bracket, and punctuation that ends a sentence (``TRAILING``) is not part of it.
"""

from __future__ import annotations

import re
from html import escape
from typing import Final

SPACES: Final[str] = r"\t-\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
"""The blanks that end a URL, as a character-class body (the sidebar's ``terminal.ts`` ``SPACES``)."""
BARE_URL: Final[str] = rf"https?://[^{SPACES}<>\"'()\[\]]+"
"""A bare web address, before its trailing ``TRAILING`` is cut: one rule for status text and log
lines (``views.ansi``) alike."""
LINK: Final[re.Pattern[str]] = re.compile(
    rf"\[(?P<label>[^\]\n]{{1,500}})\]\((?P<target>https?://[^{SPACES}()<>]+)\)|(?P<bare>{BARE_URL})")
"""A markdown link to a web address, or a bare one (status text)."""
BOLD: Final[re.Pattern[str]] = re.compile(r"\*\*([^*\n]+)\*\*")
TRAILING: Final[str] = ".,;:!?"


def anchor(url: str, inner_html: str, attrs: str = "") -> str:
    """``<a>`` to ``url`` (http or https only, the caller checked) around ``inner_html`` (inert
    already), opening in a new tab with no opener and no referrer; ``attrs`` (escaped already, each
    after a blank) are added: the one form of a link in status text and log lines (``views.ansi``)."""
    return f'<a href="{escape(url, quote=True)}" target="_blank" rel="noopener noreferrer"{attrs}>{inner_html}</a>'
