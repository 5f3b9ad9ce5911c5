"""Test helpers for the embedded controller: start the real process, and call it over both
transports with minimal hand-written wire code (independent of ``fray_jupyter.client``)."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc
import httpx
from google.protobuf import json_format
from google.protobuf.message import Message

from fray_jupyter.controller.api.methods import METHODS, Method
from fray_jupyter.iris import arrow_ipc
from fray_jupyter.iris.proto import controller_pb2, finelog_stats_pb2, job_pb2
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.runtime_file import ControllerInfo, read_runtime_file
from tests.waiting import HANG_GUARD_S, until

C = controller_pb2.Controller
M = TypeVar("M", bound=Message)
_BY_NAME = {method.name: method for method in METHODS}


def status_text_rows(task_ids: list[str], attempts: list[int], details: list[str], summaries: list[str],
                     ts: list[int] | None = None) -> finelog_stats_pb2.WriteRowsRequest:
    """What a task's ``report_task_status_text`` sends (Iris's ``TaskStatusRow`` columns; ``ts`` in
    epoch ms, left out when None), one row per task id."""
    columns = [arrow_ipc.Column("task_id", "string", list(task_ids)),
               arrow_ipc.Column("attempt_id", "int64", attempts),
               arrow_ipc.Column("status_text_detail_md", "string", details),
               arrow_ipc.Column("status_text_summary_md", "string", summaries)]
    if ts is not None:
        columns.append(arrow_ipc.Column("ts", "timestamp[ms]", ts))
    return finelog_stats_pb2.WriteRowsRequest(namespace="iris.task_status", arrow_ipc=arrow_ipc.write(columns))


class WireError(Exception):
    """A refused call: the Connect/gRPC code name (``"not_found"``) and message."""

    def __init__(self, code: str, message: str, http_status: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.http_status = http_status


def launch_request(name: str, command: str, *, user: str = "alice", replicas: int | None = None,
                   resources: ResourceConfig | None = None, **fields: Any) -> C.LaunchJobRequest:
    """A realistic LaunchJobRequest from ``plan()`` for ``sh -c <command>``; ``fields`` are set
    on the request afterwards (e.g. ``max_retries_failure=1``)."""
    job = JobRequest(name=name, entrypoint=Entrypoint.from_binary("sh", ["-c", command]),
                     resources=resources or ResourceConfig(cpu=1, ram="512m", disk="1g"), replicas=replicas)
    request = C.LaunchJobRequest()
    request.CopyFrom(plan(job, user=user).request)
    for key, value in fields.items():
        if isinstance(value, Message):
            getattr(request, key).CopyFrom(value)
        else:
            setattr(request, key, value)
    return request


@dataclass
class Wire:
    """Calls one RPC by name over Connect (``proto`` or ``json``) or native gRPC."""

    info: ControllerInfo
    transport: str = "connect"
    codec: str = "proto"
    token: str | None = None
    _http: httpx.Client | None = field(default=None, repr=False)
    _channel: grpc.Channel | None = field(default=None, repr=False)

    def call(self, name: str, request: Message, *, token: str | None = "default", gzip_body: bool = False) -> Any:
        """The response message, or ``WireError``."""
        method = _BY_NAME[name]
        token = self.info.token if token == "default" else token
        if self.transport == "grpc":
            return self._grpc(method, request.SerializeToString(), token)
        body = request.SerializeToString() if self.codec == "proto" else json_format.MessageToJson(request).encode()
        return self.connect_raw(method, body, token, gzip_body=gzip_body)

    def connect_raw(self, method: Method, body: bytes, token: str | None, *, gzip_body: bool = False) -> Any:
        """POST raw bytes to the Connect endpoint."""
        if self._http is None:
            self._http = httpx.Client(base_url=self.info.url, timeout=30)
        headers = {"content-type": f"application/{self.codec}"}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        if gzip_body:
            headers["content-encoding"] = "gzip"
            body = gzip.compress(body)
        reply = self._http.post(method.path, content=body, headers=headers)
        if reply.status_code != 200:
            error = reply.json()
            raise WireError(error["code"], error["message"], reply.status_code)
        response = method.response()
        if self.codec == "proto":
            response.ParseFromString(reply.content)
        else:
            json_format.Parse(reply.content, response)
        return response

    def grpc_raw(self, method: Method, body: bytes, token: str | None) -> Any:
        """Send raw bytes over native gRPC."""
        return self._grpc(method, body, token)

    def _grpc(self, method: Method, body: bytes, token: str | None) -> Any:
        if self._channel is None:
            self._channel = grpc.insecure_channel(self.info.grpc_url.removeprefix("grpc://"))
        stub: Callable[..., bytes] = self._channel.unary_unary(method.path)
        metadata = [("authorization", f"Bearer {token}")] if token is not None else []
        try:
            raw = stub(body, metadata=metadata, timeout=30)
        except grpc.RpcError as error:
            raise WireError(error.code().name.lower(), error.details() or "") from None
        return method.response.FromString(raw)

    def close(self) -> None:
        """Close connections."""
        if self._http is not None:
            self._http.close()
        if self._channel is not None:
            self._channel.close()

    # -- conveniences ---------------------------------------------------------------------------
    def launch(self, request: C.LaunchJobRequest) -> str:
        return str(self.call("LaunchJob", request).job_id)

    def status(self, job_id: str) -> job_pb2.JobStatus:
        return self.call("GetJobStatus", C.GetJobStatusRequest(job_id=job_id)).job

    def tasks(self, job_id: str) -> list[job_pb2.TaskStatus]:
        return list(self.call("ListTasks", C.ListTasksRequest(job_id=job_id)).tasks)

    def wait(self, job_id: str, states: set[int], timeout: float = HANG_GUARD_S) -> job_pb2.JobStatus:
        """The job's status once it is in one of ``states`` (``tests/waiting.py``; ``timeout`` is its hang guard)."""
        def reached() -> job_pb2.JobStatus | None:
            status = self.status(job_id)
            return status if status.state in states else None

        return until(reached, f"{job_id} in states {sorted(states)}", hang_guard=timeout)


