"""Coordinators on both controllers: a CPU coordinator task submits its steps through Marin's own
``current_client()`` (the real marin-fray / marin-iris client, as inside any Iris task), on the genuine
Iris scheduler (the twin) and on the embedded controller, and the two are compared on

* every job of the tree: its id, final state, and for a job ended by its parent the reason;
* what GetJobStatus says of each (``parent_job_id``, ``has_children``) and how ListJobs lists the tree
  (the root among ROOTS, each job's CHILDREN);
* what each task saw and printed (lines starting ``SEEN``): Fray's ``JobFailed`` of a failed child, a
  child's identity (``task_info()``) and the env vars, setup scripts, constraints and region it
  inherited, a refused step's error code;
* what the status panel shows of the ended tree (``JobStatusPanel``, read as Iris lists it): each
  job below the root with its depth and state, the failed ones it names, and that it is done;

and, with raw LaunchJob / ListJobs calls, on the child ids and queries each accepts or refuses. A
difference must be listed in ``differences.COORDINATOR_DIFFERENCES`` with its reason; an unlisted one
fails, and so does a listed one that no longer occurs.

The coordinators ask for on-demand CPU (``preemptible=False``): on the twin a CPU job may otherwise land
on an idle preemptible TPU VM, whose region its children would inherit (Iris's rule, and a real one)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import FrayError, JobNotFound
from fray_jupyter.iris.bundle import create_workspace_zip
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.states import TERMINAL_JOB_STATES, job_state_name
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from fray_jupyter.widgets.status import JobStatusPanel
from tests.differential.conftest import Side, on_both, wait_at_rest
from tests.differential.differences import COORDINATOR_DIFFERENCES
from tests.waiting import until

C = controller_pb2.Controller
J = job_pb2
USER = "diff"
PRELUDE = '''
import json, os, sys
from fray.client import JobFailed, wait_all
from fray.current_client import current_client
from fray.types import Entrypoint, EnvironmentConfig, JobRequest, ResourceConfig

cpu = ResourceConfig(cpu=1, ram="256m", disk="1g", preemptible=False)
def sh(name, command, resources=cpu, **kw):
    return JobRequest(name=name, entrypoint=Entrypoint.from_binary("sh", ["-c", command]), resources=resources, **kw)
def py(name, script, resources=cpu):
    return sh(name, f'exec "$IRIS_PYTHON" "$IRIS_WORKDIR/{script}"', resources)
def seen(*words):
    print("SEEN", *words, flush=True)
client = current_client()
'''
SHOW_TASK = '''
import json, os
from fray_jupyter import task_info
info = task_info()
print("SEEN task", info.job_id, info.task_index, info.num_tasks, info.user, flush=True)
for name in ("FOO", "BAR", "IRIS_JOB_SETUP_SCRIPTS", "IRIS_JOB_CONSTRAINTS", "IRIS_WORKER_REGION"):
    print("SEEN", name, os.environ.get(name), flush=True)
print("SEEN IRIS_JOB_ENV has", sorted(json.loads(os.environ.get("IRIS_JOB_ENV") or "{}")), flush=True)
'''
CPU = ResourceConfig(cpu=1, ram="512m", disk="1g", preemptible=False)


@dataclass(frozen=True)
class Scenario:
    """A coordinator: its ``coord.py`` (after ``PRELUDE``); ``prints``, the tasks (relative to the
    root) that print SEEN lines; other ``scripts`` in its workspace (its steps run them: Marin's
    in-task client sends the coordinator's bundle with each); its resources, env vars and setup;
    and, for ``kill_when``, the job whose RUNNING makes the test terminate the root."""

    coordinator: str
    prints: tuple[str, ...] = ()
    scripts: dict[str, str] = field(default_factory=dict)
    resources: ResourceConfig = field(default_factory=lambda: CPU)
    env: dict[str, str] = field(default_factory=dict)
    setup_scripts: tuple[str, ...] = ()
    kill_when: str = ""


MID_WAITS_FOR_LEAF = PRELUDE + """
leaf = client.submit(sh("leaf", "echo SEEN leaf ran"))
wait_all([leaf])
seen("mid waited for", leaf.job_id)
"""
SCENARIOS: dict[str, Scenario] = {
    "coord-one": Scenario("""
wait_all([client.submit(sh("step", "echo SEEN step ran"))])
seen("coordinator done")
""", ("/0", "/step/0")),
    "coord-three": Scenario("""
steps = [client.submit(sh(f"step-{i}", f"echo SEEN step {i}")) for i in range(3)]
wait_all(steps)
seen("ids", *sorted(step.job_id for step in steps))
""", ("/0", "/step-0/0", "/step-1/0", "/step-2/0")),
    "coord-nested": Scenario("""
wait_all([client.submit(py("mid", "mid.py"))])
""", ("/mid/0", "/mid/leaf/0"), {"mid.py": MID_WAITS_FOR_LEAF}),
    "coord-child-fails": Scenario("""
bad = client.submit(sh("bad", "echo SEEN failing; exit 3"))
try:
    wait_all([bad])
except JobFailed as failed:
    seen("JobFailed", failed.job_id, failed.failed_status)
    sys.exit(1)
""", ("/0", "/bad/0")),
    "coord-killed": Scenario("""
wait_all([client.submit(py("mid", "mid.py")), client.submit(sh("sibling", "sleep 300"))])
""", (), {"mid.py": PRELUDE + 'wait_all([client.submit(sh("leaf", "sleep 300"))])\n'}, kill_when="/mid/leaf"),
    "coord-tpu-step": Scenario("""
train = client.submit(sh("train", "echo SEEN train ran", ResourceConfig.with_tpu("v5p-8")))
wait_all([train, client.submit(sh("eval", "echo SEEN eval ran"))])
try:
    client.submit(sh("train-east", "true", ResourceConfig.with_tpu("v5p-8", regions=["us-east5"])))
except Exception as refused:
    seen("train-east refused", type(refused).__name__, getattr(refused, "code", ""))
""", ("/0", "/train/0", "/eval/0")),
    "coord-inherits": Scenario("""
own = EnvironmentConfig(workspace=os.environ["IRIS_WORKDIR"], env_vars={"BAR": "child"})
wait_all([client.submit(JobRequest(name="step", entrypoint=Entrypoint.from_binary(
    "sh", ["-c", 'exec "$IRIS_PYTHON" "$IRIS_WORKDIR/show.py"']), resources=cpu, environment=own))])
""", ("/step/0",), {"show.py": SHOW_TASK}, env={"FOO": "parent", "BAR": "parent"},
                               setup_scripts=("echo setting-up",)),
    "coord-tpu-region": Scenario("""
wait_all([client.submit(py("train", "show.py", ResourceConfig.with_tpu("v5p-8")))])
try:
    client.submit(sh("eval", "true"))  # a CPU step inherits the coordinator's region: no CPU group has it
except Exception as refused:
    seen("eval refused", type(refused).__name__, getattr(refused, "code", ""))
""", ("/0", "/train/0"), {"show.py": SHOW_TASK}, ResourceConfig.with_tpu("v5p-8", regions=["us-central1"])),
}


@dataclass
class Tree:
    """What one controller did with one coordinator (ids relative to the root, "" for the root)."""

    jobs: dict[str, tuple[str, str]] = field(default_factory=dict)  # state, reason when a parent ended it
    links: dict[str, tuple[str, bool]] = field(default_factory=dict)  # GetJobStatus parent, has_children
    listed: dict[str, tuple[str, ...]] = field(default_factory=dict)  # "roots" (this root only) / CHILDREN
    seen: tuple[tuple[str, str], ...] = ()  # (task key, SEEN line)
    panel: tuple[object, ...] = ()  # the panel's rows (path, depth, state), failed children, done

    def aspects(self) -> dict[str, object]:
        return {"jobs": self.jobs, "links": self.links, "listed": self.listed, "seen": self.seen, "panel": self.panel}


def relative(root: str, job_id: str) -> str:
    return job_id.removeprefix(root)


TREE_GUARD_S = 240.0
"""The hang guard of a wait on a coordinator's tree (a guard, not a speed bound): on a loaded machine
the twin scales TPU slices up for it one after another."""


def _wait(client: FrayClient, job_id: str, done: set[int] | frozenset[int]) -> J.JobStatus:
    """The job's status once its state is in ``done`` (a job a task has not submitted yet is waited for)."""
    def reached() -> J.JobStatus | None:
        try:
            status = client.status(job_id)
        except JobNotFound:
            return None
        return status if status.state in done else None

    names = sorted(job_state_name(state) for state in done)
    return until(reached, f"{client.url}: {job_id} submitted and in {names}", feed=client, hang_guard=TREE_GUARD_S)


def _whole_tree(client: FrayClient, root: str) -> list[str]:
    ids = [root]
    for job_id in ids:
        ids += [child.job_id for child in client.children(job_id)]
    return ids


def _seen(client: FrayClient, root: str, prints: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Every SEEN line of the tree, once each task of ``prints`` has some in (Iris's log service
    may deliver a finished task's last lines after its job ended)."""
    def all_in() -> tuple[tuple[tuple[str, str], ...]] | None:
        entries = client.logs(root, include_children=True, max_lines=10_000).entries
        found = tuple(sorted({(relative(root, e.key.rsplit(":", 1)[0]), e.data) for e in entries
                              if e.data.startswith("SEEN ")}))
        return (found,) if set(prints) <= {task for task, _ in found} else None  # a tree may print none

    return until(all_in, f"{client.url}: SEEN lines of each of {list(prints)} below {root}", feed=client)[0]


def _link(root: str, parent: str) -> str:
    """A parent as the trees compare it: "(none)", "(root)" or its path below the root."""
    return "(none)" if not parent else "(root)" if parent == root else relative(root, parent)


def run(client: FrayClient, side: Side, *, name: str, scenario: Scenario, workspaces: Path) -> Tree:
    """Submit the coordinator (its workspace ``workspaces/<side>``), kill it when asked, wait for every
    job of its tree to end, read it all."""
    workspace = workspaces / side
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "coord.py").write_text(PRELUDE + scenario.coordinator)
    for script, text in scenario.scripts.items():
        (workspace / script).write_text(text)
    environment = EnvironmentConfig(workspace=str(workspace), env_vars=scenario.env,
                                    setup_scripts=list(scenario.setup_scripts))
    job = JobRequest(name=name, entrypoint=Entrypoint.from_binary("sh", ["-c", 'exec "$IRIS_PYTHON" "$IRIS_WORKDIR/coord.py"']),
                     resources=scenario.resources, environment=environment)
    root = client.submit(plan(job, user=USER, bundle=create_workspace_zip(workspace).blob, parent=None))
    if scenario.kill_when:
        _wait(client, root + scenario.kill_when, {J.JOB_STATE_RUNNING} | TERMINAL_JOB_STATES)
        client.terminate(root)
    _wait(client, root, TERMINAL_JOB_STATES)
    ids = _whole_tree(client, root)
    tree = Tree()
    for job_id in ids:
        status = _wait(client, job_id, TERMINAL_JOB_STATES)
        ended_by = status.error if status.state == J.JOB_STATE_KILLED else ""
        tree.jobs[relative(root, job_id)] = (job_state_name(status.state), ended_by)
        tree.links[relative(root, job_id)] = (_link(root, status.parent_job_id), status.has_children)
        children = client.list(scope="children", parent=job_id, limit=500).jobs
        tree.listed[relative(root, job_id)] = tuple(sorted(relative(root, c.job_id) for c in children))
    roots = client.list(user=USER, scope="roots", name_filter=name, limit=500).jobs
    tree.listed["roots"] = tuple(sorted((relative(root, j.job_id), str(j.has_children)) for j in roots
                                        if j.job_id == root))
    tree.seen = _seen(client, root, scenario.prints)
    tree.panel = _panel(client, root)
    return tree


def _panel(client: FrayClient, root: str) -> tuple[object, ...]:
    """What the status panel of the ended root shows of its tree after one refresh."""
    panel = JobStatusPanel(client, root, start=False)
    try:
        panel.refresh()
        assert panel.tree is not None
        rows = tuple((relative(root, job.job_id), depth, job_state_name(job.state)) for depth, job in panel.tree.walk())
        return rows, tuple(relative(root, child.status.job_id) for child in panel.failed_below), panel.done
    finally:
        panel.close()


@pytest.fixture(scope="module")
def trees(twin: FrayClient, embedded: FrayClient, tmp_path_factory: pytest.TempPathFactory,
          ) -> Iterator[dict[str, tuple[Tree, Tree]]]:
    """Each scenario on the twin and on the embedded controller at once (one scenario at a time, so
    the twin's capacity is what each scenario alone would find); the twin is left at rest (the TPU
    slices the scenarios scaled up reclaimed) for the modules that compare against it at rest."""
    found: dict[str, tuple[Tree, Tree]] = {}
    for name, scenario in SCENARIOS.items():
        work = partial(run, name=name, scenario=scenario, workspaces=tmp_path_factory.mktemp(name))
        found[name] = on_both(work, twin, embedded)
    yield found
    wait_at_rest(twin)


def differing(twin: Tree, embedded: Tree) -> dict[str, str]:
    """aspect → what differs."""
    ours = embedded.aspects()
    return {aspect: f"twin {value!r}; embedded {ours[aspect]!r}" for aspect, value in twin.aspects().items()
            if ours[aspect] != value}


def check_listed(scenario: str, observed: dict[str, str]) -> None:
    documented = {aspect for (name, aspect) in COORDINATOR_DIFFERENCES if name == scenario}
    unexplained = {aspect: detail for aspect, detail in observed.items() if aspect not in documented}
    stale = sorted(documented - set(observed))
    assert not unexplained, f"unexplained differences for {scenario}: {unexplained}"
    assert not stale, f"differences.py lists {stale} for {scenario}, which no longer differ: remove them"


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_coordinator_tree_is_the_same_on_both(trees: dict[str, tuple[Tree, Tree]], name: str) -> None:
    twin, embedded = trees[name]
    check_listed(name, differing(twin, embedded))


def test_the_scenarios_reach_what_they_are_for(trees: dict[str, tuple[Tree, Tree]]) -> None:
    """Not vacuous: on the twin the trees have the expected shape, the failure, the cascade, the
    inheritance and the refusals happened."""
    twin = {name: pair[0] for name, pair in trees.items()}
    assert twin["coord-three"].listed[""] == ("/step-0", "/step-1", "/step-2")
    assert twin["coord-nested"].jobs["/mid/leaf"] == ("succeeded", "")
    assert twin["coord-nested"].links["/mid"] == ("(root)", True) and twin["coord-nested"].links[""] == ("(none)", True)
    assert ("/0", "SEEN JobFailed /diff/coord-child-fails/bad failed") in twin["coord-child-fails"].seen
    assert twin["coord-child-fails"].jobs[""][0] == "failed"
    assert twin["coord-child-fails"].panel == ((("/bad", 1, "failed"),), ("/bad",), True)
    assert twin["coord-nested"].panel[0] == (("/mid", 1, "succeeded"), ("/mid/leaf", 2, "succeeded"))
    assert twin["coord-killed"].jobs == {"": ("killed", "Terminated by user"), "/mid": ("killed", "Parent job terminated"),
                                         "/sibling": ("killed", "Parent job terminated"),
                                         "/mid/leaf": ("killed", "Parent job terminated")}
    inherited = {line for key, line in twin["coord-inherits"].seen if key == "/step/0"}
    assert inherited >= {"SEEN FOO parent", "SEEN BAR child", 'SEEN IRIS_JOB_SETUP_SCRIPTS ["echo setting-up"]',
                         "SEEN task /diff/coord-inherits/step 0 1 diff"}, inherited
    region = {line for key, line in twin["coord-tpu-region"].seen if key == "/train/0"}
    assert "SEEN IRIS_WORKER_REGION us-central1" in region and any("us-central1" in line and "IRIS_JOB_CONSTRAINTS" in line
                                                                   for line in region), region
    assert any("refused" in line for _, line in twin["coord-tpu-region"].seen)
    assert any("train-east refused" in line for _, line in twin["coord-tpu-step"].seen)


# -- raw calls: the child ids and queries each controller accepts ---------------------------------------
RAW_LAUNCHES = {"absent parent": "/diff/raw-absent/kid", "integer name": "/diff/raw/0", "spaced name": "/diff/raw/ x",
                "deep under a live parent": "/diff/raw/kid", "finished parent": "/diff/raw-done/kid"}
RAW_QUERIES = {"children without a parent": C.JobQuery(scope=C.JOB_QUERY_SCOPE_CHILDREN),
               "children of garbage": C.JobQuery(scope=C.JOB_QUERY_SCOPE_CHILDREN, parent_job_id="garbage"),
               "offset past the cap": C.JobQuery(offset=5001),
               "children of nobody": C.JobQuery(scope=C.JOB_QUERY_SCOPE_CHILDREN, parent_job_id="/diff/nobody")}


def _answer(call: object) -> str:
    try:
        result = call()  # type: ignore[operator]
    except FrayError as error:
        return f"{error.code}: {error.detail.split(' (constraints:')[0]}"
    return f"ok {result}"


def _raw(client: FrayClient) -> dict[str, str]:
    def request(name: str, command: str) -> C.LaunchJobRequest:
        launch = plan(JobRequest(name="raw", entrypoint=Entrypoint.from_binary("sh", ["-c", command]),
                                 resources=CPU), user=USER, parent=None).request
        launch.name = name
        return launch

    live = client.submit(request("/diff/raw", "sleep 300"))
    done = client.submit(request("/diff/raw-done", "true"))
    _wait(client, done, TERMINAL_JOB_STATES)
    answers = {what: _answer(lambda name=name: client.submit(request(name, "true")))
               for what, name in RAW_LAUNCHES.items()}
    for what, query in RAW_QUERIES.items():
        answers[what] = _answer(lambda query=query: client._call(  # the raw query, as a dashboard sends it
            "ListJobs", C.ListJobsRequest(query=query), C.ListJobsResponse).total_count)
    every = client._call("ListJobs", C.ListJobsRequest(query=C.JobQuery(name_filter="/diff/raw/")), C.ListJobsResponse)
    answers["ListJobs fills parent_job_id"] = str(any(job.parent_job_id for job in every.jobs))
    client.terminate(live)
    return answers


@pytest.fixture(scope="module")
def raw(twin: FrayClient, embedded: FrayClient) -> tuple[dict[str, str], dict[str, str]]:
    return _raw(twin), _raw(embedded)


def test_raw_child_launches_and_queries_get_the_same_answers(raw: tuple[dict[str, str], dict[str, str]]) -> None:
    twin, embedded = raw
    observed = {what: f"twin {twin[what]!r}; embedded {embedded[what]!r}" for what in twin if twin[what] != embedded[what]}
    check_listed("raw", observed)
    assert twin["absent parent"].startswith("failed_precondition: Cannot submit job: parent job /diff/raw-absent")
    assert twin["ListJobs fills parent_job_id"] == "False"
