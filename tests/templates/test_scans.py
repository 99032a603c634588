"""Scans family under Triton's interpreter, against complex128 references computed on the same rounded inputs.

Tolerances: each output is rounded once from an fp32 running value, so a part is off by at most half a
16-bit ulp of its own magnitude: inside 1 ulp of the complex magnitude. cumsum is judged relative to the
running sum of |inputs| (the bound when terms cancel), cumprod relative to the result itself (inputs have
magnitudes near 1, so products stay in range and fp32's n * 2^-24 relative drift is negligible).
"""

import warnings

import pytest
import torch
from conftest import DTYPE_NAMES, assert_close_16bit

from jitdtypes import dtypes
from kernels_templates import launcher, scans

# the interpreter computes with numpy, which warns about the overflow these tests provoke
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# (shape, dim, layout): scans along the innermost and outer dims, lengths 1, 7 and 130 (not multiples of any
# block), negative dims, transposed and sliced inputs, and a 5-d transposed layout whose kept dims do not
# merge into three (the contiguous-copy fallback).
CASES = [
    ((130,), 0, "contiguous"),
    ((7, 130), 1, "contiguous"),
    ((130, 7), 0, "contiguous"),
    ((3, 5, 7), 1, "transposed"),
    ((4, 6, 5), -1, "sliced"),
    ((5, 1), -2, "sliced"),
    ((2, 3, 2, 3, 2), 2, "transposed"),
]
CASE_IDS = [f"{'x'.join(map(str, s))}-dim{d}-{lay}" for s, d, lay in CASES]


def pick(*indices):
    """Some of CASES with their ids, as parametrize keywords."""
    return {"argvalues": [CASES[i] for i in indices], "ids": [CASE_IDS[i] for i in indices]}


def rounded(shape, dtype_name, seed=0, unit=False):
    """complex64 randoms rounded to the 16-bit dtype; unit=True puts magnitudes near 1."""
    generator = torch.Generator().manual_seed(seed)
    z = torch.randn(shape, dtype=torch.complex64, generator=generator)
    if unit:
        z = torch.polar(1 + 0.05 * z.real, 6 * z.imag)
    return z.to(dtypes.COMPLEX_BY_NAME[dtype_name])


def make(shape, dtype_name, layout, seed=0, unit=False):
    if layout == "transposed":
        return rounded(shape[::-1], dtype_name, seed, unit).permute(*reversed(range(len(shape))))
    if layout == "sliced":
        return rounded((*shape[:-1], 2 * shape[-1] + 1), dtype_name, seed, unit)[..., 1::2]
    return rounded(shape, dtype_name, seed, unit)


def wide(x):
    return x.to(torch.complex128)


def scan(load, op, dtype, x, dim):
    out = torch.empty(x.shape, dtype=x.dtype)
    load({"op": op, "dtype": dtype})(x, dim % max(x.dim(), 1), out)
    return out


