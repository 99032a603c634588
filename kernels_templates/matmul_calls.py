"""From ATen calls to the matmul family's kernels (matmul.py): mm, bmm, addmm, baddbmm, mv, addmv, dot, vdot and
their out= and in-place forms become alpha * op(a) @ op(b) + beta * bias over [batch, rows, cols] views, or
NotImplemented when a call is not exactly covered (the upcast path then lets ATen decide what it means)."""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch

from jitdtypes.schema import resize_output

from . import common, launcher


class _Form:
    """How one overload's operands map onto the kernel's [batch, rows, cols] matrices."""

    def __init__(self, a_dims: int, b_dims: int, lift_a: tuple, lift_b: tuple, result_dims: tuple[int, ...]):
        self.a_dims, self.b_dims = a_dims, b_dims
        self.lift_a, self.lift_b = lift_a, lift_b  # indexing that views an operand as 3-D
        self.result_dims = result_dims  # which of (batch, m, n) the result keeps
        self.lift_result = tuple(slice(None) if d in result_dims else None for d in range(3))


_ROW = (None, None, slice(None))  # a vector as a [1, 1, K] left operand
_COLUMN = (None, slice(None), None)  # a vector as a [1, K, 1] right operand, or an [M] result as [1, M, 1]
_FORMS = {
    "mm": _Form(2, 2, (None,), (None,), (1, 2)),
    "bmm": _Form(3, 3, (), (), (0, 1, 2)),
    "mv": _Form(2, 1, (None,), _COLUMN, (1,)),
    "dot": _Form(1, 1, _ROW, _COLUMN, ()),
}


