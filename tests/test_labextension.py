"""The labextension's TypeScript unit suite (state → badge, refresh back-off, change detection,
formatting, the log renderer's shared vectors), run with Node's built-in test runner: ``npm test`` in
``labextension/``; the sidebar's ANSI palette is the status panel's; and the sidebar's log renderer
and status text show random pages and texts as the panel's do."""

from __future__ import annotations

import json
import random
import re
import subprocess
from dataclasses import asdict
from pathlib import Path

import pytest

from fray_jupyter.iris.proto.logging_pb2 import LogEntry
from fray_jupyter.views.ansi import PALETTE
from fray_jupyter.views.job import badge_html, duration
from fray_jupyter.views.logtail import collapse
from fray_jupyter.views.statustext import status_spans
from fray_jupyter.views.words import STATE_WORDS, state_word
from tests.labext_node import LABEXTENSION, compile_for_node, node


@pytest.fixture(scope="module")
def unit_build() -> Path:
    """The labextension compiled for Node (``tsconfig.test.json``): its ``lib/unit`` folder."""
    return compile_for_node()


def test_typescript_unit_suite_passes(unit_build: Path) -> None:
    """What ``npm test`` runs, on the build the other tests share (compiled once)."""
    tests = sorted(str(path.relative_to(LABEXTENSION)) for path in (unit_build / "test").glob("*.test.js"))
    done = subprocess.run(["node", "--test", *tests], cwd=LABEXTENSION, capture_output=True, text=True, timeout=120,
                          check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    passed = re.search(r"^# pass (\d+)$", output, re.MULTILINE)
    failed = re.search(r"^# fail (\d+)$", output, re.MULTILINE)
    assert passed and failed and int(passed.group(1)) >= 15 and failed.group(1) == "0", output[-2000:]


def test_the_sidebar_colours_logs_with_jupyterlabs_classes_which_are_the_panels_palette(unit_build: Path) -> None:
    """The sidebar restates no palette: each palette class of a span also gets JupyterLab's own
    (``jlansi.ts``), whose colour in ``@jupyterlab/rendermime`` is the panel's (``views.ansi.PALETTE``)."""
    rendermime = (LABEXTENSION / "node_modules" / "@jupyterlab" / "rendermime" / "style" / "base.css").read_text()
    names = [f"{part}-{index}" for part in ("fg", "bg") for index in range(16)]
    classes = node(unit_build, "jlansi.js", "values.map(m.jupyterLabClass)", [*names, "bold", "dim"])
    assert classes[-2:] == ["ansi-bold", ""]
    for name, jupyterlab in zip(names, classes, strict=False):
        prop = "color" if name.startswith("fg") else "background-color"
        found = re.search(rf"\.jp-RenderedText pre \.{jupyterlab}\s*{{\s*{prop}: (#[0-9a-f]{{6}});", rendermime)
        assert found and found.group(1) == PALETTE[int(name.split("-")[1])], (name, jupyterlab)
    css = "".join(path.read_text() for path in (LABEXTENSION / "style").glob("*.css"))
    assert not any(colour in css for colour in PALETTE)


KEYS = [("/u/j/0:0", "stderr"), ("/u/j/0:0", "stdout"), ("/u/j/1:0", "stderr")]
PIECES = ["", " 45%|####5     | 45/100 [00:12<00:15, 3.21it/s]", "  0%|          | 0/9 [00:00<?, ?it/s]",
          "\x1b[A", "\x1b[2K", "\x1b[2K\x1b[1A", " " * 30 + "\x1b[A", "\x1b[1;31merror\x1b[0m", "\x1b[38;5;208mx",
          "\x1b[48;2;1;2;3mbg", "see https://wandb.ai/r/1.", "\x1b]8;;https://x.org\x07link\x1b]8;;\x07",
          "\x1b]8;;javascript:alert(1)\x07bad\x1b]8;;\x07", "\r", "\b", "\t", "\x1b[5G", "\x1b[3D", "\x1b[K",
          "\x1b[1K", "\x1b[J", "\x1b[2J", "\x1b[3B", "\x1b[2;3H", "\x1b7", "\x1b8", "\x1bM", "\x1bD", "\x1b[2X",
          "\x1b[?25l", "é█ü", "step 3 loss 0.25", "<b>&amp;</b>", "\x1b[7minv\x1b[27m", "\x1b[", "\x1b]0;t",
          "https://x.io/a", "\u00a0", "\u3000", "\ufeff", "\u2028", "\u1680", "😀"]


def random_pages(count: int, seed: int = 20261201) -> list[list[tuple[str, str, str]]]:
    """Pages of rows from three streams mixing tqdm frames, blanks, rich's and tqdm's redraws,
    colours, links, cursor moves and broken escapes."""
    pick = random.Random(seed)
    pages = []
    for _ in range(count):
        rows = []
        for _ in range(pick.randint(1, 60)):
            key, source = pick.choice(KEYS)
            rows.append((key, source, "".join(pick.choice(PIECES) for _ in range(pick.randint(0, 4)))))
        pages.append(rows)
    return pages


def test_the_sidebar_shows_random_pages_as_the_panel_does(unit_build: Path) -> None:
    """The two renderers of ``views/logtail.py`` and ``logrows.ts`` agree on random pages: the same
    lines in the same order, each from the same row, with the same spans."""
    pages = random_pages(300)
    done = subprocess.run(["node", "lib/unit/test/replay.js"], cwd=LABEXTENSION, input=json.dumps(pages),
                          capture_output=True, text=True, timeout=120, check=True)
    sidebar = json.loads(done.stdout)
    for rows, theirs in zip(pages, sidebar, strict=True):
        ours = collapse(LogEntry(key=key, source=source, data=data, seq=seq)
                        for seq, (key, source, data) in enumerate(rows, start=1))
        assert [[line.entry.seq, [asdict(span) | {"classes": list(span.classes)} for span in line.spans]]
                for line in ours] == theirs, rows


def test_the_sidebar_names_every_state_with_the_panels_word(unit_build: Path) -> None:
    names = [*STATE_WORDS, "some_new_state", ""]
    sidebar = node(unit_build, "badges.js", "values.map(name => m.badgeFor(name).label)", names)
    assert sidebar == [state_word(name) for name in names]
    assert state_word("killed") == "killed"  # the drift this guards: the sidebar read "cancelled", the panel "KILLED"
    assert 'KILLED</span>' in badge_html("killed")


def test_the_sidebar_formats_random_durations_as_the_panel_does(unit_build: Path) -> None:
    pick = random.Random(20261201)
    durations = [0, 350, 999, 1000, 4_250, 59_999, 60_000, 3_599_999, 3_600_000, 90_000_000,
                 *(pick.randint(0, 10 ** pick.randint(1, 9)) for _ in range(500))]
    sidebar = node(unit_build, "format.js", "values.map(m.formatDuration)", durations)
    assert sidebar == [duration(ms / 1000) for ms in durations]
    assert duration(0.35) == "350 ms"  # the drift this guards: the sidebar read "0s"


STATUS_VECTORS = json.loads((Path(__file__).parent / "data" / "status_text_vectors.json").read_text())["status_text"]
STATUS_PIECES = ["[W&B](https://wandb.ai/r/1)", "[", "]", "(", ")", "](", "**", "*", "loss", " ", "\n", "https://x.io/a",
                 "http://y.io/?a=1&b=2", ".", ",", "!", "javascript:alert(1)", "<b>x</b>", "\u00a0", "\u3000", "\ufeff",
                 "\u2028", "\x85", "\x1c", "\t", "\x1b[1m", "😀", "é", '"', "'", "[**bold** run](https://x.io/b)"]


def test_the_sidebar_reads_the_shared_status_text_vectors_as_the_panel(unit_build: Path) -> None:
    """Each drift case of the vectors (Levanter's W&B markdown line, a URL beside each Unicode blank)
    reads the same in the sidebar as in the panel (``tests/test_views_statustext.py``)."""
    sidebar = node(unit_build, "statustext.js", "values.map(m.statusSpans)", [case["text"] for case in STATUS_VECTORS])
    assert sidebar == [case["spans"] for case in STATUS_VECTORS]


def test_the_sidebar_shows_random_status_texts_as_the_panel_does(unit_build: Path) -> None:
    pick = random.Random(20261202)
    texts = ["".join(pick.choice(STATUS_PIECES) for _ in range(pick.randint(0, 12))) for _ in range(500)]
    sidebar = node(unit_build, "statustext.js", "values.map(m.statusSpans)", texts)
    for text, theirs in zip(texts, sidebar, strict=True):
        assert [asdict(span) | {"classes": list(span.classes)} for span in status_spans(text)] == theirs, text


def test_the_lint_check_fails_on_a_planted_error() -> None:
    """The lint check (prettier, then eslint with prettier's rule, as JupyterLab's extension template
    sets them up) is not blind: it fails a file with a lint and a format error. That the sources
    pass it, ``scripts/test`` checks with ``npm run lint:check`` beside the suite."""
    planted = subprocess.run(["npx", "eslint", "--stdin", "--stdin-filename", "src/format.ts"], cwd=LABEXTENSION,
                             input="export const same = (a: number, b: number): boolean =>   a == b;\n",
                             capture_output=True, text=True, timeout=120, check=False)
    assert planted.returncode != 0
    assert "eqeqeq" in planted.stdout and "prettier/prettier" in planted.stdout, planted.stdout
