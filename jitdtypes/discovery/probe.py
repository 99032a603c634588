"""Find out, by running it, whether an ATen overload supports the 16-bit dtypes on a device.

Arguments are synthesized from the schema for a few shapes. A case counts only when the 32-bit reference
(complex64, or float32 for ops that turn real input into complex output) succeeds; the same call with the
16-bit dtype then either works or not. Nothing here is specific to a torch version.

On CUDA a failing kernel (a device-side assert, an illegal address) raises "CUDA error: ..." and can leave the
context unusable for every later call in the process. Each call is synchronized so the error surfaces in the
call that caused it; then a tiny computation tells whether the device still works. If it does not, probing
raises DeviceBroken: the overload's verdict is "crashed" and the process must not probe anything else.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable

import torch

from .. import dtypes, schema
from ..findings import MISSING, PARTIAL, SUPPORTED
from ..schema import OPTIONAL_TENSOR, OTHER, TENSOR_LIST, Overload

SHAPES = ((3, 3), (4, 4), (2, 3, 3), (2, 2, 3, 3), (5,), ())
SQUARE_SHAPES = ((3, 3), (2, 3, 3))
SUCCESSES_WANTED = 2  # reference successes per data kind before we stop trying shapes

# Never probed: other backends and layouts, ops that only make sense with special arguments or global
# state, and the conversion ops the upcast path relies on (overriding those would recurse).
SKIP_PREFIXES = (
    "_cudnn", "cudnn", "miopen", "_mkldnn", "mkldnn", "_mps", "_nested", "nested", "_sparse", "sparse",
    "to_sparse", "_to_sparse", "_to_dense", "to_dense", "to_mkldnn", "_coalesce", "coalesce", "quantize",
    "_quantize", "fake_quantize", "_fake_quantize", "q_", "_make_per", "fbgemm", "_fbgemm", "_cslt",
    "_cufft", "_test", "_debug", "_print", "_assert", "sym_", "_functional_", "_nnpack", "_use_",
    "record_stream", "_pin_memory", "pin_memory", "is_", "_is_", "_has_", "_xnnpack", "_vulkan",
    "_efficientzerotensor", "set_", "_set_", "resize", "_resize", "as_strided", "_unsafe", "unsafe_",
    "_make_dual", "_unpack_dual", "_fw_primal", "lift", "_lazy", "_propagate_xla", "_version", "retain_grad",
    "requires_grad_", "_backward", "output_nr", "_dimI", "_dimV", "_nnz", "dense_dim", "sparse_dim",
    "_async", "_dyn_quant", "_weight_int", "_convert_weight", "_scaled", "_grouped_mm", "_flash",
    "_efficient_attention", "_fused_sdp", "_scaled_dot_product_", "_triton", "_mkl", "empty", "new_empty",
    "_empty", "_fused_moving_avg", "_chunk_cat", "_pack_padded", "_pad_packed", "_sobol", "_validate",
    "_check", "_foobar", "_jagged", "_padded_dense", "segment_reduce", "_segment_reduce", "_transform",
    "_reshape_from", "_shape_as", "_dimension", "_cast_", "_sym_", "_make_dep", "_wrapped_", "_autocast",
    "_amp", "_fused_adam", "_fused_adagrad", "_fused_sgd", "_dirichlet", "_standard_gamma",
    "_sample_dirichlet", "_fill_mem_eff", "_thnn_fused_", "_int_mm", "_weight_norm_interface",
    "_add_batch_dim", "_remove_batch_dim", "_linalg_check", "_saturate_weight", "_copy_from",
    # real-only nn kernels that crash on made-up arguments (each crash costs a child restart)
    "_batch_norm", "native_batch_norm", "_native_batch_norm", "embedding_bag", "_embedding_bag",
    "fractional_max_pool", "_slow_conv2d_backward", "_thnn_differentiable",
)
SKIP_NAMES = frozenset({
    "to", "copy_", "detach", "detach_", "alias", "item", "_local_scalar_dense", "conj", "_conj",
    "resolve_conj", "resolve_neg", "_neg_view", "contiguous", "view_as_real", "view_as_complex",
})
SKIP_TYPES = ("Storage", "Stream", "Dimname", "__torch__", "Any", "Layout]]")

_INT_BY_NAME = {
    "dim": 0, "dim0": 0, "dim1": 1, "index": 0, "start": 0, "end": 1, "step": 1, "length": 1, "k": 1,
    "groups": 1, "diagonal": 0, "offset": 0, "chunks": 1, "sections": 1, "split_size": 1, "n": 3,
    "correction": 1, "unbiased": 1, "num_classes": 3, "window_length": 3, "steps": 3, "upscale_factor": 1,
    "downscale_factor": 1, "blocksize": 1, "ord": 2, "signal_ndim": 1, "batch_dim": 0,
}
# Index, class-target and count tensors are zeros: in range for every non-empty dimension and class count, so
# CUDA's bounds asserts never fire (a device-side assert poisons the whole process, see DeviceBroken).
_INDEX_NAMES = ("index", "indices", "idx", "offsets", "lengths", "target", "repeats", "sorted_sequence_idx")
# Tensors that must hold probabilities, rates, counts or deviations: negative values trip CUDA kernel asserts
# (bernoulli, multinomial, binary_cross_entropy) or are invalid. They get values in (0, 1].
_NONNEGATIVE_NAMES = ("p", "prob", "probs", "std", "count")
_NONNEGATIVE_SELF_OPS = frozenset({
    "aten::bernoulli", "aten::bernoulli_", "aten::multinomial", "aten::poisson",
    "aten::binary_cross_entropy", "aten::binary_cross_entropy_backward",
})
_BOOL_NAMES = ("mask", "condition")
# Arguments that are vectors next to matrices (mv, addmv, orgqr's tau, lu pivots, ...).
_VECTOR_NAMES = ("vec", "vec1", "vec2", "tau", "input2", "pivots", "LU_pivots")
_INT32_NAMES = ("pivots", "LU_pivots")
_REDUCE_BY_OP = {"aten::scatter_reduce": "sum", "aten::scatter_reduce_": "sum", "aten::index_reduce": "mean",
                 "aten::index_reduce_": "mean"}
# Some kernels support a dtype for one value of a string argument only (matrix_norm: "fro" but not "nuc").
_STR_CHOICES = {
    "reduce": ("add", "multiply"), "approximate": ("none",), "padding_mode": ("zeros",),
    "mode": ("reduced", "complete", "r"), "UPLO": ("L",), "ord": ("fro", "nuc"), "rounding_mode": ("trunc",),
}
# Window arguments choose a kernel's path: unfold_backward copies disjoint windows (step >= size) but runs
# unfold_backward_cpu, which lacks ComplexHalf, on overlapping ones. Each entry is probed; any failure: partial.
WINDOWS = ({}, {"size": 2, "step": 1, "kernel_size": 2, "stride": 1})

# A backward overload gets the arguments its forward call would hand it: the forward overload (its name less
# "_backward", or this table) runs on made-up arguments, its result is the incoming gradient, and arguments
# named as the forward's (or its results) are the forward's.
_FORWARD_OF = {"aten::col2im": "aten::im2col"}
_GRADIENT_NAMES = ("grad_output", "grad", "grad_out", "grad_in", "grad_y")
# col2im is im2col's backward, conv_tbc_backward(self, input, ...) conv_tbc(self, ...)'s: self is the gradient
_GRADIENT_NAMES_BY_OP = {"aten::col2im": ("self",), "aten::conv_tbc_backward": ("self",)}
_RESULT_NAMES = ("output", "result")
_INPUT_SIZE_NAMES = ("input_size", "input_sizes", "self_sizes", "sizes", "output_size")
_FORWARD_ARG_ALIASES = {"dim": "dimension"}  # unfold_backward(dim) is unfold(dimension)


@dataclasses.dataclass
class Outcome:
    """The verdict for one overload: per target dtype name, SUPPORTED/PARTIAL/MISSING, and a sample error."""

    overload: str
    status: dict[str, str]
    errors: dict[str, str]

    @property
    def needs_override(self) -> bool:
        return any(s != SUPPORTED for s in self.status.values())


def should_probe(info: Overload) -> bool:
    name = info.qualname.removeprefix("aten::")
    if name in SKIP_NAMES or name.startswith(SKIP_PREFIXES) or info.is_view:
        return False
    if any(t in a.real_type for a in info.args for t in SKIP_TYPES):
        return False
    return any(a.kind != OTHER for a in info.args) or info.has_dtype_arg


def _data(shape, dtype, device, seed, positive_definite=False, nonnegative=False):
    # Multiples of 1/8 in [-1, 1]: exactly representable in every 16-bit dtype, so the reference and the
    # 16-bit call see identical values and only the dtype differs.
    gen = torch.Generator().manual_seed(seed)
    real = torch.randint(-8, 9, (2,) + tuple(shape), generator=gen).float() / 8
    if nonnegative:
        real = real.abs()
    real = real + (real == 0).float() * 0.625  # avoid zeros: log, division, reciprocal
    value = torch.complex(real[0], real[1]) if dtype.is_complex else real[0]
    if positive_definite:  # cholesky & co.: Hermitian, diagonally dominant, still multiples of 1/8
        value = (value + value.mH) / 8 + 2 * torch.eye(shape[-1])
    return value.to(device=device, dtype=dtype)


def _int_list(arg, shape) -> list[int]:
    name = arg.name
    if arg.fixed_length:
        return [1] * arg.fixed_length
    if name in ("size", "sizes", "shape", "output_size"):
        return list(shape)
    if name == "normalized_shape":
        return list(shape[-1:])
    if name == "stride":
        return list(torch.empty(shape).stride())
    if name == "dims":
        return list(range(len(shape)))
    if name == "dim":
        return [len(shape) - 1] if shape else []
    if name == "shifts":
        return [1] * len(shape)
    return [1] * max(len(shape), 1)


@dataclasses.dataclass(frozen=True)
class Case:
    """One way of making up arguments."""

    data_dtype: torch.dtype  # complex64, or float32 for ops that take real data
    shape: tuple
    vectors: bool = False  # vector-named arguments (vec, tau, pivots) get 1-D shapes
    conj: bool = False  # complex inputs arrive as lazily conjugated views
    real_out: bool = False  # out= tensors of the real counterpart dtype (abs.out, angle.out, ...)
    positive_definite: bool = False  # square matrices that are Hermitian positive definite
    choice: int = 0  # which value of multiple-choice string arguments (ord="fro" / "nuc", ...)
    window: int = 0  # which entry of WINDOWS sets the window arguments (size/step, kernel_size/stride)


def _has_window(info: Overload) -> bool:
    """Whether `info` takes a window: int size and step (unfold), or a list kernel_size (im2col, pools)."""
    types = {a.name: a.real_type for a in info.args}
    ints = ("int", "SymInt")
    unfolds = types.get("size") in ints and types.get("step") in ints
    return unfolds or types.get("kernel_size", "").startswith("List")


def _cases(info: Overload):
    has_vectors = any(a.name in _VECTOR_NAMES for a in info.args)
    has_out = any(a.is_write and a.kwarg_only for a in info.args)
    choices = max([len(_STR_CHOICES.get(a.name, ())) for a in info.args if a.real_type == "str"] or [1])
    windows = len(WINDOWS) if _has_window(info) else 1
    for data_dtype in (torch.complex64, torch.float32):
        for choice in range(choices):
            for window in range(windows):
                for vectors in (False, True) if has_vectors else (False,):
                    for real_out in (False, True) if has_out else (False,):
                        kinds = dict(vectors=vectors, real_out=real_out, choice=choice, window=window)
                        for shape in SHAPES:
                            yield Case(data_dtype, shape, **kinds)
                        for shape in SQUARE_SHAPES:
                            yield Case(data_dtype, shape, positive_definite=True, **kinds)


class ForwardFailed(Exception):
    """The forward call that a backward overload's arguments come from failed: no reference on this case."""


