"""The complex dtypes of dtype_table.py as torch dtypes: the lookups every room reads, and PyTorch's rules of
type promotion that map results back to 16 bits. No fact about a dtype is written here: each comes from its
row of the table."""

from __future__ import annotations

import torch

from . import dtype_table

BCOMPLEX32 = getattr(torch, "bcomplex32", None)

# the table's rows this torch build has, keyed by the complex dtype and by its part dtype
_PRESENT = [row for row in dtype_table.SIXTEEN_BIT if hasattr(torch, row.name)]
ROW = {getattr(torch, row.name): row for row in _PRESENT + list(dtype_table.WIDE)}
PART_ROW = {getattr(torch, row.part): row for row in _PRESENT + list(dtype_table.WIDE)}

COMPLEX_TARGETS: tuple[torch.dtype, ...] = tuple(getattr(torch, row.name) for row in _PRESENT)
# the 16-bit complex dtypes this torch build lacks, each with what to tell whoever asks for it
ABSENT: dict[str, str] = {
    row.name: f"torch.{row.name} exists from PyTorch {row.first_release} on; this is torch {torch.__version__}, "
              f"where jitdtypes serves {', '.join(r.name for r in _PRESENT)} only"
    for row in dtype_table.SIXTEEN_BIT if not hasattr(torch, row.name)}
# Real 16-bit inputs are targets only for ops that turn real into complex (fft, rfft, stft, complex, polar).
REAL_TARGETS: tuple[torch.dtype, ...] = tuple(getattr(torch, row.part) for row in _PRESENT)

REAL_OF = {getattr(torch, row.name): getattr(torch, row.part) for row in _PRESENT}
COMPLEX_OF = {part: complex_dtype for complex_dtype, part in REAL_OF.items()}
# the 32-bit dtypes a 16-bit one computes in where PyTorch lacks a kernel
COMPUTE_DTYPE = {**{c: getattr(torch, ROW[c].wide) for c in REAL_OF},
                 **{r: getattr(torch, dtype_table.BY_NAME[ROW[c].wide].part) for c, r in REAL_OF.items()}}

# A family is the pair (complex dtype, real dtype) that 32-bit results are rounded back to.
FAMILY_OF = {c: (c, r) for c, r in REAL_OF.items()}
FAMILY_OF.update({r: (c, r) for c, r in REAL_OF.items()})

NAMES = {**{c: ROW[c].name for c in REAL_OF}, **{r: ROW[c].part for c, r in REAL_OF.items()}}
BY_NAME = {name: dtype for dtype, name in NAMES.items()}
# the 16-bit complex dtypes and their parts by name, as kernel params and the CLI spell them
COMPLEX_BY_NAME = {NAMES[c]: c for c in COMPLEX_TARGETS}
PART_BY_NAME = {NAMES[c]: REAL_OF[c] for c in COMPLEX_TARGETS}
# c10::toString spellings and C++ type names, of every complex dtype of the table and its parts
SCALAR_TYPE_NAMES = {**{c: row.scalar_type for c, row in ROW.items()},
                     **{r: row.part_scalar_type for r, row in PART_ROW.items()}}
CPP_TYPE_NAMES = {**{c: row.cpp_type for c, row in ROW.items()}, **{r: row.part_cpp_type for r, row in PART_ROW.items()}}
# machine epsilon of a complex dtype's parts, and of a real dtype itself
EPS = {**{c: row.eps for c, row in ROW.items()}, **{r: row.eps for r, row in PART_ROW.items()}}


def complex_name(dtype: torch.dtype) -> str | None:
    """"complex32" or "bcomplex32" for a 16-bit complex dtype, None for any other."""
    return NAMES[dtype] if dtype in REAL_OF else None


def part_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of a complex dtype's real and imaginary parts (complex32 -> float16, complex64 -> float32);
    a real dtype is its own."""
    row = ROW.get(dtype)
    return getattr(torch, row.part) if row is not None else dtype


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
