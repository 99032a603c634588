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

import threading

import torch
from torch.utils._pytree import tree_flatten

from .. import dtypes, schema, torch_compat, upcast
from ..upcast.error_messages import looks_like_dtype_error

_META_KEYSET = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)
# Set while a kernel here runs: the upcast path's own conversions (clone, neg ...) take PyTorch's meta kernels.
_inside = threading.local()


def _has_meta_kernel(name: str) -> bool:
    """A Meta kernel to put ours in front of; composite-implicit ops have none (fake tensors decompose them,
    and torch.library refuses Meta kernels for them)."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    if has(name, "CompositeImplicitAutograd"):
        return False
    return any(has(name, key) for key in ("Meta", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional"))


def _signature(value) -> list:
    return [(t.dtype, tuple(t.shape)) for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


def _original_meta(info: schema.Overload):
    """PyTorch's Meta kernel as a callable. A Python meta function (torch._meta_registrations) is called
    directly: through torch.library.get_kernel, a Python kernel called while a dispatch mode is active is
    dispatched again by name, which would reach the kernel registered here instead."""
    python_meta = info.op.py_kernels.get(torch._C.DispatchKey.Meta)
    if python_meta is not None:
        return python_meta
    call_boxed = torch.library.get_kernel(info.full_name, "Meta").call_boxed
    return lambda *args, **kwargs: call_boxed(_META_KEYSET, *args, **kwargs)


def _meta_kernel(info: schema.Overload, call_original, targets: frozenset):

    def kernel(*args, **kwargs):
        values = tree_flatten((args, kwargs))[0]
        if getattr(_inside, "active", False) or not any(
            isinstance(v, torch.Tensor) and v.dtype in targets for v in values
        ):
            return call_original(*args, **kwargs)
        _inside.active = True
        try:
            return _checked(info, call_original, args, kwargs)
        finally:
            _inside.active = False

    kernel.__name__ = f"jitdtypes_meta_{info.short_name.replace('.', '_')}"
    return kernel


def _checked(info: schema.Overload, call_original, args, kwargs):
    """PyTorch's meta result where it agrees with the upcast path on dtypes and shapes, else the upcast one."""
    try:
        result = call_original(*args, **kwargs)
    except Exception as exc:
        if not looks_like_dtype_error(exc):
            raise
        return upcast.run(info, args, kwargs)
    try:
        expected = upcast.run(info, args, kwargs)
    except Exception:  # the upcast path cannot say (data-dependent output): trust PyTorch
        return result
    return result if _signature(result) == _signature(expected) else expected


class MetaKernels:
    """The registered kernels; remove() restores PyTorch's."""

    def __init__(self) -> None:
        self.library = torch.library.Library("aten", "IMPL")
        self.ops: list[torch._ops.OpOverload] = []
        self.python_kernels: list[tuple[torch._ops.OpOverload, object]] = []  # (op, PyTorch's python meta)

    def add(self, info: schema.Overload, targets: frozenset) -> None:
        kernel = _meta_kernel(info, _original_meta(info), targets)
        torch_compat.impl(self.library, info.short_name, kernel, "Meta")
        python_meta = info.op.py_kernels.get(torch._C.DispatchKey.Meta)
        if python_meta is not None:
            # Under the Python dispatcher (Dynamo's fake-tensor propagation) a Python meta function in
            # op.py_kernels is used instead of the dispatcher's Meta kernel: it is replaced too.
            info.op.py_kernels[torch._C.DispatchKey.Meta] = kernel
            self.python_kernels.append((info.op, python_meta))
        self.ops.append(info.op)
        _forget_dispatch_choices(info.op)

    def remove(self) -> None:
        for op, python_meta in reversed(self.python_kernels):
            op.py_kernels[torch._C.DispatchKey.Meta] = python_meta
        self.python_kernels.clear()
        self.library._destroy()
        for op in self.ops:
            _forget_dispatch_choices(op)
        self.ops.clear()


def _forget_dispatch_choices(op: torch._ops.OpOverload) -> None:
    # The Python dispatcher caches which kernel serves each key; a cached choice that outlives the kernel
    # it names is a crash waiting for the next torch.compile.
    op._dispatch_cache.clear()


def install(findings_by_device: dict) -> MetaKernels:
    """Register the Meta kernels for every overridden overload (findings of all devices) that has one."""
    targets_by_name: dict[str, set] = {}
    for findings in findings_by_device.values():
        for finding in findings:
            known = {dtypes.BY_NAME[n] for n in finding.status if n in dtypes.BY_NAME}
            targets_by_name.setdefault(finding.overload, set()).update(known)
    kernels = MetaKernels()
    try:
        for name, targets in sorted(targets_by_name.items()):
            try:
                info = schema.overload(name)
            except RuntimeError:
                continue  # an overload this torch build does not have
            if targets and not info.mutates and _has_meta_kernel(name):
                kernels.add(info, frozenset(targets))
    except BaseException:
        kernels.remove()
        raise
    return kernels
