"""From ATen calls to the matmul family's kernels (matmul.py): mm, bmm, addmm, baddbmm, mv, addmv, dot, vdot and
their out= and in-place forms become alpha * op(a) @ op(b) + beta * bias over [batch, rows, cols] views, or
NotImplemented when a call is not exactly covered (the upcast path then lets ATen decide what it means)."""

from __future__ import annotations

import torch

from . import common


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


def _complex_product(load, form: _Form, a, b, *, bias=None, beta=0, alpha=1, out=None, in_place=False,
                     conj_a=False):
    """alpha * a @ b + beta * bias into out (or into bias itself when in_place, or a new tensor); NotImplemented
    when the call is not exactly covered, so that ATen (through the upcast path) decides what it means."""
    if not isinstance(a, torch.Tensor) or common.dtype_name(a) is None:
        return NotImplemented
    others = [t for t in (bias, out) if t is not None]
    for t in [a, b, *others]:
        if not isinstance(t, torch.Tensor) or t.dtype != a.dtype or t.device != a.device or t.is_neg():
            return NotImplemented
    if any(t.is_conj() for t in others) or a.dim() != form.a_dims or b.dim() != form.b_dims:
        return NotImplemented
    try:
        alpha, beta = complex(alpha), complex(beta)
    except TypeError:
        return NotImplemented

    raw_a, a_conj = _raw(a)
    raw_b, b_conj = _raw(b)
    a3, b3 = raw_a[form.lift_a], raw_b[form.lift_b]
    batch, m, k = a3.shape
    if b3.shape[0] != batch or b3.shape[1] != k:
        return NotImplemented
    result_shape = tuple((batch, m, b3.shape[2])[d] for d in form.result_dims)
    addend = None
    if bias is not None:
        if in_place and bias.shape != result_shape:
            return NotImplemented
        try:
            if common.broadcast_shape(bias.shape, result_shape) != result_shape:
                return NotImplemented
        except RuntimeError:
            return NotImplemented
        addend = bias.expand(result_shape)

    target = bias if in_place else out
    if target is None:
        written = target = torch.empty(result_shape, dtype=a.dtype, device=a.device)
    else:
        if any(size > 1 and stride == 0 for size, stride in zip(target.shape, target.stride())):
            return NotImplemented  # several result elements would land on one memory location
        common.resize_output(target, result_shape)
        written = target
        read = [raw_a, raw_b] + ([addend] if addend is not None and not _same_view(addend, target) else [])
        if any(common.shares_memory(target, t) for t in read):
            # Tiles written early would change operands other tiles still read: compute aside, then copy.
            written = torch.empty(result_shape, dtype=a.dtype, device=a.device)
    if addend is not None and _same_view(addend, written):
        addend = None  # the kernel reads the addend from out itself, which is safe tile by tile

    params = {"op": "matmul", "dtype": common.dtype_name(a), "conj_a": a_conj != conj_a, "conj_b": b_conj}
    run = load(params, tuple(params.values()))
    run(a3, b3, written[form.lift_result], None if addend is None else addend[form.lift_result],
        alpha.real, alpha.imag, beta.real, beta.imag)
    if written is not target:
        target.copy_(written)
    return target


def adapter(form_name: str, *, with_bias=False, out=False, in_place=False, conj_a=False):
    form = _FORMS[form_name]

    def adapter(load, args, kwargs, device_type):
        if with_bias:
            bias, a, b = args[:3]
            scalars = {"beta": kwargs.get("beta", 1), "alpha": kwargs.get("alpha", 1)}
        else:
            a, b = args[:2]
            bias, scalars = None, {}
        return _complex_product(load, form, a, b, bias=bias, out=kwargs.get("out") if out else None,
                                in_place=in_place, conj_a=conj_a, **scalars)

    return adapter
