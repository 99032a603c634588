"""Parts that Inductor keeps as buffers of their own: the end of each complex op's formula.

Inductor builds a kernel's body by inlining each pointwise producer into its consumers, and makes a producer a
buffer of its own only once its inlined body is large or read often. A complex op reads each part of its
operands several times (re and im both enter re*re - im*im and 2*re*im, a quotient's scale, tanh's two
halves), and each read inlines the part's whole formula again, down to the words it was read from: a kernel's
body then holds each formula many times over, and Inductor interprets, types and vectorizes that body several
times per kernel, though the C++ it prints in the end (common subexpressions eliminated) holds each once.
`assemble` passes each op's parts through `jitdtypes::realized`, whose lowering makes them buffers: each op is then
inlined once. The scheduler fuses those buffers into the same loop and, where nothing outside the loop reads
them, keeps them out of memory, so a chain is still one kernel (tests/test_compile_realized.py).

Outside Inductor (a graph run by another backend, or a call made directly) the op is a copy.
"""

from __future__ import annotations

import torch
from torch import Tensor


@torch.library.custom_op("jitdtypes::realized", mutates_args=())
def realized(part: Tensor) -> Tensor:
    return part.clone()


@realized.register_fake
def _(part: Tensor) -> Tensor:
    return torch.empty_like(part)


realized.register_autograd(lambda ctx, grad: grad)

OP = torch.ops.jitdtypes.realized.default


def lowering(part):
    """Inductor's lowering: the part as a buffer (a view or an input already is one)."""
    part.realize()
    return part


def install_lowering(lowerings: dict) -> bool:
    """Put the lowering into Inductor's table; False where an entry is there already (left as it is)."""
    if OP in lowerings:
        return False
    from torch._inductor.lowering import register_lowering

    register_lowering(OP, type_promotion_kind=None)(lowering)
    return True
