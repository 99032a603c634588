"""Which ops get a generated CPU kernel, and of which kind (how many tensors it takes, what it returns).

Only ops whose schema is tensors plus at most `alpha` and `dtype=` (what native_guard/generated.h can check in
C++), and whose compile-path formula exists (compile_path/decompositions.py): without one the op stays an ATen
node, and its package would only call it back through AOTInductor's proxy executor (the inverse trigonometric
ops had been listed: their bcomplex32 builds failed, AOTInductor's shim lacking the dtype, and their complex32
packages ran the upcast behind that call). They take a generated kernel
where discovery found the dtype missing and the typed guard upcasts it in C++, and for the OVERRIDDEN ops,
which PyTorch serves itself, more slowly.

Packages are compiled for many elements (build.EXAMPLE_LENGTH), so Inductor splits their loops over the
CPU's threads; below `min_numel` elements a call keeps what serves it otherwise.
"""

from __future__ import annotations

UNARY, BINARY, TERNARY, REDUCTION, DIM_REDUCTION = "unary", "binary", "ternary", "reduction", "dim reduction"

GENERATED = {
    **{f"aten::{name}": UNARY for name in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "sigmoid",
        "sin", "cos", "tan", "sinh", "cosh", "tanh", "abs", "angle", "sgn", "neg")},
    **{f"aten::{name}.Tensor": BINARY for name in ("add", "sub", "mul", "div")},
    "aten::addcmul": TERNARY,  # value=1 only, as alpha
    "aten::sum": REDUCTION,
    "aten::mean": REDUCTION,
    "aten::sum.dim_IntList": DIM_REDUCTION,
    "aten::mean.dim": DIM_REDUCTION,  # mean() too: ATen's composite mean calls it over every dim
    "aten::var.correction": DIM_REDUCTION,  # the default correction (1) only; var() over every dim too
    "aten::std.correction": DIM_REDUCTION,
}

# The models of a dim reduction's package, one per layout of the reduced dims in a contiguous tensor seen as
# (outer, reduced, inner) elements (native_guard/generated.h picks one; its GeneratedModel has this order): all of
# it, the last dims (rows), the first ones (columns), the middle ones. Each is a reduction of its own for
# Inductor: the rows reduce along contiguous memory, the columns vectorize across it. Other packages hold one.
DIM_MODELS = ("whole", "rows", "columns", "middle")
# A binary op's: operands of one layout (flat), and a contiguous one with a smaller contiguous one that
# broadcasts along its leading dims (rows: a row of n elements, seen as 1 x n) or its trailing ones (columns:
# m x 1). For COMMUTATIVE ops the smaller one may come first (the package swaps them).
BINARY_MODELS = ("model", "rows", "columns")
COMMUTATIVE = frozenset({"aten::add.Tensor", "aten::mul.Tensor"})


def models(overload: str, dtype_name: str) -> tuple[str, ...]:
    """The models a call of `overload` may run, in generated.h's order: a writing form that writes_into runs
    its own package's INTO model where its operands share one layout, its functional op's package otherwise."""
    kind = GENERATED[functional(overload)]
    own = DIM_MODELS if kind == DIM_REDUCTION else BINARY_MODELS if kind == BINARY else ("model",)
    return (into_model(functional(overload), dtype_name), *own[1:]) if writes_into(overload) else own


def into_model(overload: str, dtype_name: str) -> str:
    """The model of the writing forms' own package of the functional `overload`: its tensors as lanes or words."""
    return INTO_LANES if reads(overload, dtype_name, INTO_LANES) in AS_LANES else INTO


def commutative(overload: str) -> bool:
    return functional(overload) in COMMUTATIVE


def _writing_forms() -> dict[str, str]:
    forms = {}
    for overload, kind in GENERATED.items():
        if kind == UNARY:
            forms[f"{overload}_"] = forms[f"{overload}.out"] = overload
        elif kind == BINARY:
            name = overload.removesuffix(".Tensor")
            forms[f"{name}_.Tensor"] = forms[f"{name}.out"] = overload
    return forms


