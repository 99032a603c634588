"""What discovery hands the registrar: an overload that needs an override, where, and for which dtypes."""

from __future__ import annotations

import dataclasses

import torch

BACKEND, COMPOSITE = "backend", "composite"
# what probing finds per dtype: PyTorch's kernel works for every probed call, for some, or for none
SUPPORTED, PARTIAL, MISSING = "supported", "partial", "missing"


@dataclasses.dataclass
class Finding:
    """An overload that needs an override on a device: at its backend key, or also at Autograd (composite)."""

    overload: str
    level: str
    status: dict[str, str]  # dtype name -> MISSING / PARTIAL
    errors: dict[str, str]

    def dispatch_keys(self, device_type: str) -> tuple[str, ...]:
        backend = device_type.upper()
        return (f"Autograd{backend}", backend) if self.level == COMPOSITE else (backend,)


def kernel_level(full_name: str, device_type: str) -> str:
    """BACKEND where an override at the backend key takes effect (a backend kernel, or a composite-explicit
    one, which fills the backend key); COMPOSITE for composite-implicit ops, which run above it."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    if has(full_name, device_type.upper()) or has(full_name, "CompositeExplicitAutograd") or has(
        full_name, "CompositeExplicitAutogradNonFunctional"
    ):
        return BACKEND
    return COMPOSITE
