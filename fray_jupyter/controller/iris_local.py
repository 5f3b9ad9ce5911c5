"""A genuine Iris local cluster (marin-iris[controller]) in a child process: what
``fray-jupyter controller --iris-local [--cluster-config NAME|PATH]``, the tests and the benches
start — the twin the embedded controller is checked against (``tests/differential``).

Rules:

* The cluster's scale groups come from a cluster manifest in Iris's own schema, loaded with Iris's
  ``load_config`` then ``make_local_config``: no name (or ``default``) is fray-jupyter's built-in
  profile (``fray_jupyter/cluster/default.yaml``, the one the embedded controller uses by default);
  ``marin`` is the manifest shipped in marin-iris (``iris/config/marin.yaml``, 82 groups), with the
  ``principal:`` identities dropped from ``auth`` (a local cluster cannot resolve them), every
  ``max_slices`` capped at ``MARIN_MAX_SLICES`` and ``buffer_slices`` at 0 (unedited, its buffers
  start 18 warm slices); anything else is the path of a YAML file in that schema.
* TPU slices are emulated by one worker thread per VM with Iris's ``tpu-name`` / ``tpu-worker-id``
  attributes; tasks run as real processes. The autoscaler brings a slice up on demand (about 2.5 s)
  and reclaims it ``IDLE_SECONDS`` after it goes idle (Iris's own 600 s is meant for cloud VMs).
  Iris's controller looks for tasks past their execution timeout every ``TIMEOUT_SCAN_SECONDS``, so
  it kills one up to that long after its timeout. ``start(idle_seconds=..., timeout_scan_seconds=...)``
  sets others: a test that waits for the cluster to come to rest, or for a timeout's words.
* Task ports (``LaunchJobRequest.ports``) come from this cluster's own window of Iris's task-port
  range (``_own_task_port_window``), so two local clusters on one machine never hand out the same one.
* Iris's local workers report ``LOCAL_WORKER_RAM`` and ``LOCAL_WORKER_DISK`` whatever the manifest
  says, so a group declaring more per VM is lowered to those figures (one log line names it): LaunchJob
  then refuses what no local worker could hold, instead of accepting a job that would pend for ever.
* The child (``python -m fray_jupyter.controller.iris_local <config> <port> [<idle seconds>
  <timeout scan seconds>]``, ``<config>`` empty for the built-in profile) prints the controller's URL as its first stdout line
  — or ``error: <one line>`` when the manifest cannot be loaded — and closes the cluster when its
  stdin reaches end of file (the parent closed it, or the parent died) or when it gets SIGTERM or SIGINT.
* The cluster runs in Iris's null-auth mode (loopback clients need no token) and speaks Connect
  over HTTP/1.1 only: it has no native gRPC URL.
* Side effects: ``LocalCluster.start()`` writes ``~/.config/marin/credentials/<cluster>.json``
  (the cluster's endpoint, as Iris's own ``iris cluster start --local`` does) and keeps its
  state under ``tempfile``'s directory. ``start(home=..., tmp=...)`` gives the child its own
  HOME and TMPDIR. Task processes inherit the child's HOME (Iris sets their TMPDIR itself), so
  a private HOME suits tests and benches, not users' jobs.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import selectors
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

IRIS_VERSION: Final[str] = "0.2.227.dev40316220070"
REQUIREMENT: Final[str] = f"marin-iris[controller]=={IRIS_VERSION}"
DISTRIBUTIONS: Final[tuple[str, ...]] = ("marin-iris", "marin-finelog-server")
"""What ``--iris-local`` imports: Iris itself and the log server of its ``[controller]`` extra."""
START_TIMEOUT: Final[float] = 180.0
"""How long the child may take to print its URL: a hang guard (it exits with its error otherwise), long
enough for a machine under load, where importing Iris alone has taken a minute."""
STOP_TIMEOUT: Final[float] = 30.0
IDLE_SECONDS: Final[float] = 30.0
TIMEOUT_SCAN_SECONDS: Final[float] = 60.0
"""Iris's own cadence of the execution-timeout scan (its controller's ``_timeout_rate_limiter``)."""
MARIN_MAX_SLICES: Final[int] = 2
LOCAL_WORKER_RAM: Final[int] = 1000 * 1024**3
"""What every Iris local worker reports as its memory (``InMemoryGcpService``), whatever the manifest says."""
LOCAL_WORKER_DISK: Final[int] = 100 * 1024**3
"""What every Iris local worker reports as its disk."""
CONFIG_NAMES: Final[str] = "'default' (built in), 'marin' (marin-iris's manifest) or the path of an Iris cluster-config YAML"


class ClusterConfigError(ValueError):
    """A ``--cluster-config`` that names no manifest, or one Iris cannot load (one line)."""


def check_cluster_config(name: str | None) -> None:
    """Raise ``ClusterConfigError`` (naming ``name`` and what is allowed) unless ``name`` is None,
    ``default``, ``marin`` or a readable file; the manifest itself is checked by Iris in the child."""
    if name is None or name in ("default", "marin"):
        return
    path = Path(name).expanduser()
    if not path.is_file() or not os.access(path, os.R_OK):
        what = "is a directory" if path.is_dir() else "is not a readable file" if path.exists() else "does not exist"
        raise ClusterConfigError(f"--cluster-config {name!r}: {what}; give {CONFIG_NAMES}")


class IrisLocalUnavailable(RuntimeError):
    """marin-iris[controller] is not installed, or its cluster did not start."""


def unavailable_reason(feature: str = "--iris-local") -> str | None:
    """None when marin-iris[controller] is installed for this Python, else one line saying that
    ``feature`` needs it, what is missing and the command that installs it."""
    missing = []
    for name in DISTRIBUTIONS:
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    if not missing and sys.version_info >= (3, 12):
        return None
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    detail = f"missing: {', '.join(missing)}" if missing else f"this is Python {python}"
    return f"{feature} needs marin-iris[controller] (Python 3.12): pip install '{REQUIREMENT}' ({detail})"


@dataclass
class IrisLocalCluster:
    """A running child: the controller's ``url`` and where the child's stderr goes (``log``)."""

    url: str
    process: subprocess.Popen[str]
    log: Path

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """Close the child's stdin (it closes the cluster) and wait; SIGKILL after ``timeout``.
        Returns the child's exit status."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the child's log."""
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"


def child_environment(*, home: Path | None = None, tmp: Path | None = None) -> dict[str, str]:
    """This process's environment with HOME and/or TMPDIR replaced (those dirs are created)."""
    env = dict(os.environ)
    for name, path in (("HOME", home), ("TMPDIR", tmp)):
        if path is not None:
            path.mkdir(parents=True, exist_ok=True)
            env[name] = str(path)
    return env