# In-place and out= forms -> their functional op, whose package serves them where their own (writes_into,
# below) does not fit: native_guard/generated.h copies its result into the written tensor
WRITING = _writing_forms()


def functional(overload: str) -> str:
    """The op whose package serves `overload`: itself, or the functional op of a WRITING form."""
    return WRITING.get(overload, overload)


# A writing form whose result has its inputs' dtype also gets a package of its own, shared by the in-place and
# out= forms: one model exported as `out.copy_(op(*inputs))` over one flat layout, so that AOTInductor writes
# the result straight into the written tensor (its first input) instead of a new tensor that is then copied
# (bcomplex32 x.add_(w) at 1M elements had run at 0.50x complex64's in-place add, for the allocation and the
# copy). Its tensors cross as int32 words (INTO) or, for LANES ops, as flat float16/bfloat16 lanes
# (INTO_LANES): a view of the written tensor to another dtype inside the model, or a complex32 one, makes
# Inductor compute into a buffer of its own and copy that. abs.out and angle.out (a real result) keep the copy.
INTO, INTO_LANES = "into", "into_lanes"
LIBRARY_SUFFIX = ".so"  # a package holds `<model><LIBRARY_SUFFIX>` per model
_REAL_RESULT = frozenset({"aten::abs", "aten::angle"})


def writes_into(overload: str) -> bool:
    return overload in WRITING and functional(overload) not in _REAL_RESULT

# How a kernel reads the 16-bit storage (compile_path/bits.py has the default, WORDS, and its cost).
# LANES: ops that compute each part from the same part of their inputs are their real op on the interleaved
# parts as one flat float16/bfloat16 tensor: contiguous loads Inductor vectorizes with the CPU's conversions.
# HALVES: a scalar loop of float16 loads (bits.read_as_halves), for a cheap formula (complex32 abs), where the
# words' decoding would cost more than the formula.
# PAIRS: for complex32 ops that read both parts of an element and compute little, each lane of the flat
# parts takes its element's other part from its neighbour and runs the op's formula (build.PairsKernel): the
# formula runs twice, on vectorized loads, instead of once on words decoded element by element. bcomplex32's
# words cost only a shift per part, so its mul keeps them, and a compute-bound formula (exp, div) keeps them
# too. LANES and PAIRS packages spread a column operand (one element per row) along its row by parity
# (build.LanesKernel). Each choice was measured against words and complex64: `python -m benchmarks.cpu_eager`.
WORDS, LANES, HALVES, PAIRS = "words", "lanes", "halves", "pairs"
AS_LANES = frozenset({LANES, PAIRS})  # the package's tensors are float16/bfloat16 lanes
_LANES = frozenset({"aten::add.Tensor", "aten::sub.Tensor", "aten::neg"})
_PAIRS = frozenset({("aten::mul.Tensor", "complex32"), ("aten::addcmul", "complex32")})
_HALVES = frozenset({("aten::abs", "complex32")})


# Full reductions compiled for one thread (build.py), by op name: where Inductor's split of a full reduction
# over the threads measured slower (bcomplex32 sum is memory-bound enough that the split only adds its
# combining pass; complex32 sum, which decodes more per element, gains from both cores).
SERIAL = frozenset({("aten::sum", "bcomplex32")})


def serial(overload: str, dtype_name: str) -> bool:
    return (overload.split(".")[0], dtype_name) in SERIAL


# A sum or mean over leading or middle dims is that reduction of each part: over the lanes, whose reduced dims
# are the same and whose kept last dim is twice as long, contiguous (over words, Inductor's vector code does the
# bit casts element by element). Reductions along the last dim (rows, whole) keep the words: their lanes would
# alternate parts.
_LANES_MODELS = frozenset({"columns", "middle"})
# A variance adds both parts' variances, which lanes would keep apart: words in every model.
_PARTS_ADDED = frozenset({"aten::var.correction", "aten::std.correction"})


