"""Complex values as planar (re, im) parts while AOTAutograd traces a graph for Inductor.

A decomposition receives complex tensors and must return one. It returns `assemble(re, im, dtype)`, a complex
tensor packed from the float32 parts, and remembers the parts for that tensor. The next decomposition that
receives it asks `parts(tensor)` and gets the float32 parts back, so the packing is dead code unless
something else needs the complex tensor (a graph output, an op without a planar formula); Inductor removes
it. Chains therefore stay in float32 inside one fused kernel and touch 16 bits only where a complex value
enters or leaves it: as 32-bit words (bits.py), or on CPU for complex32 as planes of float16 parts made and
consumed by kernels of their own (layout_ops.py), which keeps Inductor's C++ vectorized.

Remembered parts are only valid in the trace that made them: the same input tensor object can be traced
twice by AOTAutograd (each trace has its own tracer), and an in-place op bumps the version counter. Both are
checked on every lookup.
"""

from __future__ import annotations

import weakref

import torch
from torch.fx.experimental import proxy_tensor
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

from .. import dtypes
from . import bits, layout_ops, opt_in, realized

SIXTEEN_BIT_COMPLEX = frozenset(dtypes.COMPLEX_TARGETS)
SIXTEEN_BIT_REAL = frozenset(dtypes.REAL_TARGETS)

# tensor -> (tracer, version, re, im, computed: whether the parts are its value, or were read from storage)
_remembered: WeakIdKeyDictionary = WeakIdKeyDictionary()


def _current_tracer():
    mode = proxy_tensor.get_proxy_mode()
    return mode.tracer if mode is not None else None


def _lookup(t: torch.Tensor):
    """(re, im, computed) remembered for t in this trace, or None."""
    entry = _remembered.get(t)
    if entry is None:
        return None
    tracer_ref, version, *found = entry
    tracer = _current_tracer()
    if tracer is None or tracer_ref() is not tracer or t._version != version:
        del _remembered[t]
        return None
    return found


def remember(t: torch.Tensor, re: torch.Tensor, im: torch.Tensor | None, computed: bool = False) -> None:
    """Later lookups of `t` in this trace get these parts: its value (`computed`, by assemble), or what its
    storage holds (read by parts(), or views of its base's parts for a view kept as an ATen view)."""
    tracer = _current_tracer()
    if tracer is not None:  # outside a trace (a decomposition called directly) there is nothing to reuse
        _remembered[t] = (weakref.ref(tracer), t._version, re, im, computed)


def is_planar(value) -> bool:
    """A tensor whose complex value this trace already holds as parts."""
    return isinstance(value, torch.Tensor) and _lookup(value) is not None


def is_computed(value) -> bool:
    """A tensor whose value a decomposition computed as parts: its storage is only a packing of them."""
    found = isinstance(value, torch.Tensor) and _lookup(value)
    return bool(found) and found[2]


def involved(*args) -> bool:
    """True when a decomposition should compute planar: some tensor argument is of a complex dtype compiled
    planar (16-bit, or complex64/complex128 opted in: opt_in.py) or held as parts (e.g. complex64 made from
    complex32). Everything else (float32, complex64 programs not opted in) keeps the table's previous entry, so
    compiled code that never touches those dtypes is unchanged."""
    handled = opt_in.complex_dtypes()
    for value in tree_flatten(args)[0]:
        if isinstance(value, torch.Tensor) and (value.dtype in handled or is_planar(value)):
            return True
    return False


def compute_dtype(result_dtype: torch.dtype) -> torch.dtype:
    """The real dtype parts are computed in: float32, or float64 where the result is complex128/float64."""
    return torch.float64 if result_dtype in (torch.complex128, torch.float64) else torch.float32


def parts(value, compute: torch.dtype = torch.float32):
    """(re, im) of a tensor or Python number in `compute`; im is None for real values (cheaper formulas)."""
    if isinstance(value, complex):
        return value.real, value.imag
    if not isinstance(value, torch.Tensor):
        return value, None
    if not value.is_complex():
        return value.to(compute), None
    found = _lookup(value)
    if found is None:
        found = _known_parts(value, compute) or _stored_parts(value)
        remember(value, *found)
    re, im = found[:2]
    return re.to(compute), im.to(compute)


def _stored_parts(t: torch.Tensor):
    if layout_ops.holds_planes(t.dtype, t.device):
        return layout_ops.unpack(t)
    if bits.supported(t.dtype):
        return bits.unpack(t)
    # complex128: the lazy flags stripped by views (as bits.unpack does), not resolved: resolving would be a
    # copy of t, whose parts this same lookup would be asked for
    conj, neg = t.is_conj(), t.is_neg()
    raw = t.conj() if conj else t
    real = torch.view_as_real(torch._neg_view(raw) if neg else raw)
    re, im = (-real[..., 0], -real[..., 1]) if neg else (real[..., 0], real[..., 1])
    return re, (-im if conj else im)


def _known_parts(t: torch.Tensor, compute: torch.dtype):
    """(re, im) of a fake tensor whose value the trace knows (`FakeTensor.constant`: a Python number's
    tensor, or an op on one), as constants. Its graph node may be a lazy view whose flag the fake tensor does
    not carry: the backward of `x * 1j` holds `aten._conj(1j)`, whose fake result says "not conjugated", so
    reading it as storage (view_as_real, words) fails or drops the conjugation when the graph runs."""
    known = getattr(t, "constant", None)
    if not isinstance(known, torch.Tensor) or known.numel() != 1:
        return None
    value = complex(known.item())
    fill = lambda part: torch.full(t.shape, part, dtype=compute, device=t.device)  # noqa: E731
    return fill(value.real), fill(value.imag)


def _realized(part: torch.Tensor) -> torch.Tensor:
    """In a trace, the part as Inductor will keep it, a buffer (realized.py): each op's formula inlined once."""
    return realized.OP(part) if _current_tracer() is not None else part


def assemble(re, im, dtype: torch.dtype) -> torch.Tensor:
    """The complex tensor of `dtype` with these parts (float, same shape), remembered for later lookups."""
    compute = compute_dtype(dtype)
    if im is not None and re.shape != im.shape:
        re, im = torch.broadcast_tensors(re, im)
    re = _realized(re.to(compute))
    im = torch.zeros_like(re) if im is None else _realized(im.to(compute))
    if layout_ops.holds_planes(dtype, re.device):
        out = layout_ops.pack(re, im, dtype)
    elif bits.supported(dtype):
        out = bits.pack(re, im, dtype)
    else:
        out = torch.view_as_complex(torch.stack([re, im], -1))
        out = out if out.dtype == dtype else out.to(dtype)
    remember(out, re, im, computed=True)
    return out