def start(log: Path, *, cluster_config: str | None = None, port: int = 0, home: Path | None = None,
          tmp: Path | None = None, timeout: float = START_TIMEOUT, python: Path | None = None,
          idle_seconds: float = IDLE_SECONDS, timeout_scan_seconds: float = TIMEOUT_SCAN_SECONDS) -> IrisLocalCluster:
    """Start the child for ``cluster_config`` (see the module rules; HOME and TMPDIR replaced where
    given, stderr to ``log``, idle slices reclaimed after ``idle_seconds``, execution timeouts looked for
    every ``timeout_scan_seconds``) and wait for its URL line. ``python`` runs the child instead of this
    Python (another environment's, e.g. one with another Iris release; it must be able to import this
    package). Raises ``ClusterConfigError`` for a manifest that does not exist or that Iris refuses, and
    ``IrisLocalUnavailable`` (quoting the log) when marin-iris[controller] is missing, or the child
    exits or prints nothing within ``timeout`` seconds."""
    reason = None if python is not None else unavailable_reason("an Iris local cluster")
    if reason is not None:
        raise IrisLocalUnavailable(reason)
    check_cluster_config(cluster_config)
    if cluster_config is not None and cluster_config not in ("default", "marin"):
        cluster_config = str(Path(cluster_config).expanduser().resolve())
    log.parent.mkdir(parents=True, exist_ok=True)
    env = child_environment(home=home, tmp=tmp)
    # Iris's process runtime runs `py-spy` and `memray` from PATH: find those installed beside its Python.
    env["PATH"] = os.pathsep.join([str(Path(python or sys.executable).parent), *filter(None, [env.get("PATH")])])
    if python is not None:  # that Python finds this package where this one does
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                             *filter(None, [env.get("PYTHONPATH")])])
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [str(python or sys.executable), "-m", __name__, cluster_config or "", str(port), str(idle_seconds),
             str(timeout_scan_seconds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=stderr, env=env, text=True,
        )
    assert process.stdout is not None
    cluster = IrisLocalCluster("", process, log)
    line = _first_line(process.stdout, timeout)
    if line.startswith("error: "):
        cluster.stop(timeout=5)
        raise ClusterConfigError(line.removeprefix("error: ").strip())
    if not line.startswith("http://"):
        cluster.stop(timeout=5)
        raise IrisLocalUnavailable(f"the Iris local cluster did not start (see {log}): {cluster.log_tail()}")
    cluster.url = line.strip()
    return cluster


@contextlib.contextmanager
def iris_local_cluster(scratch: Path, *, cluster_config: str | None = None,
                       idle_seconds: float = IDLE_SECONDS,
                       timeout_scan_seconds: float = TIMEOUT_SCAN_SECONDS) -> Iterator[str]:
    """Yield the URL of a cluster (``cluster_config`` and the timings as in ``start``) that writes
    only under ``scratch`` (``home``, ``tmp``, ``iris.log``); stop it at the end of the block."""
    cluster = start(scratch / "iris.log", cluster_config=cluster_config, home=scratch / "home", tmp=scratch / "tmp",
                    idle_seconds=idle_seconds, timeout_scan_seconds=timeout_scan_seconds)
    try:
        yield cluster.url
    finally:
        cluster.stop()


def _first_line(stream: IO[str], timeout: float) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        ready = selector.select(timeout)
    return stream.readline() if ready else ""


# -- the child -----------------------------------------------------------------------------------
def _built_in_manifest() -> Path:
    from fray_jupyter.cluster.profile import BUILT_IN

    return BUILT_IN


def _marin_manifest(scratch: Path) -> Path:
    """marin-iris's manifest with its ``principal:`` identities dropped, written under ``scratch``."""
    import yaml  # type: ignore[import-untyped, unused-ignore]

    from fray_jupyter.cluster.profile import marin_manifest

    data = yaml.safe_load(marin_manifest().read_text())
    auth = data.get("auth") or {}
    if isinstance(auth.get("user_roles"), dict):
        auth["user_roles"] = {k: v for k, v in auth["user_roles"].items() if not str(k).startswith("principal:")}
    for key in ("admin_users", "allowed_submitters"):
        if isinstance(auth.get(key), list):
            auth[key] = [v for v in auth[key] if not str(v).startswith("principal:")]
    path = scratch / "marin.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def load_local_config(name: str | None, scratch: Path) -> Any:
    """The ``IrisClusterConfig`` the child starts for ``name`` (see the module rules); raises
    ``ClusterConfigError`` with Iris's own complaint about a manifest it refuses."""
    import yaml  # type: ignore[import-untyped, unused-ignore]
    from iris.cluster.config import load_config, make_local_config  # type: ignore[import-untyped, unused-ignore]

    marin = name == "marin"
    path = _built_in_manifest() if name in (None, "", "default") else _marin_manifest(scratch) if marin else Path(name)
    try:
        config = load_config(path)
    except (ValueError, TypeError, KeyError, OSError, yaml.YAMLError) as error:  # pydantic's errors are ValueErrors
        detail = " ".join(str(error).split())
        raise ClusterConfigError(f"--cluster-config {name!r}: Iris cannot load it: {detail[:500]}") from None
    if not config.scale_groups:
        raise ClusterConfigError(f"--cluster-config {name!r} has no scale_groups")
    for group in config.scale_groups.values():
        if marin:
            group.max_slices = min(group.max_slices, MARIN_MAX_SLICES)
            group.buffer_slices = 0
        resources = group.resources
        if resources is not None:
            lowered = [f"{what} {value / 1024**3:g} GiB -> {limit / 1024**3:g} GiB"
                       for what, value, limit in (("ram", resources.memory_bytes, LOCAL_WORKER_RAM),
                                                  ("disk", resources.disk_bytes, LOCAL_WORKER_DISK)) if value > limit]
            if lowered:
                print(f"iris-local: group {group.name}: {', '.join(lowered)} (what a local worker has)", file=sys.stderr)
            resources.memory_bytes = min(resources.memory_bytes, LOCAL_WORKER_RAM)
            resources.disk_bytes = min(resources.disk_bytes, LOCAL_WORKER_DISK)
    return make_local_config(config)


def _shorten_idle_threshold(cluster: Any, seconds: float) -> None:
    """Reclaim idle slices after ``seconds``: ``create_local_autoscaler`` builds each ``ScalingGroup``
    with Iris's cloud default (600 s) and no way to pass another."""
    from rigging.timing import Duration  # type: ignore[import-untyped, unused-ignore]

    groups = getattr(getattr(cluster, "_autoscaler", None), "_groups", None)
    if not isinstance(groups, dict):
        print("iris-local: cannot shorten the idle threshold (Iris's autoscaler changed)", file=sys.stderr)
        return
    for group in groups.values():
        if hasattr(group, "_idle_threshold"):
            group._idle_threshold = Duration.from_seconds(seconds)


def _scan_timeouts_every(cluster: Any, seconds: float) -> None:
    """Look for tasks past their execution timeout every ``seconds``: Iris's controller builds its
    scan's rate limiter with a fixed interval (``TIMEOUT_SCAN_SECONDS``)."""
    from rigging.timing import RateLimiter  # type: ignore[import-untyped, unused-ignore]

    controller: Any = getattr(cluster, "_controller", None)
    if not hasattr(controller, "_timeout_rate_limiter"):
        print("iris-local: cannot change the timeout scan (Iris's controller changed)", file=sys.stderr)
        return
    controller._timeout_rate_limiter = RateLimiter(interval_seconds=seconds)


def _lower_endpoint_lease_floor(environ: MutableMapping[str, str]) -> None:
    """Tests only: with ``$FRAY_MIN_ENDPOINT_LEASE_S`` set, grant endpoint leases that short, as the
    embedded controller does (``controller.engine.endpoint_registry``): Iris's 3-minute floor is a module constant of
    its endpoint service, read at each registration."""
    from fray_jupyter.controller.engine.endpoint_registry import MIN_LEASE_ENV, MIN_LEASE_MS, lease_floor_ms

    floor = lease_floor_ms(environ)
    asked = environ.pop(MIN_LEASE_ENV, None)  # the controller's setting: its tasks (Iris passes its env on) never see it
    if floor == MIN_LEASE_MS and not asked:
        return
    from iris.cluster.controller import endpoints  # type: ignore[import-untyped, unused-ignore]
    from rigging.timing import Duration  # type: ignore[import-untyped, unused-ignore]

    endpoints.MIN_ENDPOINT_LEASE = Duration.from_ms(floor)
    print(f"iris-local: endpoint lease floor {floor} ms (${MIN_LEASE_ENV})", file=sys.stderr)


TASK_PORT_WINDOW: Final[int] = 100


def _own_task_port_window(pid: int) -> tuple[int, int]:
    """The window of Iris's task-port range (12000-14000) this cluster hands ports out from: one of
    20 windows of ``TASK_PORT_WINDOW``, by process id. Iris's allocator checks a port is free when it
    hands it out, not when the task binds it; on one machine two local clusters (tests run several)
    would both hand out 12000 and one task would fail with "address already in use"; on a real
    cluster each worker is its own machine."""
    from iris.cluster.worker import port_allocator  # type: ignore[import-untyped, unused-ignore]

    start, end = port_allocator.DEFAULT_TASK_PORT_RANGE
    windows = max(1, (end - start) // TASK_PORT_WINDOW)
    first = start + (pid % windows) * TASK_PORT_WINDOW
    return first, first + TASK_PORT_WINDOW


def _use_own_task_ports() -> None:
    """Make the local cluster's workers share a port allocator over ``_own_task_port_window``."""
    import functools

    from iris.cluster import local_cluster  # type: ignore[import-untyped, unused-ignore]
    from iris.cluster.worker import port_allocator  # type: ignore[import-untyped, unused-ignore]

    local_cluster.PortAllocator = functools.partial(port_allocator.PortAllocator, _own_task_port_window(os.getpid()))


def serve(name: str | None, port: int, idle_seconds: float = IDLE_SECONDS,
          timeout_scan_seconds: float = TIMEOUT_SCAN_SECONDS) -> None:
    """The child's body (see the module rules)."""
    import tempfile

    from iris.cluster.local_cluster import LocalCluster

    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    with tempfile.TemporaryDirectory(prefix="fray-iris-local-") as scratch:
        try:
            config = load_local_config(name or None, Path(scratch))
        except ClusterConfigError as error:
            print(f"error: {error}", flush=True)
            return
        if port:
            config.controller.local.port = port
        _lower_endpoint_lease_floor(os.environ)
        _use_own_task_ports()
        cluster = LocalCluster(config)
        try:
            url = cluster.start()
            _shorten_idle_threshold(cluster, idle_seconds)
            if timeout_scan_seconds != TIMEOUT_SCAN_SECONDS:
                _scan_timeouts_every(cluster, timeout_scan_seconds)
            print(url, flush=True)
            os.dup2(2, 1)  # nobody reads stdout any more: later prints must not fill the pipe
            threading.Thread(target=_set_at_end_of_input, args=(done,), daemon=True).start()
            done.wait()
        finally:
            cluster.close()


def _set_at_end_of_input(done: threading.Event) -> None:
    sys.stdin.read()
    done.set()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:5]))
