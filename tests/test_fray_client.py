"""Results and Fray's client protocol against the real controllers: the embedded controller (a
real process) and a genuine Iris local cluster. A callable's value or exception comes back through
its attempt's output archive; Marin code using ``fray.client`` runs unchanged through
``fray_client()``."""

from __future__ import annotations

import functools
import os
import time
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fray_jupyter import RemoteError, ResultUnavailable, fray_client, submit
from fray_jupyter.client import FrayClient
from fray_jupyter.client.handle import JobHandle
from fray_jupyter.fray_protocol import FrayProtocolClient, default_call_name
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from tests.controller_harness import ControllerProcess, start_controller, stop_quietly
from tests.real_iris import real_iris_controller

USER = "fray-test"


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    controller = start_controller(tmp_path_factory.mktemp("embedded"), "--slots", "4")
    yield controller
    stop_quietly(controller)


@pytest.fixture(scope="module")
def embedded_client(embedded: ControllerProcess) -> Iterator[FrayClient]:
    with FrayClient(embedded.info.url, embedded.info.token) as opened:
        yield opened


@pytest.fixture(scope="module")
def iris_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrayClient]:
    with real_iris_controller(tmp_path_factory.mktemp("real-iris")) as url, FrayClient(url) as opened:
        yield opened


@pytest.fixture(params=["embedded", "real-iris"])
def client(request: pytest.FixtureRequest) -> FrayClient:
    return request.getfixturevalue("embedded_client" if request.param == "embedded" else "iris_client")


@pytest.fixture(autouse=True)
def _user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRIS_USER", USER)


def _explode(shard: int) -> None:
    raise KeyError(f"no shard {shard}")


def _write_outputs() -> str:
    out = Path(os.environ["IRIS_OUTPUT_DIR"])
    (out / "plots").mkdir(parents=True, exist_ok=True)
    (out / "plots" / "loss.svg").write_text("<svg/>")
    (out / "metrics.json").write_text('{"loss": 0.25}')
    return "written"


def _task_index() -> int:
    return int(os.environ["IRIS_TASK_ID"].rsplit("/", 1)[1].split(":")[0])


def test_submit_a_lambda_and_get_its_value_back(client: FrayClient) -> None:
    handle = submit(lambda x: x * 2, 21, client=client)
    assert handle.job_id.startswith(f"/{USER}/lambda-")
    assert handle.result(timeout=120) == 42


def test_a_remote_exception_is_raised_locally_with_the_remote_traceback(client: FrayClient) -> None:
    handle = submit(_explode, 7, client=client)
    with pytest.raises(RemoteError) as caught:
        handle.result(timeout=120)
    error = caught.value
    assert (error.remote_type, error.message) == ("KeyError", "'no shard 7'")
    assert str(error) == f"KeyError: 'no shard 7' (raised in task {handle.job_id}/0, attempt 0)"
    assert "in _explode" in error.traceback and error.traceback.rstrip().endswith("KeyError: 'no shard 7'")
    shown = "".join(traceback.format_exception(error))
    assert "in _explode" in shown and "The above exception was the direct cause" in shown


def test_results_come_back_one_per_task_and_outputs_by_name(client: FrayClient, tmp_path: Path) -> None:
    job = JobRequest(name=f"many-{uuid.uuid4().hex[:6]}", entrypoint=Entrypoint.from_callable(_task_index),
                     resources=ResourceConfig(cpu=1, ram="256m", disk="1g"), replicas=3)
    handle = JobHandle(client.submit(plan(job)), client)
    assert handle.results(timeout=120) == [0, 1, 2]
    with pytest.raises(ValueError, match="has 3 tasks; results"):
        handle.result()

    writer = submit(_write_outputs, client=client)
    assert writer.result(timeout=120) == "written"
    (listing,) = writer.output_files()
    assert [(f.name, f.size) for f in listing.files if f.kind == "file"] == [("metrics.json", 14), ("plots/loss.svg", 6)]
    assert listing.uri.startswith("file://") and listing.uri.endswith("/outputs.tar.zst")
    paths = writer.outputs(tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in paths) == ["0/metrics.json", "0/plots/loss.svg"]
    assert (tmp_path / "out" / "0" / "plots" / "loss.svg").read_text() == "<svg/>"


