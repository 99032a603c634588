"""The 16-bit dtypes jitdtypes serves, their 32-bit compute dtypes and the rules that map results back."""

from __future__ import annotations

import torch

from . import dtype_names

BCOMPLEX32 = getattr(torch, "bcomplex32", None)

COMPLEX_TARGETS: tuple[torch.dtype, ...] = (torch.complex32,) + ((BCOMPLEX32,) if BCOMPLEX32 else ())
_PRESENT = [name for name in dtype_names.COMPLEX if hasattr(torch, name)]
# the 16-bit complex dtypes this torch build lacks, each with what to tell whoever asks for it
ABSENT: dict[str, str] = {
    name: f"torch.{name} exists from PyTorch {dtype_names.FIRST_RELEASE[name]} on; this is torch "
          f"{torch.__version__}, where jitdtypes serves {', '.join(_PRESENT)} only"
    for name in dtype_names.COMPLEX if not hasattr(torch, name)}
# Real 16-bit inputs are targets only for ops that turn real into complex (fft, rfft, stft, complex, polar).
REAL_TARGETS: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16)

COMPUTE_DTYPE = {
    torch.complex32: torch.complex64,
    torch.float16: torch.float32,
    torch.bfloat16: torch.float32,
}
if BCOMPLEX32:
    COMPUTE_DTYPE[BCOMPLEX32] = torch.complex64

REAL_OF = {torch.complex32: torch.float16}
COMPLEX_OF = {torch.float16: torch.complex32}
if BCOMPLEX32:
    REAL_OF[BCOMPLEX32] = torch.bfloat16
    COMPLEX_OF[torch.bfloat16] = BCOMPLEX32

# A family is the pair (complex dtype, real dtype) that 32-bit results are rounded back to.
FAMILY_OF = {c: (c, r) for c, r in REAL_OF.items()}
FAMILY_OF.update({r: (c, r) for c, r in REAL_OF.items()})

NAMES = {torch.complex32: "complex32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
if BCOMPLEX32:
    NAMES[BCOMPLEX32] = "bcomplex32"
BY_NAME = {name: dtype for dtype, name in NAMES.items()}
# the 16-bit complex dtypes and their parts by name, as kernel params and the CLI spell them
COMPLEX_BY_NAME = {NAMES[c]: c for c in COMPLEX_TARGETS}
PART_BY_NAME = {NAMES[c]: REAL_OF[c] for c in COMPLEX_TARGETS}
# c10::toString spellings, as the compiled guard reads them
SCALAR_TYPE_NAMES = {torch.complex32: "ComplexHalf", torch.float16: "Half", torch.bfloat16: "BFloat16"}
if BCOMPLEX32:
    SCALAR_TYPE_NAMES[BCOMPLEX32] = "BComplex32"


_PART_OF_WIDE = {torch.complex64: torch.float32, torch.complex128: torch.float64}


def complex_name(dtype: torch.dtype) -> str | None:
    """"complex32" or "bcomplex32" for a 16-bit complex dtype, None for any other."""
    return NAMES[dtype] if dtype in REAL_OF else None


def part_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of a complex dtype's real and imaginary parts (complex32 -> float16, complex64 -> float32);
    a real dtype is its own."""
    return REAL_OF.get(dtype) or _PART_OF_WIDE.get(dtype, dtype)


def complex_of(dtype: torch.dtype) -> torch.dtype:
    """The complex dtype with parts of a real floating dtype (float16 -> complex32, float32 -> complex64)."""
    return COMPLEX_OF.get(dtype) or torch.promote_types(dtype, torch.complex64)


def _combine_categories(higher: torch.dtype | None, lower: torch.dtype | None) -> torch.dtype | None:
    """Port of ATen's combine_categories: merges the dimensioned-tensor result with the zero-dim one."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return complex_of(higher) if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher == torch.bool or lower.is_floating_point:
        return torch.promote_types(higher, lower)
    return higher


WRAPPED_NUMBER_DTYPE = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}


def _wrapped_number_category_dtype(value) -> torch.dtype:
    dtype = WRAPPED_NUMBER_DTYPE[type(value)]
    if dtype == torch.float64:
        return torch.get_default_dtype()
    if dtype == torch.complex128:
        return complex_of(torch.get_default_dtype())
    return dtype


def result_dtype(tensors, scalars=()) -> torch.dtype | None:
    """torch.result_type over any number of tensors and Python scalars (port of ATen's ResultTypeState:
    dimensioned tensors outrank zero-dim tensors, which outrank wrapped numbers, unless of a higher category)."""
    dim_result = zero_result = wrapped_result = None
    for t in tensors:
        if t.dim():
            dim_result = t.dtype if dim_result is None else torch.promote_types(dim_result, t.dtype)
        else:
            zero_result = t.dtype if zero_result is None else torch.promote_types(zero_result, t.dtype)
    for value in scalars:
        current = _wrapped_number_category_dtype(value)
        wrapped_result = current if wrapped_result is None else torch.promote_types(wrapped_result, current)
    return _combine_categories(dim_result, _combine_categories(zero_result, wrapped_result))


def round_back_family(tensors) -> tuple[torch.dtype, torch.dtype] | None:
    """The (complex, real) 16-bit pair that 32-bit results should be rounded to, or None to keep them.

    complex32 with float32 promotes to complex64, complex32 with bcomplex32 to complex64: no rounding then.
    """
    promoted = result_dtype(t for t in tensors if t.is_floating_point() or t.is_complex())
    return FAMILY_OF.get(promoted)
