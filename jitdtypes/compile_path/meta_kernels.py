"""Meta kernels that give fake tensors eager jitdtypes' dtypes and shapes for every op jitdtypes overrides.

Dynamo, AOTAutograd and torch.export run each op on fake tensors first. PyTorch's meta kernels do not know
16-bit complex well: some map bcomplex32 results to bcomplex32 where eager returns bfloat16 (_fft_c2r, svd,
eigh: their toRealValueType has no bcomplex32), others reject "Low precision dtypes" (linalg_inv_ex,
linalg_slogdet). The first kind made `torch.compile` of an FNO layer in complex-bf16 fail.

For each overload with a jitdtypes override and a Meta kernel, a Meta kernel is registered in front of
PyTorch's. Calls without a 16-bit dtype go straight through. Calls with one run PyTorch's meta kernel and
also the upcast path on meta tensors (what eager jitdtypes computes, widened and rounded back); PyTorch's
result is kept when it agrees on dtypes and shapes (it knows the strides best), else the upcast one is
returned. This is trace-time work only.
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_flatten

from .. import dtypes, registrar, schema, upcast

_META_KEYSET = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)


def _has_meta_kernel(name: str) -> bool:
    """A Meta kernel to put ours in front of; composite-implicit ops have none (fake tensors decompose them,
    and torch.library refuses Meta kernels for them)."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    if has(name, "CompositeImplicitAutograd"):
        return False
    return has(name, "Meta") or has(name, "CompositeExplicitAutograd")


def _signature(value) -> list:
    return [(t.dtype, tuple(t.shape)) for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


def _meta_kernel(info: schema.Overload, original, targets: frozenset):
    call_original = original.call_boxed

    def kernel(*args, **kwargs):
        values = tree_flatten((args, kwargs))[0]
        if not any(isinstance(v, torch.Tensor) and v.dtype in targets for v in values):
            return call_original(_META_KEYSET, *args, **kwargs)
        try:
            result = call_original(_META_KEYSET, *args, **kwargs)
        except Exception as exc:
            if not registrar.looks_like_dtype_error(exc):
                raise
            return upcast.run(info, args, kwargs)
        try:
            expected = upcast.run(info, args, kwargs)
        except Exception:  # the upcast path cannot say (data-dependent output): trust PyTorch
            return result
        return result if _signature(result) == _signature(expected) else expected

    kernel.__name__ = f"jitdtypes_meta_{info.short_name.replace('.', '_')}"
    return kernel


def install(findings_by_device: dict) -> torch.library.Library:
    """Register the Meta kernels for every overridden overload (findings of all devices) that has one;
    destroying the returned library removes them."""
    targets_by_name: dict[str, set] = {}
    for findings in findings_by_device.values():
        for finding in findings:
            known = {dtypes.BY_NAME[n] for n in finding.status if n in dtypes.BY_NAME}
            targets_by_name.setdefault(finding.overload, set()).update(known)
    library = torch.library.Library("aten", "IMPL")
    try:
        for name, targets in sorted(targets_by_name.items()):
            try:
                info = schema.overload(name)
            except RuntimeError:
                continue  # an overload this torch build does not have
            if not targets or info.mutates or not _has_meta_kernel(name):
                continue
            original = torch.library.get_kernel(name, "Meta")
            library.impl(info.short_name, _meta_kernel(info, original, frozenset(targets)), "Meta")
    except BaseException:
        library._destroy()
        raise
    return library