def test_a_job_with_no_return_value_says_why(embedded_client: FrayClient) -> None:
    job = JobRequest(name=f"binary-{uuid.uuid4().hex[:6]}", entrypoint=Entrypoint.from_binary("true"))
    handle = JobHandle(embedded_client.submit(plan(job)), embedded_client)
    with pytest.raises(ResultUnavailable, match=r"left no return value \(it ended succeeded; the task wrote no "
                                                r"output files\); only jobs run from a Python callable return one"):
        handle.result(timeout=60)
    killed = submit(time.sleep, 60, client=embedded_client)
    killed.cancel()
    with pytest.raises(ResultUnavailable, match=f"job {killed.job_id} ended killed"):
        killed.result(timeout=60)


def test_default_call_names_are_fresh_and_valid() -> None:
    assert default_call_name(lambda: 0).startswith("lambda-")
    assert default_call_name(functools.partial(print)).startswith("call-")
    assert default_call_name(_explode) != default_call_name(_explode)


# -- Marin's protocol, with the real marin-fray ------------------------------------------------------
def _marin_job(name: str, fn: object, *args: object) -> object:
    import fray.types as fray_types

    return fray_types.JobRequest(
        name=name, entrypoint=fray_types.Entrypoint.from_callable(fn, args=args),
        resources=fray_types.ResourceConfig(cpu=1, ram="256m", disk="1g"))


def test_marin_code_runs_unchanged_through_fray_client(embedded: ControllerProcess,
                                                       embedded_client: FrayClient) -> None:
    import fray.client as fray_client_module
    import fray.types as fray_types
    from fray.current_client import current_client, set_current_client

    names = [f"marin-{uuid.uuid4().hex[:6]}-{i}" for i in range(2)]
    with set_current_client(fray_client(embedded.info.url, embedded.info.token)):
        # what a Marin pipeline does
        handles = [current_client().submit(_marin_job(name, pow, 2, 10)) for name in names]
        statuses = fray_client_module.wait_all(handles, timeout=120)
    assert statuses == [fray_types.JobStatus.SUCCEEDED] * 2
    assert all(type(status) is fray_types.JobStatus for status in statuses)
    assert [h.job_id for h in handles] == [f"/{USER}/{name}" for name in names]
    assert handles[0].result() == 1024
    listed = {job.job_id for job in embedded_client.list(user=USER, name_filter="marin-").jobs}
    assert {h.job_id for h in handles} <= listed


def _has_helper() -> bool:
    return Path(os.environ["IRIS_WORKDIR"], "helper.py").is_file()


def test_only_the_clients_own_workspace_is_bundled_as_by_marins_fray_iris_client(embedded_client: FrayClient,
                                                                                 tmp_path: Path) -> None:
    """``FrayIrisClient(url, workspace=DIR)`` bundles DIR with every job; a request's own
    ``EnvironmentConfig.workspace`` is not bundled, and by default nothing is."""
    import fray.types as fray_types

    (tmp_path / "helper.py").write_text("VALUE = 42\n")
    bundling = FrayProtocolClient(embedded_client, workspace=tmp_path)
    handles = [bundling.submit(_marin_job(f"ws-{uuid.uuid4().hex[:6]}-{i}", _has_helper)) for i in range(2)]
    assert [handle.result(timeout=120) for handle in handles] == [True, True]
    named_in_request = fray_types.JobRequest(
        name=f"env-ws-{uuid.uuid4().hex[:6]}", entrypoint=fray_types.Entrypoint.from_callable(_has_helper),
        resources=fray_types.ResourceConfig(cpu=1, ram="256m", disk="1g"),
        environment=fray_types.create_environment(workspace=str(tmp_path)))
    assert FrayProtocolClient(embedded_client).submit(named_in_request).result(timeout=120) is False


