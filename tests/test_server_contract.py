"""The REST contract has one source: ``server/contract.py``. ``labextension/src/types.ts`` declares
each of its ``TypedDict`` answers as ``I<Name>`` with the same fields and types, the sidebar's
state names and finished flags are Iris's (``iris.states``), and its sort choices the client's."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any, Final, get_args, get_origin, get_type_hints, is_typeddict

from fray_jupyter import vocabulary
from fray_jupyter.client.listing import SCOPES, SORT_FIELDS
from fray_jupyter.iris.states import (
    JOB_STATES,
    TASK_STATES,
    TERMINAL_JOB_STATES,
    TERMINAL_TASK_STATES,
    job_state_name,
    task_state_name,
)
from fray_jupyter.server import contract

SRC: Final = Path(__file__).resolve().parents[1] / "labextension" / "src"
REQUESTS: Final = frozenset({"IJobQuery"})
"""Interfaces of what the sidebar sends, not of what the server answers."""
SCALARS: Final[dict[object, str]] = {str: "string", int: "number", float: "number", bool: "boolean",
                                     type(None): "null"}


def ts_type(annotation: Any) -> str:
    """How ``types.ts`` writes a contract field's Python type."""
    if annotation in SCALARS:
        return SCALARS[annotation]
    if is_typeddict(annotation):
        return f"I{annotation.__name__}"
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        return " | ".join(ts_type(arg) for arg in args)
    if origin is list:
        return f"{ts_type(args[0])}[]"
    if origin is dict:
        return f"Record<{ts_type(args[0])}, {ts_type(args[1])}>"
    raise AssertionError(f"no TypeScript spelling for {annotation!r}")


def answers() -> dict[str, dict[str, str]]:
    """Every ``TypedDict`` of the contract as ``I<Name>`` → {field: TypeScript type}."""
    shapes = [value for value in vars(contract).values() if is_typeddict(value) and value.__module__ == contract.__name__]
    return {f"I{shape.__name__}": {name: ts_type(hint) for name, hint in get_type_hints(shape).items()}
            for shape in shapes}


def interfaces(source: str) -> dict[str, dict[str, str]]:
    """``export interface IName { field: type; ... }`` blocks of a TypeScript file."""
    found = {}
    for name, body in re.findall(r"^export interface (\w+) \{\n(.*?)^\}", source, re.MULTILINE | re.DOTALL):
        fields = re.findall(r"^\s+(\w+\??): (.+?);$", body, re.MULTILINE)
        found[name] = dict(fields)
    return found


def test_types_ts_declares_every_answer_field_for_field() -> None:
    declared = interfaces((SRC / "types.ts").read_text())
    assert {name: fields for name, fields in declared.items() if name not in REQUESTS} == answers()


def test_the_comparison_sees_a_drift() -> None:
    drifted = (SRC / "types.ts").read_text().replace("  has_more: boolean;\n", "  has_more: number;\n")
    assert interfaces(drifted)["IJobPage"] != answers()["IJobPage"]
    assert answers()["ITask"]["index"] == "number | null" and answers()["IJobPage"]["jobs"] == "IJob[]"


def test_the_job_query_offers_the_server_s_choices() -> None:
    query = interfaces((SRC / "types.ts").read_text())["IJobQuery"]
    assert set(re.findall(r"'(\w+)'", query["sort?"])) == set(SORT_FIELDS)
    assert set(re.findall(r"'(\w+)'", query["order?"])) == {"asc", "desc"}
    assert set(re.findall(r"'(\w+)'", query["scope?"])) == set(SCOPES) and query["parent?"] == "string"


def test_the_sidebar_s_states_are_iris_s() -> None:
    """The sidebar's states come from the display vocabulary (generated into ``vocabulary.ts``): it
    names every job and task state Iris has, and calls final exactly Iris's terminal ones."""
    finished = {job_state_name(s) for s in TERMINAL_JOB_STATES} | {task_state_name(s) for s in TERMINAL_TASK_STATES}
    assert set(JOB_STATES) | set(TASK_STATES) <= set(vocabulary.STATES)
    assert {name for name, look in vocabulary.STATES.items() if look.terminal} == finished
    assert set(vocabulary.FILTER_STATES) <= set(JOB_STATES)