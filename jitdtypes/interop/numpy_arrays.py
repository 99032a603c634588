"""numpy arrays of complex32 and bcomplex32, through ml_dtypes (the `numpy` extra).

PyTorch's conversions know a fixed list of numpy types. jitdtypes puts a thin wrapper in front of
`Tensor.numpy` (which `np.asarray(t)` and `t.__array__` call), `torch.from_numpy`, `torch.as_tensor` and
`torch.tensor`: each calls PyTorch's own function first and steps in only when it rejects the dtype, so every
other call returns PyTorch's result, or raises PyTorch's error, with no work beyond one Python call.

A 16-bit complex element and an int32 have the same size, so both directions reinterpret the memory as int32
and let PyTorch's own int32 conversion handle shapes, strides, sharing, copies, devices and its errors
(negative strides, byte order, read-only arrays); the values travel as bits, NaN payloads and signed zeros
included. Only PyTorch's name lookups are patched: code that bound `from torch import from_numpy` before
`import jitdtypes` keeps the unwrapped function. A warning PyTorch raises inside a wrapped call (torch.tensor
of a tensor, a read-only array) points at the wrapper's line instead of the caller's.
"""

from __future__ import annotations

import functools
import sys

import torch

try:
    import numpy as np
except ImportError:  # PyTorch runs without numpy: then there are no arrays, and nothing to install
    np = None

from .. import dtypes

# the 16-bit complex dtypes and their numpy twins' names in ml_dtypes
_ML_DTYPES_NAMES = {dtype: dtypes.ROW[dtype].numpy for dtype in dtypes.COMPLEX_TARGETS}

# PyTorch's own rejections, the only errors the wrappers look past (argument errors and the like pass through)
_UNSUPPORTED_TENSOR = "Got unsupported ScalarType"
_UNSUPPORTED_ARRAY = "can't convert np.ndarray of type"
# flips the sign bit of one 16-bit half of a complex element
_SIGN_BIT = -0x8000


def numpy_dtype(torch_dtype: torch.dtype) -> np.dtype:
    """The ml_dtypes numpy dtype of a 16-bit complex torch dtype; a TypeError naming the extra without it."""
    try:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, _ML_DTYPES_NAMES[torch_dtype]))
    except (ImportError, AttributeError) as exc:
        name = dtypes.SCALAR_TYPE_NAMES[torch_dtype]
        raise TypeError(
            f"Got unsupported ScalarType {name}: numpy arrays of {dtypes.NAMES[torch_dtype]} need ml_dtypes >= 0.6: "
            'pip install "jitdtypes[numpy]"'
        ) from exc


def _torch_dtype_of(array) -> torch.dtype | None:
    # an ml_dtypes array can only exist once ml_dtypes is imported: never import it here
    ml_dtypes = sys.modules.get("ml_dtypes")
    if ml_dtypes is None or not isinstance(array, np.ndarray):
        return None
    for torch_dtype, name in _ML_DTYPES_NAMES.items():
        if hasattr(ml_dtypes, name) and array.dtype.type is getattr(ml_dtypes, name):
            return torch_dtype
    return None


def _absent_dtype_of(data) -> str | None:
    """The name of an ml_dtypes 16-bit complex dtype of `data` that this torch build lacks."""
    ml_dtypes = sys.modules.get("ml_dtypes")
    kind = getattr(getattr(data, "dtype", None), "type", None)
    return next((name for name in dtypes.ABSENT if kind is getattr(ml_dtypes, name, ())), None)


# -- tensor -> numpy ---------------------------------------------------------------------------------------


