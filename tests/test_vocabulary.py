"""The one display vocabulary (``vocabulary``): every state reads the same — word, colour and
bar place — in the status panel, the sidebar, ``%fray jobs`` and a session line, and so do a duration,
a size and a retry count; the sidebar receives the tables (a generated module that is current) and
restates no state word or colour; its twins of the formats agree with the Python ones on random inputs."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import humanfriendly
import pytest

from fray_jupyter import vocabulary as v
from fray_jupyter.iris.attempts import RetryLimits
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import job_state_name
from fray_jupyter.session.facts import HostFacts, SessionFacts, session_line
from fray_jupyter.views.format import size
from fray_jupyter.views.job import badge_html, duration, header_html, job_retries_text, retries_text
from fray_jupyter.views.jobs import jobs_text
from fray_jupyter.views.tree import task_bar_html
from tests.labext_node import LABEXTENSION, compile_for_node, node

REPO = Path(__file__).resolve().parents[1]
J = job_pb2
JOB_STATES = [state for state in J.JobState.values() if state != J.JOB_STATE_UNSPECIFIED]


@pytest.fixture(scope="module")
def unit() -> Path:
    return compile_for_node()


def test_the_generated_typescript_and_css_are_current() -> None:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "vocabulary_ts.py"), "--check"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_every_state_reads_the_same_in_the_panel_the_sidebar_jobs_and_a_bar(unit: Path) -> None:
    names = [*v.STATES, *(job_state_name(state) for state in JOB_STATES), "some_new_state"]
    sidebar = node(unit, "badges.js", "values.map(name => [m.badgeFor(name).label, m.badgeFor(name).tone])", names)
    assert sidebar == [[v.state_word(name), v.look(name).tone] for name in names]
    for name in names:
        assert f">{v.state_word(name).upper()}</span>" in badge_html(name)  # the panel
        assert f"background:{v.state_color(name)}" in badge_html(name)
    for state in JOB_STATES:  # %fray jobs and the panel's header, for a job in each state
        status = J.JobStatus(job_id="/alice/j", state=state, task_count=1)
        word = v.state_word(job_state_name(state))
        assert f"  {word}  " in jobs_text([status], now=0)
        assert f">{word.upper()}</span>" in header_html(status, now=0)
    css = (LABEXTENSION / "style" / "vocabulary.css").read_text()
    for name, look in v.STATES.items():  # the sidebar's bar segment and badge colours are the panel's
        assert f".fj-Seg[data-state='{name}'] {{\n  background: {v.TONE_COLORS[look.tone]};" in css
    for tone, colour in v.TONE_COLORS.items():
        assert f".fj-Badge-{tone} {{\n  background: {colour};" in css


def test_a_task_bar_draws_the_same_segments_in_the_panel_and_the_sidebar(unit: Path) -> None:
    pick = random.Random(20261207)
    jobs = []
    for _ in range(300):
        counts = {name: pick.choice([0, 0, 1, 2, pick.randint(3, 50)]) for name in pick.sample(list(v.STATES), 5)}
        jobs.append({"replicas": sum(counts.values()) + pick.randint(0, 3), "task_state_counts": counts})
    sidebar = node(unit, "progress.js", "values.map(job => m.taskSegments(job).map(s => [s.state, s.count]))", jobs)
    for job, theirs in zip(jobs, sidebar, strict=True):
        panel = task_bar_html(job["task_state_counts"], job["replicas"])
        segments = [[name, count] for name, count in v.bar_segments(job["task_state_counts"], job["replicas"])]
        assert theirs == segments
        assert re.findall(r'class="fray-bar-([a-z_]+)" style="width:[\d.]+%;background:([^"]+)"', panel) == [
            (name, v.state_color(name)) for name, _ in segments]
    ranked = sorted((name for name, look in v.STATES.items() if look.rank is not None), key=v.bar_rank)
    assert [name for name, _ in v.bar_segments({name: 1 for name in ranked}, len(ranked) + 1)] == ranked


def test_a_duration_reads_the_same_in_the_panel_the_sidebar_and_a_session_line(unit: Path) -> None:
    pick = random.Random(20261204)
    durations = [0, 350, 999, 1000, 45_000, 59_999, 60_000, 3_599_999, 3_600_000,
                 *(pick.randint(0, 10 ** pick.randint(1, 9)) for _ in range(300))]
    sidebar = node(unit, "format.js", "values.map(m.formatDuration)", durations)
    assert sidebar == [v.duration_ms(ms) for ms in durations] == [duration(ms / 1000) for ms in durations]
    now = 2_000_000_000
    for ms in durations[:40]:
        facts = SessionFacts("/alice/s", (HostFacts(0, now - ms, None),))
        assert session_line(facts, 1, now).endswith(f"idle {v.duration_ms(ms)}")
        status = J.JobStatus(job_id="/alice/j", state=J.JOB_STATE_SUCCEEDED, task_count=1)
        status.submitted_at.epoch_ms, status.finished_at.epoch_ms = 1, 1 + ms
        assert f"took {v.duration_ms(ms)}" in jobs_text([status], now=now)  # %fray jobs
        assert f"took {v.duration_ms(ms)}" in header_html(status, now=now)  # the panel
    assert v.duration_ms(45_000) == "45.0 s"  # the drift this guards: a session line read "45s"


def test_a_size_reads_the_same_in_the_panel_and_the_sidebar(unit: Path) -> None:
    pick = random.Random(20261205)
    sizes = [0, 1, 2, 1023, 1024, 1536, 2 ** 20 - 1, 512 * 2 ** 20, 1.125 * 2 ** 30, 1.135 * 2 ** 30, 2 ** 80 * 3,
             *(pick.randint(0, 2 ** pick.randint(1, 52)) for _ in range(400))]
    sizes = [int(value) for value in sizes]
    sidebar = node(unit, "format.js", "values.map(m.formatBytes)", sizes)
    assert sidebar == [size(value) for value in sizes]
    assert [size(value) for value in sizes] == [humanfriendly.format_size(value, binary=True) for value in sizes]


def test_counts_and_retries_read_the_same_on_both_sides_with_correct_plurals(unit: Path) -> None:
    pick = random.Random(20261206)
    cases = [[pick.choice([0, 1, 2, pick.randint(3, 500)]) for _ in range(4)] for _ in range(200)]
    sidebar = node(unit, "format.js", "values.map(([f, p, mf, mp]) => ["
                   "m.taskRetriesText({failure_count: f, preemption_count: p},"
                   " {max_retries_failure: mf, max_retries_preemption: mp}),"
                   " m.jobRetriesText({failure_count: f, preemption_count: p}, {max_task_failures: mf}),"
                   " m.counted(f, 'retry'), m.counted(p, 'attempt'), m.fraction(p, f, 'task')])", cases)
    for (failures, preemptions, max_failure, max_preemption), theirs in zip(cases, sidebar, strict=True):
        task = J.TaskStatus(attempts=[J.TaskAttempt(state=J.TASK_STATE_FAILED) for _ in range(failures)])
        limits = RetryLimits(max_task_failures=max_failure, max_retries_failure=max_failure,
                             max_retries_preemption=max_preemption)
        status = J.JobStatus(failure_count=failures, preemption_count=preemptions)
        assert theirs == [v.task_retries(failures, preemptions, max_failure, max_preemption),
                          job_retries_text(status, limits), v.counted(failures, "retry"),
                          v.counted(preemptions, "attempt"), v.fraction(preemptions, failures, "task")]
        assert retries_text(task, limits).startswith(v.counted(failures, "failure"))
    assert v.counted(1, "attempt") == "1 attempt" and v.counted(2, "retry") == "2 retries"


def test_the_sidebar_restates_no_state_word_sentence_or_colour() -> None:
    """Only the generated module names the states' words, sentences, tones' colours and the bar's order."""
    generated = LABEXTENSION / "src" / "vocabulary.ts"
    sources = {path.name: path.read_text() for path in (LABEXTENSION / "src").glob("*.ts") if path != generated}
    colours = {part for colour in v.TONE_COLORS.values() for part in re.findall(r"--jp-[a-z0-9-]+", colour)}
    for name, look in v.STATES.items():
        words = {f"'{look.description}'", f"'{look.word}'"} if look.word != name else {f"'{look.description}'"}
        table_entry = re.compile(rf"^\s*(?:{name}: *[{{']|'{name}',?$)", re.MULTILINE)  # a table's key or item
        for file, text in sources.items():
            assert not any(word in text for word in words), (file, name)
            assert not table_entry.search(text), (file, name)
    for file, text in sources.items():
        assert not colours & set(re.findall(r"--jp-[a-z0-9-]+", text)), file  # (an icon's fill is no state's)
    css = "".join(path.read_text() for path in (LABEXTENSION / "style").glob("*.css") if path.name != "vocabulary.css")
    assert ".fj-Badge-" not in css and ".fj-Seg[data-state" not in css


