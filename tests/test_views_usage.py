"""``views.usage`` on data: the task table's MEM / PEAK MEM / CPU cells and memory bar, the warning
of a peak over the request, totals, the timeline newest first and escaped, and the ages; and the
``iris.usage`` words they show."""

from __future__ import annotations

import re

from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.usage import Sample, TaskEvent, TaskUsage, Totals
from fray_jupyter.views import job as job_view
from fray_jupyter.views import usage as view
from fray_jupyter.vocabulary import TONE_COLORS

XSS = "<img src=x onerror=alert(1)>"


def _usage(now_mb: int, peak_mb: int, requested_mb: int, cpu: int = 750) -> TaskUsage:
    return TaskUsage("/u/j/0", (Sample(1, 0, 0, 10, 10, 0), Sample(2, 0, cpu, now_mb, peak_mb, 0)), 1000, requested_mb)


def test_a_peak_over_the_request_is_warned_of_with_the_numbers() -> None:
    over = _usage(300, 312, 256)
    assert over.over_request
    assert over.memory_warning() == ("peak 312 MiB is over the 256 MiB requested: "
                                     "a cluster would OOM-kill this task at 256 MiB")
    html = view.warnings_html({"/u/j/0": over, "/u/j/1": _usage(100, 200, 256)}, ["/u/j/0", "/u/j/1"])
    assert html.count("fray-usage-warning\"") == 1 and "task 0: peak 312 MiB" in html
    for within in (_usage(100, 256, 256), _usage(600, 900, 0)):  # at the request, or none made
        assert not within.over_request and within.memory_warning() == ""
    assert view.warnings_html({"/u/j/0": _usage(100, 200, 256)}, ["/u/j/0"]) == ""


def test_the_cells_show_now_peak_and_cpu_and_the_bar_is_drawn_against_the_request() -> None:
    cells = view.usage_cells(_usage(128, 512, 256, cpu=1500))
    assert cells[:3] == ['<td class="fray-mem">128 MiB</td>', '<td class="fray-peak">512 MiB</td>',
                         '<td class="fray-cpu">1.5 cores</td>']
    bar = cells[3]
    assert re.search(r'fray-mem-peak" style="width:100.0%;background:' + re.escape(TONE_COLORS["warning"]), bar)
    assert f'fray-mem-now" style="width:50.0%;background:{TONE_COLORS["active"]}' in bar
    assert "now 128 MiB, peak 512 MiB of 256 MiB requested" in bar
    assert f'width:100.0%;background:{TONE_COLORS["warning"]}"' in view.memory_bar_html(_usage(300, 312, 256))
    within = view.memory_bar_html(_usage(64, 128, 256))
    assert 'width:50.0%;background:' + TONE_COLORS["neutral"] in within and "width:25.0%" in within
    assert view.memory_bar_html(_usage(64, 128, 0)) == ""  # no request: no bar
    assert view.usage_cells(None)[0] == f'<td class="fray-dim">{view.NONE}</td>'
    assert view.usage_cells(TaskUsage("/u/j/0", (), 1000, 256))[:3] == [f'<td class="fray-dim">{view.NONE}</td>'] * 3


def test_the_task_table_gets_iris_s_columns_and_the_silence_marker() -> None:
    task = J.TaskStatus(task_id="/u/j/0", state=J.TASK_STATE_RUNNING)
    plain = job_view.tasks_html([task])
    assert "MEM" not in plain
    table = job_view.tasks_html([task], {"/u/j/0": _usage(300, 312, 256)}, {"/u/j/0": 12 * 60_000 + 5000})
    assert "<th>MEM</th><th>PEAK MEM</th><th>CPU</th><th>memory / requested</th>" in table
    assert "<td>no output for 12 min</td>" in table.replace(' class="fray-dim fray-task-note"', "")
    failed = J.TaskStatus(task_id="/u/j/0", state=J.TASK_STATE_RUNNING, error="boom")
    assert "boom" in job_view.tasks_html([failed], {}, {"/u/j/0": 60_000}) and "no output" not in \
        job_view.tasks_html([failed], {}, {"/u/j/0": 60_000})


def test_totals_read_as_durations_and_a_size() -> None:
    assert view.totals_words(Totals(0.5, 1.25, 2048, 3)) == "CPU 30m 00s, wall 1h 15m, peak 2 GiB over 3 tasks"
    assert view.totals_html(Totals(0.0, 0.0, 0, 0), tree=False) == ""
    assert "job tree used:" in view.totals_html(Totals(0.0, 0.001, 0, 1), tree=True)


def test_the_timeline_is_newest_first_escaped_and_bounded() -> None:
    now = 10_000_000
    entries = [TaskEvent("/u/j/0", 0, now - 240_000, "Warning", "JobFinalizedTaskKilled", f"Terminated {XSS}",
                         "iris/controller", 2),
               TaskEvent("/u/j/0", 0, now - 600_000, "Normal", "Submitted", "task submitted", "task state", 1)]
    html = view.timeline_html(entries, now)
    assert "<img" not in html and "&lt;img" in html and "(×2)" in html
    assert html.index("4 min ago") < html.index("10 min ago")
    assert f'style="color:{TONE_COLORS["warning"]}"' in html.split("Submitted")[0]
    many = view.timeline_html(entries * 30, now, limit=5)
    assert many.count('class="fray-event"') == 5 and "and 55 older events" in many
    assert view.timeline_html([], now) == ""


def test_ages_of_a_status_text_and_a_silence() -> None:
    assert view.reported_words(1_000, 1_000 + 4 * 60_000 + 30_000) == "reported 4 min ago"
    assert view.reported_words(1_000, 2_000) == "reported just now"
    assert view.reported_words(0, 2_000) == ""
    assert view.silence_words(12 * 60_000) == "no output for 12 min"
    html = job_view.status_text_html("/u/j/0", "step **10**", "reported 4 min ago")
    assert "· reported 4 min ago" in html