@pytest.fixture
def scans_loader(load):
    return load("scans")


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape,dim,layout", CASES, ids=CASE_IDS)
def test_cumsum(scans_loader, dtype, shape, dim, layout):
    x = make(shape, dtype, layout)
    z = wide(x)
    result = scan(scans_loader, "cumsum", dtype, x, dim)
    assert_close_16bit(result, z.cumsum(dim), dtype, ulps=1, scale=z.abs().cumsum(dim))


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape,dim,layout", **pick(1, 2, 3, 5, 6))
def test_cumprod(scans_loader, dtype, shape, dim, layout):
    x = make(shape, dtype, layout, unit=True)
    result = scan(scans_loader, "cumprod", dtype, x, dim)
    assert_close_16bit(result, wide(x).cumprod(dim), dtype, ulps=1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape,dim", [((350,), 0), ((300, 3), 0), ((2, 260), 1)], ids=["1-d", "outer", "inner"])
def test_split_scans(scans_loader, dtype, shape, dim, monkeypatch):
    """Few rows over a long scanned dim: range totals first, then each range scanned from the totals before
    it. Results match complex128, repeat bit for bit, and an in-place scan reads nothing it already wrote."""
    launched, launch = [], launcher.Launcher.launch
    monkeypatch.setattr(launcher.Launcher, "launch", lambda self, *args, **kwargs: launched.append(
        self.kernel.__name__) or launch(self, *args, **kwargs))
    for op, reference in (("cumsum", torch.cumsum), ("cumprod", torch.cumprod)):
        x = make(shape, dtype, "contiguous", unit=op == "cumprod")
        z = wide(x)
        launched.clear()
        run = scans_loader({"op": op, "dtype": dtype})
        first, again = (scan(lambda _: run, op, dtype, x, dim) for _ in range(2))
        assert "_range_totals_kernel" in launched
        assert torch.equal(first, again)
        scale = z.abs().cumsum(dim) if op == "cumsum" else None
        assert_close_16bit(first, reference(z, dim), dtype, ulps=1, scale=scale)
        run(x, dim, x)
        assert torch.equal(x, first)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_empty_and_zero_dim(scans_loader, dtype):
    for op in scans.OPS:
        for shape, dim in (((0, 3), 0), ((3, 0), 1), ((3, 0), 0)):
            assert scan(scans_loader, op, dtype, rounded(shape, dtype), dim).shape == shape
        scalar = rounded((), dtype)
        for dim in (0, -1):
            assert_close_16bit(scan(scans_loader, op, dtype, scalar, dim), wide(scalar), dtype, ulps=0)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_cumsum_overflow_edge(scans_loader, dtype):
    """The running value is fp32: it reaches inf only where the true running sum leaves the 16-bit range,
    and a running sum whose terms cancel stays exact however large the terms."""
    big = 3e4 if dtype == "complex32" else 1e38
    z = torch.tensor([[big] * 8, [big, -big] * 4], dtype=torch.complex128)
    x = z.to(dtypes.COMPLEX_BY_NAME[dtype])
    z = wide(x)
    result = scan(scans_loader, "cumsum", dtype, x, 1)
    target = z.cumsum(1).to(x.dtype).to(z.dtype)
    assert torch.equal(wide(result).isinf(), target.isinf())
    assert wide(result)[0].isinf().any() and wide(result)[1].isfinite().all()
    assert_close_16bit(result, target, dtype, ulps=0)


# -- adapters ---------------------------------------------------------------------------------------------


def adapt(name, load, *args, **kwargs):
    return scans.ATEN[name](load, args, kwargs, "cpu")


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_adapters(scans_loader, dtype):
    load = scans_loader
    x = make((4, 6, 5), dtype, "sliced")
    z = wide(x)
    scale = z.abs().cumsum(-2)
    assert_close_16bit(adapt("aten::cumsum", load, x, -2), z.cumsum(-2), dtype, 1, scale)
    assert_close_16bit(adapt("aten::cumsum", load, x, 1, dtype=x.dtype), z.cumsum(1), dtype, 1, scale)
    unit = make((3, 7), dtype, "transposed", unit=True)
    assert_close_16bit(adapt("aten::cumprod", load, unit, 0), wide(unit).cumprod(0), dtype, 1)

    out = torch.empty(0, dtype=x.dtype)
    assert adapt("aten::cumsum.out", load, x, 2, out=out) is out
    assert out.shape == x.shape
    assert_close_16bit(out, z.cumsum(2), dtype, 1, z.abs().cumsum(2))
    strided_out = torch.empty(7, 3, dtype=x.dtype).t()
    assert adapt("aten::cumprod.out", load, unit, 1, out=strided_out) is strided_out
    assert_close_16bit(strided_out, wide(unit).cumprod(1), dtype, 1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_in_place(scans_loader, dtype):
    """cumsum_ on a sliced view writes only the view's elements; out= the input itself works too."""
    load = scans_loader
    base = rounded((5, 9), dtype)
    before = wide(base)
    view = base[:, 1::2]
    assert adapt("aten::cumsum_", load, view, 0) is view
    expected = before.clone()
    expected[:, 1::2] = before[:, 1::2].cumsum(0)
    assert_close_16bit(base, expected, dtype, 1, before.abs().cumsum(0))
    assert torch.equal(wide(base[:, ::2]), before[:, ::2])

    unit = rounded((4, 7), dtype, unit=True)
    expected = wide(unit).cumprod(1)
    assert adapt("aten::cumprod_", load, unit, -1) is unit
    assert_close_16bit(unit, expected, dtype, 1)
    same = rounded((6,), dtype)
    expected, scale = wide(same).cumsum(0), wide(same).abs().cumsum(0)
    assert adapt("aten::cumsum.out", load, same, 0, out=same) is same
    assert_close_16bit(same, expected, dtype, 1, scale)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_adapters_decline(scans_loader, dtype):
    load = scans_loader
    x = rounded((3, 4), dtype)
    unresized = torch.empty(0, dtype=torch.complex64)
    declined = [
        ("aten::cumsum", (x.to(torch.complex64), 0), {}),
        ("aten::cumsum", (x, 0), {"dtype": torch.complex64}),
        ("aten::cumsum", (x.conj(), 0), {}),
        ("aten::cumprod", (torch._neg_view(x), 0), {}),
        ("aten::cumsum", (x, 2), {}),
        ("aten::cumsum.out", (x, 0), {"out": unresized}),
        ("aten::cumsum.out", (x[:, :3], 1), {"out": x[:, 1:]}),
        ("aten::cumsum_", (x[:1].expand(3, 4), 0), {}),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, args, kwargs in declined:
            assert scans.ATEN[name](load, args, kwargs, "cpu") is NotImplemented, name
    assert unresized.shape == (0,)


def test_variants_render_every_op():
    for dtype in DTYPE_NAMES:
        params = scans.variants(dtype)
        assert [p["op"] for p in params] == list(scans.OPS)
        for p in params:
            source = scans.render(p)
            compile(source, p["op"], "exec")
            assert "def run(" in source and "MUTATES" in source and "Scan(" in source
