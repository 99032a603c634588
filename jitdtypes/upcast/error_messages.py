"""Errors of 16-bit calls: which ones say a dtype is unsupported, and the upcast path's, reworded to name the
dtypes the caller passed.

The upcast path runs the op in complex64/float32, so PyTorch's checks inside it speak of ComplexFloat and
Float. Those names are mapped to the caller's 16-bit family, in each spelling PyTorch's messages use, so that
the error reads as if the op had run in the caller's dtypes. That holds only where the 32-bit names can only
have come from widening: in a call that mixes 16-bit families (complex32 with bfloat16) or passes a
complex64/float32 tensor or dtype, they may name a promoted result or the caller's own argument, and the
message is left as it is.
"""

from __future__ import annotations

import re

import torch

from .. import dtypes

_WIDE = (torch.complex64, torch.float32)
_DTYPE_ERROR_MARKERS = (
    "ComplexHalf", "BComplex32", "Half", "BFloat16", "complex32", "bcomplex32", "float16", "bfloat16",
    "Low precision", "dtype",
)


def looks_like_dtype_error(exc: BaseException) -> bool:
    """Whether PyTorch raised `exc` for lack of a kernel for the dtypes at hand (another path may then work)."""
    return isinstance(exc, (NotImplementedError, RuntimeError, TypeError)) and any(
        m in str(exc) for m in _DTYPE_ERROR_MARKERS
    )


# c10::ScalarType names (ScalarType's operator<<), C++ type names (TypeMeta), Python reprs
_SPELLINGS = (dtypes.SCALAR_TYPE_NAMES.get, dtypes.CPP_TYPE_NAMES.get, str)


def _family(values) -> tuple[torch.dtype, torch.dtype] | None:
    """The one 16-bit family among the caller's argument values, if the 32-bit names can only be widened ones."""
    passed = {v.dtype if isinstance(v, torch.Tensor) else v for v in values
              if isinstance(v, (torch.Tensor, torch.dtype))}
    families = {dtypes.FAMILY_OF[d] for d in passed if d in dtypes.FAMILY_OF}
    if len(families) != 1 or not passed.isdisjoint(_WIDE):
        return None
    return families.pop()


def _rewording(family) -> tuple[re.Pattern, dict[str, str]]:
    renames = {spell(wide): spell(narrow) for wide, narrow in zip(_WIDE, family) for spell in _SPELLINGS}
    alternatives = "|".join(re.escape(n) for n in sorted(renames, key=len, reverse=True))
    # whole names only: not the Float in ComplexFloat or BFloat16, nor the float in c10::complex<float>
    return re.compile(rf"(?<![\w.:<])({alternatives})(?![\w>])"), renames


_REWORDINGS = {family: _rewording(family) for family in set(dtypes.FAMILY_OF.values())}


def name_callers_dtypes(exc: BaseException, values) -> None:
    """Reword `exc` (raised by the 32-bit call) in place, for a call made with argument `values`."""
    if not exc.args or not isinstance(exc.args[0], str):
        return
    family = _family(values)
    if family is not None:
        pattern, renames = _REWORDINGS[family]
        exc.args = (pattern.sub(lambda m: renames[m.group(1)], exc.args[0]), *exc.args[1:])
