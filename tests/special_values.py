"""Inputs full of special values, in four memory layouts, and one program per compile-path decomposition.

For `tests/test_compile_special_values.py` and `benchmarks/special_values.py`. Every input is an (n, n) grid
whose element (i, j) depends on one index only, so the same values exist contiguous, transposed, as a
strided slice of a larger buffer, and broadcast from a column or a row, and the pair (x[i, j], y[i, j])
runs over every pair of special values: each binary program meets inf * 0, nan / -0, 65504 + 65504 ...
Each program applies one rounding op to its inputs (other ops in it are exact), so compiled code, which rounds
a fused chain once, and eager, which rounds after every op, must give the same values.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import torch
from torch.nn import functional

from jitdtypes import dtypes

aten, prims = torch.ops.aten, torch.ops.prims
inf, nan = math.inf, math.nan

# zeros of both signs, subnormals (the smallest, one with more bits, the largest), the smallest normal, the
# largest half, values whose squares and products overflow float16, infinities, NaN
SIXTEEN_BIT = [0.0, -0.0, 1.0, -1.5, 0.1, 2.0**-24, -3 * 2.0**-24, 2.0**-14 - 2.0**-24, 2.0**-14, 65504.0,
               -65504.0, 300.0, -11.5, inf, -inf, nan]
BFLOAT16_ONLY = [3.0e38, -1.0e-39]  # past float16's range; a bfloat16 subnormal
# float32 values that round to 16 bits at an edge: the largest value rounding to 65504 and the first rounding to
# inf, overflow, ties to even at 2^-25 and bfloat16's 1 + 2^-8, a float16 subnormal that rounds up, float32's top
FLOAT32 = [65519.0, 65520.0, 1e5, -1e5, 1e-8, 2.0**-25, 3 * 2.0**-26, 3.4e38, inf, -inf, nan, -0.0,
           1.0 + 2.0**-8, 1.0 + 3 * 2.0**-9, 1.5 * 2.0**-24, 65505.0]
LAYOUTS = ("contiguous", "transposed", "sliced", "broadcast")


def special_values(dtype: torch.dtype) -> list[float]:
    return SIXTEEN_BIT + (BFLOAT16_ONLY if dtypes.part_dtype(dtype) == torch.bfloat16 else [])


def _pairs(values) -> tuple[torch.Tensor, torch.Tensor]:
    v = torch.tensor(values, dtype=torch.float32)
    return v.repeat_interleave(len(v)), v.repeat(len(v))


def vectors(dtype: torch.dtype, tail: int = 3) -> dict[str, tuple[torch.Tensor, int]]:
    """name -> (the 1-D values of that input, the grid dimension they run along). n = every pair of special
    values plus `tail` more (cycled): not a multiple of any vector width."""
    values = special_values(dtype)
    n = len(values) ** 2 + tail
    cycle = lambda t: t[torch.arange(n) % t.numel()]  # noqa: E731
    re, im = (cycle(p) for p in _pairs(values))
    wide_re, wide_im = (cycle(p) for p in _pairs(FLOAT32))
    single = cycle(torch.tensor(values, dtype=torch.float32))
    part = dtypes.part_dtype(dtype)
    return {
        "x": (torch.complex(re, im).to(dtype), 0),
        "y": (torch.complex(re, im).to(dtype), 1),
        "r": (single.to(part), 0),  # with s: complex(r, s) meets every (re, im) pair
        "s": (single.to(part), 1),
        "f": (cycle(torch.tensor(FLOAT32)), 1),
        "c": (torch.complex(wide_re, wide_im), 0),
    }


def _grid(vector: torch.Tensor, dim: int) -> torch.Tensor:
    n = vector.numel()
    return (vector[:, None] if dim == 0 else vector[None, :]).expand(n, n)


def in_layout(vector: torch.Tensor, dim: int, layout: str) -> torch.Tensor:
    """The (n, n) grid of `vector` along `dim`, with the memory layout named."""
    grid = _grid(vector, dim)
    if layout == "contiguous":
        return grid.contiguous()
    if layout == "transposed":
        return grid.T.contiguous().T
    if layout == "sliced":  # every other element of a larger buffer, at an offset
        n = grid.shape[0]
        buffer = torch.zeros(n + 1, 2 * n + 1, dtype=grid.dtype)
        buffer[1:, 1::2] = grid
        return buffer[1:, 1::2]
    assert layout == "broadcast"
    return grid


def inputs(dtype: torch.dtype, layout: str, tail: int = 3) -> dict[str, torch.Tensor]:
    return {name: in_layout(v, dim, layout) for name, (v, dim) in vectors(dtype, tail).items()}


@dataclass(frozen=True)
class Program:
    """`run(**inputs)`: one rounding op on special values. `covers`: the decompositions (table keys) it reaches.
    `exact`: the compiled result must equal eager's bit for bit (NaN payloads aside); otherwise both must agree
    on which values are NaN, infinite (and their signs) and zero, and the rest within `ulps` of the dtype."""

    name: str
    run: object
    covers: tuple = field(default_factory=tuple)
    exact: bool = True
    ulps: int = 2

    @property
    def operands(self) -> tuple[str, ...]:
        """The names of the inputs `run` takes (its parameters without defaults)."""
        parameters = inspect.signature(self.run).parameters.values()
        return tuple(p.name for p in parameters if p.default is p.empty)


def _index(n: int) -> torch.Tensor:
    """0..n-1 out of order, some repeated."""
    return (torch.arange(n) * 7) % (n - 2)


def _every_third(x: torch.Tensor) -> torch.Tensor:
    return (torch.arange(x.shape[1]) % 3 == 0)[None, :]


def _programs() -> list[Program]:
    p = []

    def add(name, run, covers, exact=True, ulps=2):
        p.append(Program(name, run, tuple(covers), exact, ulps))

    # complex -> complex, one input: exact where the result is a sign change, else correctly rounded formulas
    # of libm functions that eager's vectorized complex64 kernels evaluate differently
    for name, overload, exact in [
        ("neg", aten.neg.default, True), ("conj_physical", aten.conj_physical.default, True),
        ("reciprocal", aten.reciprocal.default, False), ("exp", aten.exp.default, False),
        ("exp2", aten.exp2.default, False), ("expm1", aten.expm1.default, False), ("log", aten.log.default, False),
        ("log2", aten.log2.default, False), ("log10", aten.log10.default, False),
        ("log1p", aten.log1p.default, False), ("sqrt", aten.sqrt.default, False),
        ("rsqrt", aten.rsqrt.default, False), ("sin", aten.sin.default, False), ("cos", aten.cos.default, False),
        ("tan", aten.tan.default, False), ("sinh", aten.sinh.default, False), ("cosh", aten.cosh.default, False),
        ("tanh", aten.tanh.default, False), ("sigmoid", aten.sigmoid.default, False),
        ("sgn", aten.sgn.default, False), ("asin", aten.asin.default, False), ("acos", aten.acos.default, False),
        ("atan", aten.atan.default, False), ("asinh", aten.asinh.default, False),
        ("acosh", aten.acosh.default, False), ("atanh", aten.atanh.default, False),
    ]:
        add(name, lambda x, _f=getattr(torch, name): _f(x), [overload], exact)
    add("_conj_physical", lambda x: aten._conj_physical(x), [aten._conj_physical.default])
    add("conj * y", lambda x, y: x.conj() * y, [aten._conj.default, aten.mul.Tensor])

    # two operands: every pair of special values
    add("x + y", lambda x, y: x + y, [aten.add.Tensor])
    add("add alpha", lambda x, y: torch.add(x, y, alpha=2), [aten.add.Tensor])
    add("add.Scalar", lambda x: aten.add.Scalar(x, 3), [aten.add.Scalar])
    add("x - y", lambda x, y: x - y, [aten.sub.Tensor])
    add("sub.Scalar", lambda x: aten.sub.Scalar(x, 0.5), [aten.sub.Scalar])
    add("x * y", lambda x, y: x * y, [aten.mul.Tensor])
    add("mul.Scalar", lambda x: aten.mul.Scalar(x, 2.5), [aten.mul.Scalar])
    add("x * complex", lambda x: x * (0.5 - 2j), [aten.mul.Tensor], exact=False)
    add("x * real16", lambda x, r: x * r, [aten.mul.Tensor])
    add("x * float32", lambda x, f: x * f, [aten.mul.Tensor], exact=False)
    add("x + complex64", lambda x, c: x + c, [aten.add.Tensor])
    add("x / y", lambda x, y: x / y, [aten.div.Tensor], exact=False)
    add("div.Scalar", lambda x: aten.div.Scalar(x, 3), [aten.div.Scalar], exact=False)
    add("x ** 2", lambda x: x**2, [aten.pow.Tensor_Scalar], exact=False)
    add("x ** 0.5", lambda x: x**0.5, [aten.pow.Tensor_Scalar], exact=False)
    add("x ** y", lambda x, y: x**y, [aten.pow.Tensor_Tensor], exact=False)
    add("2 ** x", lambda x: aten.pow.Scalar(2.0, x), [aten.pow.Scalar], exact=False)
    add("addcmul", lambda x, y: torch.addcmul(x, y, x, value=0.5), [aten.addcmul.default], exact=False)
    add("addcdiv", lambda x, y: torch.addcdiv(x, y, x), [aten.addcdiv.default], exact=False)
    add("lerp.Scalar", lambda x, y: torch.lerp(x, y, 0.25), [aten.lerp.Scalar], exact=False)
    add("lerp.Scalar high", lambda x, y: torch.lerp(x, y, 0.75), [aten.lerp.Scalar], exact=False)
    add("lerp.Tensor", lambda x, y: torch.lerp(x, y, y), [aten.lerp.Tensor], exact=False)
    add("where", lambda x, y, r: torch.where(r > 0, x, y), [aten.where.self])

    # complex -> real
    add("abs", lambda x: x.abs(), [aten.abs.default], exact=False)
    add("angle", lambda x: x.angle(), [aten.angle.default], exact=False)
    add("isnan", lambda x: x.isnan(), [aten.isnan.default])
    add("isinf", lambda x: x.isinf(), [aten.isinf.default])
    add("isfinite", lambda x: x.isfinite(), [aten.isfinite.default])
    add("x == y", lambda x, y: x == y, [aten.eq.Tensor])
    add("eq.Scalar", lambda x: aten.eq.Scalar(x, 1.0), [aten.eq.Scalar])
    add("x != y", lambda x, y: x != y, [aten.ne.Tensor])
    add("ne.Scalar", lambda x: aten.ne.Scalar(x, 1.0), [aten.ne.Scalar])
    add("view_as_real(x * y)", lambda x, y: torch.view_as_real(x * y), [aten.view_as_real.default])
    add("view_as_real(x) * 2", lambda x: torch.view_as_real(x) * 2, [aten.view_as_real.default])

    # conversions and constructors
    add("to complex64", lambda x: x.to(torch.complex64), [prims.convert_element_type.default])
    add("complex64 to", lambda x, c: c.to(x.dtype), [prims.convert_element_type.default])
    add("float32 to", lambda x, f: f.to(x.dtype), [prims.convert_element_type.default])
    add("real16 to", lambda x, r: r.to(x.dtype), [prims.convert_element_type.default])
    add("to real part", lambda x: x.to(x.real.dtype), [prims.convert_element_type.default])
    add("to bool", lambda x: x.to(torch.bool), [prims.convert_element_type.default])
    add("complex", lambda r, s: torch.complex(r, s), [aten.complex.default])
    add("polar", lambda r, s: torch.polar(r, s), [aten.polar.default], exact=False)
    add("view_as_complex", lambda r, s: torch.view_as_complex(torch.stack([r, s], -1)),
        [aten.view_as_complex.default])
    add("full", lambda x: torch.full(x.shape, complex(70000.0, -65504.0), dtype=x.dtype) + x, [aten.full.default])
    add("scalar_tensor", lambda x: x + torch.scalar_tensor(complex(-inf, 1.0), dtype=x.dtype),
        [aten.scalar_tensor.default])

    # moving elements: exact; views are negated so that a kernel reads them
    for name, run, covers in [
        ("reshape", lambda x: -x.reshape(-1), [aten.view.default, aten._unsafe_view.default]),
        ("permute", lambda x: -x.permute(1, 0), [aten.permute.default]),
        ("expand", lambda x: -x[:, :1].expand(-1, 5), [aten.expand.default]),
        ("unsqueeze", lambda x: -x.unsqueeze(1), [aten.unsqueeze.default]),
        ("squeeze", lambda x: -x[None].squeeze(), [aten.squeeze.default]),
        ("squeeze dim", lambda x: -x[None].squeeze(0), [aten.squeeze.dim]),
        ("squeeze dims", lambda x: -x[None].squeeze((0,)), [aten.squeeze.dims]),
        ("slice", lambda x: -x[1:, ::3], [aten.slice.Tensor]),
        ("select", lambda x: -x[:, 5], [aten.select.int]),
        ("alias", lambda x: -aten.alias(x), [aten.alias.default]),
        ("t", lambda x: -x.t(), [aten.t.default]),
        ("transpose", lambda x: -x.transpose(0, 1), [aten.transpose.int]),
        ("diagonal", lambda x: -x.diagonal(), [aten.diagonal.default]),
        ("unfold", lambda x: -x.unfold(1, 4, 3), [aten.unfold.default]),
        ("split", lambda x: -x.split(100)[1], [aten.split.Tensor]),
        ("split_with_sizes", lambda x: -x.split([7, x.shape[0] - 7])[0], [aten.split_with_sizes.default]),
        ("unbind", lambda x: -x.unbind(1)[6], [aten.unbind.int]),
    ]:
        add(name, run, covers)
    for name, run, covers in [
        ("index", lambda x: x[_index(x.shape[0])], [aten.index.Tensor]),
        ("gather", lambda x: x.gather(1, _index(x.shape[1])[None, :].expand(x.shape[0], -1)), [aten.gather.default]),
        ("index_select", lambda x: x.index_select(1, _index(x.shape[1])), [aten.index_select.default]),
        ("clone", lambda x: x.clone(), [aten.clone.default]),
        ("rev", lambda x: prims.rev(x, [1]), [prims.rev.default]),
        ("flip", lambda x: x.flip(0), [aten.flip.default]),
        ("roll", lambda x: x.roll(3, 1), [aten.roll.default]),
        ("repeat", lambda x: x[:9].repeat(2, 1), [aten.repeat.default]),
        ("cat", lambda x, y: torch.cat([x, y], 1), [aten.cat.default]),
        ("pad", lambda x: functional.pad(x, (1, 2)), [aten.constant_pad_nd.default]),
        ("masked_fill", lambda x: x.masked_fill(_every_third(x), complex(inf, -0.0)),
         [aten.masked_fill.Scalar]),
        ("masked_fill tensor", lambda x, y: x.masked_fill(_every_third(x), y[7, 9]),
         [aten.masked_fill.Tensor]),
        ("scatter value", lambda x: x.scatter(1, _index(x.shape[1])[None, :9].expand(x.shape[0], -1), 2.0),
         [aten.scatter.value]),
        ("scatter", lambda x, y: x.scatter(1, _index(x.shape[1])[None, :9].expand(x.shape[0], -1), y), [aten.scatter.src]),
        ("index_put", lambda x, y: x.index_put((_index(x.shape[0])[:9],), y[:9]), [aten.index_put.default]),
        ("copy", lambda x, y: aten.copy(x, y), [aten.copy.default]),
        ("slice_scatter", lambda x, y: torch.slice_scatter(x, y[:, :10], 1, 0, 10), [aten.slice_scatter.default]),
        ("select_scatter", lambda x, y: torch.select_scatter(x, y[0], 0, 3), [aten.select_scatter.default]),
        ("diagonal_scatter", lambda x, y: torch.diagonal_scatter(x, y.diagonal()), [aten.diagonal_scatter.default]),
    ]:
        add(name, run, covers)

    # reductions: float32 sums in another order than eager's
    for name, run, covers in [
        ("sum", lambda y: y.sum(), [aten.sum.default]),
        ("sum dim", lambda y: y.sum(0), [aten.sum.dim_IntList]),
        ("mean", lambda y: y.mean(), [aten.mean.default]),
        ("mean dim", lambda x: x.mean(1), [aten.mean.dim]),
        ("cumsum", lambda y: y.cumsum(0), [aten.cumsum.default]),
        ("var", lambda y: y.var(0), [aten.var.correction]),
        ("std", lambda x: x.std(1), [aten.std.correction]),
        ("var_mean", lambda y: torch.var_mean(y, 0), [aten.var_mean.correction]),
        ("std_mean", lambda x: torch.std_mean(x, 1), [aten.std_mean.correction]),
        ("vector_norm", lambda x: torch.linalg.vector_norm(x, dim=1), [aten.linalg_vector_norm.default]),
    ]:
        add(name, run, covers, exact=False, ulps=4)

    # matrix products and FFTs (custom ops; a bias is added in the fused epilogue)
    for name, run, covers in [
        ("mm", lambda x, y: x[:40, :16] @ y[:16, :40], [aten.mm.default]),
        ("bmm", lambda x, y: torch.bmm(x[:32, :8].reshape(4, 8, 8), y[:8, :32].reshape(8, 4, 8).transpose(0, 1)),
         [aten.bmm.default]),
        ("addmm", lambda x, y: torch.addmm(x[:8, :8], y[:8, :8], y[8:16, :8], alpha=2), [aten.addmm.default]),
        ("baddbmm", lambda x, y: torch.baddbmm(x[:8, :8].expand(2, 8, 8), y[:8, :8].expand(2, 8, 8),
                                               y[16:24, :8].expand(2, 8, 8), beta=0.5),
         [aten.baddbmm.default]),
        ("addbmm", lambda x, y: torch.addbmm(x[:8, :8], y[:16, :8].reshape(2, 8, 8), y[:8, :16].reshape(2, 8, 8)),
         [aten.addbmm.default]),
        ("fft", lambda x: torch.fft.fft(x[:, :16], dim=1), [aten._fft_c2c.default]),
        ("rfft", lambda r: torch.fft.rfft(r[:, :16], dim=1), [aten._fft_r2c.default]),
        ("irfft", lambda x: torch.fft.irfft(x[:, :9], dim=1), [aten._fft_c2r.default]),
    ]:
        add(name, run, covers, exact=False, ulps=4)
    return p


PROGRAMS = _programs()
