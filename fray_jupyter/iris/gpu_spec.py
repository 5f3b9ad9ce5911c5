"""The ``--gpu`` spec as Iris's ``iris job run`` reads it, shared by the job flags (which parse
it) and the snippets (which write one that must parse back)."""

from __future__ import annotations

import re

_GPU_SPEC = re.compile(r"^(?:(?P<variant>[A-Za-z][\w.-]*?)(?:x(?P<count>\d+))?|(?P<bare>\d+))$")


def parse_gpu_spec(spec: str) -> tuple[str, int]:
    """``--gpu`` as Iris reads it: ``H100x8`` (model and count), ``H100`` (one), ``8`` (eight of any).

    A lowercase ``x`` separates the count; a model whose name ends in X is written with a capital
    (``MI300X``, ``MI300Xx8``), so ``H100x`` (a separator with no count) is an error."""
    match = _GPU_SPEC.match(spec.strip())
    if not match or re.fullmatch(r"[xX]\d*|.*x", match["variant"] or ""):
        raise ValueError(f"--gpu {spec!r} must look like H100x8, H100, MI300X or 8 (a count follows a lowercase x)")
    if match["bare"]:
        return "auto", int(match["bare"])
    return match["variant"], int(match["count"] or 1)
