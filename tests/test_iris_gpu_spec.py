"""``--gpu`` specs as Iris reads them: model and count, a bare count, one-line errors."""

from __future__ import annotations

import pytest

from fray_jupyter.iris.gpu_spec import parse_gpu_spec


@pytest.mark.parametrize(("spec", "expected"), [("H100x8", ("H100", 8)), ("H100", ("H100", 1)), ("8", ("auto", 8)),
                                                ("a100-80gx2", ("a100-80g", 2)), ("GB200x4", ("GB200", 4)),
                                                ("MI300X", ("MI300X", 1)), ("MI355Xx8", ("MI355X", 8))])
def test_gpu_spec(spec: str, expected: tuple[str, int]) -> None:
    assert parse_gpu_spec(spec) == expected


@pytest.mark.parametrize("spec", ["x8", "H100x", "8x", "", "H 100"])
def test_bad_gpu_spec_names_the_value(spec: str) -> None:
    with pytest.raises(ValueError, match="--gpu"):
        parse_gpu_spec(spec)
