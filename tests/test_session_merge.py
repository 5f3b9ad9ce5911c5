"""Merging every host's result into what the notebook shows: ipyparallel's groupings, per-host
prefixes, which hosts' rich outputs and values are shown, and failures (a host's exception, a lost
host) — on hand-made results, then on real host processes, one of them killed."""

from __future__ import annotations

from pathlib import Path

import pytest

from fray_jupyter.session.merge import HostLost, HostReply, LinePrefixer, LiveOutputs, MergeOptions, merge
from fray_jupyter.session.outputs import CellResult, Display, Output, RemoteError, Stream
from fray_jupyter.session.words import CellRun, loss_text
from tests.session_hosts import HostGone, hosts, on_every, pulled, wait_until


def display(name: str) -> Display:
    return Display({"text/plain": name})


def result(host: int, *outputs: Output, value: str | None = None, error: RemoteError | None = None) -> CellResult:
    return CellResult("c1", host, outputs, None if value is None else display(value), error, 0.0, 1.0)


def error(message: str, kind: str = "ValueError") -> RemoteError:
    return RemoteError(kind, message, (), f"Traceback (most recent call last):\n  File \"<cell c1>\"\n{kind}: {message}\n")


def shown(outputs: tuple[Output, ...]) -> list[str]:
    """Outputs as short strings: ``stdout:text``, ``stderr:text``, ``rich:name@host``."""
    return [f"{out.name}:{out.text}" if isinstance(out, Stream) else f"rich:{out.data['text/plain']}@{out.metadata['host']}"
            for out in outputs]


TWO_HOSTS: dict[int, HostReply] = {
    0: result(0, Stream("stdout", "a0\n"), display("fig0-1"), Stream("stderr", "w0\n"), display("fig0-2"),
              Stream("stdout", "b0\n"), value="v0"),
    1: result(1, Stream("stdout", "a1\n"), display("fig1-1"), Stream("stderr", "w1\n"), display("fig1-2"), value="v1"),
}


def test_type_groups_stdout_then_stderr_then_rich_outputs_from_host_0() -> None:
    merged = merge(TWO_HOSTS)
    assert shown(merged.outputs) == ["stdout:[host 0] a0\n[host 0] b0\n[host 1] a1\n", "stderr:[host 0] w0\n[host 1] w1\n",
                                     "rich:fig0-1@0", "rich:fig0-2@0"]
    assert [(v.host, v.value.data["text/plain"]) for v in merged.values] == [(0, "v0")]
    assert merged.failure is None and merged.hosts == (0, 1)


def test_engine_keeps_each_hosts_own_order_host_by_host() -> None:
    merged = merge(TWO_HOSTS, MergeOptions(group_outputs="engine", rich_from="all"))
    assert shown(merged.outputs) == [
        "stdout:[host 0] a0\n[host 0]\n", "rich:fig0-1@0", "stderr:[host 0] w0\n", "stdout:[host 0]\n", "rich:fig0-2@0",
        "stdout:[host 0] b0\n[host 1] a1\n[host 1]\n", "rich:fig1-1@1", "stderr:[host 1] w1\n", "stdout:[host 1]\n",
        "rich:fig1-2@1"]


def test_order_collates_the_rich_outputs_step_by_step() -> None:
    merged = merge(TWO_HOSTS, MergeOptions(group_outputs="order", rich_from="all", values_from="all"))
    assert shown(merged.outputs)[2:] == ["stdout:[host 0]\n", "rich:fig0-1@0", "stdout:[host 1]\n", "rich:fig1-1@1",
                                         "stdout:[host 0]\n", "rich:fig0-2@0", "stdout:[host 1]\n", "rich:fig1-2@1"]
    assert [v.host for v in merged.values] == [0, 1]


def test_type_with_every_hosts_rich_outputs_heads_each_hosts_block() -> None:
    merged = merge(TWO_HOSTS, MergeOptions(rich_from="all"))
    assert shown(merged.outputs)[2:] == ["stdout:[host 0]\n", "rich:fig0-1@0", "rich:fig0-2@0",
                                         "stdout:[host 1]\n", "rich:fig1-1@1", "rich:fig1-2@1"]


