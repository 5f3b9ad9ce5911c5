"""From a ``%%fray`` line and cell to the ``Plan`` that ``--dry-run`` shows and submission sends.

Rules, in order; each failure is one ``UsageError`` line naming the flag or value:

1. The body must hold code, and be valid Python: it runs as a plain script, so IPython syntax
   (``%magic``, ``!shell``) is refused here rather than failing in every task.
2. ``--resources VAR`` is looked up in the user namespace (``a.b`` follows attributes) and must be a
   ``ResourceConfig`` (ours or Marin's) or a ``ResourcePicker`` (its ``.value``); it cannot be
   combined with the resource flags it replaces.
3. The workspace is ``--workspace DIR``; else, unless ``--no-workspace``, the caller's default (the
   kernel's current directory, on every controller, as ``iris job run`` bundles its own). It is
   bundled by ``iris.bundle`` (25 MiB cap), with ``--include`` globs and ``--exclude`` regular
   expressions as ``iris job run`` takes them; a current directory over the cap is one line naming
   it, its size and the cap, and the ways out.
4. The job is built by ``flags.job_from_args`` and planned by ``plan()`` — nothing is re-derived —
   with what the target's client adds (``client.parity``: on a named cluster, Iris's default setup
   when the workspace is a uv project and the job has no setup scripts, its runtime-deps script, its
   revision date). Without ``--name`` the name is ``cell-<hash>`` of everything else the job is
   (see ``default_name``).
"""

from __future__ import annotations

import argparse
import hashlib
import keyword
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from fray_jupyter.client.parity import EMBEDDED, ClientParity
from fray_jupyter.flags import job_from_args
from fray_jupyter.iris.bundle import (
    BundleTooLarge,
    WorkspaceBundle,
    caller_exclude,
    create_workspace_zip,
    mib,
)
from fray_jupyter.magics.parsers import CELL, usage
from fray_jupyter.magics.settings import check_controller_url
from fray_jupyter.planning import Plan, plan
from fray_jupyter.resources.config import ResourceConfig
from fray_jupyter.resources.entrypoint import Entrypoint
from fray_jupyter.resources.interop import coerce
from fray_jupyter.resources.job import JobRequest

NAME_PREFIX: Final[str] = "cell-"
PLACEHOLDER_NAME: Final[str] = "cell"


@dataclass(frozen=True)
class CellPlan:
    """The plan to show or send, and the workspace bundle it carries (if any)."""

    plan: Plan
    bundle: WorkspaceBundle | None


def check_body(cell: str) -> None:
    """Rule 1."""
    if not cell.strip():
        raise usage("the cell is empty; write the Python the job runs below the %%fray line")
    try:
        compile(cell, "<%%fray cell>", "exec", dont_inherit=True)
    except SyntaxError as error:
        hint = ("; it runs as a plain Python script, so %magics and !shell lines are not available"
                if (error.text or "").lstrip().startswith(("%", "!")) else "")
        raise usage(f"the cell is not valid Python: {error.msg} (line {error.lineno}){hint}") from None
    except ValueError as error:  # e.g. null bytes
        raise usage(f"the cell is not valid Python: {error}") from None


def check_variable_name(flag: str, name: str | None) -> None:
    """``-o VAR`` must be a plain identifier that is not a keyword."""
    if name is not None and (not name.isidentifier() or keyword.iskeyword(name)):
        raise usage(f"{flag} {name!r} is not a Python variable name")


def check_url(flag: str, url: str | None, label: str = CELL) -> None:
    """A controller URL must use a scheme some transport speaks and name a host
    (``settings.check_controller_url``)."""
    if url is not None:
        try:
            check_controller_url(flag, url)
        except ValueError as error:
            raise usage(str(error), label) from None


def lookup(namespace: Mapping[str, Any], path: str) -> Any:
    """``path`` (``name`` or ``name.attr…``) in ``namespace``; ``UsageError`` when it is not there."""
    head, *attributes = path.split(".")
    if not head.isidentifier() or head not in namespace:
        raise usage(f"--resources {path}: no variable {head!r} in the notebook")
    value = namespace[head]
    for depth, attribute in enumerate(attributes, 1):
        if not hasattr(value, attribute):
            seen = ".".join([head, *attributes[: depth - 1]])
            raise usage(f"--resources {path}: {seen} ({type(value).__name__}) has no attribute {attribute!r}")
        value = getattr(value, attribute)
    return value