def thread_dump_request(target: str) -> job_pb2.ProfileTaskRequest:
    """ProfileTask's request for a thread dump of ``target`` (a task, an attempt or ``/system/process``)."""
    return job_pb2.ProfileTaskRequest(target=target, profile_type=job_pb2.ProfileType(threads=job_pb2.ThreadsProfile()))


def dump_showing(wire: Wire, target: str, frame: str) -> str:
    """A thread dump of ``target`` once one shows ``frame`` (the task's interpreter may still be starting)."""
    def dumped() -> str | None:
        text = bytes(wire.call("ProfileTask", thread_dump_request(target)).profile_data).decode(errors="replace")
        return text if frame in text else None

    return until(dumped, f"a thread dump of {target} shows {frame}")


def meeting(place: Path, count: int) -> str:
    """A task command that checks in under ``place`` (a new directory) and ends once ``count`` tasks
    have: a job of ``count`` such tasks succeeds only if every one of them runs at the same time."""
    place.mkdir()
    return (f'touch "{place}/${{IRIS_TASK_ID##*/}}"; '
            f'while [ "$(ls "{place}" | wc -l)" -lt {count} ]; do sleep 0.05; done')


TERMINAL = {job_pb2.JOB_STATE_SUCCEEDED, job_pb2.JOB_STATE_FAILED, job_pb2.JOB_STATE_KILLED,
            job_pb2.JOB_STATE_WORKER_FAILED, job_pb2.JOB_STATE_UNSCHEDULABLE}


@dataclass
class ControllerProcess:
    """A running ``python -m fray_jupyter.controller`` with its state dir and runtime file."""

    process: subprocess.Popen[bytes]
    state_dir: Path
    runtime_file: Path
    info: ControllerInfo

    def wire(self, transport: str = "connect", codec: str = "proto") -> Wire:
        return Wire(self.info, transport, codec)

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 15) -> int:
        """Signal the controller (not its tasks) and wait for it to exit."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=timeout)

    def log(self) -> str:
        return self.log_of(self.state_dir)

    @staticmethod
    def log_of(state_dir: Path) -> str:
        """What the controller printed (kept next to the state dir, not in it)."""
        return (state_dir.parent / f"{state_dir.name}-controller.log").read_text(errors="replace")


def start_controller(state_dir: Path, *extra: str, runtime_file: Path | None = None,
                     env: dict[str, str] | None = None, timeout: float = HANG_GUARD_S) -> ControllerProcess:
    """Start the controller on 127.0.0.1 with free ports and wait for its runtime file."""
    runtime_file = runtime_file or state_dir.parent / f"{state_dir.name}-runtime.json"
    runtime_file.unlink(missing_ok=True)
    state_dir.parent.mkdir(parents=True, exist_ok=True)
    log = (state_dir.parent / f"{state_dir.name}-controller.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "fray_jupyter.controller", "--state-dir", str(state_dir),
         "--runtime-file", str(runtime_file), *extra],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
    )
    log.close()

    def started() -> ControllerInfo | None:
        if process.poll() is not None:
            raise RuntimeError(f"controller exited {process.returncode}:\n{ControllerProcess.log_of(state_dir)}")
        info = read_runtime_file(runtime_file)
        return info if info is not None and info.pid == process.pid else None

    try:
        info = until(started, "the controller's runtime file", hang_guard=timeout)
    except AssertionError:
        process.kill()
        raise RuntimeError(f"controller did not start:\n{ControllerProcess.log_of(state_dir)}") from None
    return ControllerProcess(process, state_dir, runtime_file, info)


def stop_quietly(controller: ControllerProcess) -> None:
    """Fixture teardown: SIGTERM, then SIGKILL if it does not stop in time."""
    try:
        controller.stop()
    except subprocess.TimeoutExpired:
        controller.process.kill()
        controller.process.wait()
    if controller.process.returncode not in (0, -signal.SIGKILL):
        print(controller.log())


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live (non-zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"

