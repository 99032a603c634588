"""Find out, by running it, whether an ATen overload supports the 16-bit dtypes on a device.

Arguments are synthesized from the schema for a few shapes. A case counts only when the 32-bit reference
(complex64, or float32 for ops that turn real input into complex output) succeeds; the same call with the
16-bit dtype then either works or not. Nothing here is specific to a torch version.
"""

from __future__ import annotations

import dataclasses
import warnings

import torch

from . import dtypes
from .schema import OPTIONAL_TENSOR, OTHER, TENSOR_LIST, Overload

SHAPES = ((3, 3), (4, 4), (2, 3, 3), (2, 2, 3, 3), (5,), ())
SUCCESSES_WANTED = 2  # reference successes per data kind before we stop trying shapes

SUPPORTED, PARTIAL, MISSING = "supported", "partial", "missing"

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
    "_add_batch_dim", "_remove_batch_dim", "_linalg_check", "_saturate_weight", "_copy_from", "_to_copy",
    # real-only nn kernels that crash on made-up arguments (each crash costs a child restart)
    "_batch_norm", "native_batch_norm", "_native_batch_norm", "embedding_bag", "_embedding_bag",
    "fractional_max_pool", "_slow_conv2d_backward", "_thnn_differentiable",
)
SKIP_NAMES = frozenset({
    "to", "copy_", "clone", "detach", "detach_", "alias", "item", "_local_scalar_dense", "conj", "_conj",
    "resolve_conj", "resolve_neg", "_neg_view", "contiguous", "view_as_real", "view_as_complex",
})
SKIP_TYPES = ("Storage", "Stream", "Dimname", "__torch__", "Any", "Layout]]")

_INT_BY_NAME = {
    "dim": 0, "dim0": 0, "dim1": 1, "index": 0, "start": 0, "end": 1, "step": 1, "length": 1, "k": 1,
    "groups": 1, "diagonal": 0, "offset": 0, "chunks": 1, "sections": 1, "split_size": 1, "n": 3,
    "correction": 1, "unbiased": 1, "num_classes": 3, "window_length": 3, "steps": 3, "upscale_factor": 1,
    "downscale_factor": 1, "blocksize": 1, "ord": 2, "signal_ndim": 1, "batch_dim": 0,
}
_INDEX_NAMES = ("index", "indices", "idx", "offsets", "lengths", "target", "repeats", "sorted_sequence_idx")
_BOOL_NAMES = ("mask", "condition")


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


def _data(shape, dtype, device, seed):
    # Multiples of 1/8 in [-1, 1]: exactly representable in every 16-bit dtype, so the reference and the
    # 16-bit call see identical values and only the dtype differs.
    gen = torch.Generator().manual_seed(seed)
    real = torch.randint(-8, 9, (2,) + tuple(shape), generator=gen).float() / 8
    real = real + (real == 0).float() * 0.625  # avoid zeros: log, division, reciprocal
    if dtype.is_complex:
        return torch.complex(real[0], real[1]).to(device=device, dtype=dtype)
    return real[0].to(device=device, dtype=dtype)


def _int_list(arg, shape) -> list[int]:
    name = arg.name
    if name in ("size", "sizes", "shape", "output_size"):
        return list(shape)
    if name == "stride":
        return list(torch.empty(shape).stride())
    if name in ("dims", "dim", "shifts"):
        return list(range(len(shape))) if name == "dims" else ([0] if name == "dim" else [1] * len(shape))
    return [1] * max(len(shape), 1)


def _synthesize(info: Overload, shape, data_dtype, device, factory: bool):
    """Positional args and kwargs for one call; raises LookupError when an argument cannot be made up."""
    args, kwargs = [], {}
    for i, arg in enumerate(info.args):
        value = _synthesize_one(arg, shape, data_dtype, device, factory, seed=i)
        if value is _OMIT:
            if not arg.kwarg_only:
                break  # everything after an omitted positional default is defaulted too
            continue
        if arg.kwarg_only:
            kwargs[arg.name] = value
        else:
            args.append(value)
    return args, kwargs


