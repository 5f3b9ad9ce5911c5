"""The log views against a real terminal emulator (``pyte``): the same raw output — tqdm bars nested,
in parallel threads, ``leave=False``; rich's live display; Hugging Face style multiprocess bars;
pip's download bar; absl-style logs; random bytes — is fed to the emulator (scrollback kept) and,
cut into rows as Iris captures it, to ``views.logtail.LogScreen``; every line's text and every
character's colours and attributes must agree. The programs run in subprocesses writing to pipes,
as a task does.

What a stored row cannot say — whether a carriage return or a newline ended it, and what blanks it
ended with (capture drops them) — the views decide by their rule (``views.logtail``); the random
inputs therefore end every row with a visible character and end no row in a carriage return.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from typing import Any

import pyte
import pytest
from pyte.graphics import BG_AIXTERM, BG_ANSI, FG_AIXTERM, FG_ANSI, FG_BG_256

from fray_jupyter.iris.proto.logging_pb2 import LogEntry
from fray_jupyter.views.ansi import Span
from fray_jupyter.views.logtail import ERASES_LINE, LogScreen, ShownLine
from fray_jupyter.views.terminal import LIVE_LINES

LINE_BREAK = re.compile(rb"\r\n|\r|\n")
ORACLE_COLUMNS = 400
"""The emulator's width: wider than any line the inputs write (the views never wrap; they cut at
``MAX_LINE_CHARS``, which no input reaches), narrow enough to keep the emulator fast."""


def _named() -> dict[str, str]:
    """pyte's colour names → the xterm hex of the palette index they stand for."""
    names: dict[str, str] = {}
    for table, base in ((FG_ANSI, 30), (BG_ANSI, 40)):
        for code, name in table.items():
            if base <= code < base + 8:
                names[name] = FG_BG_256[code - base]
    for table, base in ((FG_AIXTERM, 90), (BG_AIXTERM, 100)):
        for code, name in table.items():
            names[name] = FG_BG_256[code - base + 8]
    return names


NAMES = _named()
Look = tuple[str, str, bool, bool, bool, bool]
"""A character's colours (xterm hex, ``default`` or ``reverse``) and bold, italic, underline, strike."""


def cut_rows(raw: bytes) -> list[str]:
    """Rows as Iris captures output (``iris.loglines``; the embedded runner's cut): at ``\\n``,
    ``\\r\\n`` or a lone ``\\r``, trailing whitespace dropped, a final line without a break kept."""
    *lines, rest = LINE_BREAK.split(raw)
    return [line.decode("utf-8", errors="replace").rstrip() for line in [*lines, *([rest] if rest else [])]]


def oracle(raw: bytes) -> list[tuple[str, list[Look]]]:
    """What the terminal emulator shows after ``raw`` (a newline returns the carriage, as a tty's
    ``onlcr`` does): scrollback then screen, trailing blank lines dropped."""
    screen = pyte.HistoryScreen(ORACLE_COLUMNS, LIVE_LINES, history=10**6)
    pyte.ByteStream(screen).feed(raw.replace(b"\n", b"\r\n"))
    rows = [*screen.history.top, *(screen.buffer[y] for y in range(screen.lines))]
    lines = []
    for row in rows:
        width = max((x + 1 for x, char in row.items() if char.data != " "), default=0)
        chars = [row[x] for x in range(width)]
        lines.append(("".join(char.data for char in chars), [_pyte_look(char) for char in chars]))
    while lines and not lines[-1][0]:
        lines.pop()
    return lines


def _hex(colour: str) -> str:
    return colour if colour == "default" else NAMES.get(colour, colour.lower())


def _pyte_look(char: Any) -> Look:
    fg, bg = _hex(char.fg), _hex(char.bg)
    if char.reverse:
        fg, bg = (bg if bg != "default" else "reverse"), (fg if fg != "default" else "reverse")
    return (fg, bg, char.bold, char.italics, char.underscore, char.strikethrough)


def _span_look(span: Span) -> Look:
    fg = bg = "default"
    for name in span.classes:
        kind, _, value = name.partition("-")
        if kind in ("fg", "bg"):
            colour = "reverse" if value == "reverse" else FG_BG_256[int(value)]
            fg, bg = (colour, bg) if kind == "fg" else (fg, colour)
    for rule in filter(None, span.style.split(";")):
        prop, colour = rule.split(":")
        fg, bg = (colour[1:], bg) if prop == "color" else (fg, colour[1:])
    flags = set(span.classes)
    return (fg, bg, "bold" in flags, "italic" in flags, "underline" in flags, "strike" in flags)


