"""Bugs of some supported torch versions that jitdtypes does not work around, each detected by its own
plain-PyTorch reproduction (no jitdtypes involved), run once on first use. Tests of programs that hit one
skip where it reproduces, naming it; docs/COMPILE.md describes each.
"""

from __future__ import annotations

import functools
import math

import torch


@functools.lru_cache(maxsize=None)
def fx_writes_nonfinite_complex_constants() -> bool:
    """torch 2.9-2.13: FX writes complex(nan, nan) as `(nan+nanj)` in a graph's code, which raises NameError when
    the graph runs (PyTorch's own complex logaddexp puts that constant in every compiled graph; complex64 too)."""
    graph = torch.fx.Graph()
    graph.output(graph.call_function(torch.ops.aten.scalar_tensor.default, (complex(math.nan, math.nan),),
                                     {"dtype": torch.complex64}))
    module = torch.fx.GraphModule(torch.nn.Module(), graph)
    try:
        return bool(torch.isnan(module()).item())
    except NameError:
        return False


def _masked_constant_program(w, u):
    x = (w << 16).view(torch.float32) * (u << 16).view(torch.float32)
    filled = torch.full_like(x[:, :2], 0.0)
    bits = (torch.slice_scatter(x, filled, 1, 0, 2) + 0.0).view(torch.int32)
    return torch.where(bits > 100, bits >> 16, bits & 0xFF)


@functools.lru_cache(maxsize=None)
def inductor_cpp_compiles_masked_constants() -> bool:
    """torch 2.10 and 2.11 (not 2.9, fixed by 2.12): Inductor's vectorized C++ for a slice filled with a constant that the
    kernel also uses elsewhere (here `+ 0.0`) returns the constant's scalar from the masked lambda, and g++ fails:
    "'decltype' evaluates to 'float', which is not a class or enumeration type"."""
    w = torch.arange(24, dtype=torch.int32).view(4, 6)
    torch._dynamo.reset()
    try:
        compiled = torch.compile(_masked_constant_program, fullgraph=True)(w, w + 1)
    except Exception as exc:  # noqa: BLE001 - Inductor wraps the compiler's error in its own types
        if "decltype" in str(exc):
            return False
        raise
    finally:
        torch._dynamo.reset()
    return torch.equal(compiled, _masked_constant_program(w, w + 1))
