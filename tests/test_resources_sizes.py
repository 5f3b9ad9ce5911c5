"""Byte sizes read exactly as Fray and Iris read them (humanfriendly, binary units), and
``scale_size``: Fray's ``ResourceConfig.scale`` rendering rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fray_jupyter.resources.sizes import MAX_BYTES, parse_size, scale_size

GIB = 1024**3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("16g", 16 * GIB),
        ("16G", 16 * GIB),
        ("16GB", 16 * GIB),  # "GB" is binary too, as in Fray and Iris
        ("16gb", 16 * GIB),
        ("16 GiB", 16 * GIB),
        ("16 gigs", 16 * GIB),
        ("4GB", 4_294_967_296),
        ("224g", 240_518_168_576),
        ("200g", 214_748_364_800),
        ("96g", 103_079_215_104),
        ("50g", 53_687_091_200),
        ("64g", 68_719_476_736),
        ("512g", 549_755_813_888),
        ("256g", 274_877_906_944),
        ("1.5g", 1_610_612_736),
        ("512m", 512 * 1024**2),
        ("1t", 1024**4),
        ("1k", 1024),
        ("0.5k", 512),
        ("2048", 2048),
        ("0", 0),
        (" 8g ", 8 * GIB),
    ],
)
def test_parse_size_reads_binary_units(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("value", [0, 1, 4096, MAX_BYTES])
def test_parse_size_takes_an_int_as_bytes(value: int) -> None:
    assert parse_size(value) == value


@given(
    number=st.integers(min_value=0, max_value=100_000),
    unit=st.sampled_from(["", "k", "m", "g", "t", "K", "M", "G", "KB", "MB", "GB", "KiB", "MiB", "GiB"]),
)
@settings(max_examples=200, deadline=None, database=None)
def test_parse_size_is_the_number_times_its_binary_unit(number: int, unit: str) -> None:
    """k, m, g, t are powers of 1024 in any case and with or without B/iB (as Fray and Iris read them)."""
    power = "kmgt".find(unit[:1].lower()) + 1 if unit else 0
    assert parse_size(f"{number}{unit}") == number * 1024**power


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        ("", "''"),
        ("   ", "'   '"),
        ("lots", "'lots'"),
        ("-1g", "'-1g'"),
        ("1e3", "'1e3'"),
        ("9000000000t", "'9000000000t'"),  # beyond int64
        (-5, "-5"),
        (MAX_BYTES + 1, str(MAX_BYTES + 1)),
        (True, "True"),
        (None, "None"),
        (1.5, "1.5"),
        (["4g"], "['4g']"),
    ],
)
def test_parse_size_rejects_with_one_line_naming_the_value(bad: object, shown: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_size(bad, name="ram")  # type: ignore[arg-type]
    message = str(caught.value)
    assert shown in message
    assert "ram" in message
    assert "\n" not in message


# scale_size: Fray's ``_scale_byte_size`` (binary units; a factor of exactly 1.0 keeps the text).
@pytest.mark.parametrize(
    ("size", "factor", "expected"),
    [
        ("4g", 2, "8g"),
        ("2g", 2, "4g"),
        ("4g", 0.3, "1.2g"),
        ("3g", 0.1, "307.2m"),
        ("224g", 0.5, "112g"),
        ("50g", 0.5, "25g"),
        ("1k", 0.5, "512B"),  # below 1 KiB: whole bytes
        ("100m", 0.001, "102.4k"),
        ("1023", 1.5, "1.49854k"),  # ":g" keeps six significant digits
        ("1t", 1024, "1024t"),  # t is the largest unit
        ("512m", 2, "1g"),
        ("4g", 0, "0B"),
    ],
)
def test_scale_size_renders_in_the_largest_binary_unit(size: str, factor: float, expected: str) -> None:
    assert scale_size(size, factor) == expected


@pytest.mark.parametrize("size", ["4GB", "16 GiB", "3 gigs", "2048", "1.5g"])
def test_scale_size_by_exactly_one_keeps_the_original_text(size: str) -> None:
    assert scale_size(size, 1.0) == size
    assert scale_size(size, 1) == size


@given(gib=st.integers(min_value=1, max_value=15), factor=st.integers(min_value=2, max_value=64))
@settings(max_examples=150, deadline=None, database=None)
def test_scale_size_by_a_whole_factor_reparses_to_the_product(gib: int, factor: int) -> None:
    # Below 1 TiB a whole number of GiB prints exactly; from 1 TiB Fray's ":g" rounds ("1.00195t").
    scaled = scale_size(f"{gib}g", factor)
    assert parse_size(scaled) == gib * factor * GIB
    assert "." not in scaled
