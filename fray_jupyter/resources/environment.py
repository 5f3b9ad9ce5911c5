"""The job's software environment: ``EnvironmentConfig`` and Fray's ``create_environment`` helper."""

from __future__ import annotations

import os
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from fray_jupyter.resources.model import FrayModel

# What ``create_environment`` puts in every job's env unless the caller overrides it.
CREATE_ENVIRONMENT_DEFAULTS: dict[str, str] = {"HF_DATASETS_TRUST_REMOTE_CODE": "1", "TOKENIZERS_PARALLELISM": "false"}
# Copied from the submitting process's environment by ``create_environment`` when set there.
CREATE_ENVIRONMENT_PASSTHROUGH: tuple[str, ...] = ("MARIN_CI_DISABLE_RUNTIME_ENVS",)


def check_env_name(name: object) -> str:
    """An environment variable name must be a non-empty string without '=' or NUL."""
    if not isinstance(name, str) or not name or "=" in name or "\0" in name:
        raise ValueError(f"environment variable name {name!r} must be non-empty and contain no '=' or NUL")
    return name


class EnvironmentConfig(FrayModel):
    """Dependencies, env vars, secrets and setup for a job. Exactly one of ``workspace`` (a uv
    workspace root) or ``docker_image`` must be set, as in Fray; ``create_environment`` fills
    ``workspace`` with the current directory. ``setup_scripts=None`` means the cluster default,
    a list runs verbatim, ``[]`` means no setup."""

    model_config = ConfigDict(frozen=True)
    _positional: ClassVar[tuple[str, ...]] = (
        "workspace", "docker_image", "pip_packages", "env_vars", "secrets", "secret_behavior", "extras",
        "setup_scripts", "sync_packages",
    )
    workspace: str | None = None
    docker_image: str | None = None
    pip_packages: list[str] = Field(default_factory=list)
    env_vars: dict[str, str] = Field(default_factory=dict)
    secrets: dict[str, str] = Field(default_factory=dict, repr=False)
    secret_behavior: Literal["inherit", "isolate"] = "inherit"
    extras: list[str] = Field(default_factory=list)
    setup_scripts: list[str] | None = None
    sync_packages: list[str] = Field(default_factory=list)

    @field_validator("env_vars")
    @classmethod
    def _env_names(cls, env_vars: dict[str, str]) -> dict[str, str]:
        for name, value in env_vars.items():
            check_env_name(name)
            if "\0" in value:
                raise ValueError(f"environment variable {name} must not contain NUL")
        return env_vars

    @field_validator("secret_behavior", mode="before")
    @classmethod
    def _behavior_name(cls, behavior: Any) -> Any:
        return getattr(behavior, "value", behavior)  # accepts Fray's SecretBehavior enum too

    @model_validator(mode="after")
    def _one_source(self) -> EnvironmentConfig:
        if self.workspace and self.docker_image:
            raise ValueError("Cannot specify both workspace and docker_image")
        if not self.workspace and not self.docker_image:
            raise ValueError("Must specify either workspace or docker_image")
        return self


def create_environment(
    workspace: str | None = None,
    docker_image: str | None = None,
    pip_packages: list[str] | None = None,
    env_vars: dict[str, str | None] | None = None,
    extras: list[str] | None = None,
    setup_scripts: list[str] | None = None,
    sync_packages: list[str] | None = None,
    secrets: dict[str, str] | None = None,
    secret_behavior: Literal["inherit", "isolate"] = "inherit",
) -> EnvironmentConfig:
    """Fray's helper: workspace defaults to the current directory when no image is given; env starts
    from ``CREATE_ENVIRONMENT_DEFAULTS`` plus the passthrough variables set in this process, the
    caller's ``env_vars`` override them, and a ``None`` value removes a variable."""
    if workspace is None and docker_image is None:
        workspace = os.getcwd()
    passthrough = {name: os.environ.get(name) for name in CREATE_ENVIRONMENT_PASSTHROUGH}
    merged = {**CREATE_ENVIRONMENT_DEFAULTS, **passthrough, **(env_vars or {})}
    return EnvironmentConfig(
        workspace=workspace,
        docker_image=docker_image,
        pip_packages=list(pip_packages or []),
        env_vars={k: v for k, v in merged.items() if v is not None},
        secrets=dict(secrets or {}),
        secret_behavior=secret_behavior,
        extras=list(extras or []),
        setup_scripts=None if setup_scripts is None else list(setup_scripts),
        sync_packages=list(sync_packages or []),
    )
