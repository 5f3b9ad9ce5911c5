"""Sessions end to end on the embedded controller and the genuine Iris twin: one job of two real host processes, each serving
its engine as an actor, driven from the kernel's ``Session``. State kept across cells, every
host's output live, both tracebacks, an interrupt of a busy loop on both hosts (by the kernel's
own ``KeyboardInterrupt``), push and pull of 100 MB, loss said and never replayed, stop and
process exit leaving no job."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from fray_jupyter.client import FrayClient
from fray_jupyter.iris.states import is_job_finished
from fray_jupyter.resources.config import ResourceConfig
from fray_jupyter.session.outputs import Output, Stream
from fray_jupyter.session.session import Session, SessionLost
from tests.controller_harness import ControllerProcess, start_controller, stop_quietly
from tests.real_iris import real_iris_controller
from tests.session_hosts import interrupt_button, wait_until

USER = "session-test"
SMALL = ResourceConfig(cpu=0.5, ram="256m", disk="1g")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    # tasks see this checkout (PYTHONPATH) as a kernel's installed fray-jupyter
    started = start_controller(tmp_path_factory.mktemp("embedded"), "--slots", "8", "--pass-env", "PYTHONPATH")
    try:
        yield started
    finally:
        stop_quietly(started)


@pytest.fixture(scope="module")
def embedded(controller: ControllerProcess) -> Iterator[FrayClient]:
    with FrayClient(controller.info.url, controller.info.token) as opened:
        yield opened


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrayClient]:
    with real_iris_controller(tmp_path_factory.mktemp("twin")) as url, FrayClient(url) as opened:
        yield opened


@pytest.fixture(scope="module", params=["embedded", "twin"])
def client(request: pytest.FixtureRequest) -> FrayClient:
    """Each rule holds on the embedded controller and on the genuine Iris twin."""
    chosen: FrayClient = request.getfixturevalue(request.param)
    return chosen


def _start(client: FrayClient, hosts: int = 2) -> Session:
    return Session.start(f"s-{uuid.uuid4().hex[:6]}", SMALL, client=client, replicas=hosts, user=USER).wait_ready()


@pytest.fixture(scope="module")
def session(client: FrayClient) -> Iterator[Session]:
    started = _start(client)
    try:
        yield started
    finally:
        started.stop()


def _text(outputs: Sequence[Output]) -> str:
    return "".join(o.text for o in outputs if isinstance(o, Stream))


def test_state_is_kept_across_cells_and_every_host_speaks(session: Session) -> None:
    seen: list[Output] = []
    first = session.run("import os\nx = 41\nprint('pid', os.getpid())", on_output=seen.extend)
    assert first.failure is None
    statuses = session.status()
    assert [status.host for status in statuses] == [0, 1]  # host N is task N, whichever registered first
    pids = {status.pid for status in statuses}
    assert len(pids) == 2
    text = _text(seen)
    assert all(f"[host {status.host}] pid {status.pid}" in text for status in statuses)
    assert {line.split("]")[0] for line in text.splitlines()} == {"[host 0", "[host 1"}
    second = session.run("x + 1")
    assert [(v.host, v.value.data["text/plain"]) for v in second.values] == [(0, "42")]
    every = session.run("x * 2", values_from="all")
    assert [v.host for v in every.values] == [0, 1]


def test_an_exception_fails_the_cell_with_each_hosts_traceback(session: Session) -> None:
    merged = session.run("import os\nraise ValueError(f'from {os.getpid()}')")
    assert merged.failure is not None
    assert [host for host, _ in merged.failure.errors] == [0, 1]
    assert all("ValueError: from" in error.traceback for _, error in merged.failure.errors)
    assert "[host 0]" in merged.failure.traceback and "[host 1]" in merged.failure.traceback
    assert session.run("1").failure is None  # the session stays


def test_the_kernels_interrupt_stops_a_busy_loop_on_every_host_and_state_survives(session: Session) -> None:
    session.run("y = 'kept'")
    with interrupt_button(lambda: all(status.running for status in session.status()), "both hosts running the loop"):
        merged = session.run("while True: pass")
    assert merged.failure is not None
    assert [(host, error.type) for host, error in merged.failure.errors] == [(0, "KeyboardInterrupt"),
                                                                           (1, "KeyboardInterrupt")]
    assert session.run("y").values[0].value.data["text/plain"] == "'kept'"


def test_push_and_pull_a_100_mb_array(session: Session) -> None:
    numpy = pytest.importorskip("numpy")
    array = numpy.arange(100 * 1024 * 1024 // 8, dtype=numpy.float64)
    assert session.push({"big": array}) == ["big"]
    assert session.run("float(big.sum())", values_from="all").values[1].value.data["text/plain"] == repr(
        float(array.sum()))
    back = session.pull(["big"], host=1)["big"]
    assert back.nbytes == 100 * 1024 * 1024 and numpy.array_equal(back, array)


def test_a_jax_session_is_one_process_group_across_its_hosts(client: FrayClient) -> None:
    """``jax=True``: every host joins one JAX process group by Iris's ``initialize_jax`` before it
    serves, so a cell sees both processes and a collective spans them."""
    session = Session.start(f"jax-{uuid.uuid4().hex[:6]}", SMALL, client=client, replicas=2, user=USER,
                            jax=True).wait_ready()
    try:
        assert sorted(session.request.ports) == ["actor", "jax"]
        merged = session.run("import jax\nfrom jax.experimental import multihost_utils\n"
                             "ranks = multihost_utils.process_allgather(jax.numpy.array([jax.process_index()]))\n"
                             "jax.process_index(), jax.process_count(), ranks.ravel().tolist()", values_from="all")
        assert merged.failure is None, merged.failure
        assert [(v.host, v.value.data["text/plain"]) for v in merged.values] == [(0, "(0, 2, [0, 1])"),
                                                                                 (1, "(1, 2, [0, 1])")]
    finally:
        session.stop()


def test_a_killed_host_makes_the_session_lost_and_nothing_is_replayed(client: FrayClient) -> None:
    lost = _start(client)
    try:
        lost.run("x = 1")
        os.kill(lost.status()[1].pid, signal.SIGKILL)
        merged = lost.run("x")
        assert merged.failure is not None and 1 in [r.host for r in merged.failure.lost]  # host 0 may go with it
        assert "[host 1] lost: host 1" in "\n".join(merged.failure.traceback)
        with pytest.raises(SessionLost) as said:
            lost.run("x")
        assert said.value.args[0].startswith(f"session {lost.name} lost: host 1")
        assert "x = 1" in said.value.args[0] and "%fray session restart" in said.value.args[0]
        wait_until(lambda: is_job_finished(client.state([lost.job_id])[lost.job_id]), "the lost gang ended")
        lost.restart().wait_ready()
        fresh = lost.run("x")  # new processes: x is not there, because nothing was run again
        assert fresh.failure is not None and {e.type for _, e in fresh.failure.errors} == {"NameError"}
    finally:
        lost.stop()


def test_a_session_waiting_for_capacity_says_iris_s_reason_until_its_hosts_serve(embedded: FrayClient) -> None:
    """No launch timeout: the wait says the job's pending reason for as long as it pends, then the hosts."""
    from fray_jupyter.planning import plan
    from fray_jupyter.resources.entrypoint import Entrypoint
    from fray_jupyter.resources.job import JobRequest

    blocker = embedded.submit(plan(JobRequest(name=f"hold-{uuid.uuid4().hex[:6]}", resources=SMALL, replicas=8,
                                              entrypoint=Entrypoint.from_binary("sleep", ["300"])), user=USER))
    said: list[str] = []
    waiting = Session.start(f"wait-{uuid.uuid4().hex[:6]}", SMALL, client=embedded, replicas=2, user=USER)
    waiter = threading.Thread(target=waiting.wait_ready, args=(said.append,), daemon=True)
    try:
        waiter.start()
        wait_until(lambda: any(": pending: " in line for line in said), "the session said it is pending")
        assert not waiting.ready
        embedded.terminate(blocker)
        waiter.join(timeout=120)
        assert waiting.ready and said[-1].endswith(f"2/2 hosts ready (job {waiting.job_id})")
        reason = re.compile(r"pending: waiting for a free task slot: 0 of 8 slots free, \d job\(s\) queued; start the "
                            r"controller with more --slots to run more tasks at once")  # the fixture's session may hold 2
        assert any(reason.search(line) for line in said), said
    finally:
        embedded.terminate(blocker)
        waiting.stop()