def _words(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's elements as int32 bit patterns, lazy conj/neg flags applied as sign-bit flips (exact for
    every value, and needing no 16-bit complex kernel)."""
    if not (tensor.is_conj() or tensor.is_neg()):
        return tensor.view(torch.int32)
    raw = tensor.conj() if tensor.is_conj() else tensor
    raw = torch._neg_view(raw) if raw.is_neg() else raw
    halves = torch.view_as_real(raw).view(torch.int16).clone()
    if tensor.is_neg():
        halves[..., 0].bitwise_xor_(_SIGN_BIT)
    if tensor.is_neg() != tensor.is_conj():
        halves[..., 1].bitwise_xor_(_SIGN_BIT)
    return halves.view(torch.int32).squeeze(-1)


def _tensor_to_numpy(original_numpy, tensor: torch.Tensor, force: bool) -> np.ndarray:
    """What `tensor.numpy(force=force)` gives for complex64, in the tensor's own dtype."""
    array_dtype = numpy_dtype(tensor.dtype)
    words = _words(tensor.detach())
    if force:
        words = words.cpu()
    return original_numpy(words).view(array_dtype)


def _is_python_subclass(tensor: torch.Tensor) -> bool:
    return torch._C._dispatch_keys(tensor).has(torch._C.DispatchKey.Python)


def _numpy_method(original_numpy):
    @functools.wraps(original_numpy)
    def numpy(self, *args, **kwargs):
        # numpy(force=True) copies to the CPU and resolves conj/neg bits before it looks at the dtype: ours go
        # straight to the conversion after PyTorch's two checks that come before (subclass, layout)
        if kwargs and self.dtype in _ML_DTYPES_NAMES and kwargs.get("force") is True and len(kwargs) == 1:
            if not args and self.layout == torch.strided and not _is_python_subclass(self):
                return _tensor_to_numpy(original_numpy, self, force=True)
        try:
            return original_numpy(self, *args, **kwargs)
        except TypeError as exc:
            if not (str(exc).startswith(_UNSUPPORTED_TENSOR) and self.dtype in _ML_DTYPES_NAMES):
                raise
        # PyTorch made its checks (layout, device, requires_grad, conj and neg bits) before rejecting the dtype
        return _tensor_to_numpy(original_numpy, self, force=False)

    return numpy


# -- numpy -> tensor ---------------------------------------------------------------------------------------


def _array_and_dtype(data) -> tuple[np.ndarray, torch.dtype] | tuple[None, None]:
    """`data` (an ml_dtypes array, scalar, or nested sequence of them) as an array with its torch dtype."""
    if isinstance(data, np.ndarray):
        array = data
    elif isinstance(data, (np.generic, list, tuple)):
        try:
            array = np.asarray(data)
        except Exception:  # noqa: BLE001 - not array-like after all: PyTorch's own error stands
            return None, None
    else:
        return None, None
    torch_dtype = _torch_dtype_of(array)
    return (array, torch_dtype) if torch_dtype is not None else (None, None)


def _as_words(array: np.ndarray) -> np.ndarray:
    """The same memory as int32 (same item size: any strides and offset), with the array's byte order, so
    that PyTorch rejects a non-native one as it would any array."""
    word = np.dtype(np.int32)
    return array.view(word if array.dtype.isnative else word.newbyteorder())


def _from_words(words: torch.Tensor, torch_dtype: torch.dtype) -> torch.Tensor:
    """A tensor of `torch_dtype` on the int32 tensor's storage, not a view (as PyTorch's conversions give)."""
    result = torch.empty(0, dtype=torch_dtype, device=words.device)
    return result.set_(words.untyped_storage(), words.storage_offset(), words.shape, words.stride())


