"""Which ops get a generated CPU kernel, and of which kind (how many tensors it takes, what it returns).

Only ops whose schema is tensors plus at most `alpha` and `dtype=` (what native_guard/generated.h can check in
C++), and whose compile-path formula exists (compile_path/decompositions.py). They take a generated kernel
only where discovery found the dtype missing and the typed guard upcasts it in C++; ops PyTorch serves itself
(complex32 add, sub, mul; sum) keep PyTorch's kernel.

MIN_NUMEL: the package beat the C++ upcast at every size measured (10th percentile of 200 calls, idle 2-core
machine, 8 to 16384 elements: complex32 exp 12.1 against 13.7 us at 8 elements, 61 against 327 us at 16384;
complex32 div 8.0/9.5 and 35.7/88.3; bcomplex32 mul 7.4/9.3 and 13.3/22.3; bcomplex32 exp 7.7/8.9 and
36.5/283.9), so it serves every size its symbolic length allows (n >= 2: export specializes 0 and 1).
"""

from __future__ import annotations

UNARY, BINARY, REDUCTION = "unary", "binary", "reduction"

GENERATED = {
    **{f"aten::{name}": UNARY for name in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "sigmoid",
        "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
        "abs", "angle", "sgn", "neg")},
    **{f"aten::{name}.Tensor": BINARY for name in ("add", "sub", "mul", "div")},
    "aten::sum": REDUCTION,
    "aten::mean": REDUCTION,
}

MIN_NUMEL = 2
