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

# Ops PyTorch serves itself for a 16-bit complex dtype on CPU, but more slowly than the generated kernel once
# the tensor is large enough (ATen's ComplexHalf loops are scalar code, its full sums accumulate one element at
# a time), -> the fewest elements a call needs before the generated kernel takes it from PyTorch's kernel.
# Measured (10th percentile of 300 calls, median of 5 interleaved rounds, idle 2-core machine; generated /
# PyTorch's, us): complex32 sum 64: 3.9/5.7, 4096: 5.7/10.4; abs 32: 5.1/5.4 (PyTorch's at both), 64: 3.2/6.1,
# 4096: 22.9/90.6; add 512: 4.8/4.7, 1024: 5.1/7.4 (sub alike); mul 1024: 5.3/4.2, 4096: 9.2/10.9;
# bcomplex32 sum 64: 4.1/5.3, 4096: 5.3/6.4. Under 64 elements a package call's fixed cost (about 3.5 us
# against PyTorch's 2) decides.
OVERRIDDEN = {
    "aten::sum": 64,
    "aten::abs": 64,
    "aten::add.Tensor": 1024,
    "aten::sub.Tensor": 1024,
}