def test_one_other_host_can_be_chosen_for_rich_outputs_and_the_value() -> None:
    merged = merge(TWO_HOSTS, MergeOptions(rich_from=1, values_from=1))
    assert shown(merged.outputs)[2:] == ["rich:fig1-1@1", "rich:fig1-2@1"]
    assert [v.host for v in merged.values] == [1]


def test_a_one_host_session_has_no_prefixes() -> None:
    merged = merge({0: result(0, Stream("stdout", "plain\n"), display("fig"))})
    assert shown(merged.outputs) == ["stdout:plain\n", "rich:fig@0"]


def test_prefixes_follow_lines_across_chunks() -> None:
    prefixer = LinePrefixer(prefixed=True)
    assert prefixer.feed(2, "stdout", "progress 1") == "[host 2] progress 1"
    assert prefixer.feed(2, "stdout", "0%\nnext\n") == "0%\n[host 2] next\n"
    assert prefixer.feed(2, "stderr", "warn") == "[host 2] warn"  # each stream keeps its own line
    assert prefixer.feed(3, "stdout", "other\n") == "[host 3] other\n"


def test_live_outputs_show_text_from_every_host_and_rich_outputs_from_the_chosen() -> None:
    live = LiveOutputs([0, 1])
    assert shown(live.feed(1, [Stream("stdout", "step 1\n"), display("fig1")])) == ["stdout:[host 1] step 1\n"]
    assert shown(live.feed(0, [display("fig0"), Stream("stderr", "warn\n")])) == ["rich:fig0@0", "stderr:[host 0] warn\n"]
    every = LiveOutputs([0, 1], MergeOptions(rich_from="all"))
    assert shown(every.feed(0, [display("a"), display("b")])) == ["stdout:[host 0]\n", "rich:a@0", "rich:b@0"]
    assert shown(every.feed(0, [display("c")])) == ["rich:c@0"]  # the same run goes on
    assert shown(every.feed(1, [display("d")])) == ["stdout:[host 1]\n", "rich:d@1"]


def test_a_streamed_cell_leaves_only_values_and_the_failure_to_show() -> None:
    merged = merge({0: result(0, Stream("stdout", "x\n"), value="v0", error=error("late"))}, streamed=True)
    assert merged.outputs == () and [v.host for v in merged.values] == [0] and merged.failure is not None


def test_bad_options_are_named() -> None:
    with pytest.raises(ValueError, match="--group-outputs 'host' is not one of type, engine, order"):
        MergeOptions(group_outputs="host")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rich_from -1 is not a host index"):
        MergeOptions(rich_from=-1)
    with pytest.raises(ValueError, match="values_from 'some' is not a host index"):
        MergeOptions(values_from="some")  # type: ignore[arg-type]


def test_an_exception_on_any_host_fails_the_cell_with_each_hosts_traceback() -> None:
    replies: dict[int, HostReply] = {0: result(0, Stream("stdout", "ok\n")), 1: result(1, error=error("bad 1")),
                                     2: result(2, error=error("bad 2", "KeyError"))}
    failure = merge(replies).failure
    assert failure is not None and failure.ename == "RemoteErrors"
    assert failure.evalue == "host 1: ValueError: bad 1; host 2: KeyError: bad 2"
    assert failure.traceback[0] == "[host 1]" and "ValueError: bad 1" in failure.traceback
    assert failure.traceback.index("[host 2]") < failure.traceback.index("KeyError: bad 2")


def test_the_same_traceback_on_several_hosts_is_shown_once_under_their_names() -> None:
    same = error("division by zero", "ZeroDivisionError")
    merged = merge({host: result(host, Stream("stdout", "before\n"), error=same) for host in range(3)})
    assert merged.failure is not None and merged.failure.ename == "ZeroDivisionError"
    assert merged.failure.evalue == "hosts 0, 1, 2: ZeroDivisionError: division by zero"
    assert merged.failure.traceback.count("[hosts 0, 1, 2]") == 1
    assert shown(merged.outputs) == ["stdout:[host 0] before\n[host 1] before\n[host 2] before\n"]  # still shown


