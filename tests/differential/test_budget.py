"""Budgets and bands, the embedded controller against the genuine Iris scheduler (the twin), both on the
built-in profile plus a v5p-64 group (8 VMs of 4 chips), the embedded one started with
``--budget-limit 1000`` (the twin's default: its cluster config names none).

The same jobs go to both — a v5p-64 job, a CPU job, and one of a user over a small limit — and the suite
checks, against the twin's own answers:

* ``GetUserBudget``'s spend once a job's tasks run, on both, equals the preview's ``job_spend`` for it
  (the v5p-64 job: 8 tasks × 4 chips, 37,952);
* the effective band: ``GetSchedulerState``'s per-user band and the band of a pending job, on both, equal
  the band the preview (``client.budget.budget``, read from that controller before submitting) said;
* LaunchJob's band rules: a band above the user's max band is PERMISSION_DENIED on both, allowed once
  ``SetUserBudget`` raised it;
* ``GetSchedulerState``'s pending and running buckets and ``ListUsers``' job counts agree, but for the
  fields ``differences.BUDGET_DIFFERENCES`` lists (``backend_id`` is not compared: a local Iris names
  ``default`` for some tasks and leaves others empty; the embedded controller has no backends and
  always leaves it empty).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
import yaml

from fray_jupyter.client.budget import budget
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import FrayError
from fray_jupyter.cluster.profile import BUILT_IN
from fray_jupyter.controller import iris_local
from fray_jupyter.controller.runtime.runner import WORKER_ID
from fray_jupyter.iris.budget import BudgetPicture
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.planning import Plan, plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from tests.controller_harness import start_controller, stop_quietly
from tests.differential.differences import BUDGET_DIFFERENCES
from tests.waiting import until

C = controller_pb2.Controller
J = job_pb2
T = TypeVar("T")
TIMEOUT = 180.0
V5P_64_GROUP = {"num_vms": 8, "buffer_slices": 0, "max_slices": 1,
                "resources": {"cpu": 208, "ram": "448GB", "disk": "100GB", "device_type": "tpu",
                              "device_variant": "v5p-64", "device_count": 4, "capacity_type": "preemptible"},
                "slice_template": {"gcp": {"zone": "us-central1-a", "runtime_version": "v2-alpha-tpuv5",
                                           "service_account": "local@fray-local.iam.gserviceaccount.com"}}}


@pytest.fixture(scope="module")
def cluster_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = yaml.safe_load(BUILT_IN.read_text())
    data["name"] = "fray-budget"
    data["scale_groups"]["tpu_v5p_64"] = V5P_64_GROUP
    path = tmp_path_factory.mktemp("budget-config") / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def sides(cluster_config: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, FrayClient]]:
    """The twin and the embedded controller, both on ``cluster_config``."""
    if iris_local.unavailable_reason() is not None:
        pytest.skip(str(iris_local.unavailable_reason()))
    root = tmp_path_factory.mktemp("budget")
    controller = start_controller(root / "state", "--cluster-config", str(cluster_config), "--slots", "16",
                                  "--budget-limit", "1000")
    try:
        with iris_local.iris_local_cluster(root / "twin", cluster_config=str(cluster_config)) as url, \
                FrayClient(url) as twin, FrayClient(controller.info.url, controller.info.token) as embedded:
            yield {"twin": twin, "embedded": embedded}
    finally:
        stop_quietly(controller)


def job(user: str, name: str, resources: ResourceConfig, **fields: object) -> Plan:
    return plan(JobRequest(name=name, entrypoint=Entrypoint.from_binary("sleep", ["300"]), resources=resources,
                           **fields), user=user)  # type: ignore[arg-type]


V5P_64 = ResourceConfig.with_tpu("v5p-64")
CPU = ResourceConfig(cpu=2, ram="3g", disk="1g")
HELD = ResourceConfig.with_tpu("v4-32", slice_count=2)  # one 8-task gang on 4-VM slices: pending for ever


def eventually(read: Callable[[], T], done: Callable[[T], bool], what: str) -> T:
    """``read()``'s first value that is ``done`` (``tests/waiting.py``; Iris has no change feed)."""
    def reached() -> tuple[T] | None:
        value = read()
        return (value,) if done(value) else None

    return until(reached, what, hang_guard=TIMEOUT)[0]


def all_running(client: FrayClient, job_id: str) -> None:
    eventually(lambda: [t.state for t in client.tasks(job_id)],
               lambda states: bool(states) and all(s == J.TASK_STATE_RUNNING for s in states), f"{job_id} running")


@dataclass
class Seen:
    """What one side answered: the previews read before each submission, then its own answers."""

    big_before: BudgetPicture
    cpu_before: BudgetPicture
    spent: dict[str, int]
    held_before: BudgetPicture
    big_next: BudgetPicture
    state: C.GetSchedulerStateResponse
    users: tuple[C.UserSummary, ...]
    production: str
    production_allowed: str