def resources_from(namespace: Mapping[str, Any], path: str) -> ResourceConfig:
    """Rule 2: the ``ResourceConfig`` named by ``--resources``."""
    from fray_jupyter.widgets.picker import ResourcePicker

    value = lookup(namespace, path)
    if isinstance(value, ResourcePicker):
        try:
            return value.value
        except ValueError as error:
            raise usage(f"--resources {path}: the picker's settings are invalid: {error}") from None
    try:
        return coerce(value, ResourceConfig)
    except ValueError as error:
        if type(value).__name__ == "ResourceConfig":  # Marin's, with a field we cannot read
            raise usage(f"--resources {path}: {error}") from None
        raise usage(f"--resources {path}: expected a ResourceConfig (fray_jupyter's or Marin's fray.types) "
                    f"or a ResourcePicker, got {type(value).__name__}") from None


def default_name(job: JobRequest, bundle: bytes) -> str:
    """``cell-`` and 8 hex digits of a hash of the job without its name, and of the bundle, so the
    same cell with the same flags gets the same job id (and ``--dry-run`` shows the id sent)."""
    digest = hashlib.sha256(job.model_dump_json(exclude={"name"}).encode())
    digest.update(hashlib.sha256(bundle).digest())
    return NAME_PREFIX + digest.hexdigest()[:8]


def workspace_bundle(given: str | None, default: str | None, *, include: Sequence[str] = (),
                     exclude: Sequence[str] = (), label: str = CELL) -> WorkspaceBundle | None:
    """Rule 3: the bundle of ``given`` (``--workspace``), else of ``default`` (the current directory
    sent by default), else None; ``include`` / ``exclude`` are ``--include`` globs and ``--exclude``
    regular expressions (``iris job run``'s)."""
    try:
        pattern = caller_exclude(exclude)
    except ValueError as error:
        raise usage(str(error), label) from None
    if given is not None:
        try:
            return create_workspace_zip(given, include=include, exclude=pattern)
        except ValueError as error:
            raise usage(f"--workspace: {error}", label) from None
    if default is None:
        return None
    try:
        return create_workspace_zip(default, include=include, exclude=pattern)
    except BundleTooLarge as error:
        raise usage(f"the current directory {error.directory} is sent as the workspace by default (as "
                    f"`iris job run` does), but it bundles to more than the {mib(error.cap)} cap ({error.reached}); "
                    "pass --workspace DIR to send a smaller directory, --exclude PATTERN to leave files out, "
                    "or --no-workspace to send none", label) from None
    except ValueError as error:
        raise usage(f"the current directory: {error}", label) from None


def cell_plan(args: argparse.Namespace, cell: str, namespace: Mapping[str, Any], *, user: str | None,
              parity: ClientParity = EMBEDDED, default_workspace: str | None = None) -> CellPlan:
    """The plan for a parsed ``%%fray`` line and its cell (see the module's rules): ``parity`` is
    what the target's client adds (``client.parity``; ``EMBEDDED`` adds nothing) and
    ``default_workspace`` the directory sent when the line names none (the kernel's current
    directory on a named cluster; None sends none)."""
    check_body(cell)
    check_variable_name("-o", args.output)
    check_url("--controller", args.controller)
    base = resources_from(namespace, args.resources) if args.resources is not None else None
    default = None if args.no_workspace else default_workspace
    bundle = workspace_bundle(args.workspace, default, include=args.include, exclude=args.exclude)
    workspace = args.workspace or default
    blob = bundle.blob if bundle is not None else b""
    try:
        job = job_from_args(args, Entrypoint.from_cell(cell), default_name=PLACEHOLDER_NAME, base=base,
                            base_name=f"--resources {args.resources}")
        job = parity.with_setup(job, workspace)
        if args.name is None:
            job = job.model_copy(update={"name": default_name(job, blob)})
        return CellPlan(plan(job, user=user, bundle=blob, revision_date=parity.revision_date,
                             runtime_setup=parity.runtime_setup), bundle)
    except ValueError as error:
        raise usage(str(error)) from None
