"""Small formatters every view shares: sizes, FLOP/s, cores, task index ranges, counts of things
(sizes and counts as the display vocabulary, ``vocabulary``, says them)."""

from __future__ import annotations

from collections.abc import Iterable

from fray_jupyter.vocabulary import byte_size, counted

_FLOPS_UNITS = ((1e18, "EFLOP/s"), (1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"))


def size(num_bytes: int | None) -> str:
    """Bytes in binary units ("224 GiB", ``vocabulary.byte_size``); "—" when unknown."""
    return "—" if num_bytes is None else byte_size(num_bytes)


def flops(value: float | None) -> str:
    """Peak FLOP/s with an SI prefix ("3.67 PFLOP/s"); "—" when unknown."""
    if value is None:
        return "—"
    for scale, unit in _FLOPS_UNITS:
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} FLOP/s"


def cores(millicores: int) -> str:
    """Millicores as cores ("104", "0.5")."""
    return f"{millicores / 1000:g}"


__all__ = ["cores", "counted", "flops", "index_ranges", "size"]


def index_ranges(indices: Iterable[int]) -> str:
    """Task indices as compact ranges: 0,1,2,3,5 -> "0-3, 5"."""
    parts: list[str] = []
    run: list[int] = []
    for index in indices:
        if run and index == run[-1] + 1:
            run.append(index)
            continue
        if run:
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [index]
    if run:
        parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ", ".join(parts)
