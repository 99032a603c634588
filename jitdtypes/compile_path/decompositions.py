"""The compile path's one table: ATen overload -> planar implementation, for Inductor's decomposition table.

AOTAutograd traces every graph Inductor compiles (forward and backward) through Inductor's decompositions.
Each entry here looks at its arguments: when a tensor is complex32/bcomplex32 (or complex64/complex128 opted in,
opt_in.py), or a complex value this trace already holds as parts (complex64 computed from complex32, say), it
computes on float32 (float64 for complex128) (re, im) parts
(`planar.py`, arithmetic in `jitdtypes/complex_math.py`) and returns the packed result. Otherwise it returns
NotImplemented and the op is traced exactly as without jitdtypes (installation chains each entry to the one
it replaces). Ops with no planar formula become jitdtypes custom ops (`custom_ops.py`); ops not listed keep
their ATen node, which Inductor runs eagerly with jitdtypes' kernels, on the packed input.
"""

from __future__ import annotations

import contextlib
import math
import threading

import torch
from torch.utils._pytree import tree_flatten

from .. import dtypes
from . import custom_ops, layout_ops, opt_in
from .. import complex_math as F
from . import planar

aten, prims = torch.ops.aten, torch.ops.prims
_NUMBERS = (bool, int, float, complex)

TABLE: dict = {}

# Ops without an Inductor lowering or an earlier decomposition: when an entry returns NotImplemented the op
# stays in the graph and Inductor must create a fallback for it. That is safe only because every one of
# them has a complex input or output, and Inductor sends nodes with complex tensors to fallback_handler
# directly (lowering.fallback_node_due_to_unsupported_type). install() refuses any other op without either.
ALWAYS_COMPLEX = frozenset({
    aten._conj.default, aten._conj_physical.default, aten.view_as_real.default, aten.complex.default,
    aten.polar.default, aten._fft_c2c.default, aten._fft_c2r.default,
})


def _register(*overloads):
    def register(decomposition):
        for overload in overloads:
            TABLE[overload] = decomposition
        return decomposition

    return register


def _result_dtype(*values) -> torch.dtype:
    """ATen's type promotion over tensors and Python numbers (wrapped numbers rank lowest)."""
    flat = tree_flatten(values)[0]
    tensors = [v for v in flat if isinstance(v, torch.Tensor)]
    return dtypes.result_dtype(tensors, [v for v in flat if isinstance(v, _NUMBERS)])


def _complex_input(x) -> bool:
    """x is a complex tensor the compile path handles (16-bit, or complex64 held as parts)."""
    return planar.involved(x) and x.is_complex()


def _arithmetic_involved(*operands) -> bool:
    """planar.involved, or real operands with a complex number or 0-dim complex tensor (x * 1j on float16, or
    on float32 with complex64 opted in): ATen's promotion makes the result a complex dtype compiled planar."""
    return planar.involved(*operands) or _result_dtype(*operands) in opt_in.complex_dtypes()


def _planar(formula, *operands, dtype: torch.dtype | None = None):
    """formula(*parts) -> (re, im), assembled in the promoted dtype (or `dtype`)."""
    dtype = dtype or _result_dtype(*operands)
    compute = planar.compute_dtype(dtype)
    re, im = formula(*(planar.parts(v, compute) for v in operands))
    return planar.assemble(re, im, dtype)


# -- elementwise: complex -> complex --------------------------------------------------------------------------


def _unary(overload, formula):
    def decomposition(x):
        if not _complex_input(x):
            return NotImplemented
        return _planar(formula, x)

    TABLE[overload] = decomposition


# -- views of values in storage ----------------------------------------------------------------------------------
#
# A view of a tensor whose value is in storage (a graph input, an ATen fallback's result) stays that ATen view,
# so a graph returning it runs no kernel and returns eager's strides, as for float16; its parts, views of the
# base's parts, are remembered for the decompositions that read it. Computed values (held as parts) have no
# storage to view: their views are taken of the parts.

_VIEWS = frozenset({
    aten.view.default, aten.permute.default, aten.expand.default, aten.unsqueeze.default, aten.squeeze.default,
    aten.squeeze.dim, aten.squeeze.dims, aten.slice.Tensor, aten.select.int, aten.alias.default, aten.t.default,
    aten.transpose.int, aten.diagonal.default, aten.unfold.default,
})
_keeping_view = threading.local()


