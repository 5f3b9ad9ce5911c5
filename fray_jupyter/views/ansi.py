"""One captured log line as a terminal would show it, as styled spans and inert HTML: the status
panel's renderer. The sidebar's (``labextension/src/ansi.ts``) follows the same rules, and both
run the same test vectors (``tests/data/ansi_vectors.json``).

Rules:

* The line is played on a one-line terminal (``views.terminal``: cursor moves, erases, SGR
  colours, OSC 8 links; every other escape and control character dropped), so a carriage-return
  redraw leaves only the latest state of the line. A palette colour is a class (``fg-9``), any
  other colour an inline style; inverse swaps the two (a default one becomes ``fg-reverse`` /
  ``bg-reverse``).
* Links: ``http(s)://`` URLs in the text (``views.links.BARE_URL``: up to a blank, a quote, an
  angle bracket or a bracket, without trailing ``.,;:!?``, as in status text), and OSC 8 hyperlinks
  whose target is such a URL; any other target is dropped, its text kept.
* The line keeps at most ``MAX_LINE_CHARS`` columns; when more were written, a ``more`` span says
  it was cut (the full log has it whole). Trailing unstyled blanks are dropped.
* HTML: every character is escaped; classes are ``fray-ansi-<name>``; a link is
  ``<a href target="_blank" rel="noopener noreferrer">`` (``views.links.anchor``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from html import escape
from typing import Final

from fray_jupyter.views.links import TRAILING, anchor
from fray_jupyter.views.terminal import BLANK, MAX_LINE_CHARS, URL, Cell, Style, Terminal

CUT_NOTE: Final[str] = f" … (cut at {MAX_LINE_CHARS} characters)"
CLASS_PREFIX: Final[str] = "fray-ansi-"
PALETTE: Final[tuple[str, ...]] = (
    "#3e424d", "#e75c58", "#00a250", "#ddb62b", "#208ffb", "#d160c4", "#60c6c8", "#c5c1b4",
    "#282c36", "#b22b31", "#007427", "#b27d12", "#0065ca", "#a03196", "#258f8f", "#a1a6b2",
)
"""The 16 palette colours (black, red, green, yellow, blue, magenta, cyan, white, then their bright
forms) as JupyterLab's own output area shows them (``@jupyterlab/rendermime`` ``base.css``); the
sidebar uses JupyterLab's ``.ansi-*`` classes themselves (``labextension/src/jlansi.ts``;
``tests/test_labextension.py`` checks they are these colours)."""


@dataclass(frozen=True)
class Span:
    """A run of characters in one style: text, class names (without prefix), inline CSS, link."""

    text: str
    classes: tuple[str, ...] = ()
    style: str = ""
    href: str = ""


def _classes_and_css(style: Style) -> tuple[tuple[str, ...], str]:
    fg, bg = (style.bg, style.fg) if style.inverse else (style.fg, style.bg)
    classes: list[str] = []
    css: list[str] = []
    for colour, part, reverse, prop in ((fg, "fg", "fg-reverse", "color"), (bg, "bg", "bg-reverse", "background-color")):
        if isinstance(colour, int):
            classes.append(f"{part}-{colour}")
        elif isinstance(colour, str):
            css.append(f"{prop}:{colour}")
        elif style.inverse:
            classes.append(reverse)
    classes += [name for name in ("bold", "dim", "italic", "underline", "strike") if getattr(style, name)]
    return tuple(classes), ";".join(css)


def cells_spans(cells: Sequence[Cell], *, cut: bool = False) -> list[Span]:
    """The spans of one terminal line's cells: trailing unstyled blanks dropped, bare URLs linked,
    a ``more`` span when characters were cut (see the module rules)."""
    cells = list(cells)
    while cells and cells[-1] == BLANK:
        cells.pop()
    plain = "".join(char for char, _ in cells)
    for found in URL.finditer(plain):
        url = found.group().rstrip(TRAILING)
        for index in range(found.start(), found.start() + len(url)):
            char, style = cells[index]
            if not style.link:
                cells[index] = (char, replace(style, link=url))
    spans: list[Span] = []
    start = 0
    for index in range(1, len(cells) + 1):
        if index == len(cells) or cells[index][1] != cells[start][1]:
            style = cells[start][1]
            classes, css = _classes_and_css(style)
            spans.append(Span(plain[start:index], classes, css, style.link))
            start = index
    if cut:
        spans.append(Span(CUT_NOTE, ("more",)))
    return spans


def line_spans(text: str) -> list[Span]:
    """The spans a terminal shows for one log line, played on a one-line terminal (see the module
    rules)."""
    terminal = Terminal(height=1)
    terminal.play(text)
    line = terminal.line(terminal.row)
    return cells_spans(line.cells, cut=line.cut)


def spans_html(spans: list[Span]) -> str:
    """Spans as inert HTML (see the module rules)."""
    parts = []
    for span in spans:
        attrs = ""
        if span.classes:
            attrs += ' class="' + " ".join(CLASS_PREFIX + name for name in span.classes) + '"'
        if span.style:
            attrs += f' style="{escape(span.style)}"'
        text = escape(span.text)
        if span.href:
            parts.append(anchor(span.href, text, attrs))
        elif attrs:
            parts.append(f"<span{attrs}>{text}</span>")
        else:
            parts.append(text)
    return "".join(parts)


def palette_css(prefix: str = CLASS_PREFIX) -> str:
    """CSS rules for the classes ``line_spans`` names (palette colours, reverse, bold, ...)."""
    rules = [f".{prefix}fg-{index}{{color:{colour}}}.{prefix}bg-{index}{{background-color:{colour}}}"
             for index, colour in enumerate(PALETTE)]
    rules += [
        f".{prefix}fg-reverse{{color:var(--jp-layout-color0,#fff)}}",
        f".{prefix}bg-reverse{{background-color:var(--jp-content-font-color1,#000)}}",
        f".{prefix}bold{{font-weight:bold}}.{prefix}dim{{opacity:.7}}.{prefix}italic{{font-style:italic}}",
        f".{prefix}underline{{text-decoration:underline}}.{prefix}strike{{text-decoration:line-through}}",
        f".{prefix}underline.{prefix}strike{{text-decoration:underline line-through}}",
        f".{prefix}more{{opacity:.6;font-style:italic}}",
    ]
    return "\n".join(rules)


def line_html(text: str) -> str:
    """One log line as inert HTML: ``spans_html(line_spans(text))``."""
    return spans_html(line_spans(text))