def forward_of(info: Overload) -> Overload | None:
    """The forward overload whose gradient `info` computes, when `info` is a backward overload."""
    qualname = _FORWARD_OF.get(info.qualname)
    if qualname is None and "_backward" in info.qualname:
        qualname = info.qualname.partition("_backward")[0]
    if qualname is None or qualname == info.qualname:
        return None
    try:
        return schema.overload(qualname)
    except RuntimeError:  # no such op, or no default overload
        return None


def _from_forward(info: Overload, forward: Overload, case: Case, device: str, call: Call) -> dict[str, object]:
    """Arguments of backward overload `info` taken from a complex64/float32 call of `forward` on `case`:
    the gradient (shaped as the forward's result), the forward's inputs and sizes. Raises ForwardFailed."""
    args, kwargs = _synthesize(forward, case, device, call)
    try:
        result = call(forward.op, *args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the forward cannot run on these arguments
        raise ForwardFailed(first_line(exc)) from exc
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    if not results or not isinstance(results[0], torch.Tensor):
        raise ForwardFailed("no tensor result")
    # _synthesize hands the leading positional arguments in order, the keyword-only ones by name
    values = {a.name: a.default for a in forward.args if a.has_default and a.default is not None}
    values.update({**dict(zip((a.name for a in forward.positional), args)), **kwargs})
    returns = [r.name for r in forward.op._schema.returns]
    values.update({name: r for name, r in zip(returns, results) if name})
    self_value = values.get("self", values.get("input"))
    derived: dict[str, object] = {}
    for arg in info.args:
        if arg.is_write and arg.kwarg_only:
            continue  # out=: made up as for any op
        name = arg.name if arg.name in values else _FORWARD_ARG_ALIASES.get(arg.name, arg.name)
        if arg.name in _GRADIENT_NAMES_BY_OP.get(info.qualname, _GRADIENT_NAMES) or arg.name in _RESULT_NAMES:
            gradient = results[0].detach().clone()
            derived[arg.name] = gradient.conj() if case.conj and gradient.is_complex() else gradient
        elif name in values and (arg.kind == OTHER) == (not isinstance(values[name], torch.Tensor)):
            derived[arg.name] = values[name]
        elif arg.name in _INPUT_SIZE_NAMES and isinstance(self_value, torch.Tensor):
            sizes = list(self_value.shape)
            derived[arg.name] = sizes[-arg.fixed_length:] if arg.fixed_length else sizes
    return derived


def _synthesize(info: Overload, case: Case, device: str, call: Call | None = None,
                forward: Overload | None = None):
    """Positional args and kwargs for one call; raises LookupError when an argument cannot be made up. Those
    of a backward overload come from a call of `forward` where given (ForwardFailed: it failed on `case`)."""
    factory = not any(a.kind != OTHER for a in info.args)
    args, kwargs = [], {}
    positional_done = False  # after an omitted positional default, the rest is defaulted too
    vectors = case.vectors and _vector_names(info)
    nonnegative = _NONNEGATIVE_NAMES + (("self",) if info.qualname in _NONNEGATIVE_SELF_OPS else ())
    derived = _from_forward(info, forward, case, device, call or _quietly) if forward else {}
    for i, arg in enumerate(info.args):
        if arg.name in derived:
            value = derived[arg.name]
        else:
            value = _synthesize_one(arg, case, device, factory, seed=i,
                                    vector=bool(vectors) and arg.name in vectors, nonnegative=arg.name in nonnegative)
        if arg.name == "reduce" and arg.real_type == "str":
            value = _REDUCE_BY_OP.get(info.qualname, value)
        if value is _OMIT:
            positional_done = positional_done or not arg.kwarg_only
        elif arg.kwarg_only:
            kwargs[arg.name] = value
        elif not positional_done:
            args.append(value)
    return args, kwargs


def _vector_names(info: Overload) -> frozenset:
    names = {a.name for a in info.args}
    # addmv(self, mat, vec): the bias is a vector too
    return frozenset(_VECTOR_NAMES) | ({"self"} if {"mat", "vec"} <= names else set())


_OMIT = object()


def _synthesize_one(arg, case: Case, device, factory, seed, vector, nonnegative):
    shape = case.shape
    if arg.kind != OTHER:
        if arg.kind == OPTIONAL_TENSOR:
            return _OMIT if arg.has_default else None
        if arg.is_write and arg.kwarg_only:  # out=
            out_dtype = case.data_dtype.to_real() if case.real_out else case.data_dtype
            return torch.empty(0, dtype=torch.int64 if "indices" in arg.name else out_dtype, device=device)
        if vector:
            shape = shape[-1:]
        if arg.name in _INT32_NAMES:
            tensor = torch.arange(1, (shape[-1] if shape else 1) + 1, dtype=torch.int32, device=device)
        elif arg.name.startswith(_INDEX_NAMES) or arg.name.endswith("indices"):
            tensor = torch.zeros(shape, dtype=torch.int64, device=device)
        elif arg.name in _BOOL_NAMES:
            tensor = torch.ones(shape, dtype=torch.bool, device=device)
        else:
            tensor = _data(shape, case.data_dtype, device, seed, case.positive_definite and len(shape) >= 2,
                           nonnegative)
            if case.conj and tensor.is_complex() and not arg.is_write:
                tensor = tensor.conj()
        if arg.kind != TENSOR_LIST:
            return tensor
        return [tensor] if tensor.dtype in (torch.int64, torch.int32) else [tensor, tensor.clone()]
    real_type = arg.real_type
    if factory and arg.name == "dtype":
        return case.data_dtype
    if factory and arg.name == "device":
        return torch.device(device)
    if real_type == "str" and arg.name in _STR_CHOICES:
        options = _STR_CHOICES[arg.name]
        return options[min(case.choice, len(options) - 1)]
    window = WINDOWS[case.window]
    if arg.name in window and real_type in ("int", "SymInt"):
        return window[arg.name]
    if arg.name in window and real_type.startswith(("List[int]", "List[SymInt]")):
        return [window[arg.name]] * (arg.fixed_length or 1)
    if arg.has_default:
        return _OMIT
    if real_type in ("int", "SymInt"):
        if arg.name == "last_dim_size":
            return 2 * (shape[-1] - 1) if shape else 1
        return _INT_BY_NAME.get(arg.name, 1)
    if real_type in ("List[int]", "List[SymInt]") or real_type.startswith("List[int]"):
        return _int_list(arg, shape)
    if real_type == "Optional[List[int]]":
        return [0] if "dim" in arg.name else None
    if real_type == "float":
        return 0.5
    if real_type == "bool":
        return False
    if real_type in ("number", "Scalar"):
        return 2
    if real_type.startswith("Optional["):
        return None
    if real_type == "List[number]":
        return [2, 2]
    if real_type == "str":
        return ""
    raise LookupError(f"cannot synthesize {real_type} {arg.name}")


def _as_target(value, target: torch.dtype):
    """The same argument with 32-bit data turned into `target` (complex or real 16-bit)."""
    if isinstance(value, torch.Tensor):
        if value.dtype in (torch.complex64, torch.float32):
            wanted = dtypes.FAMILY_OF[target][0 if value.is_complex() else 1]
            if value.is_conj():
                return value.conj().to(wanted).conj()
            return value.to(wanted)
        return value.clone()
    if isinstance(value, list):
        return [_as_target(v, target) for v in value]
    if isinstance(value, torch.dtype) and value in (torch.complex64, torch.float32):
        return dtypes.FAMILY_OF[target][0 if value.is_complex else 1]
    return value


def _has_complex_output(result) -> bool:
    if isinstance(result, torch.Tensor):
        return result.is_complex()
    if isinstance(result, (list, tuple)):
        return any(_has_complex_output(r) for r in result)
    return False


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


Call = Callable[..., object]  # call(fn, *args, **kwargs): how probing runs an op


class DeviceBroken(RuntimeError):
    """A call failed with a CUDA error and the device no longer works: nothing else may run in this process."""


def is_cuda_error(exc: BaseException) -> bool:
    # torch raises RuntimeError (AcceleratorError since 2.8) with this prefix for every CUDA runtime failure,
    # and for cuBLAS/cuSOLVER statuses too; whether the context survived is checked separately.
    return "CUDA error" in str(exc)


def _quietly(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _quietly_synchronized(fn, *args, **kwargs):
    try:
        return _quietly(fn, *args, **kwargs)
    finally:
        torch.cuda.synchronize()  # an asynchronous kernel error is raised here, charged to this call


def caller(device: str) -> Call:
    """How probing calls ops on `device`: warnings silenced, and on CUDA synchronized after every call."""
    return _quietly_synchronized if device.startswith("cuda") else _quietly


def _device_works(device: str, call: Call) -> bool:
    try:
        return call(lambda: torch.ones(2, device=device).add(1).sum().item()) == 4.0
    except Exception:  # noqa: BLE001 - any failure here means the context is gone
        return False


def _raise_if_device_broken(exc: Exception, device: str, call: Call) -> None:
    """A CUDA error that leaves the device working (a library refusing the arguments, a bad launch
    configuration) is the call's own failure; one that does not (a device-side assert) ends probing."""
    if is_cuda_error(exc) and not _device_works(device, call):
        raise DeviceBroken(first_line(exc)) from exc


def probe(info: Overload, device: str = "cpu", call: Call | None = None) -> Outcome | None:
    """The verdict for `info` on `device`, or None when no reference call could be made to work. Raises
    DeviceBroken when a call leaves the device unusable."""
    call = call or caller(device)
    forward = forward_of(info)
    outcome = _probe(info, device, call, forward)
    if outcome is None and forward is not None:  # no forward call worked: arguments made up as for any op
        outcome = _probe(info, device, call, None)
    return outcome


def _probe(info: Overload, device: str, call: Call, forward: Overload | None) -> Outcome | None:
    results: dict[str, list[bool]] = {}
    errors: dict[str, str] = {}
    successes: dict[tuple, int] = {}
    for case in _cases(info):
        kind = (case.data_dtype, case.choice, case.window)
        if successes.get(kind, 0) >= SUCCESSES_WANTED:
            continue
        try:
            args, kwargs = _synthesize(info, case, device, call, forward)
        except LookupError:
            return None
        except ForwardFailed as exc:
            _raise_if_device_broken(exc.__cause__ or exc, device, call)
            continue
        try:
            reference = call(info.op, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the reference cannot run on these arguments
            _raise_if_device_broken(exc, device, call)
            continue
        successes[kind] = successes.get(kind, 0) + 1
        if case.data_dtype.is_complex:
            targets = dtypes.COMPLEX_TARGETS
            variants = [case, dataclasses.replace(case, conj=True)]
        elif _has_complex_output(reference):
            targets, variants = dtypes.REAL_TARGETS, [case]
        else:
            continue
        for variant in variants:
            if variant.conj:
                try:
                    args, kwargs = _synthesize(info, variant, device, call, forward)  # ForwardFailed included
                    call(info.op, *args, **kwargs)
                except Exception as exc:  # noqa: BLE001
                    _raise_if_device_broken(exc, device, call)
                    continue
            for target in targets:
                name = dtypes.NAMES[target]
                try:
                    call(info.op, *[_as_target(a, target) for a in args],
                         **{k: _as_target(v, target) for k, v in kwargs.items()})
                    results.setdefault(name, []).append(True)
                except Exception as exc:  # noqa: BLE001 - any failure that the reference did not have
                    _raise_if_device_broken(exc, device, call)
                    results.setdefault(name, []).append(False)
                    errors.setdefault(name, first_line(exc))
    if not results:
        return None
    status = {
        name: SUPPORTED if all(oks) else (MISSING if not any(oks) else PARTIAL) for name, oks in results.items()
    }
    return Outcome(info.full_name, status, errors)