def play(client: FrayClient) -> Seen:
    """The scenario on one side (see the module docstring); every job it started is stopped."""
    big, cpu = job("big", "train", V5P_64), job("cpu", "prep", CPU)
    small, held = job("small", "prep", CPU), job("small", "held", HELD)
    client.set_user_budget("small", 10)
    big_before, cpu_before = budget(big, client, max_age=0), budget(cpu, client, max_age=0)
    ids = [client.submit(p) for p in (big, cpu, small)]
    for job_id in ids:
        all_running(client, job_id)
    spent = {user: client.user_budget(user).budget_spent for user in ("big", "cpu", "small")}
    held_before, big_next = budget(held, client, max_age=0), budget(job("big", "next", CPU), client, max_age=0)
    ids.append(client.submit(held))
    state = eventually(client.scheduler_state, lambda s: s.total_pending >= 8, f"{client.url}: held job pending")
    users = client.users()
    prod = job("cpu", "prod", CPU, priority="production")
    try:
        production = client.submit(prod)
    except FrayError as error:
        production = error.code
    client.set_user_budget("cpu", 1000, "production")
    ids.append(allowed := client.submit(prod))
    for job_id in ids:
        client.terminate(job_id)
    return Seen(big_before, cpu_before, spent, held_before, big_next, state, users, production, allowed)


@pytest.fixture(scope="module")
def scenario(sides: dict[str, FrayClient]) -> dict[str, Seen]:
    return {name: play(client) for name, client in sides.items()}


def test_a_v5p_64_job_spends_what_the_preview_said_on_both(scenario: dict[str, Seen]) -> None:
    for name, seen in scenario.items():
        before = seen.big_before
        assert (before.job_spend, before.spent, before.limit) == (37_952, 0, 1000), name
        assert before.effective_band == J.PRIORITY_BAND_INTERACTIVE, name
        assert seen.spent == {"big": 37_952, "cpu": seen.cpu_before.job_spend, "small": 13}, name
    assert scenario["twin"].spent == scenario["embedded"].spent


def test_over_the_limit_the_preview_and_the_scheduler_say_batch_on_both(scenario: dict[str, Seen]) -> None:
    for name, seen in scenario.items():
        bands = {row.user_id: row.effective_band for row in seen.state.user_budgets}
        assert bands == {"big": J.PRIORITY_BAND_BATCH, "cpu": J.PRIORITY_BAND_INTERACTIVE,
                         "small": J.PRIORITY_BAND_BATCH}, name
        (waiting,) = [(b.band, b.user_id, b.count) for b in seen.state.pending_buckets]
        assert waiting == (seen.held_before.effective_band, "small", 8) == (J.PRIORITY_BAND_BATCH, "small", 8), name
        assert seen.big_next.effective_band == J.PRIORITY_BAND_BATCH, name


def test_bands_above_the_max_are_refused_until_raised_on_both(scenario: dict[str, Seen]) -> None:
    assert {name: seen.production for name, seen in scenario.items()} == {
        "twin": "permission_denied", "embedded": "permission_denied"}
    assert {seen.production_allowed for seen in scenario.values()} == {"/cpu/prod"}


def _buckets(state: C.GetSchedulerStateResponse) -> tuple[set[tuple[int, str, str, int]], dict[tuple[int, str, str], int]]:
    pending = {(b.band, b.user_id, b.job_id, b.count) for b in state.pending_buckets}
    running: dict[tuple[int, str, str], int] = {}
    for bucket in state.running_buckets:
        key = (bucket.band, bucket.user_id, bucket.job_id)
        running[key] = running.get(key, 0) + bucket.count
    return pending, running


def test_the_scheduler_state_and_users_agree_but_for_the_listed_fields(scenario: dict[str, Seen]) -> None:
    twin, embedded = scenario["twin"].state, scenario["embedded"].state
    assert _buckets(twin) == _buckets(embedded)
    assert {(r.user_id, r.budget_limit, r.budget_spent, r.max_band) for r in twin.user_budgets} == {
        (r.user_id, r.budget_limit, r.budget_spent, r.max_band) for r in embedded.user_budgets}
    assert (twin.total_pending, twin.total_running) == (embedded.total_pending, embedded.total_running)
    workers = {b.worker_id for b in twin.running_buckets}, {b.worker_id for b in embedded.running_buckets}
    assert "" not in workers[0] and workers[1] == {WORKER_ID}, BUDGET_DIFFERENCES["worker_id"]
    users = {name: [(u.user, dict(u.job_state_counts)) for u in seen.users] for name, seen in scenario.items()}
    assert users["twin"] == users["embedded"]
