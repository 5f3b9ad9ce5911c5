"""The proof that the embedded controller is a faithful twin of the genuine Iris scheduler: every corpus
job (``corpus.py``) is planned with ``plan()`` and sent to both, with the same cluster profile, and
compared on

* LaunchJob: accepted, or refused with which gRPC code (and the message);
* the verdict: runs / pending for ever (decided from Iris's own pending reason, ``tests/twin.py``) /
  refused, and for a job pending for ever the autoscaler's reason;
* the task → gang partition: on the twin, read back through ListTasks → ListWorkers (tasks of a gang
  share one ``tpu-name`` / ``leafgroup`` value, task i on ``tpu-worker-id`` i) and checked against
  ``plan().groups``;
* the names of the task environment's variables, modulo ``differences.ENV_ONLY_ON_TWIN`` /
  ``ENV_ONLY_ON_EMBEDDED``;
* ``fit()`` before submitting, read with the profile both run: ``never`` exactly for the jobs the twin
  refuses or leaves pending, and the same verdict (now / after-scale-up / never) from the embedded
  controller's capacity answers as from the twin's;
* ``fit()`` with no profile passed, as ``plan --check``, the picker and ``%%fray --dry-run`` call it: the
  embedded controller reports its profile, so its verdict is the exact one; the twin (a genuine Iris)
  reports none, so its verdict rests on the wire alone and must never be wrong while confident (an
  uncertain one is ``after-scale-up`` naming what the controller does not report).

Every difference found must be listed in ``differences.py`` with its explanation, and every listed
difference must still occur: the file is the complete, current account.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import FrayError
from fray_jupyter.client.fit import Fit, fit
from fray_jupyter.cluster.profile import load_profile
from fray_jupyter.planning import Plan
from tests.differential.conftest import on_both
from tests.differential.corpus import CORPUS, Case, plan_of
from tests.differential.differences import (
    CASE_DIFFERENCES,
    CONSTRAINTS_TAIL,
    ENV_ONLY_ON_EMBEDDED,
    ENV_ONLY_ON_TWIN,
    LOCAL_RUNTIME_ONLY,
    PLACEMENT_DEPENDENT_FOR_CPU_JOBS,
)
from tests.twin import Outcome, Place, partition, places, settle

_INHERITED = frozenset(os.environ) | {"PYTEST_CURRENT_TEST"} | frozenset(LOCAL_RUNTIME_ONLY)
"""The twin passes its own environment (this process's) on to tasks, and its local runtime adds
``LOCAL_RUNTIME_ONLY``: those names say nothing about Iris on a worker."""


@dataclass
class Side:
    """What one controller did with one job."""

    launch: str  # "accepted" or "refused <code>"
    message: str = ""
    job_id: str = ""
    outcome: Outcome | None = None
    env: frozenset[str] = frozenset()
    placed: dict[int, Place] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return "refused" if self.outcome is None else self.outcome.verdict

    @property
    def autoscaler_reason(self) -> str:
        reason = self.outcome.reason if self.outcome is not None else ""
        return reason.split("Unsatisfied autoscaler demand: ", 1)[-1].strip() if reason else ""


def _env_keys(client: FrayClient, job_id: str) -> frozenset[str]:
    lines = [entry.data for entry in client.logs(job_id).entries if entry.key.startswith(f"{job_id}/0:")
             and "IRIS_TASK_ID" in entry.data]
    return frozenset(lines[0].split()) - _INHERITED if lines else frozenset()


def run_corpus(client: FrayClient, plans: dict[str, Plan]) -> dict[str, Side]:
    """Submit every plan, wait for every verdict (and for every job that runs to end), read back
    placement as each job ends (before the twin reclaims its idle slice) and env, and stop the jobs
    left pending."""
    sides: dict[str, Side] = {}
    for name, p in plans.items():
        try:
            sides[name] = Side("accepted", job_id=client.submit(p))
        except FrayError as error:
            sides[name] = Side(f"refused {error.code}", error.detail)
    accepted = {side.job_id: side for side in sides.values() if side.job_id}

    def read_place(job_id: str, found: Outcome) -> None:
        if found.verdict == "runs":
            accepted[job_id].placed = places(client, job_id)

    for job_id, found in settle(client, accepted, on_decided=read_place).items():
        accepted[job_id].outcome = found
    for job_id, side in accepted.items():
        if side.verdict == "runs":
            side.env = _env_keys(client, job_id)
        elif side.verdict == "pending":
            client.terminate(job_id)
    return sides


@dataclass(frozen=True)
class Fits:
    """One corpus job's ``fit()`` verdicts, read before anything is submitted."""

    twin: Fit  # with the profile both run
    embedded: Fit  # with the profile both run
    twin_reported: Fit  # no profile passed: the genuine Iris reports none, so the wire alone
    embedded_reported: Fit  # no profile passed: the embedded controller reports its own


@pytest.fixture(scope="module")
def fits(twin: FrayClient, embedded: FrayClient, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Fits]:
    """``fit()`` of every corpus job against each controller, with the profile both run and with none
    passed, both controllers at rest (only warm slices up)."""
    workspace = tmp_path_factory.mktemp("fit-workspace")
    plans = {case.name: plan_of(case, workspace) for case in CORPUS}
    profile = load_profile()  # what both were started with
    return {name: Fits(fit(p, twin, profile=profile, max_age=0), fit(p, embedded, profile=profile, max_age=0),
                       fit(p, twin, max_age=0), fit(p, embedded, max_age=0))
            for name, p in plans.items()}


def fit_is_right(verdict: Fit, twin: Side) -> bool:
    """Whether ``verdict`` says what happened on the twin: ``never`` exactly when it refused the job or
    left it pending for ever."""
    return (verdict.verdict == "never") == (twin.verdict in ("refused", "pending"))


@pytest.fixture(scope="module")
def results(twin: FrayClient, embedded: FrayClient, fits: dict[str, Fits],
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Plan, Side, Side]]:
    del fits  # read first: fit() must see both controllers at rest
    workspace = tmp_path_factory.mktemp("workspace")
    plans = {case.name: plan_of(case, workspace) for case in CORPUS}
    on_twin, on_embedded = on_both(lambda client, _side: run_corpus(client, plans), twin, embedded)
    return {name: (plans[name], on_twin[name], on_embedded[name]) for name in plans}


