"""FFT family under Triton's interpreter, through its ATen adapters, against the same ATen ops run in
complex128/float64 on the same (already rounded) 16-bit inputs.

Tolerance, per output element k of a transformed row X:  eps * |X[k]|  +  log2(N) * 2^-22 * ||X_row||.
The first term is the single rounding on store (at most half an ulp per component, so eps/2 * |X[k]|; eps is
a 2x margin). The second is the fp32 computation: a radix-2 FFT's error grows like log2(N) fp32 ulps (2^-24)
of the row's norm (4x margin), and ||X_row|| = scale * sqrt(N) * ||x_row|| by Parseval, i.e. it is relative
to the input norm. A kernel that rounded to 16 bits anywhere before the store would exceed it on the small
outputs, where eps * |X[k]| is tiny.
"""

import json
import math

import pytest
import torch

from conftest import DTYPE_NAMES, EPS, assert_close_16bit
from jitdtypes import dtypes
from kernels_templates import fft

aten = torch.ops.aten
SIZES = [2, 4, 8, 64, 256]
REAL_OF = {"complex32": torch.float16, "bcomplex32": torch.bfloat16}


@pytest.fixture
def fft_load(load):
    return load("fft")


def complex_input(shape, dtype_name, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=torch.complex64, generator=generator).to(dtypes.COMPLEX_BY_NAME[dtype_name])


def real_input(shape, dtype_name, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator).to(REAL_OF[dtype_name])


def wide(t):
    return t.to(torch.complex128 if t.is_complex() else torch.float64)


def assert_fft_close(actual, expected, dtype_name, dims):
    """The tolerance of the module docstring; ||X_row|| is taken over the transformed dims."""
    signal_numel = math.prod(expected.shape[d] for d in dims)
    row_norm = expected.abs().square().sum(dim=dims, keepdim=True).sqrt()
    fp32_term = math.log2(max(signal_numel, 2)) * 2.0**-22 * row_norm / EPS[dtype_name]
    assert_close_16bit(actual, expected, dtype_name, ulps=1.0, scale=expected.abs() + fp32_term)
    assert not torch.isnan(wide(actual)).any(), "nan"  # assert_close_16bit lets nan through


# -- c2c ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("forward", [True, False])
@pytest.mark.parametrize("normalization", [0, 1, 2])
def test_c2c_matches_complex128(fft_load, dtype_name, n, forward, normalization):
    x = complex_input((3, n), dtype_name, seed=n)
    result = fft.fft_c2c(fft_load, (x, [1], normalization, forward), {}, "cpu")
    assert result.dtype == x.dtype and result.is_contiguous()
    assert_fft_close(result, aten._fft_c2c(wide(x), [1], normalization, forward), dtype_name, [1])


@pytest.mark.parametrize("n", [1024, fft.MAX_FFT_LENGTH])
def test_c2c_long_rows(fft_load, n):
    x = complex_input((2, n), "complex32", seed=n)
    result = fft.fft_c2c(fft_load, (x, [-1], 0, True), {}, "cpu")
    assert_fft_close(result, aten._fft_c2c(wide(x), [1], 0, True), "complex32", [1])


def test_c2c_matches_the_dft_definition(fft_load):
    # independent of torch.fft: X[k] = sum_j x[j] exp(-2 pi i jk / n), by a complex128 matrix product
    n = 16
    x = complex_input((2, n), "complex32", seed=1)
    j = torch.arange(n, dtype=torch.float64)
    dft = torch.exp(-2j * math.pi * torch.outer(j, j) / n)
    result = fft.fft_c2c(fft_load, (x, [1], 0, True), {}, "cpu")
    assert_fft_close(result, wide(x) @ dft.T, "complex32", [1])


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
def test_c2c_non_contiguous_rows_and_inner_dims(fft_load, dtype_name):
    base = complex_input((4, 5, 3, 16), dtype_name)
    x = base[::2, 1:3, :, :8]  # rows with gaps in two batch dims; the last dim keeps stride 1
    for dim in (3, 0, 1):  # last; first (element stride 480); middle (batch dims on both sides)
        result = fft.fft_c2c(fft_load, (x, [dim], 1, True), {}, "cpu")
        assert result.is_contiguous()
        assert_fft_close(result, aten._fft_c2c(wide(x), [dim], 1, True), dtype_name, [dim])


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
def test_c2c_scattered_input_is_widened_in_dim_order(fft_load, dtype_name):
    # batch dims that collapse into three strided groups: the adapter copies x to complex64 first
    x = complex_input((4, 8, 2, 2), dtype_name).permute(3, 0, 2, 1)
    result = fft.fft_c2c(fft_load, (x, [3], 0, True), {}, "cpu")
    assert_fft_close(result, aten._fft_c2c(wide(x), [3], 0, True), dtype_name, [3])


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("forward", [True, False])
def test_c2c_several_dims_round_once(fft_load, dtype_name, forward):
    x = complex_input((8, 3, 16), dtype_name)
    result = fft.fft_c2c(fft_load, (x, [0, 2], 2, forward), {}, "cpu")
    assert_fft_close(result, aten._fft_c2c(wide(x), [0, 2], 2, forward), dtype_name, [0, 2])


