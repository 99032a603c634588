"""Reductions of 16-bit complex tensors over any dims: sum, mean, prod (complex results), var, std, var_mean,
std_mean and linalg.vector_norm (real results: float16 for complex32, bfloat16 for bcomplex32).

Layout, handled by the host code rendered into every module:
  * Kept and reduced dims are each merged where neighbours are contiguous with each other (reduced dims are
    first sorted by stride: a reduction may visit its elements in any order). The kernel indexes up to three
    kept and three reduced dims with explicit strides, so transposed, sliced and expanded inputs are read in
    place. A layout that stays above three of either is permuted (reduced dims last) and copied to a
    contiguous tensor first: the only place an input is copied.
  * A program reduces KEPT_BLOCK outputs over a range of the reduced length, in chunks of a
    [KEPT_BLOCK, REDUCED_BLOCK] tile that is wide along whichever side is faster in memory, so loads coalesce
    both for innermost reductions and for reductions over outer dims. When that side is one merged dim of
    adjacent (re, im) pairs, each tile row is loaded as one contiguous run of parts and split in registers:
    128-bit loads, where separate re and im loads compile to 16-bit ones.
  * Split reductions: when the outputs alone give fewer programs than FILL_PER_SM per SM (a full reduction has
    one output), the reduced length is cut into `splits` ranges. Each program writes fp32 partial values and a
    finish kernel combines them per output in a fixed order, so results are the same every run (no atomics).
    Ops that need a statistic of the whole row first (var, std and the rescaled norms, below) run in two
    phases; each program of the second phase combines the first phase's partials of its outputs itself.
  * Outputs are written contiguous; an out= tensor that is not is filled through a contiguous temporary.

Numerics: parts are loaded as fp32 and accumulated per tile lane in fp32; the result is rounded once on
store. For complex32 fp32 cannot overflow: |z|^2 <= 2 * 65504^2 ~ 8.6e9, so even a sum of squares overflows
only past ~4e28 elements, and a sum or 2-norm is inf exactly when the true result is outside fp16's range.
bfloat16 shares fp32's exponent range, so for bcomplex32 any intermediate that can exceed the final value is
rescaled: mean accumulates z / n, var and std accumulate ((z - mean) / peak)^2 with peak the row's largest
|re| or |im|, and p-norms (including the bcomplex32 2-norm) sum (|z| / max|z|)^p over an overflow-safe |z|.
For bcomplex32, partial sums in different tile lanes (or splits) can still overflow where huge terms of
opposite sign would cancel.
"""

from __future__ import annotations

import inspect
import math
import textwrap
from typing import NamedTuple

import torch

from jitdtypes import dtypes
from jitdtypes.schema import resize_output

from . import common, launcher
from .reduction_module import COMPLEX_MUL, MAGNITUDE, MODULE, NAN_MAX, NAN_MIN

FAMILY = "reductions"

COMPLEX_RESULT_OPS = ("sum", "mean", "prod")
VARIANCE_OPS = ("var", "std", "var_mean", "std_mean")
NORM_ORDS = ("2", "1", "inf", "-inf", "0", "p")  # "p": any other positive finite order, passed at run time
FILL_PER_SM = 2  # programs per SM below which a reduction is split
INTERPRETER_FILL = 4  # a few, so that the tests' small reductions take the split path too
# Splits come in multiples of this on GPUs, so that partials load as vectors; 4 keeps the interpreter's programs
# few while some ranges still fall past the end.
SPLIT_MULTIPLES = {False: 16, True: 4}

# ---------------------------------------------------------------------------------------------------------
# What an op computes: phases of per-lane accumulators, then a finish that stores the outputs.


class Accumulator(NamedTuple):
    """fp32 tiles accumulated per lane: their names, the identity each starts from (also the value of an empty
    range), and how two values combine: "sum", "max" (NaN dropped, like tl.max), "nan_max" and "nan_min" (NaN
    kept) or "complex_mul" (names are a (re, im) pair)."""

    names: tuple[str, ...]
    identity: tuple[str, ...]
    combine: str


class Phase(NamedTuple):
    """update: statements folding one chunk (re, im, mask tiles) into the accumulators; derive: statements run
    once the accumulators are combined into per-output values (same names), for later phases and the finish."""

    accumulators: tuple[Accumulator, ...]
    update: str
    derive: str = ""