def comparable(message: str) -> str:
    """A refusal message without its ``(constraints: …)`` tail (``differences.CONSTRAINTS_TAIL``)."""
    return message.split(CONSTRAINTS_TAIL, 1)[0]


def observed_differences(p: Plan, twin: Side, embedded: Side) -> dict[str, str]:
    """aspect → what differs (empty when the embedded controller did what Iris did)."""
    found: dict[str, str] = {}
    if twin.launch != embedded.launch:
        found["launch"] = f"twin {twin.launch} ({twin.message}); embedded {embedded.launch} ({embedded.message})"
    elif comparable(twin.message) != comparable(embedded.message):
        found["message"] = f"twin {twin.message!r}; embedded {embedded.message!r}"
    if twin.launch == embedded.launch == "accepted":
        if twin.verdict != embedded.verdict:
            found["verdict"] = (f"twin {twin.verdict} {twin.outcome}; embedded {embedded.verdict} {embedded.outcome}")
        elif twin.verdict == "pending" and twin.autoscaler_reason != embedded.autoscaler_reason:
            found["reason"] = f"twin {twin.autoscaler_reason!r}; embedded {embedded.autoscaler_reason!r}"
    if twin.verdict == "runs":
        gang = next((g for g in p.groups if g.gang), None)
        if gang is not None:
            key = (lambda place: place.tpu_name) if p.group_by == "tpu-name" else (lambda place: place.leafgroup)
            seen = partition(twin.placed, key)
            expected = tuple(tuple(g.tasks) for g in p.groups)
            in_order = p.group_by != "tpu-name" or all(pl.tpu_worker_id == i for i, pl in twin.placed.items())
            if seen != expected or not in_order:
                found["partition"] = f"twin placed {seen} (in worker order: {in_order}); plan says {expected}"
    return found


def _env_difference(twin: Side, embedded: Side) -> tuple[frozenset[str], frozenset[str]]:
    if twin.verdict != "runs" or embedded.verdict != "runs" or not twin.env or not embedded.env:
        return frozenset(), frozenset()
    return twin.env - embedded.env, embedded.env - twin.env


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_embedded_controller_does_what_iris_does(results: dict[str, tuple[Plan, Side, Side]], case: Case) -> None:
    p, twin, embedded = results[case.name]
    assert twin.verdict != "undecided" and embedded.verdict != "undecided", (twin, embedded)
    observed = observed_differences(p, twin, embedded)
    documented = {aspect: why for (name, aspect), why in CASE_DIFFERENCES.items() if name == case.name}
    unexplained = {aspect: detail for aspect, detail in observed.items() if aspect not in documented}
    stale = sorted(set(documented) - set(observed))
    assert not unexplained, f"unexplained differences for {case.name}: {unexplained}"
    assert not stale, f"differences.py lists {stale} for {case.name}, which no longer differ: remove them"


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_fit_agrees_with_what_happened_on_the_twin(results: dict[str, tuple[Plan, Side, Side]],
                                                   fits: dict[str, Fits], case: Case) -> None:
    """With the profile: ``never`` exactly for the jobs the twin refused or left pending for ever, and the
    same verdict from the embedded controller's capacity answers as from the twin's. With none passed:
    the embedded controller's own report gives that exact verdict; the twin's wire alone gives either the
    right verdict or an uncertain ``after-scale-up`` — never a wrong confident one."""
    _, twin, _ = results[case.name]
    found = fits[case.name]
    assert fit_is_right(found.twin, twin) and found.twin.confident, (found.twin, twin)
    assert found.twin.verdict == found.embedded.verdict, (found.twin, found.embedded)
    assert found.embedded_reported == found.embedded, (found.embedded_reported, found.embedded)
    wire = found.twin_reported
    assert fit_is_right(wire, twin) or (not wire.confident and wire.verdict == "after-scale-up"), (wire, twin)


