"""A terminal with scrollback, as a log viewer needs one: text, SGR colours and OSC 8 links are written
into cells at a cursor that escape sequences move across lines. ``views.ansi`` shows one stored line on
a one-line terminal; ``views.logtail`` plays each task attempt's stream of stored rows on one of
``LIVE_LINES`` lines. The sidebar's ``labextension/src/terminal.ts`` follows the same rules (both run
``tests/data/ansi_vectors.json`` and a randomised comparison; ``tests/test_views_terminal.py`` proves
this one against the ``pyte`` terminal emulator).

Rules:

* The screen is the ``height`` lines from ``top``; every line above it is final (scrollback): the
  cursor can no longer reach it. A line feed on the screen's last line scrolls (``top`` moves down
  one). Lines are as wide as ``MAX_LINE_CHARS`` columns and never wrap; a character written past
  the last column is not kept, and the line says it was cut. One code point is one column.
* Characters are written at the cursor, overwriting what is there. ``\\r`` moves to column 0,
  ``\\b`` one column left,
  ``\\t`` to the next multiple of 8, ``\\v`` and ``\\f`` a line down (a line feed without a carriage
  return, as a terminal does); every other control character is dropped.
* CSI ``A`` / ``B`` move up / down (within the screen), ``C`` / ``D`` right / left, ``E`` / ``F``
  down / up to column 0, ``G`` to a column, ``H`` and ``f`` to a screen row and column, ``d`` to a
  screen row; ``K`` erases to the end of the line (0), from its start through the cursor (1) or all
  of it (2); ``J`` erases the same way from the cursor to the screen's end, from the screen's start,
  or the whole screen (2, 3); ``X`` erases characters at the cursor; ``s`` / ``u`` (and ``ESC 7`` /
  ``ESC 8``) save and restore the cursor's screen position and style. ``ESC D`` is a line feed,
  ``ESC E`` a line feed to column 0, ``ESC M`` moves up (at the screen's top, the screen's lines move
  down one, its last is lost). Private sequences (``CSI ?25l``) and everything else (OSC titles,
  DCS, charset selection, ...) are dropped: never shown raw, an unfinished one at the end too.
* SGR (CSI ``m``, ``;`` or ``:`` separated): 0 resets; 1 bold, 2 dim, 3 italic, 4 underline (21
  too), 7 inverse, 9 strike and their resets 22-29; colours 30-37 / 90-97 (fg), 40-47 / 100-107
  (bg), 39 / 49 default, 38 / 48 with ``5;n`` (256 colours: 0-15 stay palette colours, the rest
  become ``#rrggbb``) or ``2;r;g;b`` (truecolour). Anything else is ignored.
* OSC 8 sets the link of the characters written next when its target is an ``http(s)://`` URL
  (``views.links.BARE_URL``); any other target is dropped, its text kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Final

from fray_jupyter.views.links import BARE_URL

MAX_LINE_CHARS: Final[int] = 4000
LIVE_LINES: Final[int] = 50
"""Screen lines of a stream's terminal: how far up a cursor move can reach (a real terminal's
window is about as tall; a job drawing more nested bars than this has its oldest become final)."""
TAB: Final[int] = 8
URL: Final[re.Pattern[str]] = re.compile(BARE_URL)
CUBE: Final[tuple[int, ...]] = (0, 95, 135, 175, 215, 255)
"""The 6 levels of each channel in the 256-colour cube (indices 16-231)."""
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
BLANK: Final[tuple[str, Style]] = (" ", PLAIN)
Cell = tuple[str, Style]
_FLAGS: Final[dict[int, tuple[str, bool]]] = {
    1: ("bold", True), 2: ("dim", True), 3: ("italic", True), 4: ("underline", True), 7: ("inverse", True),
    9: ("strike", True), 21: ("underline", True), 23: ("italic", False), 24: ("underline", False),
    27: ("inverse", False), 29: ("strike", False),
}


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


def sgr(style: Style, text: str) -> Style:
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
    return uri if URL.fullmatch(uri) is not None else ""


def _string_end(text: str, at: int) -> tuple[int, int]:
    """Where the control string starting at ``at`` ends: (end of its body, index after its
    terminator, BEL or ESC backslash); the end of the text when it is unfinished."""
    for index in range(at, len(text)):
        if text[index] == "\x07":
            return index, index + 1
        if text[index] == "\x1b" and text[index + 1:index + 2] == "\\":
            return index, index + 2
    return len(text), len(text)


def _number(text: str, default: int) -> int:
    first = text.split(";", 1)[0]
    return int(first) if first.isdigit() and int(first) > 0 else default


@dataclass
class Line:
    """One terminal line: its cells, whether a character was cut at its end, and ``mark``: what the
    caller said about the last write into it (``Terminal.mark``)."""

    cells: list[Cell] = field(default_factory=list)
    cut: bool = False
    mark: object = None
    memo: object = None
    """The caller's, to keep what it worked out of the line (``views.logtail``)."""