class OpSpec(NamedTuple):
    phases: tuple[Phase, ...]
    finish: str  # statements storing the outputs from the per-output values
    outputs: list[str]
    scalars: list[str]


def _sums(*names) -> tuple[Accumulator, ...]:
    return tuple(Accumulator((name,), ("0.0",), "sum") for name in names)


_STORE_SUMS = "_store_pair(out_ptr, kept0, n_kept, acc_re, acc_im, KEPT_BLOCK)"
_EMPTY_MEAN_IS_NAN = """mean_re = tl.where(n_reduced == 0, float("nan"), mean_re)
mean_im = tl.where(n_reduced == 0, float("nan"), mean_im)"""
# deviations divided by the row's largest part (or |z|) keep their squares (powers) inside fp32 for any bf16
# input; an all-zero row keeps scale 1, and so does a non-finite one (its deviations are NaN anyway, and
# inf / inf would turn a norm into NaN)
_SCALE = 'scale = tl.where((peak > 0) & (peak < float("inf")), peak, 1.0)'

# Two phases (mean, then squared deviations) rather than a one-pass update: exact enough to need no care.
_VARIANCE_PHASES = (
    Phase(
        _sums("mean_re", "mean_im") + (Accumulator(("peak",), ("0.0",), "max"),),
        "mean_re += re * inverse_n\nmean_im += im * inverse_n\n"
        "peak = tl.maximum(peak, tl.maximum(tl.abs(re), tl.abs(im)))",
        _SCALE,
    ),
    Phase(
        _sums("squares"),
        "deviation_re = tl.where(mask, (re - mean_re[:, None]) / scale[:, None], 0.0)\n"
        "deviation_im = tl.where(mask, (im - mean_im[:, None]) / scale[:, None], 0.0)\n"
        "squares += deviation_re * deviation_re + deviation_im * deviation_im",
        "ratio = squares / tl.maximum(n_reduced - correction, 0.0)",
    ),
)
_VARIANCE_STORES = {
    "var": "_store_real(out_ptr, kept, kept_mask, ratio * scale * scale)",
    "std": "_store_real(out_ptr, kept, kept_mask, tl.sqrt(ratio) * scale)",
}


def _norm(update: str, result: str, combine: str = "sum", identity: str = "0.0"):
    return (Phase((Accumulator(("acc",), (identity,), combine),), update),), result


def _scaled_norm(power_of_ratio: str, root_of_total: str):
    # |z| / max|z| lies in [0, 1], so its powers neither overflow nor lose the largest terms
    peak = Phase((Accumulator(("peak",), ("0.0",), "max"),), "peak = tl.maximum(peak, _magnitude(re, im))", _SCALE)
    total = Phase(_sums("acc"), f"ratio = _magnitude(re, im) / scale[:, None]\nacc += {power_of_ratio}")
    return (peak, total), f"scale * {root_of_total}"


_NORMS = {
    ("2", "complex32"): _norm("acc += re * re + im * im", "tl.sqrt(acc)"),
    ("2", "bcomplex32"): _scaled_norm("ratio * ratio", "tl.sqrt(acc)"),
    "1": _norm("acc += _magnitude(re, im)", "acc"),
    "0": _norm("acc += tl.where((re != 0) | (im != 0), 1.0, 0.0)", "acc"),
    "inf": _norm("acc = tl.maximum(acc, _magnitude(re, im), propagate_nan=tl.PropagateNan.ALL)", "acc", "nan_max"),
    "-inf": _norm(
        'acc = tl.minimum(acc, tl.where(mask, _magnitude(re, im), float("inf")), propagate_nan=tl.PropagateNan.ALL)',
        "acc", "nan_min", 'float("inf")',
    ),
    "p": _scaled_norm("tl.exp2(ord * tl.log2(ratio))", "tl.exp2(tl.log2(acc) / ord)"),
}