def test_fit_agreement_figures(results: dict[str, tuple[Plan, Side, Side]], fits: dict[str, Fits]) -> None:
    """The figures over the corpus (printed with ``-s``): right / uncertain / wrong-and-confident, per way
    of reading the cluster; 0 wrong confident verdicts in every way."""
    ways = {"with the profile (twin)": lambda f: f.twin, "embedded, its own report": lambda f: f.embedded_reported,
            "genuine Iris, the wire alone": lambda f: f.twin_reported}
    lines = []
    for way, pick in ways.items():
        chosen = [(pick(fits[name]), results[name][1]) for name in fits]
        right = sum(fit_is_right(v, t) for v, t in chosen)
        uncertain = sum(not v.confident for v, _ in chosen)
        wrong = [v for v, t in chosen if v.confident and not fit_is_right(v, t)]
        lines.append(f"fit {way}: {right}/{len(chosen)} right, {uncertain} uncertain, {len(wrong)} wrong and confident")
        assert not wrong, (way, wrong)
    print("\n" + "\n".join(lines))


def test_task_environments_name_the_same_variables(results: dict[str, tuple[Plan, Side, Side]]) -> None:
    """Modulo the documented keys, a task sees the same variable names on both controllers; every
    documented key still differs somewhere."""
    seen_twin: dict[str, list[str]] = {}
    seen_embedded: dict[str, list[str]] = {}
    compared = 0
    for name, (p, twin, embedded) in results.items():
        only_twin, only_embedded = _env_difference(twin, embedded)
        if not p.chips_per_task:  # a CPU job's worker is whichever was idle: see differences.py
            only_twin, only_embedded = (only_twin - set(PLACEMENT_DEPENDENT_FOR_CPU_JOBS),
                                        only_embedded - set(PLACEMENT_DEPENDENT_FOR_CPU_JOBS))
        compared += bool(twin.env and embedded.env)
        for key in only_twin:
            seen_twin.setdefault(key, []).append(name)
        for key in only_embedded:
            seen_embedded.setdefault(key, []).append(name)
    assert compared >= 10
    unexplained = {f"only the twin sets {k}": sorted(v)[:3] for k, v in seen_twin.items() if k not in ENV_ONLY_ON_TWIN}
    unexplained.update({f"only the embedded controller sets {k}": sorted(v)[:3]
                        for k, v in seen_embedded.items() if k not in ENV_ONLY_ON_EMBEDDED})
    assert not unexplained, "\n".join(f"{k} (e.g. {v})" for k, v in sorted(unexplained.items()))
    assert set(ENV_ONLY_ON_TWIN) == set(seen_twin) and set(ENV_ONLY_ON_EMBEDDED) == set(seen_embedded), (
        "differences.py lists variables that no longer differ")


def test_refusals_differ_only_in_how_the_constraints_are_written(results: dict[str, tuple[Plan, Side, Side]]) -> None:
    """Both refuse with '<reason> (constraints: …)'; Iris writes the list as Python reprs, the embedded
    controller as ``key==value`` (``differences.CONSTRAINTS_TAIL``)."""
    refused = [(twin.message, embedded.message) for _, twin, embedded in results.values()
               if twin.launch.startswith("refused") and CONSTRAINTS_TAIL in twin.message]
    assert refused
    for on_twin, on_embedded in refused:
        assert on_twin.split(CONSTRAINTS_TAIL, 1)[1].startswith("[Constraint(key=")
        assert CONSTRAINTS_TAIL in on_embedded and "Constraint(key=" not in on_embedded


def test_the_corpus_covers_every_verdict(results: dict[str, tuple[Plan, Side, Side]]) -> None:
    """At least 40 jobs, and each verdict (runs, pending for ever, refused) is reached on the twin."""
    verdicts = [twin.verdict for _, twin, _ in results.values()]
    assert len(verdicts) >= 40 and {"runs", "pending", "refused"} <= set(verdicts), verdicts


def test_report(results: dict[str, tuple[Plan, Side, Side]], tmp_path_factory: pytest.TempPathFactory) -> None:
    """One line per job (verdict on both, and the twin's partition) in ``differential-report.txt``."""
    lines = []
    for name, (p, twin, embedded) in results.items():
        lines.append(f"{name:24} replicas={p.replicas:<3} twin={twin.verdict:8} embedded={embedded.verdict:8} "
                     f"twin-partition={partition(twin.placed) if twin.placed else '-'} "
                     f"{(twin.message or twin.autoscaler_reason)[:120]}")
    report = tmp_path_factory.getbasetemp() / "differential-report.txt"
    report.write_text("\n".join(lines) + "\n")
    assert len(lines) == len(CORPUS)