def reads(overload: str, dtype_name: str, model: str = "model") -> str:
    if GENERATED[overload] == DIM_REDUCTION:
        return LANES if model in _LANES_MODELS and overload not in _PARTS_ADDED else WORDS
    if overload in _LANES:
        return LANES
    if (overload, dtype_name) in _PAIRS:
        return PAIRS
    return HALVES if (overload, dtype_name) in _HALVES else WORDS


# Ops PyTorch serves itself for a 16-bit complex dtype on CPU, but more slowly than the generated kernel once
# the tensor is large enough (ATen's ComplexHalf loops are scalar code, its full sums accumulate one element at
# a time); their in-place and out= forms with them. Each op joined once the generated kernel measured faster
# than PyTorch's from the size the provider serves on (`python -m benchmarks.cpu_eager`); bcomplex32 var also
# covers calls that raise in ATen (conj_cpu is missing).
OVERRIDDEN = frozenset({"aten::sum", "aten::abs", "aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor",
                        "aten::addcmul", "aten::var.correction", "aten::std.correction",
                        "aten::add_.Tensor", "aten::sub_.Tensor", "aten::mul_.Tensor",
                        "aten::add.out", "aten::sub.out", "aten::mul.out"})

# The fewest elements a call needs before the package is faster than what serves it otherwise: the C++ upcast,
# or PyTorch's kernel for OVERRIDDEN ops. Measured on the idle 2-core machine, 10th percentile of 300 calls,
# best of 5 rounds, two runs (package / otherwise, us): unary ops win from 64 elements (exp 2.5/4.1, log
# 2.7/5.0, sin 4.3/5.2, angle 3.6/3.5; at 8 elements up to 4.0/2.6); binary ones from about 4096, where the
# runs agree (complex32 div 7.2/17.8; bcomplex32 mul 3.5/7.2 and 7.1/5.6, sub 6.5/5.6, 8192: 7.6/10.7);
# complex32 sum from 2048 (3.4/4.0, 16384: 6.5/12.1); PyTorch's bcomplex32 sum is as fast up to 262144
# elements (32.3/33.8); complex32 add 1024 (3.2/3.9, 512: 3.6/2.6); var (all / rows of 64 / columns, us, 20th
# percentile of 200 calls) complex32 from 512 (6.6/5.3/7.8 against 13.5/16.1/32.6; 256: 8.8/5.0/5.2 against
# 10.3/12.0/29.6), bcomplex32 from 1024 (15.3/10.1/10.8 against 17.9/22.2/34.2; 512: 14.8 against 12.2).
_MIN_NUMEL_BY_KIND = {UNARY: 64, BINARY: 4096, TERNARY: 1024, REDUCTION: 4096, DIM_REDUCTION: 4096}
_MIN_NUMEL = {
    ("aten::sum", "complex32"): 2048,
    ("aten::sum", "bcomplex32"): 262144,
    ("aten::add.Tensor", "complex32"): 1024,
    ("aten::sub.Tensor", "complex32"): 1024,
    ("aten::var.correction", "complex32"): 512,
    ("aten::var.correction", "bcomplex32"): 1024,
    ("aten::std.correction", "complex32"): 512,  # var's: one square root more
    ("aten::std.correction", "bcomplex32"): 1024,
}


def min_numel(overload: str, dtype_name: str) -> int:
    """At least 2 in every case: export specializes lengths 0 and 1, so the package's symbolic one starts at 2."""
    overload = functional(overload)
    return _MIN_NUMEL.get((overload, dtype_name), _MIN_NUMEL_BY_KIND[GENERATED[overload]])


# dtypes AOTInductor's C shim can pass (the others cross as int32 words)
SHIM_DTYPES = frozenset({"complex32"})
