"""Reductions family under Triton's interpreter, against complex128 references computed on the same rounded
inputs.

Tolerances: every result is rounded once from fp32, so a part is off by at most half a 16-bit ulp of its own
magnitude (2^-11 relative for fp16, 2^-8 for bf16): the complex error is at most sqrt(2)/2 ulp of the
reference's magnitude, inside assert_close_16bit's 1 ulp. fp32 accumulation adds about n * 2^-24 relative,
negligible at these sizes. Sums are judged relative to the sum of |inputs| (the bound for a sum whose terms
cancel); mean likewise relative to mean |input|; prod, var, std and norms relative to the result itself.
"""

import math
import warnings

import pytest
import torch
from conftest import DTYPE_NAMES, assert_close_16bit

from jitdtypes import dtypes
from kernels_templates import launcher, reductions

# the interpreter computes with numpy, which warns about the overflow and NaN these tests provoke
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

REAL = {"complex32": torch.float16, "bcomplex32": torch.bfloat16}

# (shape, dims, keepdim, layout): inner and outer reductions, lengths 1, 7 and 130 (not multiples of any
# block), several and negative dims, transposed and sliced inputs, and a 7-d transposed layout whose dims do
# not merge into three kept and three reduced ones (the contiguous-copy fallback).
CASES = [
    ((130,), None, False, "contiguous"),
    ((7, 130), [1], False, "contiguous"),
    ((130, 7), [0], True, "contiguous"),
    ((3, 5, 7), [1], False, "contiguous"),
    ((3, 5, 7), [0, -1], True, "transposed"),
    ((4, 6, 5), [-2], False, "sliced"),
    ((2, 3, 4, 5), [1, 3], False, "transposed"),
    ((1, 7), [0], False, "sliced"),
    ((2, 3, 2, 3, 2, 3, 2), [0, 2, 4, 6], False, "transposed"),
]


def case_id(case):
    shape, dims, keepdim, layout = case
    return f"{'x'.join(map(str, shape))}-{dims}-{'keep' if keepdim else 'drop'}-{layout}"


CASE_IDS = [case_id(case) for case in CASES]


def pick(*indices):
    """Some of CASES with their ids, as parametrize keywords."""
    return {"argvalues": [CASES[i] for i in indices], "ids": [CASE_IDS[i] for i in indices]}


def rounded(shape, dtype_name, seed=0, unit=False):
    """complex64 randoms rounded to the 16-bit dtype; unit=True puts magnitudes near 1 so long products
    stay in range."""
    generator = torch.Generator().manual_seed(seed)
    z = torch.randn(shape, dtype=torch.complex64, generator=generator)
    if unit:
        z = torch.polar(1 + 0.05 * z.real, 6 * z.imag)
    return z.to(dtypes.COMPLEX_BY_NAME[dtype_name])


def make(shape, dtype_name, layout, seed=0, unit=False):
    if layout == "transposed":
        return rounded(shape[::-1], dtype_name, seed, unit=unit).permute(*reversed(range(len(shape))))
    if layout == "sliced":
        wide = rounded((*shape[:-1], 2 * shape[-1] + 1), dtype_name, seed, unit=unit)
        return wide[..., 1::2]
    return rounded(shape, dtype_name, seed, unit=unit)


def wide(x):
    return x.to(torch.complex128)


def full_dims(x, dims):
    return list(range(x.dim())) if dims is None else [d % x.dim() for d in dims]


def reduce(load, params, x, dims, keepdim=False, scalars=()):
    """Call the rendered `run` the way adapters do; returns the output tensor(s)."""
    dims = sorted(full_dims(x, dims)) if x.dim() else []
    if keepdim:
        shape = [1 if d in dims else s for d, s in enumerate(x.shape)]
    else:
        shape = [s for d, s in enumerate(x.shape) if d not in dims]
    op = params["op"]
    outs = [torch.empty(shape, dtype=x.dtype if op in ("sum", "mean", "prod") else REAL[params["dtype"]])]
    if op.endswith("_mean"):
        outs.append(torch.empty(shape, dtype=x.dtype))
    load(params)(x, dims, *scalars, *outs)
    return outs if len(outs) > 1 else outs[0]


def reference_var(z, dims, correction, keepdim):
    n = math.prod(z.shape[d] for d in dims)
    squares = (z - z.mean(dims, keepdim=True)).abs().square()
    return squares.sum(dims, keepdim=keepdim) / max(n - correction, 0)


