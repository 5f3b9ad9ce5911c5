"""Accept Marin's own ``fray.types`` objects wherever fray-jupyter takes its own.

Conversion is by shape, not by import: a dataclass from the ``fray`` package is read field by field
into the model of the same name here, so this module never imports Marin's packages.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel

from fray_jupyter.resources.config import ResourceConfig
from fray_jupyter.resources.devices import CpuConfig, GpuConfig, TpuConfig
from fray_jupyter.resources.entrypoint import BinaryEntrypoint, CallableEntrypoint, Entrypoint
from fray_jupyter.resources.environment import EnvironmentConfig
from fray_jupyter.resources.job import JobRequest

_MODELS: dict[str, type[BaseModel]] = {
    cls.__name__: cls
    for cls in (ResourceConfig, CpuConfig, GpuConfig, TpuConfig, JobRequest, Entrypoint, BinaryEntrypoint,
                CallableEntrypoint, EnvironmentConfig)
}
Model = TypeVar("Model", bound=BaseModel)


def is_fray_object(value: object) -> bool:
    """True for an instance of a dataclass defined in Marin's ``fray`` package."""
    return dataclasses.is_dataclass(value) and type(value).__module__.split(".")[0] == "fray"


def _convert(value: Any) -> Any:
    if is_fray_object(value):
        model = _MODELS.get(type(value).__name__)
        fields = {f.name: _convert(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if model is None:
            return fields
        unknown = {k: v for k, v in fields.items() if k not in model.model_fields and v not in (None, (), [], {})}
        if unknown:
            raise ValueError(f"Marin's {model.__name__} sets {unknown}, which this fray-jupyter does not know; "
                             f"upgrade fray-jupyter or leave it unset")
        return model(**fields)
    if hasattr(value, "to_ms") and type(value).__name__ == "Duration":  # rigging.timing.Duration
        return timedelta(milliseconds=value.to_ms())
    if isinstance(value, (list, tuple)):
        return type(value)(_convert(v) for v in value)
    if isinstance(value, dict):
        return {k: _convert(v) for k, v in value.items()}
    return value


def coerce(value: object, model: type[Model]) -> Model:
    """``value`` as ``model``: ours unchanged, Marin's ``fray.types`` counterpart converted field by
    field; anything else is a ``ValueError`` naming what was given."""
    if isinstance(value, model):
        return value
    if is_fray_object(value) and type(value).__name__ == model.__name__:
        converted = _convert(value)
        assert isinstance(converted, model)
        return converted
    raise ValueError(f"expected a {model.__name__} (fray_jupyter's or Marin's fray.types), got {type(value).__name__}")
