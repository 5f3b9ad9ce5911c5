"""What a session says on loss and on an interrupt that does not take: the reason, the cells run,
the offer of a restart, and never a replay."""

from __future__ import annotations

import signal

from fray_jupyter.session.words import (
    SOURCE_PREVIEW_CHARS,
    CellRun,
    exit_reason,
    loss_text,
    restart_offer,
    stuck_text,
)


def test_loss_says_lost_lists_the_cells_and_offers_a_restart_not_a_replay() -> None:
    cells = [CellRun("1", "import jax\n"), CellRun("2", "\n# load the weights\nparams = load()\nstep = 0"),
             CellRun("3", "x" * (SOURCE_PREVIEW_CHARS + 10))]
    words = loss_text("train", "preempted", cells).splitlines()
    assert words[0] == "session train lost: preempted"
    assert "every variable, import and array" in words[1]
    assert words[2] == "Cells run since it started (3; none is re-run by itself):"
    assert words[3:6] == ["  [1] import jax", "  [2] # load the weights …", f"  [3] {'x' * SOURCE_PREVIEW_CHARS} …"]
    assert words[6].startswith("To go on: %fray session restart train (new processes, the same slice request)")


def test_loss_before_any_cell_says_so() -> None:
    assert "No cell had run on it." in loss_text("idle", "host 0 killed by signal 9 (SIGKILL)", [])


def test_a_host_processs_end_is_said_by_code_or_signal() -> None:
    assert exit_reason(0) == "exited with code 0"
    assert exit_reason(3) == "exited with code 3"
    assert exit_reason(-signal.SIGKILL) == "killed by signal 9 (SIGKILL)"
    assert exit_reason(-200) == "killed by signal 200"


def test_hosts_that_did_not_stop_are_named_with_the_choice_left_to_the_user() -> None:
    words = stuck_text("train", [1, 3], 5.0)
    assert words.startswith("session train: hosts 1, 3 did not stop within 5 s of the interrupt")
    assert restart_offer("train") in words and "their state is lost" in words
    assert stuck_text("train", [2], 0.5).startswith("session train: host 2 did not stop within 0.5 s")
