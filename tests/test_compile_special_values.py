"""Inductor's vector code on 16-bit complex words, with special values in four layouts (issue 21, point 1).

A subset of `tests/special_values.py`'s programs (the whole set takes minutes to compile: run
`python -m benchmarks.special_values`) is compiled as one graph over inputs in every layout at once, with
Inductor's vector code, and compared with the same decomposed graph run by ATen
(`aot_eager_decomp_partition`): what differs is Inductor's code generation. Allowed: zeros of the other sign
(Inductor compiles with -fno-signed-zeros) and one ulp of the 16-bit result (its vectorized libm against
ATen's); not allowed: a NaN or infinity where the reference has another value, any other difference.
"""

import pytest
import torch
import torch._inductor.lowering  # noqa: F401 - the compile path joins Inductor's table once this is loaded
from torch._inductor import cpu_vec_isa

from jitdtypes import dtypes
from tests import special_values
from tests.conftest import IDS, TARGETS
from tests.test_compile_parts import compile_path_installed  # noqa: F401 - the module fixture

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# a libm function, Smith's division, complex64 words, rounding at 16-bit edges, a view, a reduction
SUBSET = ["exp", "x / y", "x + complex64", "complex64 to", "permute", "sum dim"]
PROGRAMS = [p for p in special_values.PROGRAMS if p.name in SUBSET]


def _run_all(tensors_by_layout):
    return [[p.run(*(tensors[name] for name in p.operands)) for p in PROGRAMS] for tensors in tensors_by_layout]


def _bits(value: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """16-bit results as int32 bit patterns of their parts (bool as 0/1)."""
    if value.dtype == torch.bool:
        return value.to(torch.int32)
    if value.is_complex():
        value = torch.view_as_real(value.to(torch.complex64)).to(dtypes.part_dtype(dtype))
    return value.to(dtypes.part_dtype(dtype)).view(torch.int16).to(torch.int32)


def _disallowed(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    a, b = _bits(actual, dtype), _bits(expected, dtype)
    if actual.dtype == torch.bool:
        return a != b
    magnitude_a, magnitude_b = a & 0x7FFF, b & 0x7FFF
    special = 0x7C00 if dtypes.part_dtype(dtype) == torch.float16 else 0x7F80  # exponent all ones
    nan_a, nan_b = magnitude_a > special, magnitude_b > special
    zeros = (magnitude_a == 0) & (magnitude_b == 0)
    same_sign = (a < 0) == (b < 0)
    near = same_sign & ((magnitude_a - magnitude_b).abs() <= 1) & (magnitude_a < special) & (magnitude_b < special)
    return ~((nan_a & nan_b) | zeros | (a == b) | near)


@pytest.mark.skipif(not cpu_vec_isa.valid_vec_isa_list(), reason="Inductor has no vector ISA on this CPU")
@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_vector_code_matches_the_decomposed_graph_on_special_values(dtype):
    by_layout = [special_values.inputs(dtype, layout) for layout in special_values.LAYOUTS]
    torch._dynamo.reset()
    expected = torch.compile(_run_all, backend="aot_eager_decomp_partition", fullgraph=True)(by_layout)
    torch._dynamo.reset()
    actual = torch.compile(_run_all, fullgraph=True)(by_layout)
    wrong = []
    for layout, got_row, expected_row in zip(special_values.LAYOUTS, actual, expected):
        for program, got, want in zip(PROGRAMS, got_row, expected_row):
            assert (got.dtype, got.shape) == (want.dtype, want.shape), (program.name, layout)
            bad = _disallowed(got, want, dtype)
            if bad.any():
                wrong.append(f"{program.name} {layout}: {int(bad.sum())} of {bad.numel()}")
    assert not wrong, "\n".join(wrong)


# The formulas against eager jitdtypes (complex64 ATen kernels, rounded): the decomposed graph run by ATen
# (Inductor's code generation is the test above's), on the contiguous grid. The other programs of
# tests/special_values.py differ from eager where eager's own value is an implementation detail
# (docs/COMPILE.md, "Special values under Inductor's vector code").
MATCHING_EAGER = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "x ** 0.5", "sin",
                  "cos", "tan", "sinh", "cosh", "tanh", "sigmoid", "reciprocal", "abs", "angle", "polar",
                  "x * y", "conj * y", "x ** 2", "complex64 to", "float32 to", "to complex64"]
FORMULA_PROGRAMS = [p for p in special_values.PROGRAMS if p.name in MATCHING_EAGER]


def _run_formulas(tensors):
    return [p.run(*(tensors[name] for name in p.operands)) for p in FORMULA_PROGRAMS]


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_formulas_match_eager_on_special_values(dtype):
    assert len(FORMULA_PROGRAMS) == len(MATCHING_EAGER)
    tensors = special_values.inputs(dtype, "contiguous")
    torch._dynamo.reset()
    expected = torch.compile(_run_formulas, backend="aot_eager", fullgraph=True)(tensors)
    torch._dynamo.reset()
    actual = torch.compile(_run_formulas, backend="aot_eager_decomp_partition", fullgraph=True)(tensors)
    wrong = []
    for program, got, want in zip(FORMULA_PROGRAMS, actual, expected):
        assert (got.dtype, got.shape) == (want.dtype, want.shape), program.name
        bad = _disallowed(got, want, dtype)
        if bad.any():
            wrong.append(f"{program.name}: {int(bad.sum())} of {bad.numel()}")
    assert not wrong, "\n".join(wrong)
