"""Fray's client protocol over fray-jupyter's controller: Marin code written against
``fray.client.Client`` (``current_client().submit(JobRequest(...))``, ``wait_all(handles)``) runs
unchanged on the embedded controller or a real Iris, and its jobs show in the sidebar.

Rules:

* ``fray_client()`` returns a ``FrayProtocolClient``: ``submit(request, adopt_existing=True)``
  plans the request (ours or Marin's ``fray.types.JobRequest``) and sends it with
  ``existing_job_policy`` KEEP, as Marin's Iris backend does; with ``adopt_existing=False`` the
  controller's default applies and a taken name raises ``JobAlreadyExists``.
* Actors, with Iris's semantics (``fray_jupyter.actors``): ``create_actor_group(cls, *args,
  name=, count=, resources=, actor_config=, environment=)`` sends one job of ``count`` replicas
  asking for the port ``actor``, as Marin's ``FrayIrisClient`` does (the same request but for the
  entrypoint, which runs ``actors.host.serve_replica``), and returns its ``ActorGroup`` at once;
  ``create_actor`` is a group of one and waits for its handle; ``host_actor`` serves in this
  process. ``actor_config`` is Fray's ``ActorConfig`` (``max_concurrency`` default 1, enforced;
  ``max_task_retries`` → the job's ``max_retries_failure`` and ``max_task_failures``; ``priority``
  → its band). Calls from the notebook go straight to the tasks' addresses, or, on a named
  cluster (``proxy_actors``), through the controller's actor proxy with the user's credentials.
* ``FrayJobHandle`` has Fray's names and meanings: ``job_id``; ``status()`` → Fray's
  ``JobStatus`` (Iris KILLED → stopped, every other unsuccessful end → failed);
  ``wait(timeout, raise_on_failure=True)`` raises ``JobFailed`` when the job ended other than
  succeeded and ``TimeoutError`` after ``timeout`` s; ``logs(max_lines)`` is the newest lines
  (all tasks, text only); ``terminate()``. It also keeps fray-jupyter's ``result()``,
  ``results()``, ``outputs()``, ``children()`` (the handles of the jobs its tasks submitted) and
  ``panel()``.
* Inside an Iris task (a coordinator), as with Marin's ``current_client()`` there: the client
  reaches the task's own controller (``client.discovery``), and each job it submits is a child of
  the task's job, with the inheritance Iris's client applies (``iris.parent``), so a
  coordinator's steps are ``/<user>/<coordinator>/<step>``.
* Where marin-fray is installed, the values are Marin's own: ``status()`` returns
  ``fray.types.JobStatus`` members, and ``JobFailed`` / ``JobAlreadyExists`` are also instances
  of ``fray.client``'s, so ``fray.client.wait_all`` and Marin's ``except`` clauses work.
* ``submit(fn, *args, **kwargs)`` runs ``fn(*args, **kwargs)`` as a one-task job and returns its
  ``JobHandle`` (``.result()`` gives the value back). ``resources``, ``name`` and ``client`` are
  ``submit``'s own keywords; pass a function keyword of that name with ``functools.partial``.
* The workspace, as in Marin's ``FrayIrisClient``: only the client's own ``workspace`` is bundled
  (once, at the first submit, then sent with every job); a request's
  ``EnvironmentConfig.workspace`` is not, and nothing is bundled by default (``iris job run``'s
  current-directory bundle is the ``%%fray`` magic's, not the client's). ``submit(fn)`` sends none.
* On a named cluster both also send what Marin's own client adds there (``client.parity``): its
  revision date and runtime-deps script, and its default setup for a job without setup scripts
  when the client's workspace is a uv project.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, NoReturn

from fray_jupyter.actors.group import ActorGroup
from fray_jupyter.actors.handle import ActorHandle
from fray_jupyter.actors.host import PORT_NAME, Hosted, host_here, serve_replica
from fray_jupyter.actors.resolver import RegistryResolver
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import JobAlreadyExists as ControllerJobAlreadyExists
from fray_jupyter.client.handle import JobHandle
from fray_jupyter.client.parity import parity_for
from fray_jupyter.iris.bundle import caller_exclude, create_workspace_zip
from fray_jupyter.iris.coscheduling import LEAFGROUP as COSCHEDULE_LEAFGROUP
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.planning import plan
from fray_jupyter.resources.config import ResourceConfig
from fray_jupyter.resources.entrypoint import Entrypoint
from fray_jupyter.resources.environment import EnvironmentConfig
from fray_jupyter.resources.interop import coerce
from fray_jupyter.resources.job import JobRequest, JobStatus

if TYPE_CHECKING:
    from fray_jupyter.widgets.status import JobStatusPanel

J = job_pb2
ACTOR_PREEMPTION_RETRIES: Final[int] = 1000
"""An actor group's ``max_retries_preemption``: Iris's client's default, which Marin's
``create_actor_group`` leaves in place."""
_FRAY_STATUS: Final[dict[int, JobStatus]] = {
    J.JOB_STATE_UNSPECIFIED: JobStatus.PENDING, J.JOB_STATE_PENDING: JobStatus.PENDING,
    J.JOB_STATE_BUILDING: JobStatus.PENDING, J.JOB_STATE_RUNNING: JobStatus.RUNNING,
    J.JOB_STATE_SUCCEEDED: JobStatus.SUCCEEDED, J.JOB_STATE_KILLED: JobStatus.STOPPED,
    J.JOB_STATE_FAILED: JobStatus.FAILED, J.JOB_STATE_WORKER_FAILED: JobStatus.FAILED,
    J.JOB_STATE_UNSCHEDULABLE: JobStatus.FAILED,
}
"""Iris job state → Fray's lifecycle (Marin's ``map_iris_job_state``)."""
SUBMIT_RESOURCES: Final[ResourceConfig] = ResourceConfig(cpu=1, ram="1g", disk="4g")
"""``submit``'s default: a function call's size (Fray's own default asks for a 64 GiB disk)."""


@functools.cache
def _marin() -> Any:
    """Marin's ``fray.client`` module when marin-fray is installed, else None."""
    try:
        import fray.client
        import fray.types
    except ImportError:
        return None
    return fray.client


def fray_status(state: int) -> Any:
    """Fray's ``JobStatus`` for an Iris job state: Marin's enum member when marin-fray is
    installed, fray-jupyter's otherwise (the two compare equal)."""
    ours = _FRAY_STATUS.get(state, JobStatus.FAILED)
    marin = _marin()
    return marin.JobStatus(ours.value) if marin is not None else ours


class JobFailed(RuntimeError):
    """A job ended other than succeeded (Fray's ``JobFailed``: ``job_id``, ``failed_status``)."""

    def __init__(self, job_id: str, status: Any, error: str = "") -> None:
        self.job_id = job_id
        self.failed_status = status
        self.error = error
        RuntimeError.__init__(self, f"Job {job_id} finished with status {status}" + (f": {error}" if error else ""))


class JobAlreadyExists(RuntimeError):
    """A job by that name exists and ``adopt_existing`` was False (Fray's ``JobAlreadyExists``)."""

    def __init__(self, job_name: str, handle: Any = None) -> None:
        self.job_name = job_name
        self.handle = handle
        RuntimeError.__init__(self, f"Job {job_name} already exists")


_WITH_MARIN: dict[tuple[type[RuntimeError], str], type[RuntimeError]] = {}


def _with_marin(ours: type[RuntimeError], name: str) -> type[RuntimeError]:
    """``ours``, or a subclass of it and of ``fray.client.<name>`` when marin-fray is installed
    (made once per pair, so ``except`` clauses see one class)."""
    if (ours, name) not in _WITH_MARIN:
        marin = _marin()
        _WITH_MARIN[ours, name] = ours if marin is None else type(
            ours.__name__, (ours, getattr(marin, name)), {"__module__": __name__, "__doc__": ours.__doc__})
    return _WITH_MARIN[ours, name]


def _raise(ours: type[RuntimeError], name: str, *args: Any) -> NoReturn:
    raise _with_marin(ours, name)(*args)


class FrayJobHandle:
    """A job submitted through ``FrayProtocolClient``, with Fray's handle methods (see the module)."""

    def __init__(self, handle: JobHandle) -> None:
        self.handle = handle

    def __repr__(self) -> str:
        return f"FrayJobHandle({self.job_id!r})"

    @property
    def job_id(self) -> str:
        """The Iris job id, ``/<user>/<name>`` (``/<user>/<parent>/<name>`` for a child job)."""
        return self.handle.job_id

    def status(self) -> Any:
        """Fray's ``JobStatus`` of the job now."""
        return fray_status(self.handle.client.state([self.job_id])[self.job_id])

    def wait(self, timeout: float | None = None, *, raise_on_failure: bool = True) -> Any:
        """Block until the job ends and return its Fray ``JobStatus``; ``JobFailed`` when it did
        not succeed and ``raise_on_failure``; ``TimeoutError`` after ``timeout`` seconds."""
        final = self.handle.wait(timeout)
        status = fray_status(final.state)
        if raise_on_failure and final.state != J.JOB_STATE_SUCCEEDED:
            _raise(JobFailed, "JobFailed", self.job_id, status, final.error)
        return status

    def logs(self, max_lines: int = 0) -> tuple[str, ...]:
        """The newest ``max_lines`` log lines of every task (0: as many as the controller gives)."""
        page = self.handle.client.logs(self.job_id, tail=True, max_lines=max_lines)
        return tuple(entry.data.rstrip("\n") for entry in page.entries)

    def terminate(self) -> None:
        """Stop the job (it ends KILLED: Fray's stopped), and every job below it."""
        self.handle.cancel()

    def children(self) -> list[FrayJobHandle]:
        """Handles of the jobs the job's tasks submitted (``JobHandle.children``)."""
        return [FrayJobHandle(child) for child in self.handle.children()]

    def result(self, timeout: float | None = None) -> Any:
        """``JobHandle.result``."""
        return self.handle.result(timeout)

    def results(self, timeout: float | None = None) -> list[Any]:
        """``JobHandle.results``."""
        return self.handle.results(timeout)

    def outputs(self, dest: Path | str | None = None) -> list[Path]:
        """``JobHandle.outputs``."""
        return self.handle.outputs(dest)

    def panel(self) -> JobStatusPanel:
        """A live status panel for the job (``JobStatusPanel.of``)."""
        from fray_jupyter.widgets.status import JobStatusPanel

        return JobStatusPanel.of(self.handle)


class ActorOptions(NamedTuple):
    """What an actor group takes from Fray's ``ActorConfig``."""

    max_concurrency: int = 1
    max_task_retries: int | None = None
    priority: int = 0


def actor_options(config: Any) -> ActorOptions:
    """``ActorOptions`` from Fray's ``ActorConfig`` (or anything with its fields; None: Fray's
    defaults); ``ValueError`` for a ``max_concurrency`` below 1."""
    defaults = ActorOptions()
    options = ActorOptions(getattr(config, "max_concurrency", defaults.max_concurrency),
                           getattr(config, "max_task_retries", defaults.max_task_retries),
                           getattr(config, "priority", defaults.priority))
    if not isinstance(options.max_concurrency, int) or options.max_concurrency < 1:
        raise ValueError(f"ActorConfig.max_concurrency must be an integer of at least 1, got {options.max_concurrency!r}")
    return options


class FrayProtocolClient:
    """``fray.client.Client`` for jobs and actors, over one controller (see the module rules). ``user``
    names the submitter (default: ``$IRIS_USER``, else the OS user); ``workspace`` is the
    directory bundled with every job (default: none)."""

    def __init__(self, client: FrayClient, *, user: str | None = None,
                 workspace: str | Path | None = None, proxy_actors: bool | None = None) -> None:
        self.client = client
        self.user = user
        self.proxy_actors = client.cluster is not None if proxy_actors is None else proxy_actors
        """Whether actor calls go through the controller's actor proxy (default: on a named cluster)."""
        self.workspace = workspace
        self._bundle: bytes | None = None

    def __repr__(self) -> str:
        return f"FrayProtocolClient({self.client.url!r})"

    def _workspace_zip(self) -> bytes:
        """The workspace zip sent with every job (built at the first call; ``b""`` without a
        workspace); ``ValueError`` when the workspace is missing or over the cap."""
        if self._bundle is None:
            self._bundle = create_workspace_zip(self.workspace).blob if self.workspace is not None else b""
        return self._bundle

    def submit(self, request: JobRequest | object, adopt_existing: bool = True) -> FrayJobHandle:
        """Plan and send ``request`` with the client's workspace and what the target's own client
        adds (module rules); the handle of the job (an unfinished one of the same name when
        ``adopt_existing``)."""
        parity = parity_for(self.client.cluster_name)
        job = parity.with_setup(coerce(request, JobRequest), self.workspace)
        planned = plan(job, user=self.user, existing_job_policy="keep" if adopt_existing else "unspecified",
                       bundle=self._workspace_zip(), revision_date=parity.revision_date,
                       runtime_setup=parity.runtime_setup)
        try:
            job_id = self.client.submit(planned)
        except ControllerJobAlreadyExists:
            _raise(JobAlreadyExists, "JobAlreadyExists", planned.job.name)
        return FrayJobHandle(JobHandle(job_id, self.client))

    def host_actor(self, actor_class: Callable[..., Any], *args: Any, name: str, actor_config: Any = None,
                   **kwargs: Any) -> Hosted:
        """Serve ``actor_class(*args, **kwargs)`` in this process (``actors.host.host_here``): inside an
        Iris task registered for it as ``{job_id}/{name}-0``, in the kernel on loopback only."""
        config = actor_options(actor_config)
        return host_here(actor_class, args, kwargs, name, config.max_concurrency, user=self.client.user)

    def create_actor(self, actor_class: Callable[..., Any], *args: Any, name: str, resources: Any = None,
                     actor_config: Any = None, environment: Any = None, **kwargs: Any) -> ActorHandle:
        """A group of one (``create_actor_group``), its handle once it is registered."""
        group = self.create_actor_group(actor_class, *args, name=name, count=1, resources=resources,
                                        actor_config=actor_config, environment=environment, **kwargs)
        return group.wait_ready()[0]

    def create_actor_group(self, actor_class: Callable[..., Any], *args: Any, name: str, count: int,
                           resources: Any = None, actor_config: Any = None, environment: Any = None,
                           **kwargs: Any) -> ActorGroup:
        """Launch ``count`` instances of ``actor_class(*args, **kwargs)`` as one job (module rules) and
        return its group at once (``wait_ready`` waits for the members)."""
        launch = self.actor_group_request(actor_class, args, kwargs, name=name, count=count, resources=resources,
                                          actor_config=actor_config, environment=environment)
        job_id = self.client.submit(launch)
        return ActorGroup(name, count, job_id, RegistryResolver(self.client, proxy=self.proxy_actors))

    def actor_group_request(self, actor_class: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *,
                            name: str, count: int, resources: Any = None, actor_config: Any = None,
                            environment: Any = None) -> Controller.LaunchJobRequest:
        """The ``LaunchJobRequest`` of an actor group (what ``create_actor_group`` sends)."""
        config = actor_options(actor_config)
        size = coerce(resources, ResourceConfig) if resources is not None else ResourceConfig()
        retries = {} if config.max_task_retries is None else {
            "max_retries_failure": config.max_task_retries, "max_task_failures": config.max_task_retries}
        job = JobRequest(name=name, entrypoint=Entrypoint.from_callable(
                             serve_replica, (actor_class, args, kwargs, name, config.max_concurrency, fray_client)),
                         resources=size, environment=coerce(environment, EnvironmentConfig) if environment else None,
                         replicas=count, priority=config.priority, max_retries_preemption=ACTOR_PREEMPTION_RETRIES,
                         **retries)
        parity = parity_for(self.client.cluster_name)
        planned = plan(job, user=self.user, existing_job_policy="unspecified", bundle=self._workspace_zip(),
                       revision_date=parity.revision_date, runtime_setup=parity.runtime_setup)
        request = Controller.LaunchJobRequest()
        request.CopyFrom(planned.request)
        request.ports.append(PORT_NAME)
        if count > 1 and size.device.kind == "gpu":  # independent workers, not one NVLink collective
            request.coscheduling.Clear()
            request.coscheduling.group_by = COSCHEDULE_LEAFGROUP
        return request

    def shutdown(self, wait: bool = True) -> None:
        """Close the connection to the controller (jobs keep running there)."""
        del wait
        self.client.close()


def fray_client(url: str | None = None, token: str | None = None, *, user: str | None = None,
                workspace: str | Path | None = None) -> FrayProtocolClient:
    """A Fray ``Client`` on the controller ``connect(url, token)`` finds (the embedded one unless
    told otherwise), bundling ``workspace`` with every job as ``FrayIrisClient(..., workspace=)``
    does; pass it to Marin's ``fray.current_client.set_current_client``."""
    from fray_jupyter.client.discovery import connect

    return FrayProtocolClient(connect(url, token), user=user, workspace=workspace)


def default_call_name(fn: Callable[..., Any]) -> str:
    """``<function name>-<8 random hex digits>``: a fresh job per call (KEEP would otherwise
    hand back a still-running call of the same function)."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", getattr(fn, "__name__", "") or "").strip("-.") or "call"
    return f"{base[:40]}-{secrets.token_hex(4)}"


def submit(fn: Callable[..., Any], *args: Any, resources: ResourceConfig | object | None = None,
           name: str | None = None, client: FrayClient | None = None, workspace: str | Path | None = None,
           workspace_include: Sequence[str] = (), workspace_exclude: Sequence[str] = (), **kwargs: Any) -> JobHandle:
    """Run ``fn(*args, **kwargs)`` as a one-task job (``resources`` default: ``SUBMIT_RESOURCES``) on ``client``
    (default: ``connect()``) and return its handle; ``handle.result()`` waits and returns the
    value, or raises ``RemoteError`` with the remote traceback. ``workspace`` (default: none, as
    Marin's library clients bundle only the workspace they are given) is bundled with the job, with
    ``workspace_include`` globs and ``workspace_exclude`` regular expressions as ``iris job run``'s
    ``--include`` / ``--exclude``; ``ValueError`` for a bad one or a workspace over the cap."""
    if client is None:
        from fray_jupyter.client.discovery import connect

        client = connect()
    bundle = b"" if workspace is None else create_workspace_zip(
        workspace, include=workspace_include, exclude=caller_exclude(workspace_exclude)).blob
    job = JobRequest(name=name or default_call_name(fn), entrypoint=Entrypoint.from_callable(fn, args, kwargs),
                     resources=coerce(resources, ResourceConfig) if resources is not None else SUBMIT_RESOURCES)
    parity = parity_for(client.cluster_name)
    return JobHandle(client.submit(plan(job, bundle=bundle, revision_date=parity.revision_date,
                                        runtime_setup=parity.runtime_setup)), client)
