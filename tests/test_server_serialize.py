"""Iris status messages → the REST API's JSON (``fray_jupyter.server.serialize``)."""

from __future__ import annotations

from fray_jupyter.iris.placement import device_text
from fray_jupyter.iris.proto import job_pb2, logging_pb2
from fray_jupyter.server.serialize import job_json, log_json, task_json


def test_device_text_names_the_accelerator_per_task() -> None:
    spec = job_pb2.ResourceSpecProto()
    assert device_text(spec) == "cpu"
    spec.device.tpu.variant = "v5p-8"
    assert device_text(spec) == "v5p-8"
    spec.device.gpu.variant, spec.device.gpu.count = "H100", 8
    assert device_text(spec) == "H100 ×8"
    spec.device.gpu.count = 1
    assert device_text(spec) == "H100"


def test_job_json_fills_gaps_from_the_id_and_leaves_unset_times_null() -> None:
    job = job_pb2.JobStatus(job_id="/bob/train", state=job_pb2.JOB_STATE_PENDING, task_count=4,
                            error="<b>not html</b>")
    job.submitted_at.epoch_ms = 1234
    body = job_json(job)
    assert (body["name"], body["user"], body["state"], body["terminal"], body["replicas"]) == (
        "train", "bob", "pending", False, 4)
    assert (body["submitted_ms"], body["started_ms"], body["finished_ms"]) == (1234, None, None)
    assert body["error"] == "<b>not html</b>"
    job.name, job.submitting_user, job.state = "/bob/train", "robert", job_pb2.JOB_STATE_WORKER_FAILED
    assert (job_json(job)["name"], job_json(job)["user"], job_json(job)["state"], job_json(job)["terminal"]) == (
        "train", "robert", "worker_failed", True)


def test_task_and_log_json() -> None:
    task = job_pb2.TaskStatus(task_id="/bob/train/3", state=job_pb2.TASK_STATE_PREEMPTED, current_attempt_id=1)
    task.attempts.add(attempt_id=0)
    task.attempts.add(attempt_id=1)
    assert {k: task_json(task)[k] for k in ("index", "state", "attempt", "attempts")} == {
        "index": 3, "state": "preempted", "attempt": 1, "attempts": 2}
    entry = logging_pb2.LogEntry(key="/bob/train/3:1", seq=42, source="stderr", data="boom",
                                 level=logging_pb2.LOG_LEVEL_WARNING)
    entry.timestamp.epoch_ms = 99
    assert log_json(entry) == {"task_id": "/bob/train/3", "attempt": 1, "seq": 42, "time_ms": 99,
                               "source": "stderr", "data": "boom", "level": "warning"}
    assert log_json(logging_pb2.LogEntry(key="/bob/train/3:1"))["level"] == ""  # unknown