_OMIT = object()


def _synthesize_one(arg, shape, data_dtype, device, factory, seed):
    if arg.kind != OTHER:
        if arg.kind == OPTIONAL_TENSOR:
            return _OMIT if arg.has_default else None
        if arg.is_write and arg.kwarg_only:  # out=
            dtype = torch.int64 if "indices" in arg.name else data_dtype
            return torch.empty(0, dtype=dtype, device=device)
        if arg.name.startswith(_INDEX_NAMES) or arg.name.endswith("indices"):
            tensor = torch.zeros(shape, dtype=torch.int64, device=device)
        elif arg.name in _BOOL_NAMES:
            tensor = torch.ones(shape, dtype=torch.bool, device=device)
        else:
            tensor = _data(shape, data_dtype, device, seed)
        return [tensor, tensor.clone()] if arg.kind == TENSOR_LIST and tensor.dtype != torch.int64 else (
            [tensor] if arg.kind == TENSOR_LIST else tensor
        )
    real_type = arg.real_type
    if factory and arg.name == "dtype":
        return data_dtype
    if factory and arg.name == "device":
        return torch.device(device)
    if arg.has_default:
        return _OMIT
    if real_type in ("int", "SymInt"):
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
        return {"reduce": "sum", "approximate": "none", "padding_mode": "zeros"}.get(arg.name, "")
    raise LookupError(f"cannot synthesize {real_type} {arg.name}")


def _as_target(value, target: torch.dtype):
    """The same argument with 32-bit data turned into `target` (complex or real 16-bit)."""
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.complex64:
            return value.to(target if target.is_complex else dtypes.COMPLEX_OF[target])
        if value.dtype == torch.float32:
            return value.to(target if not target.is_complex else dtypes.REAL_OF[target])
        return value.clone()
    if isinstance(value, list):
        return [_as_target(v, target) for v in value]
    if isinstance(value, torch.dtype) and value in (torch.complex64, torch.float32):
        return _as_target(torch.empty(0, dtype=value), target).dtype
    return value


def _has_complex_output(result) -> bool:
    if isinstance(result, torch.Tensor):
        return result.is_complex()
    if isinstance(result, (list, tuple)):
        return any(_has_complex_output(r) for r in result)
    return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


def probe(info: Overload, device: str = "cpu") -> Outcome | None:
    """The verdict for `info` on `device`, or None when no reference call could be made to work."""
    factory = not any(a.kind != OTHER for a in info.args)
    results: dict[str, list[bool]] = {}
    errors: dict[str, str] = {}
    for data_dtype in (torch.complex64, torch.float32):
        successes = 0
        for shape in SHAPES:
            try:
                args, kwargs = _synthesize(info, shape, data_dtype, device, factory)
            except LookupError:
                return None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    reference = info.op(*args, **kwargs)
            except Exception:
                continue
            successes += 1
            if data_dtype.is_complex:
                targets = dtypes.COMPLEX_TARGETS
            elif _has_complex_output(reference):
                targets = dtypes.REAL_TARGETS
            else:
                targets = ()
            for target in targets:
                name = dtypes.NAMES[target]
                t_args = [_as_target(a, target) for a in args]
                t_kwargs = {k: _as_target(v, target) for k, v in kwargs.items()}
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        info.op(*t_args, **t_kwargs)
                    results.setdefault(name, []).append(True)
                except Exception as exc:  # noqa: BLE001 - any failure that the reference did not have
                    results.setdefault(name, []).append(False)
                    errors.setdefault(name, _first_line(exc))
            if successes >= SUCCESSES_WANTED:
                break
    if not results:
        return None
    status = {
        name: SUPPORTED if all(oks) else (MISSING if not any(oks) else PARTIAL) for name, oks in results.items()
    }
    return Outcome(info.full_name, status, errors)
