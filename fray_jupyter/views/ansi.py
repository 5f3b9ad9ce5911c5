"""One captured log line as a terminal would show it, as styled spans and inert HTML: the status
panel's renderer. The sidebar's (``labextension/src/ansi.ts``) follows the same rules, and both
run the same test vectors (``tests/data/ansi_vectors.json``).

Rules:

* The line is played on a one-line terminal, by code point: text is written at the cursor,
  overwriting what is there; ``\\r`` moves the cursor to column 0 and ``\\b`` one column left, so a
  carriage-return redraw leaves only the latest state of the line. CSI ``K`` erases to the end
  of the line (0), from its start through the cursor (1) or all of it (2); CSI ``G`` moves to a
  column, ``C`` / ``D`` right / left. Tabs are kept as text. Every other escape (cursor moves
  off the line, OSC titles, DCS, charset selection, ...) and every other control character is
  dropped: never shown raw, an unfinished one at the end too.
* SGR (CSI ``m``, ``;`` or ``:`` separated): 0 resets; 1 bold, 2 dim, 3 italic, 4 underline (21
  too), 7 inverse, 9 strike and their resets 22-29; colours 30-37 / 90-97 (fg), 40-47 / 100-107
  (bg), 39 / 49 default, 38 / 48 with ``5;n`` (256 colours: 0-15 stay palette colours, the rest
  become ``#rrggbb``) or ``2;r;g;b`` (truecolour). A palette colour is a class (``fg-9``), any
  other colour an inline style; inverse swaps the two (a default one becomes ``fg-reverse`` /
  ``bg-reverse``). Anything else is ignored.
* Links: ``http(s)://`` URLs in the text (``views.links.BARE_URL``: up to a blank, a quote, an
  angle bracket or a bracket, without trailing ``.,;:!?``, as in status text), and OSC 8 hyperlinks
  whose target is such a URL; any other target is dropped, its text kept.
* The line keeps at most ``MAX_LINE_CHARS`` columns; when more were written, a ``more`` span says
  it was cut (the full log has it whole). Trailing unstyled blanks are dropped.
* HTML: every character is escaped; classes are ``fray-ansi-<name>``; a link is
  ``<a href target="_blank" rel="noopener noreferrer">`` (``views.links.anchor``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from html import escape
from typing import Any, Final

from fray_jupyter.views.links import BARE_URL, TRAILING, anchor

MAX_LINE_CHARS: Final[int] = 4000
CUT_NOTE: Final[str] = f" … (cut at {MAX_LINE_CHARS} characters)"
URL: Final[re.Pattern[str]] = re.compile(BARE_URL)
CUBE: Final[tuple[int, ...]] = (0, 95, 135, 175, 215, 255)
"""The 6 levels of each channel in the 256-colour cube (indices 16-231)."""
CLASS_PREFIX: Final[str] = "fray-ansi-"
PALETTE: Final[tuple[str, ...]] = (
    "#3e424d", "#e75c58", "#00a250", "#ddb62b", "#208ffb", "#d160c4", "#60c6c8", "#c5c1b4",
    "#282c36", "#b22b31", "#007427", "#b27d12", "#0065ca", "#a03196", "#258f8f", "#a1a6b2",
)
"""The 16 palette colours (black, red, green, yellow, blue, magenta, cyan, white, then their bright
forms) as JupyterLab's own output area shows them (``@jupyterlab/rendermime`` ``base.css``); the
sidebar's ``style/base.css`` holds the same (``tests/test_labextension.py`` checks it)."""
Colour = int | str | None
"""A palette index 0-15, a ``#rrggbb`` string, or None for the default."""


@dataclass(frozen=True)
class Style:
    """What SGR and OSC 8 have set for the characters written next."""

    fg: Colour = None
    bg: Colour = None
    bold: bool = False
    dim: bool = False
    italic: bool = False
    underline: bool = False
    inverse: bool = False
    strike: bool = False
    link: str = ""


PLAIN: Final[Style] = Style()
_FLAGS: Final[dict[int, tuple[str, bool]]] = {
    1: ("bold", True), 2: ("dim", True), 3: ("italic", True), 4: ("underline", True), 7: ("inverse", True),
    9: ("strike", True), 21: ("underline", True), 23: ("italic", False), 24: ("underline", False),
    27: ("inverse", False), 29: ("strike", False),
}


@dataclass(frozen=True)
class Span:
    """A run of characters in one style: text, class names (without prefix), inline CSS, link."""

    text: str
    classes: tuple[str, ...] = ()
    style: str = ""
    href: str = ""