@pytest.fixture
def reductions_loader(load):
    return load("reductions")


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape,dims,keepdim,layout", CASES, ids=CASE_IDS)
def test_sum_and_mean(reductions_loader, dtype, shape, dims, keepdim, layout):
    x = make(shape, dtype, layout)
    z, d = wide(x), full_dims(x, dims)
    magnitude_sum = z.abs().sum(d, keepdim=keepdim)
    total = reduce(reductions_loader, {"op": "sum", "dtype": dtype}, x, dims, keepdim)
    assert_close_16bit(total, z.sum(d, keepdim=keepdim), dtype, ulps=1, scale=magnitude_sum)
    n = math.prod(x.shape[i] for i in d)
    mean = reduce(reductions_loader, {"op": "mean", "dtype": dtype}, x, dims, keepdim)
    assert_close_16bit(mean, z.mean(d, keepdim=keepdim), dtype, ulps=1, scale=magnitude_sum / n)


def random_cases(count, seed=2):
    """Shapes of rank 1-4 with sizes from 1 to 9, a random non-empty set of dims (some negative), keepdim and
    layout."""
    generator = torch.Generator().manual_seed(seed)

    def draw(n):
        return int(torch.randint(n, (), generator=generator))

    cases = []
    for _ in range(count):
        rank = 1 + draw(4)
        shape = tuple(1 + draw(9) for _ in range(rank))
        dims = [d - rank if draw(2) else d for d in range(rank) if draw(2)] or [rank - 1]
        cases.append((shape, dims, bool(draw(2)), ["contiguous", "transposed", "sliced"][draw(3)]))
    return cases


