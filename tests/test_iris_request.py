"""``translate`` / ``build_launch_request`` (Fray's ``FrayIrisClient.submit``, ``IrisClient.submit``): the
Iris client steps, user and job id, revision date, policies, container profile, priority, timeout, env
sources and the warning for every silent change."""

from __future__ import annotations

import getpass
from datetime import timedelta
from typing import Any

import pytest

from fray_jupyter.iris import request as request_module
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.request import (
    DEFAULT_CLIENT_REVISION_DATE,
    EXISTING_JOB_POLICIES,
    build_launch_request,
    client_revision_date,
    container_profile_value,
    existing_job_policy_value,
    job_id,
    resolve_user,
    translate,
)
from fray_jupyter.resources import (
    ANY_REGION,
    CpuConfig,
    Entrypoint,
    EnvironmentConfig,
    JobRequest,
    ResourceConfig,
    TpuConfig,
)

RC = ResourceConfig
ECHO = Entrypoint.from_binary("echo", ["hi"])


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("IRIS_USER", "IRIS_REVISION_DATE"):
        monkeypatch.delenv(name, raising=False)


def job(
    resources: ResourceConfig | None = None, env: EnvironmentConfig | None = None, **kwargs: Any
) -> JobRequest:
    return JobRequest(
        name=kwargs.pop("name", "j"),
        entrypoint=kwargs.pop("entrypoint", ECHO),
        resources=resources or RC(),
        environment=env,
        **kwargs,
    )


# -- client_revision_date ---------------------------------------------------------------------------


def test_revision_date_default_is_the_targeted_iris_build() -> None:
    assert DEFAULT_CLIENT_REVISION_DATE == "2026-10-24"
    assert client_revision_date() == "2026-10-24"
    assert translate(job(), user="a").request.client_revision_date == "2026-10-24"


def test_revision_date_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRIS_REVISION_DATE", "2026-12-01")
    assert client_revision_date() == "2026-12-01"
    assert client_revision_date("2027-01-02") == "2027-01-02"  # explicit wins
    assert translate(job(), user="a", revision_date="2027-01-02").request.client_revision_date == "2027-01-02"
    assert translate(job(), user="a").request.client_revision_date == "2026-12-01"


@pytest.mark.parametrize("bad", ["yesterday", "2026-13-01", "2026/10/24", "26-10-24"])
def test_malformed_revision_date(bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError) as caught:
        client_revision_date(bad)
    assert repr(bad) in str(caught.value)
    monkeypatch.setenv("IRIS_REVISION_DATE", bad)
    with pytest.raises(ValueError, match="must be an ISO date"):
        translate(job(), user="a")


# -- existing_job_policy ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "value"),
    [("keep", 2), ("KEEP", 2), ("error", 1), ("recreate", 3), ("unspecified", 0), (2, 2), (0, 0)],
)
def test_existing_job_policy_names(policy: Any, value: int) -> None:
    assert existing_job_policy_value(policy) == value
    assert translate(job(), user="a", existing_job_policy=policy).request.existing_job_policy == value


def test_existing_job_policy_default_is_keep_like_fray_adopt_existing() -> None:
    assert translate(job(), user="a").request.existing_job_policy == job_pb2.EXISTING_JOB_POLICY_KEEP
    assert set(EXISTING_JOB_POLICIES) == {"unspecified", "error", "keep", "recreate"}


def test_unknown_existing_job_policy_suggests() -> None:
    with pytest.raises(ValueError) as caught:
        existing_job_policy_value("kep")
    assert str(caught.value) == "unknown existing_job_policy 'kep'; did you mean 'keep'?"


def test_existing_job_policy_number_outside_the_enum_is_refused() -> None:
    with pytest.raises(ValueError, match="99"):
        existing_job_policy_value(99)


# -- container_profile ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (None, 0),
        ("privileged", 4),
        ("PRIVILEGED", 4),
        ("CONTAINER_PROFILE_PRIVILEGED", 4),
        ("container_profile_gvisor", 5),
        ("restricted", 1),
        ("docker_access", 3),
        ("default", 2),
    ],
)
def test_container_profile_short_and_full_names(name: str | None, value: int) -> None:
    assert container_profile_value(name) == value
    assert translate(job(RC(container_profile=name)), user="a").request.container_profile == value


