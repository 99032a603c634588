"""Backward passes in 32 bits for ops whose PyTorch derivative formula fails on the 16-bit complex dtypes.

Two ways a formula fails: it rejects the dtype (an error raised by the autograd node, not by any ATen kernel
an override could replace), or it runs op by op in 16 bits and an intermediate passes float16's 65504 although
the gradient itself is small (NaN where complex64 gives an ordinary number). Both are listed in WIDE_GRADIENTS.

For those ops the registrar puts a kernel at the Autograd<Backend> key, where autograd records the op's node,
for the dtypes discovery found PyTorch lacking. A call that needs a gradient records, as ordinary autograd
nodes, the widening of its 16-bit tensors to complex64/float32, the op itself on them, and the rounding of its
results: the backward is PyTorch's own formula evaluated in 32 bits, and each gradient is rounded once (by the
widening's ToCopyBackward). Double backward (create_graph) is PyTorch's too, on the same nodes.

Memory stays 16-bit: what the 32-bit node saves goes through saved_tensors_hooks and is held as the caller's
own 16-bit input, the rounded result, or (other intermediates) rounded to the family's dtype, widened again
when backward reads it (and handed to the caller's own hooks, if any); an entry may instead have its saved
results computed again in 32 bits from the saved inputs when backward reads them, where their 16-bit rounding
is what breaks the gradient. Where PyTorch disables the hooks (torch.compile's tracing, torch.func
transforms) the node saves its 32-bit tensors as it would for complex64.

Calls without a target dtype never reach this module under the compiled guard; with a target dtype but no
gradient to record (no_grad, no input requiring grad) the kernel calls PyTorch's autograd kernel, which sends
them down to the usual 16-bit path (templates on CUDA, the upcast path).
"""

from __future__ import annotations

import dataclasses

import torch

from .. import dtypes
from ..findings import MISSING, PARTIAL
from ..schema import OPTIONAL_TENSOR, TENSOR, TENSOR_LIST, Overload


@dataclasses.dataclass(frozen=True)
class WideGradient:
    overload: str  # the overload autograd records a node for
    why: str
    # the overloads whose discovery findings say for which dtypes jitdtypes computes the forward (the op itself
    # unless it lowers to another, e.g. logcumsumexp to _logcumsumexp)
    forward: tuple[str, ...] = ()
    # saved results are computed again in 32 bits from the saved 16-bit inputs when backward reads them, where
    # their 16-bit rounding is what breaks the gradient (exp(self - result) with result near 1e4, spacing 8)
    recompute_results: bool = False

    @property
    def decided_by(self) -> tuple[str, ...]:
        return self.forward or (self.overload,)


_OVERFLOW = "its formula runs op by op in 16 bits, where "
WIDE_GRADIENTS = (
    WideGradient("aten::_linalg_det", "LinalgDetBackward0 refuses it: \"doesn't handle types other than float and "
                                      "double\""),
    WideGradient("aten::logcumsumexp", "LogcumsumexpBackward0 refuses it: logcumsumexp_backward has no "
                                       "ComplexHalf/BComplex32 kernel; its formula reads exp(self - result)",
                 forward=("aten::_logcumsumexp",), recompute_results=True),
    WideGradient("aten::logsumexp", "its formula reads exp(self - result), with result rounded to float16 (spacing 2 "
                                    "near 2600); computed in 16-bit pieces (exp_, sum, log_)",
                 forward=("aten::exp_",), recompute_results=True),
    WideGradient("aten::renorm", "RenormBackward0 refuses it: toAccumulateType asserts on ComplexHalf/BComplex32"),
    WideGradient("aten::logaddexp", _OVERFLOW + "exp(other - self) passes 65504 (self=-8+1j, other=4: 1.6e5)"),
    WideGradient("aten::sinc", _OVERFLOW + "pi*x*cos(pi*x) passes 65504 (x=-3.97+3.27j: 1.7e5)"),
    WideGradient("aten::pow.Tensor_Scalar", _OVERFLOW + "grad * exponent * self^(exponent - 1) passes 65504 in "
                                                        "a product the gradient's other factors bring back"),
    # their formulas read the saved result, infinite in 16 bits where the gradient still fits
    WideGradient("aten::pow.Tensor_Tensor", _OVERFLOW + "self^exponent * log(self) and exponent * "
                                                        "self^(exponent - 1) pass 65504", recompute_results=True),
    WideGradient("aten::pow.Scalar", _OVERFLOW + "self^exponent * log(self) passes 65504 (x.__rpow__)",
                 recompute_results=True),
    WideGradient("aten::linalg_householder_product", "its formula is a long chain of products, each rounded to "
                                                     "16 bits (OpInfo's samples: up to 17% off in complex32, 58% in "
                                                     "bcomplex32; in 32 bits 4% and 24%, from the rounded "
                                                     "grad_output of an ill-conditioned sample)"),
    WideGradient("aten::linalg_matrix_exp", _OVERFLOW + "the differential's block-matrix exponential passes "
                                                        "65504"),
)
BY_OVERLOAD = {entry.overload: entry for entry in WIDE_GRADIENTS}


