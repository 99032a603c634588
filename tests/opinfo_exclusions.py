"""The one place where OpInfo ops are excused from matching complex64, with the reason."""

MIN_COVERAGE = 0.98

# Uninitialized memory: only dtype, shape and strides can be compared.
UNINITIALIZED_OPS = frozenset({
    "empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided",
})
# Values are random (drawn differently for complex64 and the 16-bit dtype) or uninitialized.
RANDOM_OPS = UNINITIALIZED_OPS | {
    "normal.in_place", "uniform", "randn", "randn_like", "rand_like", "svd_lowrank", "pca_lowrank",
}

_SPARSE = "sparse layouts are out of scope: jitdtypes covers strided tensors"
_PINV_SINGULAR = (
    "pinv of exactly singular matrices: the cut-off between zero and tiny singular values is decided on "
    "16-bit intermediates, so the result differs from complex64 by design"
)

# dtype name -> {OpInfo id: reason}
EXCLUDED: dict[str, dict[str, str]] = {
    dtype: {"sparse.sampled_addmm": _SPARSE, "to_sparse": _SPARSE, "linalg.pinv.singular": _PINV_SINGULAR}
    for dtype in ("complex32", "bcomplex32")
}