def op_spec(params: dict) -> OpSpec:
    op, dtype = params["op"], params["dtype"]
    if op == "sum":
        return OpSpec((Phase(_sums("acc_re", "acc_im"), "acc_re += re\nacc_im += im"),), _STORE_SUMS, ["out"], [])
    if op == "mean":
        phase = Phase(_sums("mean_re", "mean_im"), "mean_re += re * inverse_n\nmean_im += im * inverse_n")
        finish = _EMPTY_MEAN_IS_NAN + "\n_store_pair(out_ptr, kept0, n_kept, mean_re, mean_im, KEPT_BLOCK)"
        return OpSpec((phase,), finish, ["out"], [])
    if op == "prod":
        phase = Phase((Accumulator(("acc_re", "acc_im"), ("1.0", "0.0"), "complex_mul"),),
                      "acc_re, acc_im = _complex_mul(acc_re, acc_im, tl.where(mask, re, 1.0), im)")
        return OpSpec((phase,), _STORE_SUMS, ["out"], [])
    if op in VARIANCE_OPS:
        finish = _VARIANCE_STORES[op.removesuffix("_mean")]
        outputs = ["out"]
        if op.endswith("_mean"):
            finish += "\n" + _EMPTY_MEAN_IS_NAN + "\n_store_pair(mean_ptr, kept0, n_kept, mean_re, mean_im, KEPT_BLOCK)"
            outputs.append("mean_out")
        return OpSpec(_VARIANCE_PHASES, finish, outputs, ["correction"])
    if op == "vector_norm":
        phases, result = _NORMS.get((params["ord"], dtype)) or _NORMS[params["ord"]]
        return OpSpec(phases, f"_store_real(out_ptr, kept, kept_mask, {result})", ["out"],
                      ["ord"] if params["ord"] == "p" else [])
    raise ValueError(f"unknown reduction {op!r}")


# ---------------------------------------------------------------------------------------------------------
# Code generation: the per-lane loop of a phase, tile and partial reductions, the two kernels' bodies.

_TILE_REDUCE = {"sum": "tl.sum({names}, {axis})", "max": "tl.max({names}, {axis})",
                "nan_max": "tl.reduce({names}, {axis}, _nan_max)", "nan_min": "tl.reduce({names}, {axis}, _nan_min)",
                "complex_mul": "tl.reduce(({names}), {axis}, _complex_mul)"}
_COMBINE = {"sum": "{0} + {1}", "max": "tl.maximum({0}, {1})", "nan_max": "_nan_max({0}, {1})",
            "nan_min": "_nan_min({0}, {1})", "complex_mul": "_complex_mul({0}, {1})"}


def _names(phase: Phase) -> list[str]:
    return [name for acc in phase.accumulators for name in acc.names]


def _initial_tiles(phase: Phase, shape: str) -> list[str]:
    return [f"{name} = tl.full([{shape}], {identity}, tl.float32)"
            for acc in phase.accumulators for name, identity in zip(acc.names, acc.identity)]


def _reduce_tiles(phase: Phase, axis: int) -> list[str]:
    return [f"{', '.join(acc.names)} = {_TILE_REDUCE[acc.combine].format(names=', '.join(acc.names), axis=axis)}"
            for acc in phase.accumulators]


def _phase_loop(phase: Phase) -> list[str]:
    """Accumulate this program's range [begin, end) and reduce the lanes: per-output values under the names."""
    lines = _initial_tiles(phase, "KEPT_BLOCK, REDUCED_BLOCK")
    lines += ["for start in range(begin, end, REDUCED_BLOCK):",
              "    re, im, mask = _load_chunk(parts_ptr, row, kept0, kept_mask, start, end, n_kept, reduced_size1,",
              "                               reduced_size2, reduced_stride0, reduced_stride1, reduced_stride2,",
              "                               KEPT_BLOCK, REDUCED_BLOCK, ORDER)"]
    lines += ["    " + line for line in phase.update.splitlines()]
    return lines + _reduce_tiles(phase, 1)


def _combine_helper(index: int, phase: Phase, first_value: int) -> str:
    """@jit _combine_phaseN: the per-output values of phase N from its partials, combined over the splits in
    order (lanes of SPLIT_CHUNK splits, then a tree across lanes: the same order every run). Partials are laid
    out [value, output block, split, KEPT_BLOCK], so each program's are one contiguous run: vector accesses
    whatever KEPT_BLOCK is."""
    lines = _initial_tiles(phase, "SPLIT_CHUNK, KEPT_BLOCK")
    lines += ["block = tl.program_id(0).to(tl.int64) * splits * KEPT_BLOCK",
              "value_stride = tl.num_programs(0).to(tl.int64) * splits * KEPT_BLOCK",
              "for first in range(0, splits, SPLIT_CHUNK):",
              "    split = first + tl.arange(0, SPLIT_CHUNK)",
              "    offsets = block + (split * KEPT_BLOCK)[:, None] + tl.arange(0, KEPT_BLOCK)[None, :]",
              "    mask = (split < splits)[:, None]"]
    value = first_value
    for acc in phase.accumulators:
        loaded = []
        for name, identity in zip(acc.names, acc.identity):
            lines.append(f"    {name}_partial = tl.load(partials_ptr + {value} * value_stride + offsets, mask=mask, "
                         f"other={identity})")
            loaded.append(f"{name}_partial")
            value += 1
        names = ", ".join(acc.names)
        lines.append(f"    {names} = {_COMBINE[acc.combine].format(names, ', '.join(loaded))}")
    lines += _reduce_tiles(phase, 0) + [f"return {', '.join(_names(phase))}"]
    return (f"@triton.jit\ndef _combine_phase{index}(partials_ptr, splits, KEPT_BLOCK: tl.constexpr, "
            "SPLIT_CHUNK: tl.constexpr):\n" + _block(lines, 1))


