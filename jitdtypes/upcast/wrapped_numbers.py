"""Python numbers in Tensor positions ("wrapped numbers") on their way back to PyTorch's own kernel.

A Python kernel receives a wrapped number as a Python scalar, and `call_boxed` wants a Tensor there. A
zero-dim tensor of the number's own dtype (float64, int64, bool) holds the exact value, and the kernels cast
CPU scalars to the common dtype exactly as they cast wrapped numbers; only type promotion can differ, which
`call_original` handles. Those tensors are cached: building one costs many times a dictionary lookup.
"""

from __future__ import annotations

import math

import torch

from .. import dtypes

_CACHE_LIMIT = 4096
_cache: dict = {}


def exact_tensor(value, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A zero-dim tensor holding `value` (in `dtype`, by default the number's own dtype); cached and never
    written to (the schema positions it fills are not written)."""
    cls = value.__class__
    dtype = dtype or dtypes.WRAPPED_NUMBER_DTYPE[cls]
    # 0.0 == -0.0 and NaN != NaN as dict keys: signed zeros get the sign in the key, NaNs are never cached
    key = (cls, value, dtype) if value or cls is complex else (cls, value, dtype, math.copysign(1.0, value))
    tensor = _cache.get(key)
    if tensor is None:
        tensor = torch.tensor(value, dtype=dtype)
        if value == value:
            if len(_cache) >= _CACHE_LIMIT:
                _cache.clear()
            _cache[key] = tensor
    return tensor


# zero-dim dtypes that kernels compute in (opmath is the dtype itself) and that hold any number of their category
ZERO_DIM_EXACT = frozenset({torch.float32, torch.float64, torch.complex64, torch.complex128, torch.int64, torch.bool})

# result dtypes whose kernels compute in the dtype itself and cast a wrapped number to it first; ints up to
# the limit convert without rounding, so no double rounding can creep in
_CAST_FIRST = {torch.float32: 2**24, torch.complex64: 2**24, torch.float64: 2**53, torch.complex128: 2**53}


def operand_for(value, dtype: torch.dtype) -> torch.Tensor:
    """The zero-dim tensor to pass for the wrapped number `value` next to a tensor of `dtype` that is also the
    result dtype (the number's category is not higher): in `dtype` itself where the kernel would cast the
    number to it anyway (that saves the kernel a temporary copy), else in the number's own dtype,
    which promotes no further next to it."""
    limit = _CAST_FIRST.get(dtype)
    cls = value.__class__  # not bool: kernels check for bool operands (sub refuses them)
    if limit is not None and (cls is float or (cls is int and -limit <= value <= limit)):
        return exact_tensor(value, dtype)
    return exact_tensor(value)


def call_original(original, keyset, args, kwargs, scalar_positions, tensors):
    """original(args with the Python numbers at `scalar_positions` as tensors), with the promotion of wrapped
    numbers. A tensor of the number's own dtype keeps it next to dimensioned tensors of the same or higher
    category. Where it would change the result dtype, either every tensor is zero-dim and the number does not
    raise the category, which is computed on one-element views instead (the number is then cast in the
    kernel, as a wrapped one: float16 computes it in float32, int32 truncates it); or the number raises the
    category (int tensor * 2.5 -> float32), and the result dtype itself holds it as well as the kernel would.
    `tensors` are the inputs that take part in type promotion (not out= or other written arguments)."""
    scalars = [args[i] for i in scalar_positions]
    expected = dtypes.result_dtype(tensors, scalars)
    exact = [exact_tensor(s) for s in scalars]
    args = list(args)
    if dtypes.result_dtype(tensors + exact) == expected:
        zero_dims = exact
    elif tensors and all(t.dim() == 0 for t in tensors) and expected == dtypes.result_dtype(tensors):
        return _call_on_one_element_views(original, keyset, args, kwargs, scalar_positions, exact)
    else:
        zero_dims = [exact_tensor(s, expected) for s in scalars]
    for i, zero_dim in zip(scalar_positions, zero_dims):
        args[i] = zero_dim
    return original.call_boxed(keyset, *args, **kwargs)


def _call_on_one_element_views(original, keyset, args, kwargs, scalar_positions, zero_dims):
    views = {}

    def as_view(value):
        if isinstance(value, torch.Tensor) and value.dim() == 0:
            views.setdefault(id(value), (value, value.view(1)))
            return views[id(value)][1]
        return value

    args = [as_view(a) for a in args]
    kwargs = {k: as_view(v) for k, v in kwargs.items()}
    for i, zero_dim in zip(scalar_positions, zero_dims):
        args[i] = zero_dim
    result = original.call_boxed(keyset, *args, **kwargs)
    back = {id(view): value for value, view in views.values()}
    if isinstance(result, torch.Tensor):
        return back[id(result)] if id(result) in back else result.resize_(())
    return result
