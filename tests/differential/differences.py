"""Every difference the differential suite keeps between the embedded controller and the genuine Iris
0.2.227 scheduler (the twin: ``fray-jupyter controller --iris-local``), both with the built-in profile.
Each entry says what differs, why, and whether it is kept on purpose ("Kept") or still to close ("To
close", with where). The suite fails on a difference not listed here and on a listed one that no
longer occurs, so this file is the complete, current account.

Over the corpus (52 jobs, ``corpus.py``) the two agree on every LaunchJob accept/refuse and its gRPC
code, on every verdict (runs / pending for ever / refused), on the autoscaler's reason for every job
pending for ever, and on every gang's placement (one tpu-name / leafgroup, task i on tpu-worker-id i).
"""

from __future__ import annotations

from typing import NamedTuple

CONSTRAINTS_TAIL = " (constraints: "
"""LaunchJob refusals end with the job's constraints. Iris writes them as Python reprs
(``Constraint(key='device-type', op=<ConstraintOp.EQ: 0>, …)``), the embedded controller as
``device-type==tpu``: the same constraints, readable. The suite compares messages up to this tail.
Kept: the embedded controller's form is meant for people; nothing parses either."""

_CACHES = ("Kept: Iris points the task at its container mounts (/hf/cache, /cargo — "
           "iris.cluster.runtime.env.STANDARD_MOUNTS) and copies uv's files out of its shared cache "
           "(UV_LINK_MODE=copy); on the embedded controller those paths do not exist and the uv cache is its own "
           "(UV_CACHE_DIR and the venv variables are set, by controller/runtime/task_setup.py), so tasks use the user's caches.")
_TPU_INIT = ("Kept: Iris tells JAX to use the TPU it placed the task on; the embedded controller (and this "
             "machine) has no TPU, so forcing TPU init would make every JAX task fail. (The twin sets it too, "
             "with no TPU: its tasks would fail the same way if they imported JAX.)")

ENV_ONLY_ON_TWIN: dict[str, str] = {
    "PJRT_DEVICE": _TPU_INIT,
    "JAX_FORCE_TPU_INIT": _TPU_INIT,
    "UV_LINK_MODE": _CACHES,
    "HF_HUB_CACHE": _CACHES,
    "CARGO_HOME": _CACHES,
    "CARGO_TARGET_DIR": _CACHES,
}
"""Variables a task sees on the twin and not on the embedded controller (names only: values differ by
nature — work dirs, worker ids, URLs)."""

PLACEMENT_DEPENDENT_FOR_CPU_JOBS: dict[str, str] = {
    "IRIS_WORKER_REGION": (
        "Both controllers set it as Iris does, to the region of the worker's group. A CPU job asks for no "
        "device, so on the twin it lands on whichever worker is idle — a TPU VM an earlier corpus job scaled "
        "up (which has a region) or a CPU VM (which has none) — while the embedded controller stands it on the "
        "group the autoscaler routes it to. Which worker is idle is the live cluster's state, not a rule, so "
        "for CPU jobs the variable may be present on either side; for accelerator jobs it must match."),
}
"""Variables compared only for accelerator jobs (for a CPU job they follow whichever worker was idle)."""

LOCAL_RUNTIME_ONLY: dict[str, str] = {
    "PYTHONPATH": ("Not Iris's behaviour on a worker: the twin's local process runtime "
                   "(iris.cluster.runtime.process) prepends marin-iris's own install paths to PYTHONPATH for every "
                   "task, and passes its parent's environment on; a worker's task container has neither. Ignored "
                   "like the names the twin inherits from this process."),
}
"""Variables only Iris's *local* process runtime gives tasks (an artefact of running Iris on one machine, not
what a worker does): left out of the comparison, like inherited names."""

ENV_ONLY_ON_EMBEDDED: dict[str, str] = {}
"""Variables a task sees on the embedded controller and not on the twin: none (IRIS_JOB_ID and
IRIS_TASK_INDEX are gone; task code uses ``fray_jupyter.task_info()``)."""

CASE_DIFFERENCES: dict[tuple[str, str], str] = {}
"""(corpus job, aspect) → why they differ; aspects are launch, message, verdict, reason, partition.
Empty: no job differs in any aspect. The embedded controller reports every task on one worker
(``fray-local``) instead of an emulated slice, so its own task → worker map says nothing; its gangs
start all-or-nothing on local slots, and its partition is ``plan().groups`` — which the twin's actual
placement is checked against."""