def _raw(t: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """The data view without the lazy conj bit, and whether the bit was set (it becomes a kernel flag)."""
    return (t.conj(), True) if t.is_conj() else (t, False)


def _same_view(x: torch.Tensor, y: torch.Tensor) -> bool:
    return x.data_ptr() == y.data_ptr() and x.shape == y.shape and x.stride() == y.stride()


class _Described(NamedTuple):
    """What a product call's operand values make of it: the raw operands (no conj bit) lifted to [batch, rows,
    cols], the result's shape, the addend (bias expanded to that shape, or None), alpha and beta as complex
    numbers, and the kernel's params."""

    raw_a: torch.Tensor
    raw_b: torch.Tensor
    a3: torch.Tensor
    b3: torch.Tensor
    shape: tuple
    addend: torch.Tensor | None
    alpha: complex
    beta: complex
    params: dict


def _described(form: _Form, a, b, bias, beta, alpha, out, conj_a: bool) -> _Described | None:
    """None when the call is not exactly covered, so that ATen (through the upcast path) decides what it means."""
    if not isinstance(a, torch.Tensor) or common.dtype_name(a) is None:
        return None
    others = [t for t in (bias, out) if t is not None]
    for t in [a, b, *others]:
        if not isinstance(t, torch.Tensor) or t.dtype != a.dtype or t.device != a.device or t.is_neg():
            return None
    if any(t.is_conj() for t in others) or a.dim() != form.a_dims or b.dim() != form.b_dims:
        return None
    try:
        alpha, beta = complex(alpha), complex(beta)
    except TypeError:
        return None
    (raw_a, a_conj), (raw_b, b_conj) = _raw(a), _raw(b)
    a3, b3 = raw_a[form.lift_a], raw_b[form.lift_b]
    batch, m, k = a3.shape
    if b3.shape[0] != batch or b3.shape[1] != k:
        return None
    shape = tuple((batch, m, b3.shape[2])[d] for d in form.result_dims)
    addend = None
    if bias is not None:
        try:
            if common.broadcast_shape(bias.shape, shape) != shape:
                return None
        except RuntimeError:
            return None
        addend = bias.expand(shape)
    params = {"op": "matmul", "dtype": common.dtype_name(a), "conj_a": a_conj != conj_a, "conj_b": b_conj}
    return _Described(raw_a, raw_b, a3, b3, shape, addend, alpha, beta, params)


def _complex_product(load, form: _Form, a, b, *, bias=None, beta=0, alpha=1, out=None, in_place=False,
                     conj_a=False):
    """alpha * a @ b + beta * bias into out (or into bias itself when in_place, or a new tensor); NotImplemented
    when the call is not exactly covered, so that ATen (through the upcast path) decides what it means."""
    call = _described(form, a, b, bias, beta, alpha, out, conj_a)
    if call is None or (in_place and bias.shape != call.shape):
        return NotImplemented
    result_shape, addend = call.shape, call.addend
    target = bias if in_place else out
    if target is None:
        written = target = torch.empty(result_shape, dtype=a.dtype, device=a.device)
    else:
        if any(size > 1 and stride == 0 for size, stride in zip(target.shape, target.stride())):
            return NotImplemented  # several result elements would land on one memory location
        resize_output(target, result_shape)
        written = target
        read = [call.raw_a, call.raw_b] + ([addend] if addend is not None and not _same_view(addend, target) else [])
        if any(common.shares_memory(target, t) for t in read):
            # Tiles written early would change operands other tiles still read: compute aside, then copy.
            written = torch.empty(result_shape, dtype=a.dtype, device=a.device)
    if addend is not None and _same_view(addend, written):
        addend = None  # the kernel reads the addend from out itself, which is safe tile by tile

    run = load(call.params, tuple(call.params.values()))
    run(call.a3, call.b3, written[form.lift_result], None if addend is None else addend[form.lift_result],
        call.alpha.real, call.alpha.imag, call.beta.real, call.beta.imag)
    if written is not target:
        target.copy_(written)
    return target


class Product:
    """The adapter of one overload. Its plan (kernels_templates/common.py) keeps, per signature of values (the
    operands' shapes, strides and devices, alpha and beta), what the call computes; thin products (matrix-vector
    shapes, small matrices: where host time shows) then launch the module's kernel themselves. In-place calls,
    and calls the plan does not launch, go through _complex_product, which checks everything per call."""

    def __init__(self, form_name: str, *, with_bias=False, out=False, in_place=False, conj_a=False) -> None:
        self.form, self.with_bias, self.out, self.in_place, self.conj_a = (_FORMS[form_name], with_bias, out,
                                                                           in_place, conj_a)

    def operands(self, args, kwargs):
        """(a, b, bias, beta, alpha), bias None, beta 0 and alpha 1 where the overload has none."""
        if self.with_bias:
            return args[1], args[2], args[0], kwargs.get("beta", 1), kwargs.get("alpha", 1)
        return args[0], args[1], None, 0, 1

    def __call__(self, load, args, kwargs, device_type):
        a, b, bias, beta, alpha = self.operands(args, kwargs)
        return _complex_product(load, self.form, a, b, bias=bias, beta=beta, alpha=alpha,
                                out=kwargs.get("out") if self.out else None, in_place=self.in_place,
                                conj_a=self.conj_a)

    def plan(self, load, args, kwargs, device_type):
        a, b, bias, _, _ = self.operands(args, kwargs)
        if not all(isinstance(t, torch.Tensor) for t in (a, b, a if bias is None else bias)):
            return functools.partial(self, load, device_type=device_type)
        return _ProductPlan(self, load)


class _Thin(NamedTuple):
    """A thin product for one signature of values: the result's shape, the module's prepared launch, the kernel's
    scalars, whether a and b carry a conj bit to drop (the kernel conjugates), whether bias is read, and which of
    (a, b, bias) a fresh result can be allocated like (contiguous, of its shape), or None."""

    shape: tuple
    launch: object
    scalars: tuple
    conj_a: bool
    conj_b: bool
    reads_bias: bool
    like: int | None


class _ProductPlan:
    """A product's calls of one kind. The tensor an out= or in-place call writes (ATen's mv writes a fresh one with
    addmv_) must have the result's shape and share no memory with a or b for the plan to launch into it."""

    def __init__(self, product: Product, load) -> None:
        self.product, self.load = product, load
        self.memo = common.Memo()

    def __call__(self, args, kwargs):
        product = self.product
        a, b, bias, beta, alpha = product.operands(args, kwargs)
        out = kwargs.get("out") if product.out else None
        if bias is None:
            key = (a.shape, a.stride(), a.device, b.shape, b.stride(), b.device, beta, alpha)
        else:
            key = (a.shape, a.stride(), a.device, b.shape, b.stride(), b.device, beta, alpha, bias.shape,
                   bias.stride(), bias.device)
        if out is not None:
            key += (out.shape, out.stride(), out.device)
        thin = self.memo.get(key)
        if thin is None:
            thin = self.memo.keep(key, self._prepare(a, b, bias, beta, alpha, out))
        written = bias if product.in_place else out
        if (thin is common.DECLINED or not launcher.on_current_device(a)
                or (written is not None and (common.shares_memory(written, a) or common.shares_memory(written, b)))):
            return _complex_product(self.load, product.form, a, b, bias=bias, beta=beta, alpha=alpha, out=out,
                                    in_place=product.in_place, conj_a=product.conj_a)
        if written is None:
            # empty_like a contiguous operand of the result's shape: no shape to parse
            written = (torch.empty(thin.shape, dtype=a.dtype, device=a.device) if thin.like is None
                       else torch.empty_like((a, b, bias)[thin.like]))
        if written.numel():
            thin.launch(a.conj() if thin.conj_a else a, b.conj() if thin.conj_b else b, written,
                        bias if thin.reads_bias else None, thin.scalars)
        return written

    def _prepare(self, a, b, bias, beta, alpha, out) -> _Thin | None:
        """The thin product these values make, or None: not thin, not launched directly (interpreted kernels run
        one at a time through `run`), or not covered (_complex_product decides per call then)."""
        form = self.product.form
        call = _described(form, a, b, bias, beta, alpha, out, self.product.conj_a)
        if call is None:
            return None
        shape, reads_bias = call.shape, bias is not None and call.beta != 0
        written = bias if self.product.in_place else out
        if written is not None and (written.shape != shape or (reads_bias and written is out)
                                    or any(n > 1 and st == 0 for n, st in zip(written.shape, written.stride()))):
            return None  # resized, an addend it may overlap, or elements written twice: _complex_product's care
        module = getattr(self.load(call.params, tuple(call.params.values())), "module", None)
        if module is None or not launcher.launcher(module.complex_matmul_kernel).direct:
            return None
        if min(call.a3.shape[1], call.b3.shape[2]) > module.THIN:
            return None
        out3 = (torch.empty(shape, dtype=a.dtype, device=a.device) if written is None else written)[form.lift_result]
        c3 = call.addend[form.lift_result] if reads_bias else None
        scalars = (call.alpha.real, call.alpha.imag, call.beta.real, call.beta.imag)
        launch = module.prepared_thin(module.thin_key(call.a3, call.b3, out3, c3, scalars))
        like = next((i for i, t in enumerate((a, b, bias)) if t is not None and t.shape == shape and t.is_contiguous()),
                    None)
        return _Thin(shape, launch, scalars, a.is_conj(), b.is_conj(), reads_bias, like)