def _combined(index: int, phase: Phase) -> list[str]:
    return [f"{', '.join(_names(phase))} = _combine_phase{index}(partials_ptr, splits, KEPT_BLOCK, SPLIT_CHUNK)",
            *phase.derive.splitlines()]


def _block(lines, depth: int) -> str:
    return "".join(f"{'    ' * depth}{line}\n" for line in lines)


def kernel_bodies(spec: OpSpec) -> tuple[str, str, str]:
    """(_reduce_kernel's branches per PHASE, _finish_kernel's body, the _combine_phaseN helpers)."""
    phases = spec.phases
    firsts = [sum(len(_names(p)) for p in phases[:i]) for i in range(len(phases))]
    direct = ["begin = 0", "end = n_reduced"]
    for phase in phases:
        direct += _phase_loop(phase) + phase.derive.splitlines()
    branches = ["if PHASE == 0:", *("    " + line for line in direct + spec.finish.splitlines())]
    for index, phase in enumerate(phases, start=1):
        lines = [line for earlier in range(1, index) for line in _combined(earlier, phases[earlier - 1])]
        lines += ["split = tl.program_id(1)", "begin = split.to(tl.int64) * per_split",
                  "end = tl.minimum(n_reduced, begin + per_split)"]
        lines += _phase_loop(phase)
        # all KEPT_BLOCK lanes, past n_kept too (the finish drops those): unmasked, contiguous stores
        lines += [f"tl.store(partials_ptr + (({firsts[index - 1] + i} * tl.num_programs(0) + tl.program_id(0))"
                  f" * splits + split).to(tl.int64) * KEPT_BLOCK + tl.arange(0, KEPT_BLOCK), {name})"
                  for i, name in enumerate(_names(phase))]
        branches += [f"elif PHASE == {index}:", *("    " + line for line in lines)]
    finish = [line for index, phase in enumerate(phases, start=1) for line in _combined(index, phase)]
    finish += spec.finish.splitlines()
    helpers = "\n\n".join(_combine_helper(i, p, firsts[i - 1]) for i, p in enumerate(phases, start=1))
    return _block(branches, 1), _block(finish, 1), helpers


_POINTER_NAMES = {"out": "out_ptr", "mean_out": "mean_ptr"}
# (TILE, OUTER_KEPT_BLOCK). Outer reductions take 256 outputs per program: with 4 warps each thread then
# stores 2 or more values (64-bit stores at least). The interpreter's are small, so that the tests' small
# tensors take several chunks and splits.
_TILES = {False: (1024, 256), True: (64, 8)}


def render(params: dict) -> str:
    spec = op_spec(params)
    reduce_body, finish_body, combine_helpers = kernel_bodies(spec)
    code = reduce_body + finish_body + combine_helpers
    helpers = [MAGNITUDE[params["dtype"]]] if "_magnitude(" in code else []
    helpers += [h for name, h in (("_complex_mul(", COMPLEX_MUL), ("_nan_max", NAN_MAX), ("_nan_min", NAN_MIN))
                if name in code]
    title = params["op"] + (f" (ord {params['ord']})" if params["op"] == "vector_norm" else "")
    tile, outer_kept_block = _TILES[bool(params["interpret"])]
    return common.render(
        MODULE,
        title=title,
        dtype=params["dtype"],
        mutates=repr(tuple(spec.outputs)),
        tile=tile,
        outer_kept_block=outer_kept_block,
        split_multiple=SPLIT_MULTIPLES[bool(params["interpret"])],
        fill=INTERPRETER_FILL if params["interpret"] else
        f"{FILL_PER_SM} * torch.cuda.get_device_properties(device).multi_processor_count",
        phases=len(spec.phases),
        partial_values=sum(len(_names(p)) for p in spec.phases),
        helpers="".join(helpers),
        combine_helpers=combine_helpers.rstrip("\n"),
        kernel_arguments=", ".join([_POINTER_NAMES[name] for name in spec.outputs] + spec.scalars),
        reduce_body=reduce_body.rstrip("\n"),
        finish_body=finish_body.rstrip("\n"),
        collapse_dims=textwrap.dedent(inspect.getsource(common.collapse_dims)).rstrip("\n"),
        run_scalars="".join(f"{name}: float, " for name in spec.scalars),
        run_outputs=", ".join(f"{name}: torch.Tensor" for name in spec.outputs),
        output_names=", ".join(spec.outputs),
        scalar_names=", ".join(spec.scalars),
    )