def target_dtypes(entry: WideGradient, status_by_overload: dict[str, dict[str, str]]) -> list[torch.dtype]:
    """The 16-bit complex dtypes whose forward discovery found PyTorch lacking (missing or partial) for `entry`."""
    found = [dtypes.BY_NAME[name] for overload in entry.decided_by
             for name, support in status_by_overload.get(overload, {}).items()
             if support in (MISSING, PARTIAL) and name in dtypes.BY_NAME]
    return [d for d in dtypes.COMPLEX_TARGETS if d in found]


def supported(info: Overload) -> bool:
    """Whether the kernel below can serve this schema: tensors in Tensor/Tensor? arguments only, none written."""
    return not any(a.kind == TENSOR_LIST or a.is_write for a in info.args)


class _Saved:
    """One tensor the 32-bit node saved; 16-bit once the call has returned (see _hold)."""

    __slots__ = ("tensor", "version", "outer_unpack", "recompute")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor
        self.version = None
        self.outer_unpack = None  # the caller's own saved_tensors_hooks, applied to the 16-bit tensor
        self.recompute = None  # for a result computed again: () -> the 32-bit result


def _pack(saved: list):
    def pack(tensor):
        holder = _Saved(tensor)
        saved.append(holder)
        return holder

    return pack


def _unpack(holder: _Saved):
    if holder.recompute is not None:
        return holder.recompute()
    tensor = holder.tensor if holder.outer_unpack is None else holder.outer_unpack(holder.tensor)
    if holder.version is not None:
        _check_version(tensor, holder.version)
    wide = dtypes.COMPUTE_DTYPE.get(tensor.dtype)
    return tensor if wide is None else tensor.to(wide)


def _hold(saved: list, originals: dict, results: dict, family, outer, recompute) -> None:
    """Replace each saved 32-bit tensor by its 16-bit form: the caller's own input it was widened from (its
    version recorded, as PyTorch checks it), the rounded result, or a rounded copy; then hand it to the
    caller's `outer` (pack, unpack) hooks, if any (offloading, checkpointing), which then own it.
    `recompute(index)`: for a result computed again, the callable that does it; else None."""
    complex16, real16 = family
    for holder in saved:
        tensor = holder.tensor
        original = originals.get(id(tensor)) or results.get(id(tensor))
        if original is not None and original[0] is tensor:
            if recompute is not None and id(tensor) in results:
                holder.tensor, holder.recompute = None, recompute(original[2])
                continue
            holder.tensor = original[1].detach()
            holder.version = holder.tensor._version
        elif tensor.dtype == torch.complex64:
            holder.tensor = tensor.to(complex16)
        elif tensor.dtype == torch.float32:
            holder.tensor = tensor.to(real16)
        if outer is not None:
            holder.tensor, holder.outer_unpack, holder.version = outer[0](holder.tensor), outer[1], None