def _palette_or_hex(index: int) -> Colour:
    if index < 16:
        return index
    if index < 232:
        index -= 16
        return "#" + "".join(f"{CUBE[level]:02x}" for level in (index // 36, index // 6 % 6, index % 6))
    gray = 8 + 10 * (index - 232)
    return f"#{gray:02x}{gray:02x}{gray:02x}"


def _extended(params: list[list[int | None]], at: int) -> tuple[Colour | bool, int]:
    """The colour a 38/48 at ``params[at]`` names (False: none valid), and how many parameters it took."""
    head = params[at]
    if len(head) > 1:  # colon form: 38:5:n, 38:2:r:g:b or 38:2:<colour space>:r:g:b
        kind, rest, used = head[1], head[2:], 1
        if kind == 2 and len(rest) == 4:
            rest = rest[1:]
    else:
        kind = params[at + 1][0] if at + 1 < len(params) else None
        count = 1 if kind == 5 else 3 if kind == 2 else 0
        rest = [p[0] for p in params[at + 2:at + 2 + count]]
        used = 2 + len(rest)
    values = [value for value in rest if value is not None]
    if kind == 5 and len(values) == 1 and values[0] <= 255:
        return _palette_or_hex(values[0]), used
    if kind == 2 and len(values) == 3 and len(rest) == 3 and all(value <= 255 for value in values):
        return "#" + "".join(f"{value:02x}" for value in values), used
    return False, used


def _sgr(style: Style, text: str) -> Style:
    """``style`` after the SGR parameters ``text`` (the part between ``CSI`` and ``m``)."""
    params = [[int(part) if part.isdigit() else None for part in field.split(":")] for field in text.split(";")]
    at = 0
    while at < len(params):
        code, used = params[at][0], 1
        if code is None or code == 0:
            style = replace(PLAIN, link=style.link)
        elif code in _FLAGS:
            name, on = _FLAGS[code]
            if code == 4 and len(params[at]) > 1:
                on = params[at][1] != 0
            flag: dict[str, Any] = {name: on}
            style = replace(style, **flag)
        elif code == 22:
            style = replace(style, bold=False, dim=False)
        elif 30 <= code <= 37 or 90 <= code <= 97:
            style = replace(style, fg=code - 30 if code < 90 else code - 82)
        elif 40 <= code <= 47 or 100 <= code <= 107:
            style = replace(style, bg=code - 40 if code < 100 else code - 92)
        elif code == 39:
            style = replace(style, fg=None)
        elif code == 49:
            style = replace(style, bg=None)
        elif code in (38, 48):
            colour, used = _extended(params, at)
            if colour is not False:
                style = replace(style, fg=colour) if code == 38 else replace(style, bg=colour)
        at += used
    return style


def _link_target(text: str) -> str:
    """The target of an OSC 8 body ``8;<params>;<uri>`` when it is an http(s) URL, else ""."""
    uri = text.split(";", 2)[2] if text.count(";") >= 2 else ""
    found = URL.fullmatch(uri)
    return uri if found is not None else ""


class _Line:
    """A one-line terminal: cells of (character, style) and a cursor."""

    def __init__(self) -> None:
        self.cells: list[tuple[str, Style]] = []
        self.cursor = 0
        self.cut = False

    def write(self, char: str, style: Style) -> None:
        if self.cursor >= MAX_LINE_CHARS:
            self.cut = True
        else:
            if self.cursor > len(self.cells):
                self.cells.extend([(" ", PLAIN)] * (self.cursor - len(self.cells)))
            if self.cursor == len(self.cells):
                self.cells.append((char, style))
            else:
                self.cells[self.cursor] = (char, style)
        self.cursor += 1

    def erase(self, mode: int) -> None:
        if mode == 0:
            del self.cells[self.cursor:]
        elif mode == 1:
            blank = min(self.cursor + 1, len(self.cells))
            self.cells[:blank] = [(" ", PLAIN)] * blank
        elif mode == 2:
            self.cells.clear()

    def move(self, column: int) -> None:
        self.cursor = max(0, min(column, MAX_LINE_CHARS))


def _number(text: str, default: int) -> int:
    first = text.split(";", 1)[0]
    return int(first) if first.isdigit() and int(first) > 0 else default


def _play(text: str) -> _Line:
    """Run ``text`` on a one-line terminal (see the module rules)."""
    line, style, at, end = _Line(), PLAIN, 0, len(text)
    while at < end:
        char = text[at]
        at += 1
        if char == "\x1b":
            if at >= end:
                break
            kind = text[at]
            at += 1
            if kind == "[":
                start = at
                while at < end and "\x30" <= text[at] <= "\x3f":
                    at += 1
                params = text[start:at]
                while at < end and "\x20" <= text[at] <= "\x2f":
                    at += 1
                if at >= end:
                    break
                final = text[at]
                at += 1
                if params and params[0] in "<=>?":
                    continue
                if final == "m" and at - start == len(params) + 1:
                    style = _sgr(style, params)
                elif final == "K":
                    line.erase(int(params) if params in ("0", "1", "2") else 0)
                elif final == "G":
                    line.move(_number(params, 1) - 1)
                elif final == "C":
                    line.move(line.cursor + _number(params, 1))
                elif final == "D":
                    line.move(line.cursor - _number(params, 1))
            elif kind in "]PX^_":
                stop = _string_end(text, at)
                if kind == "]" and text[at:at + 2] == "8;":
                    style = replace(style, link=_link_target(text[at:stop[0]]))
                at = stop[1]
            elif "\x20" <= kind <= "\x2f":
                while at < end and "\x20" <= text[at] <= "\x2f":
                    at += 1
                at += 1
        elif char == "\r":
            line.move(0)
        elif char == "\b":
            line.move(line.cursor - 1)
        elif char == "\t" or not (char < "\x20" or "\x7f" <= char <= "\x9f"):
            line.write(char, style)
    return line


def _string_end(text: str, at: int) -> tuple[int, int]:
    """Where the control string starting at ``at`` ends: (end of its body, index after its
    terminator, BEL or ESC backslash); the end of the text when it is unfinished."""
    for index in range(at, len(text)):
        if text[index] == "\x07":
            return index, index + 1
        if text[index] == "\x1b" and text[index + 1:index + 2] == "\\":
            return index, index + 2
    return len(text), len(text)


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


def line_spans(text: str) -> list[Span]:
    """The spans a terminal shows for one log line (see the module rules)."""
    line = _play(text)
    cells = line.cells
    while cells and cells[-1] == (" ", PLAIN):
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
    if line.cut:
        spans.append(Span(CUT_NOTE, ("more",)))
    return spans


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