def _kept_view(overload, args, kwargs, re, im):
    """overload(*args, **kwargs) traced as itself (its entry here declines while it runs), with parts re, im."""
    _keeping_view.active = True
    try:
        view = overload(*args, **kwargs)
    finally:
        _keeping_view.active = False
    planar.remember(view, re, im)
    return view


def _keeping() -> bool:
    return getattr(_keeping_view, "active", False)


@_register(aten._conj.default)
def _conj_view(x):
    # On a conj-flagged tensor _conj clears the flag: that view is how parts() reads such a tensor's storage,
    # so it stays an ATen op (decomposing it would ask parts() for the same tensor again).
    if _keeping() or not _complex_input(x) or x.is_conj():
        return NotImplemented
    re, im = F.conj(planar.parts(x, planar.compute_dtype(x.dtype)))
    if not planar.is_computed(x):
        return _kept_view(aten._conj.default, (x,), {}, re, im)
    return planar.assemble(re, im, x.dtype)


for _overload, _formula in [
    (aten.neg.default, F.neg), (aten.conj_physical.default, F.conj),
    (aten._conj_physical.default, F.conj), (aten.reciprocal.default, F.reciprocal), (aten.exp.default, F.exp),
    (aten.exp2.default, F.exp2), (aten.expm1.default, F.expm1), (aten.log.default, F.log),
    (aten.log2.default, F.log2), (aten.log10.default, F.log10), (aten.log1p.default, F.log1p),
    (aten.sqrt.default, F.sqrt), (aten.rsqrt.default, F.rsqrt), (aten.sin.default, F.sin),
    (aten.cos.default, F.cos), (aten.tan.default, F.tan), (aten.sinh.default, F.sinh), (aten.cosh.default, F.cosh),
    (aten.tanh.default, F.tanh), (aten.sigmoid.default, F.sigmoid), (aten.sgn.default, F.sgn),
    (aten.asin.default, F.asin), (aten.acos.default, F.acos), (aten.atan.default, F.atan),
    (aten.asinh.default, F.asinh), (aten.acosh.default, F.acosh), (aten.atanh.default, F.atanh),
]:
    _unary(_overload, _formula)


@_register(aten.add.Tensor, aten.add.Scalar)
def _add(x, y, alpha=1):
    if not _arithmetic_involved(x, y):
        return NotImplemented
    return _planar(lambda a, b: F.add(a, b, alpha), x, y)


@_register(aten.sub.Tensor, aten.sub.Scalar)
def _sub(x, y, alpha=1):
    if not _arithmetic_involved(x, y):
        return NotImplemented
    return _planar(lambda a, b: F.add(a, b, -alpha), x, y)


@_register(aten.mul.Tensor, aten.mul.Scalar)
def _mul(x, y):
    if not _arithmetic_involved(x, y):
        return NotImplemented
    return _planar(F.mul, x, y)


@_register(aten.div.Tensor, aten.div.Scalar)
def _div(x, y):
    if not _arithmetic_involved(x, y):
        return NotImplemented
    return _planar(F.div, x, y)


@_register(aten.pow.Tensor_Scalar)
def _pow_scalar(x, exponent):
    if not _complex_input(x):
        return NotImplemented
    return _planar(lambda a: F.pow_scalar(a, exponent), x, dtype=_result_dtype(x, exponent))


@_register(aten.pow.Tensor_Tensor, aten.pow.Scalar)
def _pow(x, exponent):
    if not _arithmetic_involved(x, exponent):
        return NotImplemented

    def formula(base, w):
        re, im = base  # a Python number or real tensor as the base needs tensor parts for log()
        re = re if isinstance(re, torch.Tensor) else torch.full_like(w[0], re)
        im = torch.zeros_like(re) if im is None else im if isinstance(im, torch.Tensor) else torch.full_like(re, im)
        return F.power((re, im), w)

    return _planar(formula, x, exponent)


@_register(aten.addcmul.default)
def _addcmul(x, t1, t2, value=1):
    if not _arithmetic_involved(x, t1, t2):
        return NotImplemented
    return _planar(lambda a, b, c: F.add(a, F.mul(b, c), value), x, t1, t2)


@_register(aten.addcdiv.default)
def _addcdiv(x, t1, t2, value=1):
    if not _arithmetic_involved(x, t1, t2):
        return NotImplemented
    return _planar(lambda a, b, c: F.add(a, F.div(b, c), value), x, t1, t2)


