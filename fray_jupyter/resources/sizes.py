"""Byte sizes exactly as Fray and Iris read them: humanfriendly in binary mode ("16g" = 16 GiB)."""

from __future__ import annotations

from typing import Final

import humanfriendly

MAX_BYTES: Final[int] = 2**63 - 1  # int64 on the wire
_SCALE_UNITS: Final[tuple[tuple[str, int], ...]] = (("t", 1024**4), ("g", 1024**3), ("m", 1024**2), ("k", 1024))


def parse_size(size: str | int, *, name: str = "size") -> int:
    """Bytes for a Fray size string; an int is already bytes.

    Units are binary whatever their spelling ("16g", "16GB", "16 GiB" are all 16 * 1024**3), as
    ``humanfriendly.parse_size(..., binary=True)`` reads them in Fray and Iris. Raises ``ValueError``
    naming ``name`` for text humanfriendly cannot read, a negative value or one beyond int64.
    """
    if isinstance(size, bool) or not isinstance(size, (str, int)):
        raise ValueError(f"{name} must be a size such as '16g' or a number of bytes, got {size!r}")
    if isinstance(size, int):
        value = size
    else:
        try:
            value = int(humanfriendly.parse_size(size.strip(), binary=True))
        except humanfriendly.InvalidSize:
            raise ValueError(
                f"{name} {size!r} is not a size; use a number with a binary unit such as '512m', '16g' or '1t'"
            ) from None
    if not 0 <= value <= MAX_BYTES:
        raise ValueError(f"{name} {size!r} is out of range (0 to {MAX_BYTES} bytes)")
    return value


def scale_size(size: str, factor: float) -> str:
    """``size`` multiplied by ``factor``, written with the largest binary unit that fits.

    Fray's ``ResourceConfig.scale`` rule: a factor of exactly 1.0 returns ``size`` unchanged; otherwise
    the bytes are scaled and printed in t/g/m/k (powers of 1024) as an integer when whole ("8g") or
    with ``:g`` formatting ("1.2g", "307.2m"); below 1 KiB as whole bytes ("512B").
    """
    if factor == 1.0:
        return size
    scaled = humanfriendly.parse_size(size, binary=True) * factor
    for suffix, unit in _SCALE_UNITS:
        if scaled >= unit:
            amount = scaled / unit
            if abs(amount - round(amount)) < 1e-9:
                return f"{round(amount)}{suffix}"
            return f"{amount:g}{suffix}"
    return f"{round(scaled)}B"
