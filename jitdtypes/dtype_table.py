"""The one table of the complex dtypes jitdtypes knows: every fact about one (its parts, its names in c10 and
numpy, its parts' epsilon) is a field of its row. Written without torch, so that the command line offers the
names before torch is loaded; dtypes.py derives the torch-keyed lookups everything else reads."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ComplexDtype:
    name: str  # torch.<name>
    part: str  # torch.<part>: the dtype of its real and imaginary parts
    wide: str  # the complex dtype it computes in where PyTorch lacks a kernel (itself for complex64/complex128)
    scalar_type: str  # c10::ScalarType spelling, as error messages and the compiled guard read it
    part_scalar_type: str
    cpp_type: str  # C++ type name (c10's TypeMeta), as some error messages spell it
    part_cpp_type: str
    eps: float  # machine epsilon of a part: one unit in the last place at 1.0
    numpy: str | None  # ml_dtypes' (or numpy's) name of its numpy twin
    first_release: str | None = None  # the PyTorch release that added it, where a supported release lacks it


# the 16-bit complex dtypes jitdtypes serves
SIXTEEN_BIT = (
    ComplexDtype("complex32", "float16", "complex64", "ComplexHalf", "Half", "c10::complex<c10::Half>", "c10::Half",
                 2.0**-10, "complex32"),
    ComplexDtype("bcomplex32", "bfloat16", "complex64", "BComplex32", "BFloat16", "c10::complex<c10::BFloat16>",
                 "c10::BFloat16", 2.0**-7, "bcomplex32", first_release="2.14"),
)
# the complex dtypes PyTorch serves itself, which 16-bit calls widen to
WIDE = (
    ComplexDtype("complex64", "float32", "complex64", "ComplexFloat", "Float", "c10::complex<float>", "float",
                 2.0**-23, "complex64"),
    ComplexDtype("complex128", "float64", "complex128", "ComplexDouble", "Double", "c10::complex<double>", "double",
                 2.0**-52, "complex128"),
)
BY_NAME = {row.name: row for row in SIXTEEN_BIT + WIDE}

COMPLEX = tuple(row.name for row in SIXTEEN_BIT)
# real 16-bit inputs matter only for ops that turn real into complex (fft, rfft, stft, complex, polar)
REAL = tuple(row.part for row in SIXTEEN_BIT)
FIRST_RELEASE = {row.name: row.first_release for row in SIXTEEN_BIT if row.first_release}