class Terminal:
    """A terminal of ``height`` screen lines above scrollback (see the module rules)."""

    def __init__(self, height: int = LIVE_LINES) -> None:
        self.height = height
        self.lines: list[Line] = [Line()]
        """Every line from ``dropped`` on (``drop`` forgets older final ones)."""
        self.dropped = 0
        self.top = 0
        self.row = 0
        self.column = 0
        self.style = PLAIN
        self.saved: tuple[int, int, Style] = (0, 0, PLAIN)
        self.mark: object = None
        """Set on every line written to (or erased) from now on."""

    # -- lines ----------------------------------------------------------------------------------
    def line(self, row: int) -> Line:
        """The line at absolute ``row`` (made, blank, when the screen had not reached it)."""
        while len(self.lines) + self.dropped <= row:
            self.lines.append(Line(mark=self.mark))
        return self.lines[row - self.dropped]

    def shown(self) -> list[Line]:
        """Every line held, oldest first, without the blank ones below the last written."""
        lines = self.lines
        end = len(lines)
        while end > 0 and not lines[end - 1].cells and end - 1 + self.dropped > self.row:
            end -= 1
        return lines[:end]

    def drop(self, count: int) -> None:
        """Forget the oldest ``count`` lines, final ones only."""
        count = max(0, min(count, self.top - self.dropped))
        del self.lines[:count]
        self.dropped += count

    # -- cursor ---------------------------------------------------------------------------------
    def carriage_return(self) -> None:
        self.column = 0

    def line_feed(self) -> None:
        """Down one line, scrolling when the cursor is on the screen's last line."""
        self.row += 1
        self.top = max(self.top, self.row - self.height + 1)
        self.line(self.row)

    def _reverse_index(self) -> None:
        if self.row > self.top:
            self.row -= 1
            return
        bottom = self.top + self.height - 1
        self.line(bottom)
        del self.lines[bottom - self.dropped]
        self.lines.insert(self.top - self.dropped, Line(mark=self.mark))

    def _to_row(self, row: int) -> None:
        self.row = max(self.top, min(row, self.top + self.height - 1))
        self.line(self.row)

    def _to_column(self, column: int) -> None:
        self.column = max(0, min(column, MAX_LINE_CHARS))

    # -- writing --------------------------------------------------------------------------------
    def _write(self, char: str) -> None:
        line = self.line(self.row)
        line.mark = self.mark
        if self.column >= MAX_LINE_CHARS:
            line.cut = True
            return
        cells = line.cells
        if self.column > len(cells):
            cells.extend([BLANK] * (self.column - len(cells)))
        if self.column == len(cells):
            cells.append((char, self.style))
        else:
            cells[self.column] = (char, self.style)
        self.column += 1

    def _erase_line(self, row: int, mode: int, column: int) -> None:
        line = self.line(row)
        line.mark = self.mark
        if mode == 0:
            del line.cells[column:]
            line.cut = False
        elif mode == 1:
            blank = min(column + 1, len(line.cells))
            line.cells[:blank] = [BLANK] * blank
        else:
            line.cells.clear()
            line.cut = False

    def _erase_screen(self, mode: int) -> None:
        bottom = self.top + self.height - 1
        if mode == 0:
            self._erase_line(self.row, 0, self.column)
            rows = range(self.row + 1, min(bottom, len(self.lines) + self.dropped - 1) + 1)
        elif mode == 1:
            self._erase_line(self.row, 1, self.column)
            rows = range(self.top, self.row)
        else:
            rows = range(self.top, min(bottom, len(self.lines) + self.dropped - 1) + 1)
        for row in rows:
            self._erase_line(row, 2, 0)

    def _erase_chars(self, count: int) -> None:
        line = self.line(self.row)
        line.mark = self.mark
        end = min(self.column + count, len(line.cells))
        line.cells[self.column:end] = [BLANK] * max(0, end - self.column)

    def _csi(self, params: str, final: str) -> None:
        count = _number(params, 1)
        if final == "m":
            self.style = sgr(self.style, params)
        elif final == "A":
            self._to_row(self.row - count)
        elif final == "B":
            self._to_row(self.row + count)
        elif final == "C":
            self._to_column(self.column + count)
        elif final == "D":
            self._to_column(self.column - count)
        elif final in "EF":
            self._to_row(self.row + (count if final == "E" else -count))
            self.column = 0
        elif final == "G":
            self._to_column(count - 1)
        elif final in "Hf":
            parts = params.split(";")
            self._to_row(self.top + _number(parts[0], 1) - 1)
            self._to_column(_number(parts[1] if len(parts) > 1 else "", 1) - 1)
        elif final == "d":
            self._to_row(self.top + count - 1)
        elif final in "JK":
            mode = int(params) if params in ("0", "1", "2", "3") else 0
            if final == "K":
                self._erase_line(self.row, min(mode, 2), self.column)
            else:
                self._erase_screen(mode)
        elif final == "X":
            self._erase_chars(count)
        elif final == "s":
            self.saved = (self.row - self.top, self.column, self.style)
        elif final == "u":
            self._restore()

    def _restore(self) -> None:
        row, column, self.style = self.saved
        self._to_row(self.top + row)
        self._to_column(column)

    def play(self, text: str) -> None:
        """Run ``text`` at the cursor (see the module rules)."""
        at, end = 0, len(text)
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
                    if not (params and params[0] in "<=>?") and at - start == len(params) + 1:
                        self._csi(params, final)
                elif kind in "]PX^_":
                    stop = _string_end(text, at)
                    if kind == "]" and text[at:at + 2] == "8;":
                        self.style = replace(self.style, link=_link_target(text[at:stop[0]]))
                    at = stop[1]
                elif "\x20" <= kind <= "\x2f":
                    while at < end and "\x20" <= text[at] <= "\x2f":
                        at += 1
                    at += 1
                elif kind == "7":
                    self.saved = (self.row - self.top, self.column, self.style)
                elif kind == "8":
                    self._restore()
                elif kind in "DE":
                    self.line_feed()
                    if kind == "E":
                        self.column = 0
                elif kind == "M":
                    self._reverse_index()
            elif char == "\r":
                self.column = 0
            elif char == "\b":
                self._to_column(self.column - 1)
            elif char == "\t":
                self._to_column((self.column // TAB + 1) * TAB)
            elif char in "\x0b\x0c":
                self.line_feed()
            elif not (char < "\x20" or "\x7f" <= char <= "\x9f"):
                self._write(char)
