"""Which complex dtypes compiled graphs compute on planar parts: complex32 and bcomplex32 always, complex64 and
complex128 when the user opts in.

Inductor generates no code for complex dtypes, so `torch.compile` runs complex64 programs op by op in ATen.
The planar decompositions that serve the 16-bit dtypes serve any complex dtype (parts in float32, or float64
for complex128); for complex64/complex128 they change what compiled programs that never touch 16-bit values
compute and how fast, so they run only when asked: `JITDTYPES_COMPILE_COMPLEX=complex64,complex128` (read at
import) or `jitdtypes.set_compile_complex(...)`. Off, those programs are traced exactly as without jitdtypes.
"""

from __future__ import annotations

import torch

from .. import dtypes

ENV = "JITDTYPES_COMPILE_COMPLEX"
# the complex dtypes that may be opted in, by name, and the real dtype of their parts
WIDE = {"complex64": torch.complex64, "complex128": torch.complex128}
_PART = {torch.complex64: torch.float32, torch.complex128: torch.float64}

_chosen: frozenset = frozenset()
_complex: frozenset = frozenset(dtypes.COMPLEX_TARGETS)
_real: frozenset = frozenset(dtypes.REAL_TARGETS)


def parse(text: str) -> frozenset:
    """The dtypes a comma-separated list names ("complex64,complex128"; "" or "none": none)."""
    names = [name.strip().removeprefix("torch.") for name in text.split(",") if name.strip()]
    if names == ["none"]:
        return frozenset()
    return chosen_dtypes(names, f"{ENV}={text!r}")


def chosen_dtypes(values, where: str = "set_compile_complex") -> frozenset:
    """torch dtypes or their names -> the set, or ValueError naming what is not complex64/complex128."""
    found = set()
    for value in values:
        dtype = WIDE.get(value) if isinstance(value, str) else value
        if dtype not in _PART:
            wrong = value if isinstance(value, str) else repr(value)
            raise ValueError(f"{where}: {wrong} is not a dtype to opt in (choose from complex64, complex128; "
                             f"complex32 and bcomplex32 always compile planar)")
        found.add(dtype)
    return frozenset(found)


def choose(chosen: frozenset) -> None:
    global _chosen, _complex, _real
    _chosen = frozenset(chosen)
    _complex = frozenset(dtypes.COMPLEX_TARGETS) | _chosen
    _real = frozenset(dtypes.REAL_TARGETS) | {_PART[c] for c in _chosen}


def chosen() -> frozenset:
    """The opted-in wide complex dtypes."""
    return _chosen


def complex_dtypes() -> frozenset:
    """The complex dtypes compiled graphs compute planar now."""
    return _complex


def real_dtypes() -> frozenset:
    """Their part dtypes: real inputs of ops that make complex values (complex, polar, view_as_complex)."""
    return _real


def tag() -> str:
    """What the choice adds to the compile path's cache tag ("" when nothing is opted in)."""
    return "".join(f"-{name}" for name, dtype in WIDE.items() if dtype in _chosen)