# -- r2c and c2r --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("onesided", [True, False])
def test_r2c_matches_float64(fft_load, dtype_name, n, onesided):
    x = real_input((3, n), dtype_name, seed=n)
    normalization = n % 3  # every mode, spread over the sizes
    result = fft.fft_r2c(fft_load, (x, [1], normalization, onesided), {}, "cpu")
    assert result.dtype == dtypes.COMPLEX_BY_NAME[dtype_name]
    assert result.shape == (3, n // 2 + 1 if onesided else n)
    assert_fft_close(result, aten._fft_r2c(wide(x), [1], normalization, onesided), dtype_name, [1])


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("n", SIZES)
def test_c2r_matches_float64(fft_load, dtype_name, n):
    # random, non-Hermitian input: the imaginary parts of X[0] and X[n/2] must be ignored, as by ATen
    x = complex_input((3, n // 2 + 1), dtype_name, seed=n)
    normalization = n % 3
    result = fft.fft_c2r(fft_load, (x, [1], normalization, n), {}, "cpu")
    assert result.dtype == REAL_OF[dtype_name] and result.shape == (3, n)
    assert_fft_close(result, aten._fft_c2r(wide(x), [1], normalization, n), dtype_name, [1])


@pytest.mark.parametrize("op", ["r2c", "c2r"])
def test_real_transforms_at_their_longest(fft_load, op):
    if op == "r2c":
        x = real_input((2, fft.MAX_FFT_LENGTH), "complex32")
        result = fft.fft_r2c(fft_load, (x, [1], 2, True), {}, "cpu")
        expected = aten._fft_r2c(wide(x), [1], 2, True)
    else:
        n = 2 * fft.MAX_FFT_LENGTH
        x = complex_input((2, n // 2 + 1), "complex32")
        result = fft.fft_c2r(fft_load, (x, [1], 2, n), {}, "cpu")
        expected = aten._fft_c2r(wide(x), [1], 2, n)
    assert_fft_close(result, expected, "complex32", [1])


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
def test_real_transforms_on_strided_rows_and_several_dims(fft_load, dtype_name):
    x = real_input((3, 4, 16), dtype_name)[:, ::2, :8]
    for dims, onesided in (([2], True), ([0, 2], False), ([2, 1], True)):
        sub = x[:2] if 0 in dims else x
        result = fft.fft_r2c(fft_load, (sub, dims, 1, onesided), {}, "cpu")
        assert_fft_close(result, aten._fft_r2c(wide(sub), dims, 1, onesided), dtype_name, dims)
    spectrum = complex_input((2, 5, 4), dtype_name).transpose(1, 2)  # [2, 4, 5]: last dim has stride 4
    for dims in ([2], [1, 2]):
        result = fft.fft_c2r(fft_load, (spectrum, dims, 2, 8), {}, "cpu")
        assert_fft_close(result, aten._fft_c2r(wide(spectrum), dims, 2, 8), dtype_name, dims)


# -- shapes, out=, refusals ---------------------------------------------------------------------------------


def test_zero_size_batch(fft_load):
    x = complex_input((0, 8), "complex32")
    assert fft.fft_c2c(fft_load, (x, [1], 0, True), {}, "cpu").shape == (0, 8)
    assert fft.fft_r2c(fft_load, (real_input((2, 0, 8), "complex32"), [2], 0, True), {}, "cpu").shape == (2, 0, 5)
    assert fft.fft_c2r(fft_load, (complex_input((0, 5), "complex32"), [1], 0, 8), {}, "cpu").shape == (0, 8)


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
def test_out_variants_write_and_return_out(fft_load, dtype_name):
    x = complex_input((2, 8), dtype_name)
    out = torch.empty(0, dtype=x.dtype)  # resized, as ATen resizes out=
    assert fft.fft_c2c(fft_load, (x, [1], 0, False), {"out": out}, "cpu") is out
    assert_fft_close(out, aten._fft_c2c(wide(x), [1], 0, False), dtype_name, [1])

    real = real_input((2, 8), dtype_name)
    out = torch.empty(2, 5, dtype=x.dtype)
    assert fft.fft_r2c(fft_load, (real, [1], 0, True), {"out": out}, "cpu") is out
    assert_fft_close(out, aten._fft_r2c(wide(real), [1], 0, True), dtype_name, [1])

    spectrum = complex_input((2, 5), dtype_name)
    out = torch.empty(2, 8, dtype=REAL_OF[dtype_name])
    assert fft.fft_c2r(fft_load, (spectrum, [1], 2, 8), {"out": out}, "cpu") is out
    assert_fft_close(out, aten._fft_c2r(wide(spectrum), [1], 2, 8), dtype_name, [1])


def _refuses(load, adapter, args, kwargs=None):
    return adapter(load, args, kwargs or {}, "cpu") is NotImplemented


def test_uncovered_calls_are_not_implemented(fft_load):
    x = complex_input((2, 8), "complex32")
    real = real_input((2, 8), "complex32")
    spectrum = complex_input((2, 5), "complex32")
    c2c, r2c, c2r = fft.fft_c2c, fft.fft_r2c, fft.fft_c2r
    refused = [
        (c2c, (complex_input((2, 6), "complex32"), [1], 0, True)),  # not a power of two
        (c2c, (complex_input((2, 1), "complex32"), [1], 0, True)),
        (c2c, (complex_input((1, 2 * fft.MAX_FFT_LENGTH), "complex32"), [1], 0, True)),  # too long
        (c2c, (complex_input((6, 8), "complex32"), [0, 1], 0, True)),  # one dim of the two is not
        (c2c, (x.conj(), [1], 0, True)),
        (c2c, (torch._neg_view(x), [1], 0, True)),
        (c2c, (x.to(torch.complex64), [1], 0, True)),
        (c2c, (x, [], 0, True)),
        (c2c, (x, [1, 1], 0, True)),
        (c2c, (x, [1], 3, True)),  # no such normalization mode
        (r2c, (real_input((2, 12), "complex32"), [1], 0, True)),
        (r2c, (real.float(), [1], 0, True)),
        (r2c, (real_input((2, 2 * fft.MAX_FFT_LENGTH), "complex32"), [1], 0, True)),
        (c2r, (spectrum, [1], 0, 10)),
        (c2r, (spectrum, [1], 0, 16)),  # input is not last_dim_size // 2 + 1 long
        (c2r, (complex_input((3, 5), "complex32"), [0, 1], 0, 8)),
        (c2r, (spectrum.conj(), [1], 0, 8)),
    ]
    for adapter, args in refused:
        assert _refuses(fft_load, adapter, args), (adapter.__name__, [getattr(a, "shape", a) for a in args])
    assert _refuses(fft_load, c2c, (x, [1], 0, True), {"out": torch.empty(2, 8, dtype=torch.complex64)})
    assert _refuses(fft_load, c2c, (x, [1], 0, True), {"out": torch.empty(8, 2, dtype=x.dtype).t()})


def test_aten_keys_name_real_overloads_with_the_unpacked_arguments():
    unpacked = {"_fft_c2c": "forward", "_fft_r2c": "onesided", "_fft_c2r": "last_dim_size"}
    for key, adapter in fft.ATEN.items():
        name, _, overload_name = key.partition(".")
        schema = torch._C._get_schema(name, overload_name)
        names = [a.name for a in schema.arguments if not a.kwarg_only]
        assert names == ["self", "dim", "normalization", unpacked[name.split("::")[1]]], key
        assert [a.name for a in schema.arguments if a.kwarg_only] == (["out"] if overload_name else [])
        assert adapter.__name__ == name.split("::_")[1]


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
def test_variants_render_to_valid_modules(dtype_name):
    params = fft.variants(dtype_name)
    assert {p["op"] for p in params} == set(fft.OPS)
    for op, longest in (("fft_c2c", fft.MAX_FFT_LENGTH), ("fft_r2c", fft.MAX_FFT_LENGTH),
                        ("fft_c2r", 2 * fft.MAX_FFT_LENGTH)):
        sizes = {p["n"] for p in params if p["op"] == op}
        assert sizes == {1 << b for b in range(1, longest.bit_length())}, op
    for p in params:
        assert json.loads(json.dumps(p)) == p and p["interpret"] is False
        compile(fft.render(p), f"<fft {p}>", "exec")