def variants(dtype: str) -> list[dict]:
    ops = [{"op": op} for op in COMPLEX_RESULT_OPS + VARIANCE_OPS]
    ops += [{"op": "vector_norm", "ord": order} for order in NORM_ORDS]
    return [{**op, "dtype": dtype, "interpret": False} for op in ops]


# ---------------------------------------------------------------------------------------------------------
# ATen adapters


def prepare_outs(outs, specs, like: torch.Tensor, *, may_alias: bool = False) -> bool:
    """Check out= tensors against (shape, dtype) specs and resize them like ATen; False if any does not fit
    (nothing is resized then)."""
    for out, (_, dtype) in zip(outs, specs):
        if not isinstance(out, torch.Tensor) or out.dtype != dtype or out.device != like.device:
            return False
        if out.is_conj() or out.is_neg() or (not may_alias and common.shares_memory(out, like)):
            return False
    for out, (shape, _) in zip(outs, specs):
        resize_output(out, shape)
    return True


def _reduced_dims(x: torch.Tensor, dim) -> list[int] | None:
    """ATen's dims in ascending non-negative form: None or [] is every dim; None where ATen would raise."""
    if dim is None or (dim.__class__ in (list, tuple) and not dim):  # the common full reduction, quickly
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    rank = max(x.dim(), 1)
    if any(not -rank <= d < rank for d in dims):
        return None
    wrapped = sorted(d % rank for d in dims)
    if len(set(wrapped)) != len(wrapped):
        return None
    if x.dim() == 0:
        return []
    return wrapped or list(range(x.dim()))


def _result_shape(x: torch.Tensor, dims: list[int], keepdim: bool) -> tuple[int, ...]:
    """A tuple: torch.empty parses one faster than a list."""
    if keepdim:
        return tuple(1 if d in dims else size for d, size in enumerate(x.shape))
    return tuple(size for d, size in enumerate(x.shape) if d not in dims)


def _norm_order(order) -> str | None:
    """The rendered order for a vector_norm `ord`, or None for orders left to the upcast path (negative)."""
    if isinstance(order, complex) or math.isnan(order):
        return None
    order = float(order)
    names = {2.0: "2", 1.0: "1", 0.0: "0", math.inf: "inf", -math.inf: "-inf"}
    return names.get(order) or ("p" if order > 0 else None)


def _correction(call: dict) -> float:
    if "unbiased" in call:
        return 1.0 if call["unbiased"] else 0.0
    return 1.0 if call.get("correction") is None else float(call["correction"])