def _converter(original, keywords_for_words, finish):
    """A wrapper for one of PyTorch's array-to-tensor functions: `original` runs first; when it rejects an
    ml_dtypes array, it runs again on the array's int32 words with `keywords_for_words`, and `finish` turns
    the reinterpreted tensor into the final result with the remaining keywords."""

    @functools.wraps(original)
    def convert(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except TypeError as exc:
            data = args[0] if len(args) == 1 else kwargs.get("data") if not args else None
            array, torch_dtype = _array_and_dtype(data)
            if not str(exc).startswith(_UNSUPPORTED_ARRAY):
                raise
            if array is None:
                absent = _absent_dtype_of(data)
                if absent:
                    raise TypeError(f"{exc} (ml_dtypes.{absent} arrays: {dtypes.ABSENT[absent]})") from exc
                raise
        for_words = {k: v for k, v in kwargs.items() if k in keywords_for_words}
        rest = {k: v for k, v in kwargs.items() if k not in keywords_for_words and k != "data"}
        return finish(_from_words(original(_as_words(array), **for_words), torch_dtype), **rest)

    return convert


def _shared(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


def _converted(tensor: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    return tensor if dtype is None else tensor.to(dtype)


def _new_tensor(tensor: torch.Tensor, dtype: torch.dtype | None = None, requires_grad: bool = False) -> torch.Tensor:
    tensor = _converted(tensor, dtype)
    if requires_grad:
        if not (tensor.is_floating_point() or tensor.is_complex()):  # torch.tensor's wording, not requires_grad_'s
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        tensor.requires_grad_()
    return tensor


# (owner, attribute, wrapper factory): torch.from_numpy shares memory; as_tensor shares it unless dtype= or
# device= asks for a conversion; torch.tensor always copies.
_PATCHES = (
    (torch.Tensor, "numpy", _numpy_method),
    (torch, "from_numpy", lambda original: _converter(original, (), _shared)),
    (torch, "as_tensor", lambda original: _converter(original, ("device",), _converted)),
    (torch, "tensor", lambda original: _converter(original, ("device", "pin_memory"), _new_tensor)),
)
_MISSING = object()
# one wrapper per (owner, attribute, original) for the process: compilers know functions by identity
_wrappers: dict[tuple, object] = {}
_installed: list[tuple[object, str, object, object]] = []  # (owner, attribute, own attribute before, wrapper)


def _wrapper(owner, name: str, original, make_wrapper):
    key = (owner, name, original)
    if key not in _wrappers:
        wrapper = make_wrapper(original)
        _stand_in_for_compilers(wrapper, original, owner, name)
        _wrappers[key] = wrapper
    return _wrappers[key]


def _stand_in_for_compilers(wrapper, original, owner, name: str) -> None:
    """TorchScript knows PyTorch's functions by identity, from a table it fills once with whatever torch.tensor
    is at that moment: the wrapper and the original both name the ATen op there, whichever is installed."""
    if owner is not torch:
        return
    from torch.jit import _builtins

    op = f"aten::{name}"
    if _builtins._builtin_table is None:
        _builtins._builtin_ops.extend([(wrapper, op), (original, op)])
    else:
        _builtins._register_builtin(wrapper, op)


def _same_function_for_dynamo(wrapper, original) -> None:
    """torch.compile (dynamo) also keys its rules and handlers by function object, in tables filled once: each
    of the pair gets the entry the other has, so that dynamo sees PyTorch's function through either. Called on
    every install and uninstall; tables not filled yet pick up whichever is installed when they are."""
    trace_rules = sys.modules.get("torch._dynamo.trace_rules")
    torch_variables = sys.modules.get("torch._dynamo.variables.torch")
    tables = []
    if trace_rules is not None and trace_rules.get_torch_obj_rule_map.cache_info().currsize:
        tables.append(trace_rules.get_torch_obj_rule_map())
    handlers = getattr(getattr(torch_variables, "TorchInGraphFunctionVariable", None), "_get_handlers", None)
    if handlers is not None and handlers.cache_info().currsize:
        tables.append(handlers())
    for table in tables:
        for known, unknown in ((wrapper, original), (original, wrapper)):
            if known in table and unknown not in table:
                table[unknown] = table[known]


def install() -> None:
    """Put the wrappers in place (idempotent)."""
    if _installed or np is None:
        return
    for owner, name, make_wrapper in _PATCHES:
        before = owner.__dict__.get(name, _MISSING)
        original = getattr(owner, name)
        wrapper = _wrapper(owner, name, original, make_wrapper)
        setattr(owner, name, wrapper)
        _same_function_for_dynamo(wrapper, original)
        _installed.append((owner, name, before, wrapper))


def uninstall() -> None:
    """Restore PyTorch's functions; a wrapper that someone else has since replaced is left to them."""
    while _installed:
        owner, name, before, wrapper = _installed.pop()
        if owner.__dict__.get(name) is not wrapper:
            continue
        if before is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, before)
        _same_function_for_dynamo(wrapper, getattr(owner, name))
