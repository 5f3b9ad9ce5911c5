"""``iris.highlights`` picks the same root-cause lines as Iris's own ``log_highlights`` (the oracle) on a
corpus of task logs — Python, JAX, NCCL and CUDA failures, tqdm redraws, access logs, rank tags, repeats,
logs with no failure line — and on random mixes of such lines."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iris.cluster import log_highlights as oracle

from fray_jupyter.iris.highlights import failure_highlights, is_progress_bar, without_rank_tag

TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/app/train.py", line 41, in <module>',
    "    main()",
    '  File "/app/train.py", line 12, in main',
    "    raise ValueError('bad shape (3, 4)')",
    "ValueError: bad shape (3, 4)",
]
TQDM = [
    "Loading:  45%|####5     | 450/1000 [00:12<00:15,  3.21it/s]",
    "450it [00:12,  3.21it/s]",
    "train: 3%|▎ | 30/1000 [01:02<33:20, 2.06s/it]\rtrain: 4%|▍ | 40/1000 [01:23<33:00, 2.06s/it]",
    "  0%|          | 0/10 [00:00<?, ?it/s]",
]
NOISE = [
    '127.0.0.1 - - [01/Dec/2026 10:00:00] "GET /health HTTP/1.1" 200 -',
    '10.0.0.2 - "POST /rpc HTTP/1.0" 500 12',
    "Extension modules: numpy.core._multiarray_umath, jax._src (total: 2)",
]
SIGNALS = [
    "Fatal Python error: Segmentation fault",
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2.1G",
    "NCCL WARN NET/IB : Got async event : port error",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "DEADLINE_EXCEEDED: barrier timed out",
    "Coscheduled sibling /alice/train/3 failed",
    "Aborted (core dumped)",
    "torch.OutOfMemoryError: CUDA out of memory.",
    "E1201 10:00:00.000 jax detected fatal errors on 2 hosts",
    "OOMKilled",
    "KeyboardInterruptException was raised",
]
PLAIN = ["starting", "step 10 loss 2.31", "saving checkpoint to gs://bucket/run", "", "   ", "done"]

CORPUS: dict[str, list[str]] = {
    "python traceback": ["starting", *TRACEBACK],
    "traceback behind progress bars": [*TQDM, "epoch 1", *TQDM, *TRACEBACK, *TQDM],
    "two attempts": ["attempt 0", *TRACEBACK, "attempt 1", *TRACEBACK],
    "rank tagged": [f"[rank{r}] {line}" for r in (0, 1) for line in TRACEBACK],
    "repeated barrier errors": ["DEADLINE_EXCEEDED: barrier"] * 5 + ["x", "DEADLINE_EXCEEDED: barrier"],
    "no failure line": PLAIN,
    "only noise": TQDM + NOISE,
    "fatal banners": PLAIN + SIGNALS,
    "many errors": [f"ValueError: item {i}" for i in range(40)],
    "access log flood": NOISE * 20 + ["KeyError: 'lr'"] + NOISE * 20,
    "crash dump tail": ["Fatal Python error: Aborted", "Current thread 0x00007f (most recent call first):",
                        '  File "/app/x.py", line 3 in f', "Extension modules: numpy (total: 1)"],
    "empty": [],
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_same_lines_as_iris(name: str) -> None:
    lines = CORPUS[name]
    assert failure_highlights(lines) == oracle.extract_failure_highlights(lines)


def test_the_corpus_reaches_every_branch() -> None:
    """Signals found, the de-noised fallback, all noise (empty), and the cap of 20."""
    assert failure_highlights(CORPUS["python traceback"])[-1] == "ValueError: bad shape (3, 4)"
    assert failure_highlights(CORPUS["no failure line"]) == PLAIN
    assert failure_highlights(CORPUS["only noise"]) == []
    assert len(failure_highlights(CORPUS["many errors"])) == 20


VOCABULARY = [*TRACEBACK, *TQDM, *NOISE, *SIGNALS, *PLAIN]
LINE = st.one_of(
    st.sampled_from(VOCABULARY),
    st.builds(lambda rank, line: f"[rank{rank}] {line}", st.integers(0, 12), st.sampled_from(VOCABULARY)),
    st.text(max_size=40),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=60), st.integers(1, 30))
def test_random_logs_agree_with_iris(lines: list[str], cap: int) -> None:
    assert failure_highlights(lines, cap) == oracle.extract_failure_highlights(lines, cap)


@settings(max_examples=200, deadline=None)
@given(LINE)
def test_progress_bars_and_rank_tags_agree_with_iris(line: str) -> None:
    assert is_progress_bar(line) == oracle.is_progress_bar_line(line)
    assert without_rank_tag(line) == oracle.strip_rank_log_tag(line)
