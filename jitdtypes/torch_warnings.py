"""PyTorch's "... support is experimental and many operators don't support it yet." warning stops being true once
jitdtypes provides the operators: while enabled, that exact message (and nothing else) is filtered."""

import re
import warnings

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