@_register(aten.lerp.Scalar, aten.lerp.Tensor)
def _lerp(start, end, weight):
    """ATen's two-sided lerp: start + w (end - start) for |w| < 1/2, end - (1 - w)(end - start) beyond."""
    if not _arithmetic_involved(start, end, weight):
        return NotImplemented

    def formula(s, e, w):
        step = F.add(e, s, -1)
        low = F.add(s, F.mul(w, step))
        high = F.add(e, F.mul(F.add((1.0, None), w, -1), step), -1)
        w_re, w_im = w
        small = (w_re * w_re + (0.0 if w_im is None else w_im * w_im)) < 0.25
        if not isinstance(small, torch.Tensor):
            return low if small else high
        return torch.where(small, low[0], high[0]), torch.where(small, low[1], high[1])

    return _planar(formula, start, end, weight)


@_register(aten.where.self)
def _where(condition, x, y):
    if not _arithmetic_involved(x, y):
        return NotImplemented

    def formula(a, b):
        re = torch.where(condition, a[0], b[0])
        return re, torch.where(condition, F.imag_or_zero(a[1]), F.imag_or_zero(b[1]))

    return _planar(formula, x, y, dtype=_result_dtype(x, y))


# -- elementwise: complex -> real -----------------------------------------------------------------------------


def _real_valued(overload, formula, of_complex32=None):
    """`of_complex32`: the formula for complex32 inputs, whose parts are float16 numbers."""
    def decomposition(x):
        if not _complex_input(x):
            return NotImplemented
        chosen = of_complex32 if of_complex32 is not None and x.dtype == torch.complex32 else formula
        return chosen(planar.parts(x, planar.compute_dtype(x.dtype))).to(dtypes.part_dtype(x.dtype))

    TABLE[overload] = decomposition


_real_valued(aten.abs.default, F.magnitude, F.magnitude_of_half_parts)
_real_valued(aten.angle.default, F.angle)


def _predicate(overload, formula):
    def decomposition(*args):
        if not planar.involved(*args):
            return NotImplemented
        return formula(*(planar.parts(a, planar.compute_dtype(_result_dtype(*args))) for a in args))

    TABLE[overload] = decomposition


_predicate(aten.isnan.default, lambda x: torch.isnan(x[0]) | torch.isnan(x[1]))
_predicate(aten.isinf.default, lambda x: F.is_inf(x[0]) | F.is_inf(x[1]))
_predicate(aten.isfinite.default, lambda x: F.is_finite(x[0]) & F.is_finite(x[1]))
for _overload in (aten.eq.Tensor, aten.eq.Scalar):
    _predicate(_overload, lambda x, y: (x[0] == y[0]) & (F.imag_or_zero(x[1]) == F.imag_or_zero(y[1])))
for _overload in (aten.ne.Tensor, aten.ne.Scalar):
    _predicate(_overload, lambda x, y: (x[0] != y[0]) | (F.imag_or_zero(x[1]) != F.imag_or_zero(y[1])))


@_register(aten.view_as_real.default)
def _view_as_real(x):
    # a value in storage (an input, a view of one) already is the [..., 2] layout: only values computed in
    # this graph are stacked
    if not planar.is_computed(x):
        return NotImplemented
    re, im = planar.parts(x, planar.compute_dtype(x.dtype))
    return torch.stack([re, im], -1).to(dtypes.part_dtype(x.dtype))


# -- conversions and constructors -------------------------------------------------------------------------------


@_register(prims.convert_element_type.default)
def _convert_element_type(x, dtype):
    if x.is_complex() and (planar.involved(x) or dtype in opt_in.complex_dtypes()):
        if dtype.is_complex:
            return _planar(lambda a: a, x, dtype=dtype)
        re, im = planar.parts(x, planar.compute_dtype(x.dtype))
        return F.nonzero((re, im)) if dtype == torch.bool else re.to(dtype)  # ATen keeps the real part
    if dtype in opt_in.complex_dtypes():
        return _planar(lambda a: a, x, dtype=dtype)
    return NotImplemented


def _complex_of_real(*parts) -> torch.dtype | None:
    promoted = _result_dtype(*parts)
    return dtypes.complex_of(promoted) if promoted in opt_in.real_dtypes() else None


@_register(aten.complex.default)
def _complex(re, im):
    dtype = _complex_of_real(re, im)
    if dtype is None:
        return NotImplemented
    compute = planar.compute_dtype(dtype)
    return planar.assemble(re.to(compute), im.to(compute), dtype)


