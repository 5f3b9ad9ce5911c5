"""``JobRequest`` (name rules, replicas precedence, priority, timeout), ``Entrypoint`` and
``EnvironmentConfig`` / ``create_environment``."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import pytest

from fray_jupyter.resources import (
    Entrypoint,
    EnvironmentConfig,
    JobRequest,
    JobStatus,
    ResourceConfig,
    create_environment,
)
from tests.assertions import one_line_value_error

ECHO = Entrypoint.from_binary("echo", ["hi"])




def job(**kwargs: Any) -> JobRequest:
    return JobRequest(**{"name": "j", "entrypoint": ECHO, **kwargs})


# -- JobRequest fields ------------------------------------------------------------------------------


def test_job_request_fields_and_defaults_are_frays() -> None:
    expected = [
        ("name", "j"),
        ("entrypoint", ECHO),
        ("resources", ResourceConfig()),
        ("environment", None),
        ("replicas", 1),
        ("processes_per_task", 1),
        ("max_retries_failure", 0),
        ("max_retries_preemption", 100),
        ("max_task_failures", 0),
        ("priority", 0),
        ("timeout", None),
    ]
    request = job()
    assert list(JobRequest.model_fields) == [name for name, _ in expected]
    assert [(name, getattr(request, name)) for name, _ in expected] == expected


def test_job_request_positional_order() -> None:
    request = JobRequest("train", ECHO, ResourceConfig(cpu=2), None, 3, 1, 2, 5, 4, 3)
    assert (request.name, request.resources.cpu, request.replicas) == ("train", 2, 3)
    assert (request.max_retries_failure, request.max_retries_preemption, request.max_task_failures) == (
        2,
        5,
        4,
    )
    assert request.priority == 3


# -- name rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["train", "train-1", "a.b_c", "v5p-8x2", "x" * 256, "1e3"])
def test_valid_names(name: str) -> None:
    assert job(name=name).name == name


@pytest.mark.parametrize(
    ("name", "fragments"),
    [
        ("my job", ["Job name must not contain spaces", "'my job'"]),
        ("my\tjob", ["must not contain spaces", "'my\\tjob'"]),
        ("a/b", ["'a/b'", "'/'"]),
        ("12345", ["'12345'", "digits"]),
        ("", ["empty"]),
        ("x" * 257, ["256"]),
        ("bell\x07", ["printable"]),
    ],
)
def test_invalid_names(name: str, fragments: list[str]) -> None:
    with pytest.raises(ValueError) as caught:
        job(name=name)
    one_line_value_error(caught, *fragments)


# -- replicas ---------------------------------------------------------------------------------------


def test_replicas_come_from_resources_when_not_given() -> None:
    assert job(resources=ResourceConfig.with_tpu("v5p-8", slice_count=2)).replicas == 2
    assert job(resources=ResourceConfig.with_tpu("v4-32", slice_count=3)).replicas == 12
    assert job(resources=ResourceConfig.with_gpu("H100", count=8, replicas=4)).replicas == 4


def test_explicit_replicas_win() -> None:
    request = job(resources=ResourceConfig.with_tpu("v5p-8", slice_count=2), replicas=5)
    assert request.replicas == 5
    assert request.resources.replicas == 2


@pytest.mark.parametrize("bad", [0, -1, 100_001])
def test_replicas_out_of_range(bad: int) -> None:
    with pytest.raises(ValueError) as caught:
        job(replicas=bad)
    one_line_value_error(caught, f"replicas {bad}")


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("processes_per_task", 0),
        ("max_retries_failure", -1),
        ("max_retries_preemption", -1),
        ("max_task_failures", -2),
        ("max_retries_failure", 2**31),
    ],
)
def test_counts_out_of_range(field: str, bad: int) -> None:
    with pytest.raises(ValueError) as caught:
        job(**{field: bad})
    one_line_value_error(caught, field, str(bad))


# -- priority ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("priority", "band"),
    [
        (0, 0),
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 4),
        ("inherit", 0),
        ("production", 1),
        ("interactive", 2),
        ("batch", 3),
        ("system", 4),
        ("BATCH", 3),
        (" Batch ", 3),
        ("PRIORITY_BAND_BATCH", 3),
        ("priority_band_interactive", 2),
    ],
)
def test_priority_names_and_numbers(priority: Any, band: int) -> None:
    assert job(priority=priority).priority == band


@pytest.mark.parametrize(
    ("bad", "fragments"), [("bath", ["'bath'", "did you mean 'batch'?"]), (7, ["7"]), (-1, ["-1"])]
)
def test_unknown_priority(bad: Any, fragments: list[str]) -> None:
    with pytest.raises(ValueError) as caught:
        job(priority=bad)
    one_line_value_error(caught, *fragments)


def test_numeric_string_priority_is_checked_like_a_number() -> None:
    with pytest.raises(ValueError, match="7"):
        job(priority="7")


# -- timeout ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (90, timedelta(seconds=90)),
        (1.5, timedelta(seconds=1.5)),
        (timedelta(hours=2), timedelta(hours=2)),
        (None, None),
    ],
)
def test_timeout(given: Any, expected: timedelta | None) -> None:
    assert job(timeout=given).timeout == expected


@pytest.mark.parametrize("bad", [0, -5, timedelta(0), timedelta(seconds=-1)])
def test_non_positive_timeout(bad: Any) -> None:
    with pytest.raises(ValueError) as caught:
        job(timeout=bad)
    one_line_value_error(caught, "timeout", "positive")


def test_job_status() -> None:
    assert [s.value for s in JobStatus] == ["pending", "running", "succeeded", "failed", "stopped"]
    assert [JobStatus.finished(s) for s in JobStatus] == [False, False, True, True, True]


# -- Entrypoint -------------------------------------------------------------------------------------


def test_entrypoint_from_binary() -> None:
    entry = Entrypoint.from_binary("python", ["train.py", "--epochs", "3"])
    assert entry.binary_entrypoint.command == "python"
    assert entry.binary_entrypoint.args == ["train.py", "--epochs", "3"]
    assert entry.callable_entrypoint is None and entry.cell_entrypoint is None
    assert Entrypoint.from_binary("ls").binary_entrypoint.args == []


def _add(a: int, b: int = 0) -> int:
    return a + b


def test_entrypoint_from_callable() -> None:
    entry = Entrypoint.from_callable(_add, args=[1], kwargs={"b": 2})
    call = entry.callable_entrypoint
    assert call.callable is _add
    assert call.args == (1,) and call.kwargs == {"b": 2}
    assert Entrypoint.from_callable(_add).callable_entrypoint.kwargs == {}


def test_entrypoint_from_cell() -> None:
    entry = Entrypoint.from_cell("print('hi')\n")
    assert entry.cell_entrypoint.source == "print('hi')\n"
    assert entry.binary_entrypoint is None and entry.callable_entrypoint is None


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: Entrypoint.from_binary("  "), "command"),
        (lambda: Entrypoint.from_callable(42), "int"),  # type: ignore[arg-type]
        (lambda: Entrypoint.from_cell("   \n"), "empty"),
        (lambda: Entrypoint(), "exactly one"),
        (
            lambda: Entrypoint(
                binary_entrypoint=ECHO.binary_entrypoint,
                cell_entrypoint=Entrypoint.from_cell("x=1").cell_entrypoint,
            ),
            "exactly one",
        ),
    ],
)
def test_invalid_entrypoints(make: Any, fragment: str) -> None:
    with pytest.raises(ValueError) as caught:
        make()
    one_line_value_error(caught, fragment)


# -- EnvironmentConfig ------------------------------------------------------------------------------


def test_environment_fields_and_defaults() -> None:
    env = EnvironmentConfig(workspace="/ws")
    assert list(EnvironmentConfig.model_fields) == [
        "workspace",
        "docker_image",
        "pip_packages",
        "env_vars",
        "secrets",
        "secret_behavior",
        "extras",
        "setup_scripts",
        "sync_packages",
    ]
    assert (env.pip_packages, env.env_vars, env.secrets, env.extras, env.sync_packages) == (
        [],
        {},
        {},
        [],
        [],
    )
    assert env.setup_scripts is None and env.secret_behavior == "inherit"
    assert EnvironmentConfig(docker_image="img").docker_image == "img"


def test_environment_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError) as caught:
        EnvironmentConfig()
    one_line_value_error(caught, "Must specify either workspace or docker_image")
    with pytest.raises(ValueError) as caught:
        EnvironmentConfig(workspace="/ws", docker_image="img")
    one_line_value_error(caught, "Cannot specify both workspace and docker_image")


@pytest.mark.parametrize("name", ["", "A=B", "NUL\0"])
def test_environment_rejects_bad_variable_names(name: str) -> None:
    with pytest.raises(ValueError) as caught:
        EnvironmentConfig(workspace="/ws", env_vars={name: "1"})
    one_line_value_error(caught, repr(name))


def test_secret_behavior_accepts_names_and_enums() -> None:
    class Behaviour:  # shaped like Fray's SecretBehavior enum member
        value = "isolate"

    assert EnvironmentConfig(workspace="/ws", secret_behavior="isolate").secret_behavior == "isolate"
    assert EnvironmentConfig(workspace="/ws", secret_behavior=Behaviour()).secret_behavior == "isolate"
    with pytest.raises(ValueError) as caught:
        EnvironmentConfig(workspace="/ws", secret_behavior="share")
    one_line_value_error(caught, "'share'")


def test_environment_is_frozen() -> None:
    env = EnvironmentConfig(workspace="/ws")
    with pytest.raises(ValueError):
        env.workspace = "/other"  # type: ignore[misc]


def test_create_environment_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MARIN_CI_DISABLE_RUNTIME_ENVS", raising=False)
    monkeypatch.setenv("HF_TOKEN", "secret-token")  # marin-fray 0.2.227 no longer copies it
    monkeypatch.setenv("WANDB_API_KEY", "secret-key")
    env = create_environment()
    assert env.workspace == os.getcwd() == str(tmp_path)
    assert env.env_vars == {"HF_DATASETS_TRUST_REMOTE_CODE": "1", "TOKENIZERS_PARALLELISM": "false"}
    assert env.setup_scripts is None


def test_create_environment_passthrough_override_and_removal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MARIN_CI_DISABLE_RUNTIME_ENVS", "1")
    env = create_environment(
        docker_image="img",
        env_vars={"TOKENIZERS_PARALLELISM": "true", "HF_DATASETS_TRUST_REMOTE_CODE": None, "MINE": "x"},
    )
    assert env.workspace is None and env.docker_image == "img"
    assert env.env_vars == {
        "TOKENIZERS_PARALLELISM": "true",
        "MARIN_CI_DISABLE_RUNTIME_ENVS": "1",
        "MINE": "x",
    }


def test_create_environment_copies_lists() -> None:
    pip, extras, scripts, sync = ["numpy"], ["gpu"], ["echo a"], ["pkg"]
    env = create_environment(
        workspace="/ws",
        pip_packages=pip,
        extras=extras,
        setup_scripts=scripts,
        sync_packages=sync,
        secrets={"K": "v"},
        secret_behavior="isolate",
    )
    for original in (pip, extras, scripts, sync):
        original.append("changed")
    assert (env.pip_packages, env.extras, env.setup_scripts, env.sync_packages) == (
        ["numpy"],
        ["gpu"],
        ["echo a"],
        ["pkg"],
    )
    assert (env.secrets, env.secret_behavior) == ({"K": "v"}, "isolate")
    assert create_environment(workspace="/ws", setup_scripts=[]).setup_scripts == []
