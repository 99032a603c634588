"""What differs between the torch and Triton versions jitdtypes supports (torch 2.9 to 2.14, Triton 3.5 to 3.9),
Python side: the one place that says which version needs which path. Each entry is chosen by detecting the
feature or the behaviour, never by comparing version strings. The C++ side's differences live in
native_guard/torch_compat.h. This module imports only torch (triton lazily): every layer may use it.

| difference | where | here |
| --- | --- | --- |
| `Library.impl` refuses a second Python kernel at one (op, key) unless `allow_override=True`; torch's own Python meta kernels count | torch 2.9 - 2.13 (2.14 allows by default) | `impl` |
| `torch.library.wrap_triton` refuses a kernel that Triton's interpreter made (`TRITON_INTERPRET=1`) | torch 2.9 - 2.13 (2.14 returns it, launchable as it is) | `wrap_triton` |
| the interpreter's `range()` over a kernel's int argument calls `int()` on a 1-element array, which NumPy 2.4 refuses | Triton 3.5, 3.6 with NumPy >= 2.4 (3.8 squeezes first) | `fix_triton_interpreter` |
| no `knobs.compilation.instrumentation_mode` and no `knobs.runtime.add_stages_inspection_hook` | Triton 3.5 (3.6 has both) | `triton_knob` |
| the ptxas Triton runs: one for every arch, or chosen by arch (`get_ptxas(arch)`; 3.9's for sm_90 and newer reads PTX 9.4, which the other refuses) | Triton 3.5 (one), 3.6 on (by arch) | `ptxas_path` |
| unary minus on floats compiles as `0 - v` (+0 for -0) | Triton 3.5, 3.6 (3.8 emits fneg) | the templates negate as `v * -1.0` (`kernels_templates/complex_math.neg`) |

Not worked around (bugs of PyTorch itself, which complex64 meets too): tests/torch_bugs.py and docs/COMPILE.md.
"""

from __future__ import annotations

import inspect

import torch

_IMPL_OVERRIDES = (
    {"allow_override": True} if "allow_override" in inspect.signature(torch.library.Library.impl).parameters else {}
)


def impl(library: torch.library.Library, name: str, kernel, dispatch_key: str, with_keyset: bool = False) -> None:
    """`library.impl(name, kernel, dispatch_key)`, in front of whatever Python kernel is registered there."""
    library.impl(name, kernel, dispatch_key, with_keyset=with_keyset, **_IMPL_OVERRIDES)


def _interpreted(kernel) -> bool:
    """Whether `kernel` (a @triton.jit function, possibly under autotune/heuristics) runs in the interpreter."""
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return False
    while not isinstance(kernel, InterpretedFunction) and hasattr(kernel, "fn"):
        kernel = kernel.fn
    return isinstance(kernel, InterpretedFunction)


def wrap_triton(kernel):
    """torch.library.wrap_triton(kernel); an interpreted kernel is launched as it is (nothing traces it)."""
    if _interpreted(kernel):
        return kernel
    return torch.library.wrap_triton(kernel)


_interpreter_fixed = False


def fix_triton_interpreter() -> None:
    """Make the interpreter convert a scalar tensor to an index as Triton 3.8 does (squeezed first), where its
    own conversion fails under this NumPy. A no-op without TRITON_INTERPRET=1 or where nothing fails."""
    global _interpreter_fixed
    import os

    if _interpreter_fixed or os.environ.get("TRITON_INTERPRET") != "1":
        return
    import numpy as np
    from triton.runtime import interpreter

    _interpreter_fixed = True
    try:
        int(np.ones(1))
        return  # this NumPy converts 1-element arrays: every interpreter's own conversion works
    except TypeError:
        pass
    patch_tensor = interpreter._patch_lang_tensor

    def index(self) -> int:
        return int(self.handle.data.squeeze())

    def patched(tensor, *scope):
        patch_tensor(tensor, *scope)
        if scope:  # Triton 3.6 records each change in a scope it undoes after the launch
            scope[0].set_attr(tensor, "__index__", index)
        else:
            tensor.__index__ = index

    interpreter._patch_lang_tensor = patched


def triton_knob(group: str, name: str, absent=None):
    """A function reading Triton's knobs.<group>.<name> now (knobs change at run time), or returning `absent`
    where this Triton has no such knob: what a launch depends on is the same there as with its default."""
    from triton import knobs

    settings = getattr(knobs, group)
    if hasattr(settings, name):
        return lambda: getattr(settings, name)
    return lambda: absent


def ptxas_path(capability: int) -> str:
    """The ptxas Triton itself runs for a GPU of `capability` (90 for sm_90)."""
    from triton.backends.nvidia.compiler import get_ptxas

    by_arch = bool(inspect.signature(get_ptxas).parameters)
    return (get_ptxas(capability) if by_arch else get_ptxas()).path
