"""PyTorch's OpInfo database as a backward peer suite: each input's gradient in a 16-bit complex dtype against
complex64's gradient on the same rounded inputs.

Method, per sample: every complex64 tensor of the sample is rounded to the 16-bit dtype; complex64 leaves hold
the rounded values (the reference) and 16-bit leaves the same values. The loss is real, sum(real(w * out))
over the differentiable outputs, with fixed weights w (multiples of 1/8 in [-1, 1], exact in every 16-bit
dtype) and evaluated in complex64/float32, so the gradient reaching the op is exact in 16 bits and only the
op's own backward differs between the two runs.
"""

from __future__ import annotations

import dataclasses
import re
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tests import opinfo_samples as db
from tests.opinfo_exclusions import RANDOM_OPS
from tests.test_opinfo_coverage import EPS

# Ops whose point is a dtype change: their gradient is a conversion back, not a formula to check.
CONVERSION_OPS = frozenset({"to", "chalf", "cfloat", "cdouble", "half", "float", "double", "bfloat16"})
# Gradient error bound in units of the 16-bit dtype's epsilon, relative to |reference| + the gradient's largest
# magnitude (as the forward suite's ULPS); the module docstring of tests/test_opinfo_backward.py justifies it.
GRAD_ULPS = 32
NOT_IMPLEMENTED = re.compile(r"not implemented for '(ComplexHalf|BComplex32)'")


def backward_ops():
    """OpInfos with complex64 autograd on CPU, random and conversion ops aside."""
    return [op for op in db.op_db()
            if op.supports_autograd and torch.complex64 in op.supported_backward_dtypes("cpu")
            and db.op_id(op) not in RANDOM_OPS | CONVERSION_OPS]


def _weights(tensor: torch.Tensor, index: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(index)
    parts = torch.randint(-8, 9, (2,) + tuple(tensor.shape), generator=gen).float() / 8
    return torch.complex(parts[0], parts[1]) if tensor.is_complex() else parts[0]


def _loss(result) -> torch.Tensor | None:
    outputs = [t for t in db.flat_tensors(result)
               if t.requires_grad and (t.is_complex() or t.is_floating_point())]
    if not outputs:
        return None
    terms = []
    for index, out in enumerate(outputs):
        wide = out.to(torch.complex64 if out.is_complex() else torch.float32)
        terms.append((wide * _weights(out, index)).real.sum())
    return torch.stack(terms).sum()


def _with_leaves(sample, make):
    """The sample with each complex64 tensor replaced by make(tensor), a leaf; and the leaves, in order."""
    leaves = []

    def one(value):
        if isinstance(value, torch.Tensor) and value.dtype == torch.complex64:
            leaf = make(value).detach().requires_grad_()
            leaves.append(leaf)
            return leaf
        return value

    return sample.transform(one), leaves


def gradients(op, sample, make):
    """Each leaf's gradient (None where unused), or None when the sample has no differentiable output."""
    with_leaves, leaves = _with_leaves(sample, make)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = _loss(db.call(op, with_leaves))
        if loss is None or not leaves or not loss.requires_grad:
            return None
        return torch.autograd.grad(loss, leaves, allow_unused=True)


def grad_error(got, want, target) -> float:
    """The largest error of `got` against `want` in units of EPS[target] * (|want| + max |want|), with want
    rounded to the 16-bit dtype first; inf where a finite rounded reference meets a non-finite result."""
    if got is None or want is None:
        return 0.0 if got is None and want is None else float("inf")
    rounded = want.to(got.dtype).to(torch.complex128)  # values past the 16-bit range are inf here too
    actual = got.to(torch.complex128)
    finite = torch.isfinite(rounded)
    if not bool(torch.isfinite(actual)[finite].all()) or bool(torch.isfinite(actual)[~finite].any()):
        return float("inf")
    if not finite.any():
        return 0.0
    scale = rounded[finite].abs().max().item()
    if scale == 0:
        return 0.0 if bool((actual[finite] == 0).all()) else float("inf")
    err = (actual[finite] - rounded[finite]).abs() / (EPS[target] * (rounded[finite].abs() + scale))
    return err.max().item()


@dataclasses.dataclass
class SampleResult:
    index: int
    error: float  # grad_error over every leaf; inf on a non-finite mismatch
    raised: str | None = None  # what the 16-bit run raised


def check_samples(op, target, indices) -> list[SampleResult]:
    """The 16-bit gradients of the samples at `indices` against complex64's; samples complex64 itself cannot
    differentiate are left out."""
    results = []
    wanted = set(indices)
    for index, sample in enumerate(db.samples(op, torch.complex64, limit=max(wanted) + 1)):
        if index not in wanted:
            continue

        def rounded(value):
            return value.to(target).to(torch.complex64)

        try:
            want = gradients(op, sample, rounded)
        except Exception:  # noqa: BLE001 - the sample is invalid for complex64 too
            continue
        if want is None:
            continue
        try:
            got = gradients(op, sample, lambda value: value.to(target))
        except Exception as exc:  # noqa: BLE001 - the failure under test
            results.append(SampleResult(index, float("inf"), f"{type(exc).__name__}: {str(exc).splitlines()[0]}"))
            continue
        results.append(SampleResult(index, max(grad_error(g, w, target) for g, w in zip(got, want))))
    return results


class _RaisingOverload(TorchDispatchMode):
    """Records the innermost ATen overload (as seen below autograd) whose call raised."""

    def __init__(self):
        super().__init__()
        self.raised = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        try:
            return func(*args, **(kwargs or {}))
        except Exception:
            if self.raised is None:
                self.raised = func.name()
            raise


def raising_overload(op, index: int, target) -> str | None:
    """The ATen overload that raised when the 16-bit backward of sample `index` failed, or None where no ATen
    overload raised (a C++ derivative formula did: its autograd node)."""
    sample = db.samples(op, torch.complex64, limit=index + 1)[index]
    mode = _RaisingOverload()
    try:
        with mode:
            gradients(op, sample, lambda value: value.to(target))
    except Exception:  # noqa: BLE001 - expected: the call failed without the mode too
        pass
    return mode.raised