def view(raw: bytes) -> list[tuple[str, list[Look]]]:
    """What ``LogScreen`` shows of ``raw`` captured as one stream's rows."""
    screen = LogScreen()
    screen.feed(LogEntry(key="/u/j/0:0", source="stderr", data=data, seq=seq)
                for seq, data in enumerate(cut_rows(raw), start=1))
    return [_view_line(line) for line in screen.shown()]


def _view_line(line: ShownLine) -> tuple[str, list[Look]]:
    return line.text, [look for span in line.spans for look in [_span_look(span)] * len(span.text)]


def same(left: list[tuple[str, list[Look]]], right: list[tuple[str, list[Look]]]) -> list[str]:
    """The differences between two renderings: text by line (trailing blanks aside), then the look of
    every visible character."""
    def text(lines: list[tuple[str, list[Look]]]) -> list[str]:
        found = [line.rstrip(" ") for line, _ in lines]
        while found and not found[-1]:
            found.pop()
        return found

    if text(left) != text(right):
        return [f"text: {text(left)!r} != {text(right)!r}"]
    return [f"line {number} column {column} {char!r}: {a} != {b}"
            for number, ((line, looks), (_, others)) in enumerate(zip(left, right, strict=False))
            for column, (char, a, b) in enumerate(zip(line, looks, others, strict=False))
            if char != " " and a != b]


@dataclass(frozen=True)
class Program:
    name: str
    code: str
    bars: int | None  # bar lines a terminal shows at the end (None: it depends on how processes interleave)
    bar: str = r"\d+%\|"  # what a bar line shows


PROGRAMS = [
    Program("tqdm nested, inner leave=False", """
        from tqdm import tqdm
        for epoch in tqdm(range(3), desc="epoch", ncols=90, mininterval=0):
            for step in tqdm(range(40), desc="step", position=1, leave=False, ncols=90, mininterval=0):
                pass
            tqdm.write(f"epoch done {epoch}")
    """, 1),
    Program("tqdm parallel bars at positions 0-2", """
        from tqdm import tqdm
        bars = [tqdm(total=30, desc=f"worker {n}", position=n, ncols=90, mininterval=0) for n in range(3)]
        for step in range(30):
            for n, bar in enumerate(bars):
                if step % (n + 1) == 0 or step == 29:
                    bar.update(30 - bar.n if step == 29 else 1)
        for bar in bars:
            bar.close()
    """, 3),
    Program("tqdm leave=False then lines", """
        from tqdm import tqdm
        print("before", file=sys.stderr)
        for _ in tqdm(range(50), leave=False, ncols=90, mininterval=0):
            pass
        print("after", file=sys.stderr)
        for _ in tqdm(range(20), desc="kept", ncols=90, mininterval=0):
            pass
    """, 1),
    Program("tqdm.contrib.concurrent thread_map with a nested bar", """
        from tqdm import tqdm
        from tqdm.contrib.concurrent import thread_map
        def work(n):
            for _ in tqdm(range(10), desc=f"item {n}", position=1, leave=False, ncols=90, mininterval=0):
                pass
            return n
        thread_map(work, range(6), max_workers=1, ncols=90, mininterval=0)
    """, 1),
    Program("Hugging Face style multiprocess map bars", """
        import multiprocessing as mp
        from tqdm import tqdm
        def shard(rank):
            for _ in tqdm(range(25), desc=f"Map (num_proc=2) #{rank}", position=rank, ncols=90, mininterval=0):
                pass
            return rank
        if __name__ == "__main__":
            lock = mp.RLock()
            tqdm.set_lock(lock)
            with mp.get_context("fork").Pool(2, initializer=tqdm.set_lock, initargs=(lock,)) as pool:
                pool.map(shard, [0, 1])
    """, None),
    Program("rich live table and progress", """
        from pip._vendor.rich.console import Console
        from pip._vendor.rich.live import Live
        from pip._vendor.rich.progress import Progress
        from pip._vendor.rich.table import Table
        console = Console(file=sys.stderr, force_terminal=True, width=90, color_system="256")
        with Live(console=console, auto_refresh=False) as live:
            for step in range(8):
                table = Table("step", "[bold red]loss")
                for row in range(step % 3 + 1):
                    table.add_row(str(step), f"[green]{1 / (step + row + 1):.3f}")
                live.update(table, refresh=True)
        with Progress(console=console, auto_refresh=False) as progress:
            a, b = progress.add_task("download", total=10), progress.add_task("[cyan]unpack", total=10)
            for _ in range(10):
                progress.advance(a); progress.advance(b); progress.refresh()
        console.print("[bold]done[/bold] https://example.com/run")
    """, 2, r"━━.* \d+%"),
    Program("pip's download bar", """
        from pip._internal.cli import progress_bars
        from pip._vendor.rich import get_console
        get_console().file = sys.stderr
        import pip._vendor.rich.console as rc
        rc._console = rc.Console(file=sys.stderr, force_terminal=True, width=90)
        render = progress_bars.get_download_progress_renderer(bar_type="on", size=4096)
        for _ in render(iter([b"x" * 256] * 16)):
            pass
    """, 1, r"━━.* kB"),
    Program("absl-style logs with colours", """
        for step in range(5):
            print(f"I1201 22:00:0{step}.123456 140 train.py:42] step {step} \\x1b[32mloss\\x1b[0m {1 / (step + 1):.3f}",
                  file=sys.stderr)
        print("W1201 22:00:06.000001 140 train.py:50] \\x1b[33mslow\\x1b[0m step", file=sys.stderr)
        print("E1201 22:00:07.000001 140 train.py:60] \\x1b[1;31mfailed\\x1b[0m shard 3", file=sys.stderr)
    """, 0),
]


