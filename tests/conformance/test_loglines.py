"""``iris.loglines`` gives every line of a corpus the level Iris's own ``classify_log_level`` gives it."""

from __future__ import annotations

import pytest
from iris.cluster.log_keys import classify_log_level

from fray_jupyter.iris.loglines import log_level

CORPUS = (
    "", "hello", "I20260102 12:34:56 iris.worker up", "W0102 careful", "E0102 broke", "D0 debug", "C0 fatal",
    "X0 not a level", "Everything fine", "I", "[rank0] E0102 rank zero broke", "[rank12] plain", "[rankx] I0 not a tag",
    "  0%|          | 0/1000 [00:00<?, ?it/s]", "100%|██████████| 1000/1000 [00:01<00:00, 912.34it/s]",
    "450it [00:12,  3.21it/s]", "epoch 3 [1:02:03, 1.20s/it]", "Traceback (most recent call last):",
    "\x1b[31mred\x1b[0m", "45% done | halfway |", "[00:12] started", "ValueError: boom",
)


@pytest.mark.parametrize("source", ["stdout", "stderr", "error", "build"])
def test_levels_are_iris_s(source: str) -> None:
    assert [log_level(source, line) for line in CORPUS] == [classify_log_level(source, line) for line in CORPUS]