class _Reduction(common.Planned):
    """The adapter of one reduction overload. Its plan (kernels_templates/common.py) checks self's kind once and
    keeps, per signature of values (self's shape, strides and device, dims, keepdim, correction, ord), what a call
    with them computes: outputs, kernel, scalars."""

    def __init__(self, op: str, name: str) -> None:
        self.op, self.name = op, name
        arguments = common.schema_arguments(name)
        self.output_names = tuple(a for a, kwarg_only, _ in arguments if kwarg_only and a.startswith("out"))
        # what the result depends on besides self
        self.value_names = tuple(a for a, _, _ in arguments if a in ("dim", "keepdim", "correction", "unbiased", "ord"))
        self.__name__ = self.__qualname__ = common.adapter_name(name)

    def plan(self, load, args, kwargs, device_type):
        plain = common.plain_self_call(self.name, args, kwargs)  # self's dtype and flags, and dtype=: kinds
        if plain is None:
            return None
        read = common.signature_reader(self.name, args, kwargs, ("self", *self.value_names))
        read_outs = common.argument_reader(self.name, args, kwargs, self.output_names) if self.output_names else None
        return _ReductionPlan(self, load, plain[2], read, read_outs)

    def prepare(self, load, x: torch.Tensor, dtype: str, values: tuple):
        """What a call with these values computes, as a _Prepared, or None where the upcast path takes it."""
        call = dict(zip(self.value_names, values))
        dims = _reduced_dims(x, call.get("dim"))
        if dims is None:
            return None
        op = self.op
        params, scalars = {"op": op, "dtype": dtype}, []
        if op in VARIANCE_OPS:
            scalars.append(_correction(call))
        if op == "vector_norm":
            params["ord"] = _norm_order(call["ord"])
            if params["ord"] is None:
                return None
            if params["ord"] == "p":
                scalars.append(float(call["ord"]))
            if params["ord"] in ("inf", "-inf") and any(x.shape[d] == 0 for d in dims):
                return None  # ATen raises: these norms have no identity
        shape = _result_shape(x, dims, bool(call.get("keepdim")))
        specs = [(shape, x.dtype if op in COMPLEX_RESULT_OPS else dtypes.PART_BY_NAME[dtype])]
        if op.endswith("_mean"):
            specs.append((shape, x.dtype))
        run = load(params, (op, dtype, params.get("ord")))
        module = getattr(run, "module", None)  # what engine.load_kernel returns carries its module
        launch = None
        # interpreted kernels run one at a time through `run` (engine._one_at_a_time)
        if module is not None and launcher.launcher(module._reduce_kernel).direct:
            launch = module.prepared_launch(x, dims, scalars)
        return _Prepared(specs, tuple(dims), tuple(scalars), run, launch)


class _Prepared(NamedTuple):
    """A reduction for one signature of values: its outputs' (shape, dtype), the dims reduced, the kernel's
    scalars, the module's `run`, and its prepared_launch where the plan may launch the kernels itself (else None)."""

    specs: list
    dims: tuple
    scalars: tuple
    run: object
    launch: object


class _ReductionPlan:
    """A reduction's calls of one kind: functional ones allocate their outputs and launch the module's kernels
    themselves; out= ones check their outputs per call and go through the module's `run`."""

    def __init__(self, reduction: _Reduction, load, dtype: str, read, read_outs) -> None:
        self.reduction, self.load, self.dtype, self.read, self.read_outs = reduction, load, dtype, read, read_outs
        self.memo = common.Memo()

    def __call__(self, args, kwargs):
        x, key = self.read(args, kwargs)  # key: x's shape, strides and device, then dim, keepdim...
        prepared = self.memo.get(key)
        if prepared is None:
            prepared = self.memo.keep(key, self.reduction.prepare(self.load, x, self.dtype, key[3:]))
        if prepared is common.DECLINED:
            return NotImplemented
        if self.read_outs is not None:
            outs = self.read_outs(args, kwargs)
            if not prepare_outs(outs, prepared.specs, x):
                return NotImplemented
            prepared.run(x, list(prepared.dims), *prepared.scalars, *outs)
        else:
            device = x.device
            outs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in prepared.specs]
            if prepared.launch is not None and launcher.on_current_device(x):
                if outs[0].numel():
                    prepared.launch(x, outs, prepared.scalars)
            else:
                prepared.run(x, list(prepared.dims), *prepared.scalars, *outs)
        return tuple(outs) if len(outs) > 1 else outs[0]


_OVERLOADS = {
    "sum": ("aten::sum", "aten::sum.out", "aten::sum.dim_IntList", "aten::sum.IntList_out"),
    "mean": ("aten::mean", "aten::mean.dtype_out", "aten::mean.dim", "aten::mean.out"),
    "prod": ("aten::prod", "aten::prod.out", "aten::prod.dim_int", "aten::prod.int_out"),
    **{
        op: tuple(f"aten::{op}{suffix}" for suffix in ("", ".dim", ".correction", ".correction_out"))
        + ((f"aten::{op}.out",) if op in ("var", "std") else ())
        for op in VARIANCE_OPS
    },
    "vector_norm": ("aten::linalg_vector_norm", "aten::linalg_vector_norm.out"),
}

ATEN = {name: _Reduction(op, name) for op, names in _OVERLOADS.items() for name in names}
