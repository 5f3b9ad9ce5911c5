"""Fault suite: real processes on 127.0.0.1 that are killed and restarted while they work.

* The controller is ``kill -9``-ed at seeded random points while two clients (one per transport)
  hammer ``LaunchJob`` with KEEP, a third terminates jobs, and tasks run; it comes back on the same
  state dir, ports and token while the clients' calls are still retrying. Every job a client got
  an answer for is listed, once; no call fails (the retry deadline covers the restart); nothing that
  ran before the kill is left RUNNING (WORKER_FAILED with the reason instead); a terminated job
  stays KILLED; log lines read before the kill are still there.
* A controller that never comes back (or is frozen) fails a call within its deadline.
* A kernel restart and a Jupyter server restart mid-job: the job and its logs stay visible.
* The state dir reaches its size cap while jobs keep writing: the files of the oldest finished
  jobs go, the state dir ends under its cap, and the newest jobs and every job record stay.
* After a crash the runtime file names a pid that now belongs to an unrelated live process (as
  after a reboot): discovery does not trust it, starts a new controller, and the history is there.
* ``kill -9`` right after a running job was replaced (its task still ignoring SIGTERM): after the
  restart the old task's processes are gone, and the job is the replacement, whole, once.
* A running job is replaced (RECREATE, its task ignoring SIGTERM) while another process follows its
  logs by cursor, over each transport with the token: that follower gets the replacement's lines
  after the cursor it holds, and a fresh process reads the replacement's lines and none of the old.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from fray_jupyter.client import ControllerUnreachable, FrayClient, FrayError
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.planning import Plan, plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from tests.controller_harness import launch_request, pid_alive, start_controller, stop_quietly
from tests.jupyter_isolation import isolated_jupyter
from tests.waiting import gives_up, until

C = controller_pb2.Controller
J = job_pb2
SEED = 20261129
ROUNDS = 4
SLOTS = 3
TOKEN = "fault-suite-token"
USER = "fault"
RESTART_REASON = "controller restarted while the task was running"
LONG = "echo started-$IRIS_TASK_ID; sleep 30"
QUICK = "echo quick-$IRIS_TASK_ID"
TERMINAL_TASK_STATES = {J.TASK_STATE_SUCCEEDED, J.TASK_STATE_FAILED, J.TASK_STATE_KILLED, J.TASK_STATE_WORKER_FAILED,
                        J.TASK_STATE_UNSCHEDULABLE, J.TASK_STATE_PREEMPTED, J.TASK_STATE_COSCHED_FAILED}
TERMINAL_JOB_STATES = {J.JOB_STATE_SUCCEEDED, J.JOB_STATE_FAILED, J.JOB_STATE_KILLED, J.JOB_STATE_WORKER_FAILED,
                       J.JOB_STATE_UNSCHEDULABLE}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def job_plan(name: str, command: str) -> Plan:
    job = JobRequest(name=name, entrypoint=Entrypoint.from_binary("sh", ["-c", command]),
                     resources=ResourceConfig(cpu=1, ram="256m", disk="1g"))
    return plan(job, user=USER)


def now_ms() -> int:
    return int(time.time() * 1000)


# -- kill -9 under load ---------------------------------------------------------------------------
@dataclass
class Call:
    """One client call: when it was sent and answered (monotonic), and what it was about."""

    verb: str
    job_id: str
    started: float
    answered: float
    state: int = 0  # TerminateJob: the job's state right after it was answered


@dataclass
class Ledger:
    """What the clients saw; shared by the load threads (list appends are atomic)."""

    attempted: set[str] = field(default_factory=set)
    launched: list[Call] = field(default_factory=list)
    terminated: list[Call] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def acked_ids(self) -> set[str]:
        return {call.job_id for call in self.launched}


def _launcher(client: FrayClient, prefix: str, ledger: Ledger, stop: threading.Event, rng: random.Random) -> None:
    index = 0
    while not stop.is_set():
        long = rng.random() < 0.7
        name = f"{prefix}-{index}-{'long' if long else 'quick'}"
        index += 1
        job = job_plan(name, LONG if long else QUICK)
        ledger.attempted.add(job.job_id)
        started = time.monotonic()
        try:
            job_id = client.submit(job)
        except FrayError as error:
            ledger.errors.append(f"LaunchJob {job.job_id}: {error}")
            return
        ledger.launched.append(Call("launch", job_id, started, time.monotonic()))
        if job_id != job.job_id:
            ledger.errors.append(f"LaunchJob {job.job_id} answered {job_id}")
        time.sleep(rng.uniform(0.0, 0.02))


def _terminator(client: FrayClient, ledger: Ledger, stop: threading.Event, rng: random.Random) -> None:
    done: set[str] = set()
    while not stop.is_set():
        candidates = sorted(ledger.acked_ids() - done)
        if candidates:
            job_id = rng.choice(candidates)
            started = time.monotonic()
            try:
                client.terminate(job_id)
                state = client.status(job_id).state
            except FrayError as error:
                ledger.errors.append(f"TerminateJob {job_id}: {error}")
                return
            done.add(job_id)
            ledger.terminated.append(Call("terminate", job_id, started, time.monotonic(), state))
        time.sleep(rng.uniform(0.01, 0.06))


def _all_jobs(client: FrayClient) -> list[J.JobStatus]:
    jobs: list[J.JobStatus] = []
    while True:
        page = client.list(user=None, scope="all", offset=len(jobs), limit=500)
        jobs += page.jobs
        if not page.has_more:
            return jobs


def _task_lines(client: FrayClient, job_id: str) -> dict[str, list[str]]:
    lines: dict[str, list[str]] = {}
    for entry in client.logs(job_id).entries:
        lines.setdefault(entry.key.rsplit(":", 1)[0], []).append(entry.data)
    return lines


@dataclass
class Snapshot:
    """Read just before the kill: RUNNING attempts of long jobs and every log line seen."""

    running: dict[tuple[str, int], int] = field(default_factory=dict)  # (job, task index) -> attempt id
    lines: dict[str, dict[str, list[str]]] = field(default_factory=dict)


def _snapshot(client: FrayClient, ledger: Ledger) -> Snapshot:
    snapshot = Snapshot()
    acked = ledger.acked_ids()
    for job in client.list(user=None, scope="all", state="running", limit=500).jobs:
        if job.job_id not in acked or not job.job_id.endswith("-long"):
            continue  # a launch still in flight may be retried (replacing the job); a quick job may finish
        for task in client.tasks(job.job_id):
            if task.state == J.TASK_STATE_RUNNING:
                snapshot.running[(job.job_id, int(task.task_id.rsplit("/", 1)[1]))] = task.current_attempt_id
        snapshot.lines[job.job_id] = _task_lines(client, job.job_id)
    return snapshot


def _check_round(client: FrayClient, ledger: Ledger, snapshot: Snapshot, kill_ms: int,
                 restart_ms: int, restart_began: float, restart_ready: float) -> int:
    """The round's promises (see the module docstring); returns how many calls rode through the restart."""
    assert not ledger.errors, ledger.errors[:5]
    jobs = _all_jobs(client)
    ids = [job.job_id for job in jobs]
    assert len(ids) == len(set(ids)), "a job is listed twice"
    listed = set(ids)
    missing = ledger.acked_ids() - listed
    assert not missing, f"acknowledged jobs lost: {sorted(missing)[:5]}"
    assert listed <= ledger.attempted, f"jobs nobody launched: {sorted(listed - ledger.attempted)[:5]}"

    by_id = {job.job_id: job for job in jobs}
    for call in ledger.terminated:
        state = by_id[call.job_id].state
        assert call.state in TERMINAL_JOB_STATES, f"{call.job_id} still {J.JobState.Name(call.state)} after TerminateJob"
        assert state == call.state, (f"{call.job_id} was {J.JobState.Name(call.state)} after TerminateJob, "
                                     f"{J.JobState.Name(state)} after the restart")
    for job in jobs:
        if job.state == J.JOB_STATE_WORKER_FAILED:
            assert RESTART_REASON in job.error, job
        for task in client.tasks(job.job_id):
            for attempt in task.attempts:
                started = attempt.started_at.epoch_ms
                if attempt.HasField("started_at") and started < kill_ms:
                    assert attempt.state in TERMINAL_TASK_STATES, (
                        f"{task.task_id} attempt {attempt.attempt_id} started before the kill and is "
                        f"{J.TaskState.Name(attempt.state)} after the restart")
                if attempt.state == J.TASK_STATE_WORKER_FAILED:
                    assert RESTART_REASON in attempt.error and attempt.is_worker_failure, attempt
            if task.state == J.TASK_STATE_RUNNING:
                assert task.attempts[-1].started_at.epoch_ms >= restart_ms, f"{task.task_id} RUNNING since before"
            index = int(task.task_id.rsplit("/", 1)[1])
            if (job.job_id, index) in snapshot.running:
                attempt_id = snapshot.running[(job.job_id, index)]
                before = next(a for a in task.attempts if a.attempt_id == attempt_id)
                assert before.state in (J.TASK_STATE_WORKER_FAILED, J.TASK_STATE_KILLED), (
                    f"{task.task_id}:{attempt_id} was RUNNING at the kill, now {J.TaskState.Name(before.state)}")
    for job_id, lines in snapshot.lines.items():
        after = _task_lines(client, job_id)
        for task_id, seen in lines.items():
            assert after.get(task_id, [])[: len(seen)] == seen, f"{task_id} lost log lines written before the kill"
    return sum(1 for call in ledger.launched + ledger.terminated
               if call.started < restart_began and call.answered > restart_ready)


