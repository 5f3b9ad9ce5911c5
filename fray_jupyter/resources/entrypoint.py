"""What a job runs: a binary with arguments, a Python callable, or a notebook cell's source."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, field_validator, model_validator

from fray_jupyter.resources.model import FrayModel


class _Frozen(FrayModel):
    model_config = ConfigDict(frozen=True)


class BinaryEntrypoint(_Frozen):
    """Run ``command`` with ``args`` (no shell)."""

    _positional: ClassVar[tuple[str, ...]] = ("command", "args")
    command: str
    args: list[str] = Field(default_factory=list)

    @field_validator("command")
    @classmethod
    def _non_empty(cls, command: str) -> str:
        if not command.strip():
            raise ValueError("command must be a program name or path, got an empty string")
        return command


class CallableEntrypoint(_Frozen):
    """Call ``callable(*args, **kwargs)`` in the task's Python (shipped with cloudpickle)."""

    _positional: ClassVar[tuple[str, ...]] = ("callable", "args", "kwargs")
    callable: Any
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("callable")
    @classmethod
    def _is_callable(cls, fn: Any) -> Any:
        if not callable(fn):
            raise ValueError(f"callable must be a function or other callable, got {type(fn).__name__}")
        return fn


class CellEntrypoint(_Frozen):
    """Run a notebook cell's Python source as a script in the task's Python."""

    _positional: ClassVar[tuple[str, ...]] = ("source",)
    source: str

    @field_validator("source")
    @classmethod
    def _has_code(cls, source: str) -> str:
        if not source.strip():
            raise ValueError("the cell is empty; write the Python the job should run below the %%fray line")
        return source


class Entrypoint(_Frozen):
    """Exactly one way to run the job. Build it with ``from_binary``, ``from_callable`` or ``from_cell``."""

    _positional: ClassVar[tuple[str, ...]] = ("callable_entrypoint", "binary_entrypoint", "cell_entrypoint")
    callable_entrypoint: CallableEntrypoint | None = None
    binary_entrypoint: BinaryEntrypoint | None = None
    cell_entrypoint: CellEntrypoint | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Entrypoint:
        given = [e for e in (self.callable_entrypoint, self.binary_entrypoint, self.cell_entrypoint) if e is not None]
        if len(given) != 1:
            raise ValueError("Entrypoint needs exactly one of callable_entrypoint, binary_entrypoint, cell_entrypoint")
        return self

    @staticmethod
    def from_callable(
        c: Callable[..., Any], args: tuple[Any, ...] | list[Any] = (), kwargs: dict[str, Any] | None = None
    ) -> Entrypoint:
        """Call ``c(*args, **kwargs)`` in each task."""
        return Entrypoint(callable_entrypoint=CallableEntrypoint(callable=c, args=tuple(args), kwargs=kwargs or {}))

    @staticmethod
    def from_binary(command: str, args: list[str] | tuple[str, ...] = ()) -> Entrypoint:
        """Run ``command *args`` in each task."""
        return Entrypoint(binary_entrypoint=BinaryEntrypoint(command=command, args=list(args)))

    @staticmethod
    def from_cell(source: str) -> Entrypoint:
        """Run a notebook cell's source as a Python script in each task."""
        return Entrypoint(cell_entrypoint=CellEntrypoint(source=source))