RANDOM_CASES = random_cases(8)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape,dims,keepdim,layout", RANDOM_CASES, ids=[case_id(c) for c in RANDOM_CASES])
def test_sum_and_var_random_shapes(reductions_loader, dtype, shape, dims, keepdim, layout):
    x = make(shape, dtype, layout, seed=len(shape))
    z, d = wide(x), full_dims(x, dims)
    total = reduce(reductions_loader, {"op": "sum", "dtype": dtype}, x, dims, keepdim)
    assert_close_16bit(total, z.sum(d, keepdim=keepdim), dtype, ulps=1, scale=z.abs().sum(d, keepdim=keepdim))
    var = reduce(reductions_loader, {"op": "var", "dtype": dtype}, x, dims, keepdim, [1.0])
    assert_close_16bit(var, reference_var(z, d, 1.0, keepdim), dtype, ulps=1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape,dims,keepdim,layout", **pick(1, 2, 4, 5))
def test_prod(reductions_loader, dtype, shape, dims, keepdim, layout):
    x = make(shape, dtype, layout, unit=True)
    z = wide(x)
    expected = z
    for d in sorted(full_dims(x, dims), reverse=True):
        expected = expected.prod(d, keepdim=keepdim)
    product = reduce(reductions_loader, {"op": "prod", "dtype": dtype}, x, dims, keepdim)
    assert_close_16bit(product, expected, dtype, ulps=1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape,dims,keepdim,layout", **pick(0, 3, 4, 8))
def test_variance_family(reductions_loader, dtype, shape, dims, keepdim, layout):
    x = make(shape, dtype, layout)
    z, d = wide(x), full_dims(x, dims)
    for correction in (1.0, 0.0, 2.5):
        expected_var = reference_var(z, d, correction, keepdim)
        var = reduce(reductions_loader, {"op": "var", "dtype": dtype}, x, dims, keepdim, [correction])
        assert var.dtype == REAL[dtype]
        assert_close_16bit(var, expected_var, dtype, ulps=1)
        std = reduce(reductions_loader, {"op": "std", "dtype": dtype}, x, dims, keepdim, [correction])
        assert_close_16bit(std, expected_var.sqrt(), dtype, ulps=1)
    mean_scale = z.abs().mean(d, keepdim=keepdim)
    for op, statistic in (("var_mean", expected_var), ("std_mean", expected_var.sqrt())):
        first, mean = reduce(reductions_loader, {"op": op, "dtype": dtype}, x, dims, keepdim, [2.5])
        assert_close_16bit(first, statistic, dtype, ulps=1)
        assert_close_16bit(mean, z.mean(d, keepdim=keepdim), dtype, ulps=1, scale=mean_scale)


ORDS = [("2", 2.0), ("1", 1.0), ("inf", math.inf), ("-inf", -math.inf), ("0", 0.0), ("p", 3.0), ("p", 0.5)]


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape,dims,keepdim,layout", **pick(1, 2, 6))
def test_vector_norm(reductions_loader, dtype, shape, dims, keepdim, layout):
    x = make(shape, dtype, layout)
    x[(0,) * x.dim()] = 0  # ord 0 counts nonzeros
    z, d = wide(x), full_dims(x, dims)
    for name, order in ORDS:
        params = {"op": "vector_norm", "dtype": dtype, "ord": name}
        norm = reduce(reductions_loader, params, x, dims, keepdim, [order] if name == "p" else [])
        expected = torch.linalg.vector_norm(z, order, d, keepdim)
        assert_close_16bit(norm, expected, dtype, ulps=1 if name != "p" else 2)


SPLIT_CASES = [((300,), None), ((3, 260), [1]), ((260, 3), [0])]


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape,dims", SPLIT_CASES, ids=["full", "inner", "outer"])
def test_split_reductions(reductions_loader, dtype, shape, dims, monkeypatch):
    """Few outputs over a long reduced length: the length is split across programs whose fp32 partials a
    finish kernel combines (the second phase of var/std and the rescaled norms combines the first's itself).
    Results match complex128 and are the same bits on every run."""
    x = make(shape, dtype, "contiguous", unit=True)  # magnitudes near 1: the product stays in range
    z, d = wide(x), full_dims(x, dims)
    expected_prod = z
    for dim in sorted(d, reverse=True):
        expected_prod = expected_prod.prod(dim)
    checks = [  # (params, run-time scalars, [(reference, scale of the tolerance)])
        ({"op": "sum"}, [], [(z.sum(d), z.abs().sum(d))]),
        ({"op": "prod"}, [], [(expected_prod, None)]),
        ({"op": "var_mean"}, [1.0], [(reference_var(z, d, 1.0, False), None), (z.mean(d), z.abs().mean(d))]),
        ({"op": "vector_norm", "ord": "-inf"}, [], [(torch.linalg.vector_norm(z, -math.inf, d), None)]),
        ({"op": "vector_norm", "ord": "p"}, [3.0], [(torch.linalg.vector_norm(z, 3, d), None)]),
    ]
    launched, launch = [], launcher.Launcher.launch
    monkeypatch.setattr(launcher.Launcher, "launch", lambda self, *args, **kwargs: launched.append(
        self.kernel.__name__) or launch(self, *args, **kwargs))
    for params, scalars, expected in checks:
        params = {**params, "dtype": dtype}
        launched.clear()
        run = reductions_loader(params)
        results = [reduce(lambda _: run, params, x, dims, scalars=scalars) for _ in range(2)]
        assert "_finish_kernel" in launched, params
        first, again = ([r] if isinstance(r, torch.Tensor) else r for r in results)
        for result, repeat, (reference, scale) in zip(first, again, expected):
            assert torch.equal(result, repeat), params
            assert_close_16bit(result, reference, dtype, ulps=2 if params.get("ord") == "p" else 1, scale=scale)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_empty_and_zero_dim(reductions_loader, dtype):
    load = reductions_loader
    empty = rounded((3, 0), dtype)
    expected = {"sum": 0, "prod": 1, "mean": complex("nan+nanj")}
    for op, value in expected.items():
        out = reduce(load, {"op": op, "dtype": dtype}, empty, [1])
        assert out.shape == (3,)
        assert_close_16bit(out, torch.full((3,), value, dtype=torch.complex128), dtype)
    assert reduce(load, {"op": "var", "dtype": dtype}, empty, [1], scalars=[1.0]).isnan().all()
    assert (reduce(load, {"op": "vector_norm", "dtype": dtype, "ord": "2"}, empty, [1]) == 0).all()
    assert reduce(load, {"op": "sum", "dtype": dtype}, empty, [0], keepdim=True).shape == (1, 0)

    scalar = rounded((), dtype)
    assert_close_16bit(reduce(load, {"op": "sum", "dtype": dtype}, scalar, None), wide(scalar), dtype, ulps=0)
    assert_close_16bit(reduce(load, {"op": "mean", "dtype": dtype}, scalar, None), wide(scalar), dtype, ulps=0)
    assert reduce(load, {"op": "var", "dtype": dtype}, scalar, None, scalars=[1.0]).isnan()
    assert reduce(load, {"op": "std", "dtype": dtype}, scalar, None, scalars=[0.0]) == 0
    norm = reduce(load, {"op": "vector_norm", "dtype": dtype, "ord": "1"}, scalar, None)
    assert_close_16bit(norm, wide(scalar).abs(), dtype, ulps=1)


def _rows(values, length):
    """A 2-d tensor whose row i starts with values[i] and is zero after."""
    rows = torch.zeros(len(values), length, dtype=torch.complex128)
    for i, row in enumerate(values):
        rows[i, : len(row)] = torch.tensor(row, dtype=torch.complex128)
    return rows


OVERFLOW_EDGE = {
    # fp16 max 65504: many 3e4 terms, terms that cancel pairwise, and a sum that just fits
    "complex32": _rows([[3e4] * 300, [3e4, -3e4] * 150, [3e4, 3e4], [3e4, 3e4, 3e4]], 300),
    # bf16 max ~3.39e38 is fp32's range: sums and squares overflow fp32 unless rescaled (no two or three of
    # the cancelling row's values overflow fp32 together: lanes may add them in any order)
    "bcomplex32": _rows([[3e38] * 4, [2e38, -2e38, 1e38, -1e38], [2e38, 1e38j], [1e38, 1e38]], 4),
}


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_overflow_edge(reductions_loader, dtype):
    """Accumulation does not overflow before the store: a result is inf exactly where the true value is out
    of the 16-bit range (the reference is rounded to the 16-bit dtype to find those)."""
    x = OVERFLOW_EDGE[dtype].to(dtypes.COMPLEX_BY_NAME[dtype])
    z = wide(x)
    checks = [
        ({"op": "sum"}, [], z.sum(1)),
        ({"op": "mean"}, [], z.mean(1)),
        ({"op": "std"}, [1.0], reference_var(z, [1], 1.0, False).sqrt()),
        ({"op": "var"}, [1.0], reference_var(z, [1], 1.0, False)),
        ({"op": "vector_norm", "ord": "2"}, [], torch.linalg.vector_norm(z, 2, 1)),
        ({"op": "vector_norm", "ord": "1"}, [], torch.linalg.vector_norm(z, 1, 1)),
        ({"op": "vector_norm", "ord": "p"}, [3.0], torch.linalg.vector_norm(z, 3, 1)),
    ]
    for params, scalars, exact in checks:
        result = reduce(reductions_loader, {**params, "dtype": dtype}, x, [1], scalars=scalars)
        target = exact.to(result.dtype).to(exact.dtype)
        assert torch.equal(result.to(exact.dtype).isinf(), target.isinf()), (params, result, exact)
        assert_close_16bit(result, target, dtype, ulps=2)
    assert reduce(reductions_loader, {"op": "sum", "dtype": dtype}, x, [1])[1:3].isfinite().all()


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_non_finite_inputs(reductions_loader, dtype):
    z = torch.tensor([[1, complex("nan"), 2], [1, complex("inf"), 2], [0, 0, 0]], dtype=torch.complex128)
    x = z.to(dtypes.COMPLEX_BY_NAME[dtype])
    for name, order in [("inf", math.inf), ("-inf", -math.inf), ("2", 2), ("p", 3.0), ("1", 1)]:
        norm = reduce(reductions_loader, {"op": "vector_norm", "dtype": dtype, "ord": name}, x, [1],
                      scalars=[order] if name == "p" else [])
        expected = torch.linalg.vector_norm(z, order, 1).to(norm.dtype)
        assert torch.equal(norm.isnan(), expected.isnan()), (name, norm)
        assert torch.equal(norm.isinf(), expected.isinf()), (name, norm)


# -- adapters ---------------------------------------------------------------------------------------------


def adapt(name, load, *args, **kwargs):
    return reductions.ATEN[name](load, args, kwargs, "cpu")


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_adapters_functional(reductions_loader, dtype):
    load = reductions_loader
    x = make((4, 6, 5), dtype, "sliced")
    z = wide(x)
    scale = z.abs().sum((0, 2), keepdim=True)
    assert_close_16bit(adapt("aten::sum.dim_IntList", load, x, [-1, 0], True), z.sum((0, 2), True), dtype, 1, scale)
    assert_close_16bit(adapt("aten::sum", load, x, dtype=x.dtype), z.sum(), dtype, 1, z.abs().sum())
    assert_close_16bit(adapt("aten::mean.dim", load, x, [1]), z.mean(1), dtype, 1, z.abs().mean(1))
    unit = make((4, 6, 5), dtype, "contiguous", unit=True)
    assert_close_16bit(adapt("aten::prod.dim_int", load, unit, -2, True), wide(unit).prod(-2, True), dtype, 1)

    var = adapt("aten::var.correction", load, x, [0, 2], correction=0, keepdim=True)
    assert var.dtype == REAL[dtype] and var.shape == (1, 6, 1)
    assert_close_16bit(var, reference_var(z, [0, 2], 0, True), dtype, 1)
    assert_close_16bit(adapt("aten::std", load, x, False), reference_var(z, [0, 1, 2], 0, False).sqrt(), dtype, 1)
    std, mean = adapt("aten::std_mean.correction", load, x, [1])
    assert_close_16bit(std, reference_var(z, [1], 1, False).sqrt(), dtype, 1)
    assert mean.dtype == x.dtype
    assert_close_16bit(mean, z.mean(1), dtype, 1, z.abs().mean(1))
    var, _ = adapt("aten::var_mean.dim", load, x, [2], False, True)
    assert_close_16bit(var, reference_var(z, [2], 0, True), dtype, 1)

    norm = adapt("aten::linalg_vector_norm", load, x, 3, [0, 1])
    assert norm.dtype == REAL[dtype]
    assert_close_16bit(norm, torch.linalg.vector_norm(z, 3, (0, 1)), dtype, 2)
    assert_close_16bit(adapt("aten::linalg_vector_norm", load, x), torch.linalg.vector_norm(z), dtype, 1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_adapters_out(reductions_loader, dtype):
    load = reductions_loader
    x = make((7, 5), dtype, "transposed")
    z = wide(x)
    out = torch.empty(0, dtype=x.dtype)
    assert adapt("aten::sum.IntList_out", load, x, [0], out=out) is out
    assert_close_16bit(out, z.sum(0), dtype, 1, z.abs().sum(0))

    strided = torch.empty(7, 2, dtype=x.dtype)[:, 0]  # not contiguous: filled through a temporary
    assert adapt("aten::mean.out", load, x, [1], out=strided) is strided
    assert_close_16bit(strided, z.mean(1), dtype, 1, z.abs().mean(1))

    norm_out = torch.empty(3, dtype=REAL[dtype])
    with pytest.warns(UserWarning, match="resized"):
        adapt("aten::linalg_vector_norm.out", load, x, 2, None, True, out=norm_out)
    assert norm_out.shape == (1, 1)
    assert_close_16bit(norm_out, torch.linalg.vector_norm(z, 2, None, True), dtype, 1)

    var_out, mean_out = torch.empty(0, dtype=REAL[dtype]), torch.empty(0, dtype=x.dtype)
    result = adapt("aten::var_mean.correction_out", load, x, [0], out0=var_out, out1=mean_out)
    assert result[0] is var_out and result[1] is mean_out
    assert_close_16bit(var_out, reference_var(z, [0], 1, False), dtype, 1)
    assert_close_16bit(mean_out, z.mean(0), dtype, 1, z.abs().mean(0))


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_adapters_decline(reductions_loader, dtype):
    load = reductions_loader
    x = rounded((3, 4), dtype)
    unresized = torch.empty(0, dtype=REAL[dtype])
    declined = [
        ("aten::sum", (x.to(torch.complex64),), {}),
        ("aten::sum", (x,), {"dtype": torch.complex64}),
        ("aten::sum", (x.conj(),), {}),
        ("aten::mean", (torch._neg_view(x),), {}),
        ("aten::sum.dim_IntList", (x, [0, -2]), {}),
        ("aten::sum.dim_IntList", (x, [2]), {}),
        ("aten::sum.IntList_out", (x, [0]), {"out": torch.empty(4, dtype=torch.complex64)}),
        ("aten::sum.IntList_out", (x, [1]), {"out": x[0, :3]}),
        ("aten::var.correction_out", (x, [1]), {"out": torch.empty(3, dtype=x.dtype)}),
        ("aten::var_mean.correction_out", (x, [1]), {"out0": unresized, "out1": torch.empty(3, dtype=x.dtype).conj()}),
        ("aten::linalg_vector_norm", (x, -1.0), {}),
        ("aten::linalg_vector_norm", (x[:, :0], math.inf, [1]), {}),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, args, kwargs in declined:
            assert reductions.ATEN[name](load, args, kwargs, "cpu") is NotImplemented, name
    assert unresized.shape == (0,)


def test_variants_render_every_op():
    for dtype in DTYPE_NAMES:
        params = reductions.variants(dtype)
        assert {p["op"] for p in params} == {"sum", "mean", "prod", "var", "std", "var_mean", "std_mean", "vector_norm"}
        for p in params:
            source = reductions.render(p)
            compile(source, p["op"], "exec")
            assert "def run(" in source and "MUTATES" in source and "Reduction(" in source
