"""The pydantic base every Fray model shares: positional arguments as Fray's dataclasses take them,
and invalid input reported as one plain ``ValueError`` line per problem, naming field and value."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError


def describe_validation_error(model: str, error: ValidationError) -> str:
    """One line per problem: ``Model.field: message (got value)``; our own validators' text verbatim."""
    lines = []
    for problem in error.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"])
        context = problem.get("ctx") or {}
        if "error" in context:  # raised by one of our validators: its text already names the value
            message = str(context["error"])
        else:
            message = f"{problem['msg'][0].lower()}{problem['msg'][1:]} (got {problem['input']!r})"
        lines.append(f"{model}.{where}: {message}" if where else f"{model}: {message}")
    return "; ".join(lines)


class FrayModel(BaseModel):
    """Base for Fray's records: keyword or positional construction, clean ``ValueError`` on bad input.

    ``_positional`` lists the field order positional arguments fill, as the matching Fray dataclass
    declares it (e.g. ``GpuConfig("H100", "gpu", 8)``).
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)
    _positional: ClassVar[tuple[str, ...]] = ()

    def __init__(self, /, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(self._positional):
            raise ValueError(
                f"{type(self).__name__} takes at most {len(self._positional)} positional arguments "
                f"({', '.join(self._positional) or 'none'}), got {len(args)}"
            )
        for name, value in zip(self._positional, args):
            if name in kwargs:
                raise ValueError(f"{type(self).__name__} got {name!r} both positionally and by keyword")
            kwargs[name] = value
        try:
            super().__init__(**kwargs)
        except ValidationError as error:
            raise ValueError(describe_validation_error(type(self).__name__, error)) from None

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except ValidationError as error:
            raise ValueError(describe_validation_error(type(self).__name__, error)) from None