def test_kill_9_at_random_points_under_load_loses_nothing(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    state = tmp_path / "state"
    args = ("--slots", str(SLOTS), "--port", str(free_port()), "--grpc-port", str(free_port()), "--token", TOKEN)
    controller = start_controller(state, *args)
    ledger = Ledger()
    clients = [FrayClient(controller.info.grpc_url, TOKEN), FrayClient(controller.info.url, TOKEN),
               FrayClient(controller.info.url, TOKEN)]
    checker = FrayClient(controller.info.grpc_url, TOKEN)
    rode_through: list[int] = []
    running_at_kill = lines_at_kill = 0
    try:
        for round_index in range(ROUNDS):
            stop = threading.Event()
            threads = [
                threading.Thread(target=_launcher, args=(clients[0], f"r{round_index}-grpc", ledger, stop,
                                                         random.Random(rng.random()))),
                threading.Thread(target=_launcher, args=(clients[1], f"r{round_index}-connect", ledger, stop,
                                                         random.Random(rng.random()))),
                threading.Thread(target=_terminator, args=(clients[2], ledger, stop, random.Random(rng.random()))),
            ]
            for thread in threads:
                thread.start()
            time.sleep(rng.uniform(0.3, 1.0))  # the random kill point: launches, runs and terminations in flight
            snapshot = _snapshot(checker, ledger)
            running_at_kill += len(snapshot.running)
            lines_at_kill += sum(len(lines) for task in snapshot.lines.values() for lines in task.values())
            kill_ms = now_ms()
            controller.stop(signal.SIGKILL)
            time.sleep(rng.uniform(0.3, 1.2))  # down: every client call now fails and is retried
            restart_ms, restart_began = now_ms(), time.monotonic()
            controller = start_controller(state, *args, runtime_file=controller.runtime_file)
            restart_ready = time.monotonic()
            time.sleep(0.4)
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
                assert not thread.is_alive(), "a client call hung"
            rode_through.append(_check_round(checker, ledger, snapshot, kill_ms, restart_ms,
                                             restart_began, restart_ready))
            assert ledger.launched and ledger.terminated
        print(f"jobs launched {len(ledger.launched)}, terminated {len(ledger.terminated)}; at the kills: "
              f"{running_at_kill} tasks running, {lines_at_kill} log lines; calls answered across each restart "
              f"{rode_through}")
        assert all(rode_through), f"calls retried across each restart: {rode_through}"
        assert running_at_kill and lines_at_kill
        assert "recovered={'killed_process_groups'" in controller.log()
    finally:
        for client in (*clients, checker):
            client.close()
        stop_quietly(controller)


# -- disk cap reached -----------------------------------------------------------------------------
def test_the_state_dir_reaching_its_cap_drops_the_oldest_finished_jobs_files(tmp_path: Path) -> None:
    from fray_jupyter.controller.manage import admin_call
    from fray_jupyter.controller.store.retention import tree_bytes

    cap = 6 * 2**20
    controller = start_controller(tmp_path / "state", "--slots", "2", "--max-state-size", str(cap),
                                  "--gc-interval", "0.3")
    try:
        wire = controller.wire()
        ids = []
        for index in range(8):  # 8 x 2 MiB of task output into a 6 MiB state dir
            ids.append(wire.launch(launch_request(f"big-{index}", "head -c 2097152 /dev/zero > blob")))
            assert wire.wait(ids[-1], TERMINAL_JOB_STATES).state == J.JOB_STATE_SUCCEEDED

        def settled() -> dict[str, Any] | None:
            # a collection's report lands after its deletions: the dir can be under its cap while the
            # last report on record is still the one before (made while a job ran, over the cap)
            figures = admin_call(controller.info, "status")
            last = figures["last_gc"]
            return figures if figures["state_bytes"] <= cap and last is not None and last["over_cap"] is False else None

        figures = until(settled, "the state dir under its cap")
        assert tree_bytes(tmp_path / "state") <= cap
        assert figures["jobs"] == 8 and figures["jobs_cleaned"] >= 4
        newest = wire.call("ListTasks", C.ListTasksRequest(job_id=ids[-1])).tasks[0]
        assert newest.state == J.TASK_STATE_SUCCEEDED
        listed = [job.job_id for job in wire.call("ListJobs", C.ListJobsRequest()).jobs]
        assert sorted(listed) == sorted(ids)  # records kept
        wire.close()
    finally:
        stop_quietly(controller)


# -- stale runtime file with a live unrelated pid --------------------------------------------------
def test_a_runtime_file_left_by_a_crash_naming_a_live_unrelated_pid(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from fray_jupyter.client import discovery
    from fray_jupyter.client.discovery import connect
    from fray_jupyter.runtime_file import read_runtime_file, runtime_file_path, write_runtime_file

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    for name in ("FRAY_CONTROLLER_URL", "FRAY_CONTROLLER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    already = len(discovery._started)
    unrelated = subprocess.Popen(["sleep", "60"])
    try:
        with connect() as client:
            job_id = client.submit(launch_request("before-crash", "echo remembered"))
            client.wait(job_id, timeout=20)
        crashed = read_runtime_file()
        assert crashed is not None
        os.kill(crashed.pid, signal.SIGKILL)
        discovery._started[-1].wait(timeout=10)
        # the pid the file names is alive again, as something else (here: the sleep)
        write_runtime_file(replace(crashed, pid=unrelated.pid), runtime_file_path())
        with connect() as client:
            assert client.url != crashed.url
            assert [entry.data for entry in client.logs(job_id).entries] == ["remembered"]
        info = read_runtime_file()
        assert info is not None and info.pid not in (crashed.pid, unrelated.pid) and info.instance != crashed.instance
    finally:
        unrelated.kill()
        unrelated.wait()
        for started in discovery._started[already:]:
            started.terminate()
            started.wait(timeout=20)


# -- kill -9 during a replacement ------------------------------------------------------------------
def test_kill_9_while_a_replaced_job_is_still_stopping(tmp_path: Path) -> None:
    controller = start_controller(tmp_path / "state", "--slots", "2")
    wire = controller.wire()
    job_id = wire.launch(launch_request("replaced", "trap '' TERM; echo pid=$$; echo old-line; sleep 60"))
    lines = until(lambda: [e.data for b in wire.call("GetTaskLogs", C.GetTaskLogsRequest(id=job_id)).task_logs
                           for e in b.logs], "the old task's first lines")
    old_pid = int(lines[0].removeprefix("pid="))
    wire.launch(launch_request("replaced", "echo new-line", replicas=2,
                               existing_job_policy=J.EXISTING_JOB_POLICY_RECREATE))
    controller.stop(signal.SIGKILL)  # inside the old task's SIGTERM grace
    wire.close()
    assert pid_alive(old_pid)
    restarted = start_controller(tmp_path / "state", "--slots", "2", runtime_file=controller.runtime_file)
    try:
        wire = restarted.wire()
        until(lambda: not pid_alive(old_pid), "the replaced job's task gone after the crash and the restart")
        listed = wire.call("ListJobs", C.ListJobsRequest()).jobs
        assert [job.job_id for job in listed] == [job_id]
        status = wire.call("GetJobStatus", C.GetJobStatusRequest(job_id=job_id))
        assert list(status.request.entrypoint.run_command.argv)[-1] == "echo new-line"
        assert len(wire.tasks(job_id)) == 2
        logs = [e.data for b in wire.call("GetTaskLogs", C.GetTaskLogsRequest(id=job_id)).task_logs for e in b.logs]
        assert "old-line" not in logs and not any(line.startswith("pid=") for line in logs)
        wire.close()
    finally:
        stop_quietly(restarted)


# -- a replaced job's logs, read from another process ----------------------------------------------
LOG_READER = """
import json, sys
from fray_jupyter.client import connect

url, token, job_id = sys.argv[1:4]
cursor = 0
with connect(url=url, token=token, timeout=10, retry_for=0) as client:
    for command in sys.stdin:  # "next": the lines after the cursor this process holds; "all": from 0
        page = client.logs(job_id, cursor=cursor if command.strip() == "next" else 0)
        cursor = page.cursor
        print(json.dumps({"lines": [e.data for e in page.entries], "seqs": [e.seq for e in page.entries],
                          "cursor": cursor}), flush=True)
"""


class LogReader:
    """Another process with its own client (URL and token), reading one job's logs on request."""

    def __init__(self, url: str, token: str, job_id: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", LOG_READER, url, token, job_id], text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def read(self, command: str = "next", timeout: float = 30) -> dict[str, Any]:
        """One answer; fails if the reader does not answer within ``timeout`` seconds."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        assert ready, f"logs() from another process did not answer within {timeout:g} s"
        line = self.process.stdout.readline()
        assert line, f"the log reader exited: {self.process.communicate()[1][-2000:]}"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


@pytest.mark.parametrize("transport", ["connect", "grpc"])
def test_the_logs_of_a_replacement_reach_another_process(tmp_path: Path, transport: str) -> None:
    controller = start_controller(tmp_path / "state", "--slots", "2", "--token", TOKEN, "--require-token")
    url = controller.info.url if transport == "connect" else controller.info.grpc_url
    follower = LogReader(url, TOKEN, "/u/rerun")
    try:
        with FrayClient(url, TOKEN) as client:
            job_id = client.submit(launch_request("rerun", "trap '' TERM; echo first-run; sleep 8", user="u"))
            def first_run() -> dict[str, Any] | None:
                read = follower.read()
                return read if "first-run" in read["lines"] else None

            seen = until(first_run, "the first run's line in the other process")
            assert client.status(job_id).state == J.JOB_STATE_RUNNING
            client.submit(launch_request("rerun", "ls; echo second-run", user="u",
                                         existing_job_policy=J.EXISTING_JOB_POLICY_RECREATE))
            assert client.wait(job_id, timeout=30).state == J.JOB_STATE_SUCCEEDED
        after = follower.read()  # the cursor it holds is the old job's
        assert after["lines"][-1:] == ["second-run"] and "first-run" not in after["lines"], after
        assert min(after["seqs"]) > seen["cursor"], f"a replacement line reused a seq the old job had: {after}"
        fresh = LogReader(url, TOKEN, job_id)
        try:
            everything = fresh.read("all")
        finally:
            fresh.close()
        assert everything["lines"] == after["lines"] and everything["cursor"] == after["cursor"]
    finally:
        follower.close()
        stop_quietly(controller)


# -- a controller that never comes back ------------------------------------------------------------
@pytest.mark.parametrize("transport", ["connect", "grpc"])
def test_a_killed_controller_that_never_comes_back_fails_within_the_retry_deadline(tmp_path: Path,
                                                                                 transport: str) -> None:
    controller = start_controller(tmp_path / "state", "--slots", "1")
    url = controller.info.url if transport == "connect" else controller.info.grpc_url
    with FrayClient(url, controller.info.token, timeout=5, retry_for=1.5) as client:
        client.list()
        controller.stop(signal.SIGKILL)
        started = time.monotonic()
        caught = gives_up(client.list)
        elapsed = time.monotonic() - started
    # it retried (backing off 50 ms, 100 ms, ...) until its deadline, then gave up
    assert elapsed >= 0.5, f"gave up after {elapsed:.2f} s (retry_for=1.5)"
    assert isinstance(caught, ControllerUnreachable), caught
    assert str(caught).startswith(f"cannot reach the Fray controller at {url}")
    assert "\n" not in str(caught)


@pytest.mark.parametrize("transport", ["connect", "grpc"])
def test_a_frozen_controller_fails_a_call_within_its_timeout(tmp_path: Path, transport: str) -> None:
    controller = start_controller(tmp_path / "state", "--slots", "1")
    url = controller.info.url if transport == "connect" else controller.info.grpc_url
    try:
        with FrayClient(url, controller.info.token, timeout=1.0, retry_for=1.0) as client:
            client.list()
            controller.process.send_signal(signal.SIGSTOP)
            caught = gives_up(client.list)
        assert isinstance(caught, FrayError) and caught.code == "deadline_exceeded" and url in str(caught), caught
    finally:
        controller.process.send_signal(signal.SIGCONT)
        controller.stop(signal.SIGKILL)


# -- kernel restart --------------------------------------------------------------------------------
def _run(kernel: Any, code: str, timeout: float = 60) -> tuple[str, list[dict[str, Any]]]:
    """Execute ``code``; (stdout, display/result data). Fails on an error in the kernel."""
    stdout: list[str] = []
    data: list[dict[str, Any]] = []
    errors: list[str] = []

    def on_message(message: dict[str, Any]) -> None:
        kind, content = message["msg_type"], message["content"]
        if kind == "stream" and content["name"] == "stdout":
            stdout.append(content["text"])
        elif kind in ("display_data", "execute_result"):
            data.append(content["data"])
        elif kind == "error":
            errors.append(f"{content['ename']}: {content['evalue']}")

    reply = kernel.execute_interactive(code, timeout=timeout, output_hook=on_message)
    assert reply["content"]["status"] == "ok", errors
    return "".join(stdout), data


def test_a_job_and_its_logs_outlive_a_kernel_restart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_client.manager import KernelManager

    monkeypatch.setenv("IRIS_USER", USER)
    with isolated_jupyter(tmp_path) as runtime:
        manager = KernelManager(kernel_name="python3")
        manager.start_kernel()
        kernel = manager.client()
        kernel.start_channels()
        try:
            kernel.wait_for_ready(timeout=60)
            _run(kernel, "%load_ext fray_jupyter")
            _run(kernel, "%%fray --name outlives-kernel\nprint('written before the restart', flush=True)\n"
                         "import time\ntime.sleep(60)\n")
            info = json.loads((runtime / "fray-controller.json").read_text())
            with FrayClient(info["url"], info["token"]) as client:
                job_id = f"/{USER}/outlives-kernel"
                until(lambda: any("written before" in entry.data for entry in client.logs(job_id).entries),
                      "the job's line logged", feed=client)
                old_pid = manager.provisioner.pid if manager.provisioner else None
                manager.restart_kernel(now=True)
                kernel.wait_for_ready(timeout=60)
                assert manager.provisioner is not None and manager.provisioner.pid != old_pid
                assert client.status(job_id).state == J.JOB_STATE_RUNNING  # the controller outlived the kernel

                _run(kernel, "%load_ext fray_jupyter")
                out, _ = _run(kernel, "%fray logs outlives-kernel")
                assert "[0] written before the restart" in out
                out, _ = _run(kernel, "panel = %fray status outlives-kernel\n"
                                      "print('state', panel.state, panel.job_id)")
                assert f"state running {job_id}" in out
                _, shown = _run(kernel, "%fray jobs --name outlives-kernel")
                assert any(job_id in item.get("text/plain", "") and "running" in item["text/plain"] for item in shown)
                client.terminate(job_id)
        finally:
            kernel.stop_channels()
            manager.shutdown_kernel(now=True)


# -- Jupyter server restart ------------------------------------------------------------------------
@dataclass
class JupyterServer:
    process: subprocess.Popen[bytes]
    url: str
    token: str

    def get(self, path: str, **params: Any) -> httpx.Response:
        return httpx.get(f"{self.url}/fray/{path}", params=params, timeout=30,
                         headers={"Authorization": f"token {self.token}"})


def _start_server(root: Path, port: int, token: str) -> JupyterServer:
    log = (root / "jupyter-server.log").open("ab")
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("jupyter")), "server", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--FrayServer.start_controller=False",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "JUPYTER_CONFIG_DIR": str(root / "config")},
        start_new_session=True)
    log.close()
    server = JupyterServer(process, f"http://127.0.0.1:{port}", token)

    def answering() -> bool:
        assert process.poll() is None, (root / "jupyter-server.log").read_text()[-3000:]
        try:
            return server.get("status").status_code == 200
        except httpx.TransportError:
            return False

    until(answering, "the Jupyter server answering")
    return server


def test_a_job_and_its_logs_outlive_a_jupyter_server_restart(tmp_path: Path) -> None:
    with isolated_jupyter(tmp_path) as runtime:
        controller = start_controller(tmp_path / "state", "--slots", "2", runtime_file=runtime / "fray-controller.json")
        server: JupyterServer | None = None
        try:
            with FrayClient(controller.info.url, controller.info.token) as client:
                job_id = client.submit(job_plan("outlives-server", "echo line-one; echo line-two; sleep 60"))
                port = free_port()

                def visible(server: JupyterServer) -> None:
                    def shown() -> list[dict[str, Any]] | None:
                        jobs: list[dict[str, Any]] = server.get("jobs", name="outlives-server").json()["jobs"]
                        logs = server.get(f"jobs/{quote(job_id, safe='')}/logs").json()["entries"]
                        return jobs if [job["job_id"] for job in jobs] == [job_id] and [
                            e["data"] for e in logs] == ["line-one", "line-two"] else None

                    jobs = until(shown, "the job and both its lines through the server", feed=client)
                    assert jobs[0]["state"] == "running"

                server = _start_server(tmp_path, port, "t0ken")
                visible(server)
                os.killpg(server.process.pid, signal.SIGKILL)  # a crash, not a clean shutdown
                server.process.wait(timeout=10)
                server = _start_server(tmp_path, port, "t0ken")
                visible(server)
                detail = server.get(f"jobs/{quote(job_id, safe='')}").json()
                assert detail["job"]["job_id"] == job_id and detail["tasks"][0]["state"] == "running"
                client.terminate(job_id)
        finally:
            if server is not None and server.process.poll() is None:
                os.killpg(server.process.pid, signal.SIGTERM)
                try:
                    server.process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(server.process.pid, signal.SIGKILL)
                    server.process.wait()
            stop_quietly(controller)