def test_fray_semantics_of_failure_stop_logs_and_names(embedded_client: FrayClient) -> None:
    import fray.client as fray_client_module
    import fray.types as fray_types

    client = FrayProtocolClient(embedded_client)
    failing = client.submit(_marin_job(f"fails-{uuid.uuid4().hex[:6]}", _explode, 1))
    with pytest.raises(fray_client_module.JobFailed) as caught:
        fray_client_module.wait_all([failing], timeout=120)
    assert caught.value.job_id == failing.job_id
    with pytest.raises(fray_client_module.JobFailed, match="finished with status failed"):
        failing.wait(timeout=60)
    assert failing.wait(timeout=60, raise_on_failure=False) == fray_types.JobStatus.FAILED
    assert any("KeyError" in line for line in failing.logs(max_lines=50))
    with pytest.raises(RemoteError, match="no shard 1"):
        failing.result()
    panel = failing.panel()  # a live panel from the Fray handle
    assert panel.join(timeout=30) and panel.job_id == failing.job_id and panel.state == "failed"

    name = f"sleeper-{uuid.uuid4().hex[:6]}"
    sleeper = client.submit(_marin_job(name, time.sleep, 60))
    assert client.submit(_marin_job(name, time.sleep, 60)).job_id == sleeper.job_id  # adopted
    with pytest.raises(fray_client_module.JobAlreadyExists, match=f"Job {name} already exists"):
        client.submit(_marin_job(name, time.sleep, 60), adopt_existing=False)
    assert sleeper.status() in (fray_types.JobStatus.PENDING, fray_types.JobStatus.RUNNING)
    with pytest.raises(TimeoutError):
        sleeper.wait(timeout=0.2)
    sleeper.terminate()
    assert sleeper.wait(timeout=30, raise_on_failure=False) is fray_types.JobStatus.STOPPED


class _Member:
    """An actor class for the request comparison (never constructed)."""


@pytest.mark.parametrize(("device", "count", "retries"), [("cpu", 4, None), ("gpu", 2, 3)])
def test_an_actor_group_is_the_job_marin_s_client_sends(monkeypatch: pytest.MonkeyPatch, device: str, count: int,
                                                        retries: int | None) -> None:
    """The ``LaunchJobRequest`` of ``create_actor_group`` equals, byte for byte, what Marin's
    ``FrayIrisClient.create_actor_group`` sends (captured before the wire), but for what differs
    on purpose: the entrypoint's pickled callable (ours serves with ``actors.host``), and what
    Iris's client adds for a named cluster (its setup scripts and provenance, ``client.parity``'s
    own test)."""
    pytest.importorskip("fray.iris_backend")
    from fray.iris_backend import FrayIrisClient
    from fray.types import ActorConfig, GpuConfig
    from fray.types import ResourceConfig as MarinResources
    from iris.client import client as iris_client_module
    from iris.rpc import controller_pb2

    from fray_jupyter.iris.proto.controller_pb2 import Controller

    monkeypatch.setattr(iris_client_module, "forwarded_secrets", lambda exclude=(): {})
    monkeypatch.setenv("IRIS_USER", "u")
    sent: list[Any] = []

    def launch_job(request: Any, **_: Any) -> Any:
        sent.append(request)
        return controller_pb2.Controller.LaunchJobResponse(job_id=request.name)

    marin = FrayIrisClient("http://127.0.0.1:9")
    marin._iris._cluster_client._client.launch_job = launch_job
    resources = MarinResources(cpu=1, ram="1g", device=GpuConfig("H100", count=1)) if device == "gpu" \
        else MarinResources(cpu=1, ram="1g")
    config = ActorConfig(max_concurrency=4, max_task_retries=retries, priority=3)
    marin.create_actor_group(_Member, 7, name="ctr", count=count, resources=resources, actor_config=config, k=1)
    theirs = Controller.LaunchJobRequest.FromString(sent[0].SerializeToString())

    ours = FrayProtocolClient(FrayClient("http://127.0.0.1:9"), user="u").actor_group_request(
        _Member, (7,), {"k": 1}, name="ctr", count=count, resources=resources, actor_config=config)
    assert list(ours.ports) == ["actor"] and ours.replicas == count
    for request in (ours, theirs):
        request.entrypoint.workdir_files.clear()
        del request.entrypoint.setup_commands[:]
        del request.environment.setup_scripts[:]
        request.environment.env_vars.pop("MARIN_PROVENANCE", None)
    # upb writes map entries (env_vars) in a hash order seeded per process: compare with them sorted.
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