def test_a_lost_host_fails_the_cell_saying_lost() -> None:
    merged = merge({0: result(0, Stream("stdout", "ok\n")), 1: HostLost(1, "killed by signal 9 (SIGKILL)")})
    assert merged.failure is not None and merged.failure.ename == "SessionLost"
    assert merged.failure.evalue == "host 1: lost: killed by signal 9 (SIGKILL)"
    assert merged.failure.traceback == ("[host 1] lost: killed by signal 9 (SIGKILL)",)
    assert shown(merged.outputs) == ["stdout:[host 0] ok\n"]


# -- real hosts ---------------------------------------------------------------------------------------
def test_real_hosts_stream_live_by_polling_reads(tmp_path: Path) -> None:
    """Two hosts print, wait, print again: their first lines are shown before the cell ends."""
    go = tmp_path / "go"
    source = (f"import os, time\nprint('first')\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.01)\n"
              "print('second')")
    with hosts(2, tmp_path) as gang:
        futures = on_every(gang, "execute", "live", source)
        live = LiveOutputs([0, 1])
        cursors = {0: 0, 1: 0}
        text = {0: "", 1: ""}  # what was shown of each host (a print's text and newline may come apart)

        def shown_so_far(expected: str) -> bool:
            for host in gang:
                chunks = host.call("read", "live", cursors[host.host], wait=0.5)
                cursors[host.host] = chunks.cursor
                text[host.host] += "".join(out.text for out in live.feed(host.host, chunks.outputs)
                                           if isinstance(out, Stream))
            return all(text[i] == expected.format(i=i) for i in (0, 1))

        wait_until(lambda: shown_so_far("[host {i}] first\n"), "both hosts' first lines are shown while the cell runs")
        assert not any(future.done() for future in futures)
        go.touch()
        replies = {host.host: future.result() for host, future in zip(gang, futures, strict=True)}
        wait_until(lambda: shown_so_far("[host {i}] first\n[host {i}] second\n"), "both hosts' last lines are shown")
        assert merge(replies, streamed=True).outputs == ()


def test_real_hosts_merge_and_a_killed_host_reads_as_lost_with_no_replay(tmp_path: Path) -> None:
    """Four host processes: a cell's outputs merge; one host that ignores interrupts is reported by
    the caller; killing it makes the merge say lost, and the words list the cells, replaying none."""
    with hosts(4, tmp_path) as gang:
        cells = [CellRun("c1", "count = entered = 0"), CellRun("c2", "count += 1\nprint('count', count)")]
        for cell in cells:
            replies = {host.host: future.result() for host, future in zip(gang, on_every(gang, "execute", cell.cell_id, cell.source),
                                                                          strict=True)}
        merged = merge(replies, MergeOptions(group_outputs="engine"))
        assert shown(merged.outputs) == ["stdout:" + "".join(f"[host {i}] count 1\n" for i in range(4))]
        # ``entered`` counts the cell's entries into its ``try``: the interrupt is sent once it is there
        # (a host says "running" before the cell's first line, where an interrupt would end it)
        stubborn = ("while True:\n    try:\n        entered += 1\n        while True:\n            pass\n"
                    "    except KeyboardInterrupt:\n        pass")
        future = gang[3].submit("execute", "c3", stubborn)
        wait_until(lambda: pulled(gang[3], "entered") == 1, "host 3 runs c3, inside its try")
        assert gang[3].call("interrupt", "c3").was_running
        wait_until(lambda: pulled(gang[3], "entered") == 2, "host 3 caught the interrupt and still runs c3")
        assert gang[3].call("status").running == "c3"
        gang[3].kill()
        with pytest.raises(HostGone) as gone:
            future.result()
        lost = gone.value.lost
        assert lost == HostLost(3, "killed by signal 9 (SIGKILL)")
        with pytest.raises(HostGone):
            gang[3].call("status")
        failure = merge({0: replies[0], 3: lost}).failure
        assert failure is not None and failure.evalue == "host 3: lost: killed by signal 9 (SIGKILL)"
        words = loss_text("train", f"host 3 {lost.reason}", cells)
        assert words.startswith("session train lost: host 3 killed by signal 9 (SIGKILL)\n")
        assert "[c2] count += 1 …" in words and "%fray session restart train" in words
        assert gang[0].call("status").cells_run == 2  # nothing was replayed on the hosts left
