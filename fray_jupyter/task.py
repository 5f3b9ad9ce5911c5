"""``task_info()``: who this task is, read from the variables a real Iris worker sets, so the same task
code runs unchanged on the embedded controller, an Iris local cluster and a production cluster.

The identity comes from ``IRIS_TASK_ID`` (``/<user>/<job>[/<child>…]/<index>[:<attempt>]``), parsed as
Iris's own ``iris.cluster.client.job_info.get_job_info()`` parses it (``TaskAttempt.from_wire`` then
``JobName.require_task``): the attempt is whatever follows the last ``:`` (0 when there is none), the
task index is the last path component, the job is everything before it, the user is the first
component; a value Iris cannot parse gives None, as it does (``iris.states.parse_task_attempt``). ``IRIS_NUM_TASKS`` is the task count
(default 1; a non-integer raises ``ValueError``, as in Iris). Nothing here imports Iris.

Slices: a multislice TPU job (``with_tpu(..., slice_count=n)``, n > 1) gets ``IRIS_SLICE_COUNT`` and
``IRIS_TASKS_PER_SLICE`` (VMs per slice); tasks fill slices in index order, so task ``i`` is VM
``i % per_slice`` of slice ``i // per_slice``. Any other job is one slice of ``num_tasks`` tasks (a
multi-VM slice such as v4-32: task ``i`` runs on ``tpu-worker-id`` ``i``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from fray_jupyter.iris.states import parse_task_attempt


@dataclass(frozen=True)
class TaskInfo:
    """This task's identity and place (see the module docstring)."""

    task_id: str
    """``/<user>/<job>[/<child>…]/<index>`` (without the attempt)."""
    job_id: str
    """``/<user>/<job>[/<child>…]``: the task id without its index."""
    user: str
    task_index: int
    num_tasks: int
    attempt: int
    """0 for the first attempt, 1 for the first retry, …"""
    slice_index: int
    slice_count: int
    vm_index: int
    """The task's VM within its slice (its ``tpu-worker-id`` on a TPU slice)."""
    vms_per_slice: int
    output_dir: str | None
    """``IRIS_OUTPUT_DIR``: files written here are archived per attempt (None when unset)."""


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    value = env.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if number < 1:
        raise ValueError(f"{name} must be at least 1, got {value!r}")
    return number


def task_info(environ: Mapping[str, str] | None = None) -> TaskInfo | None:
    """This task's ``TaskInfo`` from ``environ`` (default ``os.environ``); None outside an Iris task
    (no ``IRIS_TASK_ID``, or one Iris would not parse either)."""
    env = os.environ if environ is None else environ
    raw = env.get("IRIS_TASK_ID")
    if not raw:
        return None
    parsed = parse_task_attempt(raw)
    if parsed is None:
        return None
    parts, attempt = parsed
    num_tasks = int(env.get("IRIS_NUM_TASKS", "1"))  # as get_job_info: a non-integer raises ValueError
    index = int(parts[-1])
    slice_count = _count(env, "IRIS_SLICE_COUNT", 1)
    per_slice = _count(env, "IRIS_TASKS_PER_SLICE", max(num_tasks, 1)) if slice_count > 1 else max(num_tasks, 1)
    return TaskInfo(
        task_id="/" + "/".join(parts),
        job_id="/" + "/".join(parts[:-1]),
        user=parts[0],
        task_index=index,
        num_tasks=num_tasks,
        attempt=attempt,
        slice_index=index // per_slice,
        slice_count=slice_count,
        vm_index=index % per_slice,
        vms_per_slice=per_slice,
        output_dir=env.get("IRIS_OUTPUT_DIR") or None,
    )