def run(program: Program) -> bytes:
    """``program``'s stderr, as a task's pipe receives it."""
    code = "import sys\n" + textwrap.dedent(program.code)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, check=True,
                          env={"COLUMNS": "90", "LINES": "50", "PATH": "/usr/bin:/bin", "TERM": "xterm"})
    return done.stderr


@pytest.fixture(scope="module", params=PROGRAMS, ids=[program.name for program in PROGRAMS])
def output(request: pytest.FixtureRequest) -> tuple[Program, bytes]:
    return request.param, run(request.param)


def test_real_programs_show_as_the_terminal_shows_them(output: tuple[Program, bytes]) -> None:
    _program, raw = output
    assert same(view(raw), oracle(raw)) == []


def test_bars_show_as_their_latest_frames_one_line_each(output: tuple[Program, bytes]) -> None:
    program, raw = output
    def bars(lines: list[tuple[str, list[Look]]]) -> int:
        return sum(re.search(program.bar, text) is not None for text, _ in lines)

    assert bars(view(raw)) == bars(oracle(raw))
    assert program.bars is None or bars(view(raw)) == program.bars


SEQUENCES = [  # xterm's. Not ESC E (pyte's next-line keeps the column, xterm's returns it); a restore
    # saves again (pyte pops what ESC 7 saved, xterm keeps it)
"\x1b[A", "\x1b[2A", "\x1b[B", "\x1b[3C", "\x1b[2D", "\x1b[E", "\x1b[F", "\x1b[5G", "\x1b[2;4H",
             "\x1b[3d", "\x1b[K", "\x1b[1K", "\x1b[2K", "\x1b[J", "\x1b[1J", "\x1b[2J", "\x1b[2X", "\x1b7", "\x1b8\x1b7",
             "\x1bM", "\x1bD", "\x1b[?25l", "\x1b]0;title\x07", "\x1b[0m", "\x1b[1m", "\x1b[3m", "\x1b[4m",
             "\x1b[7m", "\x1b[9m", "\x1b[22m", "\x1b[24m", "\x1b[27m", "\x1b[31m", "\x1b[92m", "\x1b[44m",
             "\x1b[103m", "\x1b[39m", "\x1b[49m", "\x1b[38;5;208m", "\x1b[48;5;21m", "\x1b[38;2;10;200;30m",
             "\b", "\t", "\x07", "\x00", "\x7f"]
WORDS = ["a", "bc", "def", "█", "é", " ", "  ", "0.5", "x"]


def random_output(seed: int) -> bytes:
    """Random rows of text and escape sequences, after a saved cursor (see the module rules for what
    they avoid; a row that starts as a redraw starts with a letter instead: after a newline a redraw
    is the rule's, not the terminal's)."""
    pick = random.Random(seed)
    rows = []
    for _ in range(pick.randint(1, 40)):
        parts = [pick.choice(SEQUENCES if pick.random() < 0.4 else WORDS) for _ in range(pick.randint(0, 12))]
        row = "".join(parts) + pick.choice("xyz")
        rows.append("x" + row if ERASES_LINE.match(row) else row)
    return ("\x1b7" + "\n".join(rows)).encode()


@pytest.mark.parametrize("seed", range(200))
def test_random_output_shows_as_the_terminal_shows_it(seed: int) -> None:
    raw = random_output(seed)
    assert same(view(raw), oracle(raw)) == [], raw


def test_the_comparison_fails_on_a_planted_difference() -> None:
    raw = b"\x1b[31mred\x1b[0m plain\nnext \x1b[1mbold\x1b[0m\n"
    shown = view(raw)
    assert same(shown, oracle(raw)) == []
    text_changed = [(shown[0][0].replace("plain", "plane"), shown[0][1]), *shown[1:]]
    colour_changed = [(shown[0][0], [("default", *look[1:]) for look in shown[0][1]]), *shown[1:]]
    assert same(text_changed, oracle(raw)) and same(colour_changed, oracle(raw))

