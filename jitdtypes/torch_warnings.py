"""PyTorch warnings that jitdtypes makes false, silenced while it is enabled, and only where they are false.

1. "... support is experimental and many operators don't support it yet.": jitdtypes provides the operators.
   That exact message (and nothing else) is filtered.
2. Inductor's "Torchinductor does not support code generation for complex operators. Performance may be worse
   than eager.", raised by the first node of a compiled graph that reads or writes a complex tensor. The
   compile path reads 16-bit complex storage as int32 words (aten.view.dtype) and computes on float32 parts,
   so for those reads it is false; for complex64 it stays true. A message filter cannot tell them apart, and
   it would also hide the warning for good: Inductor warns through a functools.cache'd function, once per
   process, so a complex32 graph that spent it would leave a later complex64 graph silent. Instead the check
   that warns is skipped for the 16-bit complex tensors jitdtypes handles (`skip_complex_check`).
"""

import re
import warnings

import torch


_EXPERIMENTAL = (
    "ComplexHalf support is experimental and many operators don't support it yet.",
    "BComplex32 support is experimental and many operators don't support it yet.",
)
# A TORCH_WARN from C++ reaches Python with its origin appended.
_FILTERS = tuple(
    ("ignore", re.compile(re.escape(text) + r"( \(Triggered internally at [^\n]*\))?\Z"), UserWarning, None, 0)
    for text in _EXPERIMENTAL
)


def install() -> None:
    uninstall()
    warnings.filters[:0] = _FILTERS
    warnings._filters_mutated()


def uninstall() -> None:
    warnings.filters[:] = [entry for entry in warnings.filters if entry not in _FILTERS]
    warnings._filters_mutated()


def skip_complex_check(lowering, handled):
    """Wraps `lowering.unsupported_input_tensor` (torch._inductor.lowering, which warns for any complex tensor
    and then answers True: Inductor generates no code for the node) so that it answers True without warning for
    a tensor of a dtype the compile path handles (`handled()`: 16-bit complex, and complex64/complex128 opted
    in) that is a constant, is read as words (aten.view.dtype), or meets an op Inductor generates no code for in
    any dtype (linear algebra). Other uses, say an op the compile path leaves to ATen that Inductor could have
    fused, and every other complex tensor still get Inductor's check and warning. Returns the function that puts
    Inductor's back (unless something replaced the wrapper since)."""
    inductor_check = lowering.unsupported_input_tensor
    view_as_words = torch.ops.aten.view.dtype

    def unsupported_input_tensor(t, node=None):
        if t.dtype in handled() and (
            node is None or node.target is view_as_words or node.target in lowering.fallbacks
            or node.target not in lowering.lowerings
        ):
            return True
        return inductor_check(t, node)

    lowering.unsupported_input_tensor = unsupported_input_tensor

    def restore() -> None:
        if lowering.unsupported_input_tensor is unsupported_input_tensor:
            lowering.unsupported_input_tensor = inductor_check

    return restore