REASON_DIFFERENCES: dict[str, str] = {}
"""Corpus job → why its pending reason differs between the two, for the jobs neither can ever place,
compared with the twin at rest (``test_waits_and_failures``). Empty: every held job's reason is the
twin's word for word — Iris's ``Scheduler: …`` half counts the workers up (at rest, the warm slices:
the embedded controller counts those), and the ``Autoscaler: …`` half is its routing verdict.
(With slices of earlier jobs still up, the twin's scheduler half counts them too — ``largest group
has 4`` instead of ``No workers match constraints`` — which is why the comparison waits for rest.)"""

EMBEDDED_ONLY_REASONS: dict[str, str] = {
    "waiting for a free task slot": (
        "Kept: the embedded controller runs every task on this machine's task slots (--slots), which Iris "
        "has no counterpart of. A job whose tasks wait only for a slot says so, with the slots free and the "
        "jobs queued (a gang: 'waiting for N free task slots at once (coscheduled)'); on the twin the same "
        "job would be RUNNING or waiting for a scale-up ('Scheduler: …\n\nAutoscaler: (scaling up) Waiting "
        "for worker scale-up in scale group …'), a state the embedded controller never has because every "
        "placeable job starts at once on a free slot. Its tasks carry the same text while they wait."),
    "waiting for room to start": (
        "Kept: the embedded controller runs at most --max-tasks task processes at once (default 256, and never "
        "fewer than --slots), counting tasks that ask for no CPU, which take no slot: Iris does not count such a "
        "task against a worker's capacity, so without a bound a laptop could be asked for thousands of processes. "
        "A task over the bound waits saying so; Iris would run it."),
    "task(s) of the previous gang attempt to stop": (
        "Kept: a gang restarted after a member failed waits for its old processes to exit before all of "
        "its tasks start together on local slots; an Iris worker does this out of sight of the scheduler."),
}
"""Pending reasons the embedded controller gives that Iris never does (no twin state to compare with),
by a phrase each contains."""

BUDGET_DIFFERENCES: dict[str, str] = {
    "worker_id": ("GetSchedulerState's running buckets: Iris counts running tasks per worker; the embedded "
                  "controller runs every task on this machine's slots, so each of its buckets names the one worker its "
                  "TaskStatus names (fray-local, which ListWorkers does not list: its capacity view shows it as "
                  "'not listed') and holds all of a job's running tasks at one band. Kept: the suite compares the "
                  "buckets summed over workers."),
}
"""Fields of the budget RPCs' answers that differ by nature (``test_budget.py``). Not a difference of the
suite, because it starts the embedded controller with ``--budget-limit 1000``: the default limit of a user
without a budget row is 1000 on a genuine Iris whose cluster config names none, and unlimited on the
embedded controller unless ``--budget-limit`` / ``$FRAY_CONTROLLER_BUDGET_LIMIT`` says otherwise (kept: a
laptop user should not find their second TPU job silently demoted)."""

COORDINATOR_DIFFERENCES: dict[tuple[str, str], str] = {
    ("raw", "integer name"): (
        "Kept: Iris's controller accepts a child job named by an integer (/diff/raw/0) and then lists it among the "
        "root jobs (JobName.depth counts it as a task); its own client refuses the name ('Nested Job name cannot be "
        "an integer'). The embedded controller refuses it at LaunchJob, INVALID_ARGUMENT: the id would name task 0 "
        "of its parent, and its logs and tasks would collide with the parent's."),
    ("raw", "children of garbage"): (
        "Kept: Iris answers a CHILDREN query whose parent_job_id is no job id with an internal error (JobName "
        "raises inside the query); the embedded controller says INVALID_ARGUMENT, naming the value."),
}
"""(coordinator scenario or "raw", aspect) → why the two controllers differ (``test_coordinators.py``);
aspects are jobs, links, listed, seen, and for "raw" each call's name."""


class ActorDifference(NamedTuple):
    """What each controller shows for one aspect of an actor scenario, and why they differ."""

    embedded: tuple[str, ...]
    twin: tuple[str, ...]
    why: str


ACTOR_DIFFERENCES: dict[tuple[str, str], ActorDifference] = {
    ("killed mid-call", "listed after the task died"): ActorDifference(
        embedded=(), twin=("{name}",),
        why=("Kept: Iris 0.2.227 removes a job's endpoints at once only when the job is terminated, completed or "
             "deleted; an actor task that dies on its own stays listed until its lease lapses (up to 10 minutes), "
             "and callers resolving it meanwhile get connection errors. The embedded controller lists an endpoint "
             "only while the attempt that registered it is live, so it goes with its task."),
    ),
}
"""(actor scenario, aspect) → what each controller shows (``test_actors.py``; ``{name}`` stands for the
scenario's endpoint name). Every other aspect of every actor scenario is the same on both: results, the
concurrency limit, exceptions (type and message), job states, lease grants and lapses."""


class InspectDifference(NamedTuple):
    """What each controller answers for one aspect of looking inside a task, and why they differ."""

    embedded: str
    twin: str
    why: str