def test_stop_leaves_no_job_running(client: FrayClient) -> None:
    stopped = _start(client, hosts=1)
    stopped.stop()
    assert is_job_finished(client.state([stopped.job_id])[stopped.job_id])
    with pytest.raises(Exception, match="is stopped"):
        stopped.run("1")


def test_a_kernel_that_exits_stops_its_sessions(client: FrayClient, request: pytest.FixtureRequest) -> None:
    embedded = request.node.callspec.params["client"] == "embedded"
    token = request.getfixturevalue("controller").info.token if embedded else None  # the twin takes none
    program = ("from fray_jupyter.client import FrayClient\nfrom fray_jupyter.resources.config import "
               "ResourceConfig\nfrom fray_jupyter.session.session import Session\n"
               f"client = FrayClient({client.url!r}, {token!r})\n"
               "s = Session.start('exiting', ResourceConfig(cpu=0.5, ram='256m', disk='1g'), replicas=1, "
               f"user={USER!r}, client=client).wait_ready()\nprint(s.job_id)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip().splitlines()[-1]
    wait_until(lambda: is_job_finished(client.state([job_id])[job_id]), "the exited kernel's session ended")


def test_an_idle_session_releases_its_slice_and_says_so(client: FrayClient) -> None:
    idle = Session.start(f"idle-{uuid.uuid4().hex[:6]}", SMALL, client=client, replicas=1, idle_timeout=0.5,
                         user=USER)
    try:
        wait_until(lambda: is_job_finished(client.state([idle.job_id])[idle.job_id]), "the idle host let go")
        with pytest.raises(SessionLost, match="released the slice after 0.5 s idle"):
            idle.wait_ready()
    finally:
        idle.stop()


def test_a_host_that_ignores_the_interrupt_is_named_and_the_session_waits_for_the_users_choice(
        client: FrayClient) -> None:
    stuck = _start(client, hosts=1)
    try:
        cell = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass\n"
        said: list[Output] = []
        with interrupt_button(lambda: all(status.running for status in stuck.status()), "the host running the loop"):
            merged = stuck.run(cell, interrupt_bound=0.5, on_output=said.extend)
        assert merged.failure is None and merged.hosts == ()
        assert f"session {stuck.name}: host 0 did not stop within 0.5 s" in _text(said)
        assert stuck.lost is None and stuck.status()[0].running  # nothing escalated by itself
    finally:
        stuck.stop()