def _recomputer(op, args, kwargs, family):
    """recompute(index) -> a callable computing the op's result (`index` of a tuple result) in 32 bits again,
    from this call's 16-bit inputs (held detached, their versions checked when it runs)."""
    held = [(a.detach(), a._version) if isinstance(a, torch.Tensor) else (a, None) for a in args]
    held_kwargs = {k: (v.detach(), v._version) if isinstance(v, torch.Tensor) else (v, None) for k, v in kwargs.items()}

    def widened(value, version):
        if version is None:
            return value
        _check_version(value, version)
        return value.to(dtypes.COMPUTE_DTYPE[value.dtype]) if value.dtype in family else value

    def recompute(index):
        def run():
            with torch.no_grad():
                result = op(*(widened(*a) for a in held), **{k: widened(*v) for k, v in held_kwargs.items()})
            return result if index is None else result[index]

        return run

    return recompute


def _check_version(tensor: torch.Tensor, version: int) -> None:
    if tensor._version != version:
        raise RuntimeError("one of the variables needed for gradient computation has been modified by an inplace "
                           f"operation: [{tensor.dtype}{list(tensor.shape)}] is at version {tensor._version}; "
                           f"expected version {version} instead")


def kernel_factory(info: Overload, entry: WideGradient, targets, fallback_for):
    """make_python_kernel(original) for the registrar: a kernel taking the dispatcher's keyset first (registered
    with_keyset), for the overload `info` at an Autograd key. `fallback_for(original)`: the callable (keyset,
    args, kwargs) that calls `original` with Python numbers in Tensor positions turned back into tensors
    (router.Router.native)."""
    positions = [i for i, a in enumerate(info.positional) if a.kind in (TENSOR, OPTIONAL_TENSOR)]
    keywords = [a.name for a in info.keyword if a.kind in (TENSOR, OPTIONAL_TENSOR)]
    targets = frozenset(targets)
    op = info.op
    Tensor = torch.Tensor
    grad_enabled = torch.is_grad_enabled

    def make(original):
        native = fallback_for(original)

        def tensors(args, kwargs):
            found = [args[i] for i in positions if i < len(args) and isinstance(args[i], Tensor)]
            return found + [kwargs[k] for k in keywords if isinstance(kwargs.get(k), Tensor)]

        def wide_call(keyset, args, kwargs):
            inputs = tensors(args, kwargs)
            if not any(t.requires_grad for t in inputs):
                return native(keyset, args, kwargs)
            family = dtypes.round_back_family(inputs)
            if family is None or family[0] not in targets:
                return native(keyset, args, kwargs)
            originals: dict = {}

            def widen(value):
                if isinstance(value, Tensor) and value.dtype in family:
                    wide = value.to(dtypes.COMPUTE_DTYPE[value.dtype])
                    originals[id(wide)] = (wide, value)
                    return wide
                return value

            wide_args = [widen(a) if i in positions else a for i, a in enumerate(args)]
            wide_kwargs = {k: widen(v) if k in keywords else v for k, v in kwargs.items()}
            hooks = torch._C._autograd._saved_tensors_hooks_is_enabled()
            saved: list = []
            outer = torch._C._autograd._top_saved_tensors_default_hooks(False) if hooks else None
            if hooks:
                with torch.autograd.graph.saved_tensors_hooks(_pack(saved), _unpack):
                    wide_result = op(*wide_args, **wide_kwargs)
            else:
                wide_result = op(*wide_args, **wide_kwargs)
            results: dict = {}

            def round_back(value, index):
                rounded = {torch.complex64: family[0], torch.float32: family[1]}.get(value.dtype)
                result = value if rounded is None else value.to(rounded)
                results[id(value)] = (value, result, index)
                return result

            single = isinstance(wide_result, Tensor)
            if single:
                result = round_back(wide_result, None)
            else:
                result = tuple(round_back(r, i) if isinstance(r, Tensor) else r for i, r in enumerate(wide_result))
            recompute = _recomputer(op, args, kwargs, family) if entry.recompute_results and saved else None
            _hold(saved, originals, results, family, outer, recompute)
            return result

        def kernel(keyset, *args, **kwargs):
            if not grad_enabled():
                return native(keyset, args, kwargs)
            for i in positions:
                if i < len(args):
                    value = args[i]
                    if isinstance(value, Tensor) and value.dtype in targets:
                        return wide_call(keyset, args, kwargs)
            for name in keywords:
                value = kwargs.get(name)
                if isinstance(value, Tensor) and value.dtype in targets:
                    return wide_call(keyset, args, kwargs)
            return native(keyset, args, kwargs)

        return kernel

    return make