INSPECT_DIFFERENCES: dict[str, InspectDifference] = {
    "exec directory and environment": InspectDifference(
        embedded="the task's work dir, with the task's environment ($IRIS_TASK_ID set)",
        twin="the Iris process's own directory and environment ($IRIS_TASK_ID unset)",
        why=("Kept: on a cluster `iris task exec` is docker/kubectl exec, inside the task's container with its "
             "environment; Iris's local process runtime runs the command beside the task instead. The embedded "
             "controller does what a cluster does.")),
    "exec timeout": InspectDifference(
        embedded="the answer's error 'Command timed out after 1 s: …', exit code -9, the output so far; the "
                 "command's whole process group killed",
        twin="INTERNAL 'Error exec_in_container: Command […] timed out after 1 seconds' (only the command "
             "itself is killed: what it started keeps running)",
        why="Kept: a timed-out command's children must not outlive it: nothing an exec starts in a "
            "user's task may be left running."),
    "exec of a missing program": InspectDifference(
        embedded="the answer's error \"cannot run 'x': No such file or directory\"",
        twin="INTERNAL 'Error exec_in_container: [Errno 2] No such file or directory: …'",
        why="Kept: the user's mistake is answered as a result, not as a controller failure."),
    "exec output bound": InspectDifference(
        embedded="at most 1 MiB of each stream, then a line '[output cut: N more bytes not shown …]'",
        twin="all of it (a flood travels whole in one RPC answer)",
        why="Kept: a command flooding its output cannot exhaust the controller or the notebook."),
    "cpu stub": InspectDifference(
        embedded="no CPU profile: ",
        twin="py-spy unavailable in local mode",
        why=("Kept: where py-spy cannot record (a task that is not Python, no ptrace permission, py-spy "
             "missing) both answer a stub in the requested format instead of an error; the embedded "
             "controller's says why.")),
    "memory stub": InspectDifference(
        embedded="no memory profile: memray attach failed …",
        twin="memray unavailable in local mode",
        why="Kept: as the CPU stub (memray attach needs gdb or lldb and ptrace; on this machine it fails)."),
    "owner only": InspectDifference(
        embedded="PERMISSION_DENIED for a caller who is neither the job's owner nor the controller's own user",
        twin="anyone the controller lets in (a local Iris runs without auth)",
        why=("Kept: exec is remote code execution and a thread dump with locals shows data; Iris checks the "
             "owner for exec only, and only with an auth provider.")),
    "profile duration bound": InspectDifference(
        embedded="INVALID_ARGUMENT for duration_seconds outside 0…3600",
        twin="any value, passed to the profiler",
        why="Kept: a huge duration would hold the profiler attached (and the RPC open) for days."),
    "unknown profile format": InspectDifference(
        embedded="INVALID_ARGUMENT 'cpu format 42 is not one of: 1 (flamegraph), 2 (speedscope), 3 (raw)'",
        twin="the flamegraph (an unknown format number falls back to the default)",
        why="Kept: a format the caller cannot have meant is refused naming the ones there are."),
    "malformed target": InspectDifference(
        embedded="INVALID_ARGUMENT \"'diff/x/0' is not a task id: expected /<user>/<job>/<index>[:<attempt>]\"",
        twin="INVALID_ARGUMENT \"Job name must use canonical '/<user>/<job>[...]' format: diff/x/0\"",
        why="Kept: the same code; the message names what a target must look like."),
    "thread dump under a shell": InspectDifference(
        embedded="the stacks of the task's Python processes",
        twin="the error 'py-spy dump failed (exit 1): Error: Failed to find python version from target process'",
        why=("Kept: py-spy refuses a dump whose leader (sh -c, uv run) is not Python; the embedded controller "
             "then dumps the group's other processes one by one, so a task started through a shell shows "
             "where it is stuck.")),
    "thread dump error detail": InspectDifference(
        embedded="py-spy's Error line only",
        twin="py-spy's Error line and its Rust backtrace",
        why="Kept: the same first line; the backtrace is py-spy's internals."),
    "process status provenance": InspectDifference(
        embedded="no provenance",
        twin="provenance (tree hash 'unknown' outside an image)",
        why="Kept: the embedded controller is not built into an image; everything else is answered alike."),
}
"""Aspect of ``ProfileTask`` / ``ExecInContainer`` / ``GetProcessStatus`` → what each controller answers
(``test_inspect.py``). Everything else agrees: the thread dump's stuck frame, the CPU profile's hot
function, exec's exit code, stdout and stderr, a finished task's errors ('attempt no longer running',
'Task … is not running (state=TASK_STATE_SUCCEEDED)'), an unknown task (NOT_FOUND 'Task … not found')."""
