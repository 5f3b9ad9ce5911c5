"""The sidebar's usage words (``labextension/src/usage.ts``) against the display vocabulary: an age
and "… ago" read as ``vocabulary.age_ms`` / ``ago_ms`` say them, on random ages, and the silence
marker says the same age once a task is quiet for the threshold (``client.liveness``: at least)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fray_jupyter import vocabulary as v
from tests.labext_node import compile_for_node, node


@pytest.fixture(scope="module")
def unit() -> Path:
    return compile_for_node()


def test_ages_read_as_the_vocabulary_says_them(unit: Path) -> None:
    pick = random.Random(37)
    ages = [0, 999, 1000, v.JUST_NOW_MS - 1, v.JUST_NOW_MS, 59_999, 60_000, 3_600_000, 86_400_000,
            *(pick.randint(0, 10 ** pick.randint(1, 9)) for _ in range(300))]
    sidebar = node(unit, "usage.js", "values.map(ms => [m.ageText(ms), m.agoText(ms)])", ages)
    assert sidebar == [[v.age_ms(ms), v.ago_ms(ms)] for ms in ages]


def test_the_silence_marker_says_the_age_past_the_setting(unit: Path) -> None:
    quiet = [0, 2_999, 3_000, 12 * 60_000 + 5]
    said = node(unit, "usage.js", "values.map(ms => m.silenceText({quiet_since_ms: 1_000_000_000 - ms}, "
                "1_000_000_000, 3000))", quiet)
    assert said == ["", "", f"no output for {v.age_ms(3_000)}", f"no output for {v.age_ms(12 * 60_000 + 5)}"]
