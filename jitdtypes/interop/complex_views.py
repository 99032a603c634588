"""Ways into bcomplex32 that PyTorch rejects outright: view_as_complex on a bfloat16 [..., 2] tensor.

(torch.complex(bf16, bf16) needs no entry here: discovery finds it like any other op that turns real
16-bit input into complex output.)
"""

from __future__ import annotations

import torch

from .. import dtypes


def _check_complex_view(x: torch.Tensor) -> None:
    # The same conditions, and messages, as ATen's view_as_complex.
    if x.dim() == 0 or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if x.stride(-1) != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(stride % 2 for stride in x.stride()[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if x.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")


def _view_as_complex_kernel(original, keyset):
    call_native = original.call_boxed

    def view_as_complex(x):
        if x.dtype is not torch.bfloat16:
            return call_native(keyset, x)
        _check_complex_view(x)
        return x.view(dtypes.BCOMPLEX32).squeeze(-1)

    return view_as_complex


# (overload, dispatch keys, kernel factory taking the original kernel and the constant keyset to call it
# with, the input dtypes the kernel handles itself)
ENTRY_POINTS = (
    ("aten::view_as_complex", ("CPU", "CUDA", "Meta"), _view_as_complex_kernel, (torch.bfloat16,)),
)


def entries(backend_keys):
    """(overload, dispatch key, kernel factory, handled dtypes) to register for these backends (and Meta)."""
    if dtypes.BCOMPLEX32 is None:
        return
    wanted = {k.upper() for k in backend_keys} | {"META"}
    for name, keys, factory, handled in ENTRY_POINTS:
        for key in keys:
            if key.upper() in wanted:
                yield name, key, factory, handled