@_register(aten.polar.default)
def _polar(magnitude, angle):
    dtype = _complex_of_real(magnitude, angle)
    if dtype is None:
        return NotImplemented
    compute = planar.compute_dtype(dtype)
    magnitude, angle = magnitude.to(compute), angle.to(compute)
    return planar.assemble(magnitude * torch.cos(angle), magnitude * torch.sin(angle), dtype)


@_register(aten.view_as_complex.default)
def _view_as_complex(x):
    if _keeping() or x.dtype not in opt_in.real_dtypes():
        return NotImplemented
    compute = planar.compute_dtype(x.dtype)
    return _kept_view(aten.view_as_complex.default, (x,), {}, x[..., 0].to(compute), x[..., 1].to(compute))


@_register(aten.full.default)
def _full(size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    if dtype not in opt_in.complex_dtypes():
        return NotImplemented
    re, im = (fill_value.real, fill_value.imag) if isinstance(fill_value, complex) else (fill_value, 0.0)
    # the parts are the fill rounded to the part dtype, as eager's tensor holds them (full(70000) is inf in
    # complex32)
    part, compute = dtypes.part_dtype(dtype), planar.compute_dtype(dtype)
    make = lambda value: torch.full(size, value, dtype=compute, device=device).to(part).to(compute)  # noqa: E731
    return planar.assemble(make(re), make(im), dtype)


@_register(aten.scalar_tensor.default)
def _scalar_tensor(value, *, dtype=None, layout=None, device=None, pin_memory=None):
    if dtype not in opt_in.complex_dtypes():
        return NotImplemented
    return _full([], value, dtype=dtype, device=device)


# -- moving elements: the same op on each part -------------------------------------------------------------------


def _split_value(value, compute):
    """A value in a complex position as two real ones (re, im); real tensors get a zero imaginary part."""
    if isinstance(value, (list, tuple)):
        pairs = [_split_value(v, compute) for v in value]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    if isinstance(value, torch.Tensor) or isinstance(value, _NUMBERS):
        re, im = planar.parts(value, compute)
        if im is None:
            im = torch.zeros_like(re) if isinstance(re, torch.Tensor) else 0.0
        return re, im
    return value, value


def _per_part(overload, complex_positions=(0,), dtype_from=(0,), outputs_many=False, apply=None):
    """Register `overload` as `apply` (by default the overload itself) applied to the real parts and to the
    imaginary parts of the arguments at `complex_positions` (tensors, tensor lists or numbers); the result
    dtype promotes the arguments at `dtype_from` (the self argument for copies and scatters, whose results
    take self's dtype)."""
    apply = apply or overload
    view = overload in _VIEWS

    def decomposition(*args, **kwargs):
        if (view and _keeping()) or not planar.involved(*(args[i] for i in complex_positions if i < len(args))):
            return NotImplemented
        dtype = _result_dtype(*(args[i] for i in dtype_from if i < len(args)))
        if not dtype.is_complex:
            return NotImplemented
        compute = planar.compute_dtype(dtype)
        re_args, im_args = list(args), list(args)
        for i in complex_positions:
            if i < len(args):
                re_args[i], im_args[i] = _split_value(args[i], compute)
        re, im = apply(*re_args, **kwargs), apply(*im_args, **kwargs)
        if view and not planar.is_computed(args[0]):
            return _kept_view(overload, args, kwargs, re, im)
        if outputs_many:
            return [planar.assemble(r, i, dtype) for r, i in zip(re, im)]
        return planar.assemble(re, im, dtype)

    TABLE[overload] = decomposition


# Parts are computed values whose strides need not allow a view of the complex tensor's shape: reshape.
_per_part(aten.view.default, apply=torch.reshape)
_per_part(aten._unsafe_view.default, apply=torch.reshape)
for _overload in (
    aten.permute.default, aten.expand.default,
    aten.unsqueeze.default, aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.slice.Tensor,
    aten.select.int, aten.index.Tensor, aten.gather.default, aten.index_select.default, aten.clone.default,
    aten.alias.default, aten.t.default, aten.transpose.int, aten.diagonal.default, prims.rev.default,
    aten.flip.default, aten.roll.default, aten.repeat.default, aten.unfold.default,
):
    _per_part(_overload)
_per_part(aten.cat.default)
for _overload in (aten.split.Tensor, aten.split_with_sizes.default, aten.unbind.int):
    _per_part(_overload, outputs_many=True)
_per_part(aten.constant_pad_nd.default, complex_positions=(0, 2))
_per_part(aten.masked_fill.Scalar, complex_positions=(0, 2))
_per_part(aten.masked_fill.Tensor, complex_positions=(0, 2))
_per_part(aten.scatter.value, complex_positions=(0, 3))
_per_part(aten.scatter.src, complex_positions=(0, 3))
_per_part(aten.index_put.default, complex_positions=(0, 2))
_per_part(aten.copy.default, complex_positions=(0, 1))
for _overload in (aten.slice_scatter.default, aten.select_scatter.default, aten.diagonal_scatter.default):
    _per_part(_overload, complex_positions=(0, 1))


# -- reductions --------------------------------------------------------------------------------------------------
#
# Both parts are reduced as one tensor stacked along a new leading dimension. Reducing them separately makes
# Inductor keep every intermediate shared by the two reductions in memory (the C++ backend realized six
# float32 and two bool buffers for an exp/div chain, many times slower than stacked: docs/COMPILE.md).
# A graph of one reduction over its input is the other way round (the generated CPU kernels, cpu_kernels):
# stacked, the C++ backend writes the decoded (2, n) float32 parts to a buffer and reduces that; apart, each
# reduction decodes the words it reads, and a full sum runs many times faster apart.

_parts_apart = [False]


@contextlib.contextmanager
def parts_reduced_apart():
    """Reduce the two parts separately while tracing (for graphs whose reductions read their inputs)."""
    _parts_apart.append(True)
    try:
        yield
    finally:
        _parts_apart.pop()


def _stacked(x, compute):
    re, im = planar.parts(x, compute)
    return torch.stack([re, im])


def _shifted_dims(x, dim) -> list[int]:
    """`dim` of x (None or [] = all) as dimensions of the stacked parts."""
    if isinstance(dim, int):
        dim = [dim]
    dims = range(x.dim()) if dim is None or len(dim) == 0 else dim
    return [d % x.dim() + 1 for d in dims]


def _reduce_parts(x, reduce, dim, compute):
    """reduce(parts, dims) over `dim` of x for both parts at once: (re, im) of the result."""
    if x.dim() == 0:  # nothing to stack along: an empty dim list would mean "all" to the stacked tensor
        re, im = planar.parts(x, compute)
        return reduce(re, None), reduce(im, None)
    if _parts_apart[-1] or layout_ops.holds_planes(x.dtype, x.device):
        re, im = planar.parts(x, compute)
        dims = [d - 1 for d in _shifted_dims(x, dim)]
        return reduce(re, dims), reduce(im, dims)
    out = reduce(_stacked(x, compute), _shifted_dims(x, dim))
    return out[0], out[1]


def _sum_or_mean(reduce):
    def decomposition(x, dim=None, keepdim=False, *, dtype=None):
        if not _complex_input(x):
            return NotImplemented
        result = dtype or x.dtype
        re, im = _reduce_parts(x, lambda t, dims: reduce(t, dims, keepdim), dim, planar.compute_dtype(result))
        return planar.assemble(re, im, result)

    return decomposition


TABLE[aten.sum.default] = TABLE[aten.sum.dim_IntList] = _sum_or_mean(torch.sum)
TABLE[aten.mean.default] = TABLE[aten.mean.dim] = _sum_or_mean(torch.mean)


@_register(aten.cumsum.default)
def _cumsum(x, dim, *, dtype=None):
    if not _complex_input(x):
        return NotImplemented
    result = dtype or x.dtype
    if x.dim() == 0:
        return _planar(lambda a: a, x, dtype=result)
    out = _stacked(x, planar.compute_dtype(result)).cumsum(dim % x.dim() + 1)
    return planar.assemble(out[0], out[1], result)


def _variance(x, dim, correction, keepdim):
    """The variance of complex values: the variances of both parts added."""
    var = lambda t, dims: _two_pass_variance(t, dims, 1 if correction is None else correction, keepdim)  # noqa: E731
    re, im = _reduce_parts(x, var, dim, planar.compute_dtype(x.dtype))
    return re + im


def _two_pass_variance(t, dims, correction, keepdim):
    """torch.var as a mean and a sum of squared deviations: two plain sums for Inductor, where torch.var is one
    Welford reduction, whose vector code is slower (most over short rows)."""
    mean = t.mean(dims, keepdim=True)
    deviation = t - mean
    count = math.prod(t.shape[d] for d in (range(t.dim()) if dims is None else dims))
    return (deviation * deviation).sum(dims, keepdim=keepdim) / torch.sym_max(count - correction, 0)


def _spread(root: bool, with_mean: bool):
    def decomposition(x, dim=None, *, correction=None, keepdim=False):
        if not _complex_input(x):
            return NotImplemented
        spread = _variance(x, dim, correction, keepdim)
        spread = (torch.sqrt(spread) if root else spread).to(dtypes.part_dtype(x.dtype))
        if not with_mean:
            return spread
        return spread, _sum_or_mean(torch.mean)(x, dim, keepdim)

    return decomposition


TABLE[aten.var.correction] = _spread(root=False, with_mean=False)
TABLE[aten.std.correction] = _spread(root=True, with_mean=False)
TABLE[aten.var_mean.correction] = _spread(root=False, with_mean=True)
TABLE[aten.std_mean.correction] = _spread(root=True, with_mean=True)


@_register(aten.linalg_vector_norm.default)
def _vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    if not _complex_input(x):
        return NotImplemented
    result = dtypes.part_dtype(dtype or x.dtype)
    magnitude = F.magnitude(planar.parts(x, planar.compute_dtype(result)))
    return torch.linalg.vector_norm(magnitude, ord, dim, keepdim).to(result)


# -- matrix products and FFTs: jitdtypes custom ops ------------------------------------------------------------


def _sixteen_bit(*tensors) -> bool:
    return any(isinstance(t, torch.Tensor) and t.dtype in planar.SIXTEEN_BIT_COMPLEX for t in tensors)


@_register(aten.mm.default, aten.bmm.default)
def _matmul(a, b):
    if not _sixteen_bit(a, b):
        return NotImplemented
    return custom_ops.complex_matmul(a, b)


def _scaled_sum(bias, product, beta, alpha, dtype):
    """beta * bias + alpha * product, with bias ignored when beta == 0 (ATen's rule: NaN in it is dropped)."""
    if beta == 0:
        return _planar(lambda p: F.mul(p, planar.parts(alpha)), product, dtype=dtype)
    return _planar(lambda s, p: F.add(F.mul(s, planar.parts(beta)), F.mul(p, planar.parts(alpha))), bias, product,
                   dtype=dtype)


def _inner_product(a, b, conjugate: bool):
    """dot/vdot of a 16-bit complex vector with one of another complex dtype, which eager jitdtypes promotes
    (where PyTorch asks for one dtype): the products' sum on parts, in the promoted dtype. Vectors of one dtype
    keep the decomposition this entry replaced."""
    if not _sixteen_bit(a, b) or a.dtype == b.dtype:
        return NotImplemented

    def formula(x, y):
        re, im = F.mul(F.conj(x) if conjugate else x, y)
        return re.sum(), im.sum()

    return _planar(formula, a, b, dtype=_result_dtype(a, b))


@_register(aten.dot.default)
def _dot(a, b):
    return _inner_product(a, b, conjugate=False)


@_register(aten.vdot.default)
def _vdot(a, b):
    return _inner_product(a, b, conjugate=True)


@_register(aten.addmm.default, aten.baddbmm.default)
def _add_matmul(bias, a, b, *, beta=1, alpha=1):
    if not _sixteen_bit(a, b):
        return NotImplemented
    return _scaled_sum(bias, custom_ops.complex_matmul(a, b), beta, alpha, _result_dtype(bias, a, b))


@_register(aten.addbmm.default)
def _add_batch_sum(bias, a, b, *, beta=1, alpha=1):
    if not _sixteen_bit(a, b):
        return NotImplemented
    product = custom_ops.complex_matmul(a, b)
    summed = _planar(lambda p: (p[0].sum(0), p[1].sum(0)), product)
    # ATen's addbmm accumulates each product into a result of bias's dtype (addmm_ per batch)
    return _scaled_sum(bias, summed, beta, alpha, bias.dtype)


@_register(aten._fft_r2c.default)
def _fft_r2c(x, dim, normalization, onesided):
    if x.dtype not in planar.SIXTEEN_BIT_REAL:
        return NotImplemented
    return custom_ops.fft_r2c(x, dim, normalization, onesided)


@_register(aten._fft_c2c.default)
def _fft_c2c(x, dim, normalization, forward):
    if not _sixteen_bit(x):
        return NotImplemented
    return custom_ops.fft_c2c(x, dim, normalization, forward)


@_register(aten._fft_c2r.default)
def _fft_c2r(x, dim, normalization, last_dim_size):
    if not _sixteen_bit(x):
        return NotImplemented
    return custom_ops.fft_c2r(x, dim, normalization, last_dim_size)