def test_unknown_full_container_profile_suggests() -> None:
    with pytest.raises(ValueError) as caught:
        container_profile_value("CONTAINER_PROFILE_PRIVILEGD")
    assert "did you mean 'privileged'?" in str(caught.value)


def test_unknown_container_profile_names_the_value_and_fails_the_plan() -> None:
    with pytest.raises(ValueError) as caught:
        translate(job(RC(container_profile="bogus")), user="a")
    assert "'bogus'" in str(caught.value) and "\n" not in str(caught.value)


def test_unknown_short_container_profile_suggests() -> None:
    with pytest.raises(ValueError) as caught:
        container_profile_value("privilegd")
    message = str(caught.value)
    assert "did you mean" in message and "privileged" in message.lower()


# -- user and job id --------------------------------------------------------------------------------


def test_user_resolution_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(getpass, "getuser", lambda: "osuser")
    assert resolve_user() == "osuser"
    monkeypatch.setenv("IRIS_USER", "envuser")
    assert resolve_user() == "envuser"
    assert resolve_user("explicit") == "explicit"
    assert resolve_user("  padded ") == "padded"
    assert translate(job()).job_id == "/envuser/j"


def test_user_falls_back_to_root(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_user() -> str:
        raise OSError("no passwd entry")

    monkeypatch.setattr(getpass, "getuser", no_user)
    assert resolve_user() == "root"


@pytest.mark.parametrize("bad", ["", "   ", "a b", "a/b", "tab\tuser"])
def test_bad_user(bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError) as caught:
        resolve_user(bad)
    assert repr(bad.strip()) in str(caught.value)
    monkeypatch.setenv("IRIS_USER", bad)
    with pytest.raises(ValueError, match="user"):
        translate(job())


def test_job_id_is_user_then_name() -> None:
    assert job_id("alice", "train") == "/alice/train"
    translation = translate(job(name="train-7"), user="alice")
    assert translation.job_id == translation.request.name == "/alice/train-7"
    assert translation.user == "alice"


# -- fields forwarded -------------------------------------------------------------------------------


def test_priority_and_retries_are_forwarded() -> None:
    request = translate(
        job(priority="batch", max_retries_failure=2, max_retries_preemption=7, max_task_failures=3), user="a"
    ).request
    assert request.priority_band == job_pb2.PRIORITY_BAND_BATCH
    assert (request.max_retries_failure, request.max_retries_preemption, request.max_task_failures) == (
        2,
        7,
        3,
    )
    default = translate(job(), user="a").request
    assert (default.priority_band, default.max_retries_preemption) == (job_pb2.PRIORITY_BAND_INHERIT, 100)


@pytest.mark.parametrize(
    ("timeout", "ms"),
    [(timedelta(minutes=2), 120_000), (1.5, 1500), (3600, 3_600_000), (timedelta(milliseconds=1), 1)],
)
def test_timeout_is_a_duration_in_milliseconds(timeout: Any, ms: int) -> None:
    request = translate(job(timeout=timeout), user="a").request
    assert request.HasField("timeout") and request.timeout.milliseconds == ms


def test_no_timeout_sends_none() -> None:
    assert not translate(job(), user="a").request.HasField("timeout")


def test_image_and_empty_bundle() -> None:
    request = translate(job(RC(image="ghcr.io/x/y:1")), user="a").request
    assert request.task_image == "ghcr.io/x/y:1"
    assert translate(job(), user="a").request.task_image == ""
    assert request.bundle_blob == b"" and request.HasField("bundle_blob")


def test_build_launch_request_is_the_translation_request() -> None:
    the_job = job(RC.with_tpu("v4-32", slice_count=2))
    assert build_launch_request(the_job, user="alice") == translate(the_job, user="alice").request
    with pytest.raises(TypeError):
        build_launch_request(the_job)  # type: ignore[call-arg]  # user is required


def test_replicas_as_sent_after_adjustment() -> None:
    translation = translate(job(RC(device=TpuConfig("v4-32"))), user="a")
    assert (translation.requested_replicas, translation.replicas, translation.request.replicas) == (1, 4, 4)


def test_any_marker_is_kept_at_fray_level_and_stripped_on_the_wire() -> None:
    translation = translate(job(RC(regions=[ANY_REGION], preemptible=False)), user="a")
    assert [str(c) for c in translation.fray_constraints] == ["preemptible EQ false", "region EXISTS"]
    assert [str(c) for c in translation.wire_constraints] == ["preemptible EQ false"]
    assert [c.key for c in translation.request.constraints] == ["preemptible"]


def test_processes_per_task_wraps_the_command() -> None:
    request = translate(
        job(
            RC.with_gpu("H100", count=8),
            processes_per_task=4,
            entrypoint=Entrypoint.from_binary("python", ["train.py"]),
        ),
        user="a",
    ).request
    assert list(request.entrypoint.run_command.argv) == [
        "python",
        "-m",
        "iris.jax.multigpu_main",
        "--nproc",
        "4",
        "--devices-per-proc",
        "2",
        "--",
        "python",
        "train.py",
    ]
    with pytest.raises(ValueError, match=r"processes_per_task \(3\) must divide the GPU count \(8\)"):
        translate(job(RC.with_gpu("H100", count=8), processes_per_task=3), user="a")
    with pytest.raises(ValueError, match="requires a GPU device"):
        translate(job(processes_per_task=2), user="a")


# -- environment: precedence and sources -------------------------------------------------------------


def sources(translation) -> dict[str, tuple[str, str]]:
    return {v.name: (v.value, v.source) for v in translation.env}


def test_env_precedence_user_over_device_over_iris() -> None:
    env = EnvironmentConfig(
        workspace="/ws", env_vars={"JAX_PLATFORMS": "tpu,cpu", "TOKENIZERS_PARALLELISM": "true", "MINE": "1"}
    )
    translation = translate(job(RC.with_tpu("v5p-8"), env), user="a")
    assert sources(translation) == {
        "JAX_PLATFORMS": ("tpu,cpu", "user"),
        "TOKENIZERS_PARALLELISM": ("true", "user"),
        "MINE": ("1", "user"),
        "LIBTPU_INIT_ARGS": ("--xla_tpu_scoped_vmem_limit_kib=50000", "device"),
        "HF_DATASETS_TRUST_REMOTE_CODE": ("1", "iris"),
    }
    assert dict(translation.request.environment.env_vars) == {
        k: v for k, (v, _) in sources(translation).items()
    }


def test_env_is_sorted_by_name() -> None:
    names = [v.name for v in translate(job(RC.with_tpu("v6e-16", slice_count=2)), user="a").env]
    assert names == sorted(names)


def test_nccl_vars_with_the_gpu_extra_are_iris_defaults() -> None:
    env = EnvironmentConfig(workspace="/ws", extras=["gpu"], setup_scripts=[])
    got = sources(translate(job(RC.with_gpu("H100", count=8), env), user="a"))
    assert got["NCCL_RAS_ENABLE"] == ("1", "iris")
    assert got["NCCL_DEBUG"] == ("WARN", "iris")
    assert got["NCCL_DEBUG_TIMESTAMP"] == ("[%F %T.%3f]", "iris")
    assert got["JAX_PLATFORMS"] == ("", "device")
    assert "NCCL_DEBUG" not in sources(translate(job(RC.with_gpu("H100", count=8)), user="a"))


def test_slice_vars_are_iris_topology_and_replace_the_users() -> None:
    env = EnvironmentConfig(workspace="/ws", env_vars={"IRIS_SLICE_COUNT": "99"})
    got = sources(translate(job(RC.with_tpu("v4-32", slice_count=3), env), user="a"))
    assert got["IRIS_SLICE_COUNT"] == ("3", "iris-topology")
    assert got["IRIS_TASKS_PER_SLICE"] == ("4", "iris-topology")
    single = sources(translate(job(RC.with_tpu("v4-32"), env), user="a"))
    assert "IRIS_SLICE_COUNT" not in single and "IRIS_TASKS_PER_SLICE" not in single


@pytest.mark.parametrize(
    ("scripts", "wire"), [(None, []), ([], []), (["echo a", " ", "echo b"], ["echo a", "echo b"])]
)
def test_setup_scripts_on_the_wire(scripts, wire: list[str]) -> None:
    request = translate(job(env=EnvironmentConfig(workspace="/ws", setup_scripts=scripts)), user="a").request
    assert list(request.environment.setup_scripts) == wire
    assert list(request.entrypoint.setup_commands) == wire


# -- warnings ---------------------------------------------------------------------------------------


def warnings_of(the_job: JobRequest) -> tuple[str, ...]:
    return translate(the_job, user="a").warnings


def test_plain_jobs_have_no_warnings() -> None:
    assert warnings_of(job()) == ()
    assert warnings_of(job(RC.with_tpu("v4-32", slice_count=2))) == ()
    assert warnings_of(job(RC.with_gpu("H100", count=8, cpu=16, replicas=2))) == ()
    assert (
        warnings_of(
            job(env=EnvironmentConfig(workspace="/ws", pip_packages=["x"], setup_scripts=["pip i x"]))
        )
        == ()
    )


def test_warning_cpu_raised() -> None:
    assert warnings_of(job(RC.with_gpu("H100", count=8))) == (
        "cpu raised from 1 to 4 cores: Iris gives every accelerator task at least 4 cores",
    )
    assert warnings_of(job(RC.with_gpu("H100", cpu=2.5)))[0].startswith("cpu raised from 2.5 to 4 cores")


def test_warning_any_region_stripped() -> None:
    assert warnings_of(job(RC(regions=[ANY_REGION]))) == (
        "regions=[ANY_REGION] sends no region constraint: it only stops the job inheriting a parent job's region",
    )


def test_warning_replicas_raised_for_a_direct_multi_vm_tpu() -> None:
    (warning,) = warnings_of(job(RC(device=TpuConfig("v4-32"), cpu=8)))
    assert warning.startswith("replicas raised from 1 to 4: one v4-32 slice has 4 VMs and Iris runs one task per VM")
    assert "not coscheduled" in warning and "with_tpu" in warning


def test_warning_job_replicas_override() -> None:
    assert warnings_of(job(RC.with_tpu("v5p-8", slice_count=2), replicas=3)) == (
        "JobRequest.replicas=3 overrides resources.replicas=2",
    )
    assert warnings_of(job(RC.with_tpu("v5p-8", slice_count=2), replicas=2)) == ()


def test_warning_alternatives_on_cpu() -> None:
    assert warnings_of(job(RC(device=CpuConfig(), device_alternatives=["H100"]))) == (
        "device_alternatives are ignored for a CPU device",
    )


def test_warning_tpu_topology_not_sent() -> None:
    assert "TpuConfig.topology='2x2x1' is informational; Iris is not sent it" in warnings_of(
        job(RC(device=TpuConfig("v4-8", topology="2x2x1"), cpu=8))
    )


def test_warning_docker_image_ignored() -> None:
    assert warnings_of(job(env=EnvironmentConfig(docker_image="img"))) == (
        "EnvironmentConfig.docker_image is ignored by Iris; set ResourceConfig.image instead",
    )


@pytest.mark.parametrize("field", ["pip_packages", "extras", "sync_packages"])
def test_warning_packages_without_setup_scripts(field: str) -> None:
    got = warnings_of(job(env=EnvironmentConfig(workspace="/ws", **{field: ["x"]})))
    assert got == (
        (
            "pip_packages, extras and sync_packages only act through a uv-sync setup script, which "
            "fray-jupyter does not generate; pass setup_scripts explicitly"
        ),
    )


def test_warning_user_slice_vars_replaced() -> None:
    env = EnvironmentConfig(workspace="/ws", env_vars={"IRIS_SLICE_COUNT": "9", "IRIS_TASKS_PER_SLICE": "9"})
    assert warnings_of(job(RC.with_tpu("v5p-8", slice_count=2), env)) == (
        "the job's own IRIS_SLICE_COUNT and IRIS_TASKS_PER_SLICE are not sent: Iris sets these from the slice shape",
    )


def test_warnings_are_one_line_each() -> None:
    env = EnvironmentConfig(docker_image="img", env_vars={"IRIS_SLICE_COUNT": "9"}, pip_packages=["x"])
    everything = job(RC(device=TpuConfig("v4-32", topology="2x2x4"), regions=[ANY_REGION]), env, replicas=1)
    got = warnings_of(everything)
    assert len(got) == 7  # cpu, replicas, ANY, topology, slice vars, docker_image, packages
    assert all(w and "\n" not in w for w in got)


def test_module_exports_the_launch_request_type() -> None:
    assert isinstance(translate(job(), user="a").request, request_module.LaunchJobRequest)