def test_an_age_is_coarse_whole_units_cut_and_ago_says_just_now_at_first() -> None:
    cases = {0: "0 s", 999: "0 s", 1000: "1 s", 59_999: "59 s", 60_000: "1 min", 12 * 60_000 + 59_999: "12 min",
             3_600_000: "1 h", 86_399_999: "23 h", 2 * 86_400_000 + 5: "2 d", -5: "0 s"}
    assert {ms: v.age_ms(ms) for ms in cases} == cases
    assert v.ago_ms(v.JUST_NOW_MS - 1) == "just now" and v.ago_ms(v.JUST_NOW_MS) == "5 s ago"
    assert v.ago_ms(4 * 60_000 + 30_000) == "4 min ago"
    assert [unit for _, unit in v.AGE_UNITS] == ["d", "h", "min", "s"]
    assert [length for length, _ in v.AGE_UNITS] == sorted((length for length, _ in v.AGE_UNITS), reverse=True)


def test_cpu_reads_in_cores_with_two_decimals_at_most() -> None:
    cases = {0: "0 cores", 4: "0 cores", 5: "0.01 cores", 750: "0.75 cores", 999: "1 core", 1000: "1 core",
             1004: "1 core", 1005: "1.01 cores", 1500: "1.5 cores", 12_000: "12 cores", -3: "0 cores"}
    assert {millicores: v.cores(millicores) for millicores in cases} == cases


def test_a_worker_or_scale_group_status_reads_as_iris_names_it_in_a_known_tone() -> None:
    assert set(v.STATUS_TONES.values()) <= set(v.TONE_COLORS)
    assert v.status_look("at_max_slices") == ("at max slices", "warning")
    assert v.status_look(v.NOT_LISTED) == ("not listed", v.OTHER_TONE)
    assert v.status_look("some_new_status") == ("some new status", v.OTHER_TONE)
