"""What the elementwise families (unary.py, binary.py, ternary.py) share: the rendering of one kernel module
from an op's operand slots and formula (complex fp32 math from complex_math.py), the host launcher that maps
any strides and broadcasting onto the kernel without copies, and the checks that let an ATen call reach a
kernel.

Parameters of every elementwise module:
    op        the formula, e.g. "exp"
    dtype     "complex32" | "bcomplex32"
    layout    "interleaved": complex tensors, read through view_as_real
              "planar": every complex operand is two real tensors (re, im), each with its own strides
    out       False: `run` allocates and returns its result
              True: `run` writes into caller-given output tensors (in-place and out= overloads) and returns None
    scalars   names of complex operands passed as Python numbers, e.g. ["other"]: `run` takes them as two floats
              (name_re, name_im) and the kernel keeps them in fp32
    interpret rendered for Triton's CPU interpreter

The kernel walks the broadcast output shape in row-major order. Dims that every operand lets merge are merged
(common.collapse_dims); up to MAX_RANK dims remain, padded with size-1 dims on the inner side, which Triton
specializes as constants, so a contiguous launch pays no division. An operand whose strides are the row-major
ones of that shape (DENSE) is addressed by the flat index alone, and interleaved ones then move as contiguous
runs of parts (128-bit accesses on GPUs). When more dims remain the launcher copies
the inputs dense instead (see _launch_dense): growing the index arithmetic of every kernel for the rare 5-d
permuted case is the worse trade.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

import torch

from jitdtypes import dtypes

from . import common, elementwise_access, launcher

MAX_RANK = 4
# 1024 elements per program over 4 warps: 8 per thread, i.e. two 128-bit accesses per interleaved operand, and
# 16 resident programs per SM keep enough loads in flight to saturate memory on A100 and H100.
NUM_WARPS = 4
INT32_LIMIT = 2**31  # offsets at or past it need 64-bit index arithmetic
LAYOUTS = ("interleaved", "planar")
INTERLEAVED, PLANAR = LAYOUTS

# Operand slot kinds. A COMPLEX slot holds a tensor or, when listed in params["scalars"], a Python number;
# a SCALAR slot (alpha, value) always holds a number; a BOOL slot holds a bool tensor (where's condition).
COMPLEX, SCALAR, BOOL = "complex", "scalar", "bool"
# Result kinds: complex, or real in the part dtype (abs, angle).
REAL = "real"


# -- module rendering --------------------------------------------------------------------------------------

def check_params(params: dict, ops, slots_of) -> list[tuple[str, str]]:
    """Validate an elementwise params dict; returns the op's slots with number-valued ones marked SCALAR."""
    if params["op"] not in ops:
        raise ValueError(f"unknown op {params['op']!r}; choose from {sorted(ops)}")
    if params["dtype"] not in dtypes.COMPLEX_BY_NAME:
        raise ValueError(f"unsupported dtype {params['dtype']!r}; this torch has {sorted(dtypes.COMPLEX_BY_NAME)}")
    if params["layout"] not in LAYOUTS:
        raise ValueError(f"unknown layout {params['layout']!r}; choose from {LAYOUTS}")
    slots = slots_of(params["op"])
    complex_names = [name for name, kind in slots if kind == COMPLEX]
    scalars = list(params["scalars"])
    if not set(scalars) <= set(complex_names) or len(scalars) >= len(complex_names):
        raise ValueError(f"scalars {scalars} must name some, not all, of {complex_names}")
    return [(name, SCALAR if name in scalars else kind) for name, kind in slots]


def render_module(params: dict, *, slots, body: str, result: str, library) -> str:
    """A complete module for one parameter set: imports of the @jit functions it calls -> kernel -> `run`.

    slots: [(name, COMPLEX | SCALAR | BOOL)] in ATen argument order; body: Triton statements reading
    NAME_re/NAME_im (complex and scalar slots) or NAME (bool slots) as fp32/bool values and assigning out_re,
    out_im (complex result) or out (REAL result), calling the public functions of the `library` modules by name.
    """
    op, layout, writes_out = params["op"], params["layout"], params["out"]
    planar = layout == PLANAR
    part = common.tl_part_dtype(params["dtype"])
    round_to_part = "to_bf16({})" if params["dtype"] == "bcomplex32" else f"{{}}.to({part})"

    tensor_slots = [(name, kind) for name, kind in slots if kind != SCALAR]
    input_sets = [s for name, kind in tensor_slots for s in _offset_sets(name, kind, planar)]
    output_sets = ["out"] if result == REAL or not planar else ["out_re", "out_im"]
    scalar_args = [f"{name}_{part_name}" for name, kind in slots if kind == SCALAR for part_name in ("re", "im")]

    kernel_args = [f"{s}_ptr, {s}_s0, {s}_s1, {s}_s2, {s}_s3" for s in input_sets + output_sets]
    if scalar_args:
        kernel_args.append(", ".join(scalar_args))
    kernel_args += ["numel, n1, n2, n3", "BLOCK: tl.constexpr, WIDE: tl.constexpr",
                    ", ".join(f"DENSE{i}: tl.constexpr" for i in range(len(input_sets) + len(output_sets)))]

    # Scalar arguments become fp32 blocks: the interpreter passes them as Python floats and mistypes
    # comparisons of 0-d values, compiled kernels get fp32 scalars; a block behaves the same in both.
    loads = [f"{a} = tl.full([BLOCK], {a}, tl.float32)" for a in scalar_args]
    flag = (f"DENSE{i}" for i in range(len(input_sets) + len(output_sets)))
    for name, kind in tensor_slots:
        if kind == BOOL:
            loads.append(f"{name} = load_part({name}_ptr, index, {_offset(name)}, mask, {next(flag)}) != 0")
        elif planar:
            loads += [f"{s} = load_part({s}_ptr, index, {_offset(s)}, mask, {next(flag)}).to(tl.float32)"
                      for s in (f"{name}_re", f"{name}_im")]
        else:
            loads.append(f"{name}_re, {name}_im = load_pair({name}_ptr, first, numel, {_offset(name)}, mask, "
                         f"{next(flag)}, BLOCK)")
    if result == REAL or planar:
        stores = [f"store_part({s}_ptr, index, {_offset(s)}, mask, {round_to_part.format(s)}, {next(flag)})"
                  for s in output_sets]
    else:
        stores = [f"store_pair(out_ptr, first, numel, {_offset('out')}, mask, {round_to_part.format('out_re')}, "
                  f"{round_to_part.format('out_im')}, {next(flag)}, BLOCK)"]

    kernel = _KERNEL.format(
        name=f"{op}_kernel",
        args="".join(f"    {a},\n" for a in kernel_args),
        loads=_indent(loads),
        body=_indent(body.strip().splitlines()),
        stores=_indent(stores),
    )
    return _MODULE.format(
        doc=_module_doc(params),
        imports=_imports(kernel, (*library, elementwise_access)),
        mutates=repr(tuple(output_sets) if writes_out else ()),
        part_dtype=str(dtypes.PART_BY_NAME[params["dtype"]]),
        block=128 if params["interpret"] else 1024,
        kernel=kernel,
        run=_run_source(op, slots, planar, result, writes_out, input_sets, output_sets, scalar_args),
    )


# A call by bare name (not an attribute like tl.where): a function the module has to import.
_CALLED_NAME = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")


def _imports(code: str, library) -> str:
    """`from MODULE import NAMES` lines for the public @jit functions of the `library` modules that `code` calls."""
    called = set(_CALLED_NAME.findall(code))
    lines = []
    for module in library:
        names = sorted(called & set(module.__all__))
        if names:
            lines.append(f"from {module.__name__} import {', '.join(names)}\n")
    return "".join(lines)


def _offset_sets(name: str, kind: str, planar: bool) -> list[str]:
    return [f"{name}_re", f"{name}_im"] if planar and kind == COMPLEX else [name]


def _offset(s: str) -> str:
    """The offset of operand set `s` through its own strides."""
    return f"strided_offset(c0, c1, c2, c3, {s}_s0, {s}_s1, {s}_s2, {s}_s3)"


def _tuple(names) -> str:
    return f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"


def _indent(lines) -> str:
    return "".join(f"    {line}\n" for line in lines)


def _module_doc(params: dict) -> str:
    into = "writing into `out`" if params["out"] else "returning a new tensor"
    scalars = f", {', '.join(params['scalars'])} as Python numbers" if params["scalars"] else ""
    return f"{params['op']} on {params['dtype']} ({params['layout']} layout{scalars}), {into}. Generated by jitdtypes."


def _run_source(op, slots, planar, result, writes_out, input_sets, output_sets, scalar_args) -> str:
    params = []
    for name, kind in slots:
        if kind == SCALAR:
            params += [f"{name}_re: float", f"{name}_im: float"]
        else:
            params += [f"{s}: torch.Tensor" for s in _offset_sets(name, kind, planar)]
    lines = []
    if writes_out:
        params += [f"{s}: torch.Tensor" for s in output_sets]
        returns = "None"
    else:
        inputs = ", ".join(f"{s}.shape" for s in input_sets)
        like = next(_offset_sets(name, kind, planar)[0] for name, kind in slots if kind == COMPLEX)
        complex_result = result != REAL and not planar
        dtype = f"{like}.dtype" if complex_result else "PART_DTYPE"
        lines.append(f"shape = elementwise.output_shape({inputs})")
        lines += [f"{s} = torch.empty(shape, dtype={dtype}, device={like}.device)" for s in output_sets]
        returns = "torch.Tensor" if len(output_sets) == 1 else "tuple[torch.Tensor, torch.Tensor]"
    lines += [
        "elementwise.launch(",
        f"    launcher({op}_kernel), BLOCK, PART_DTYPE,",
        f"    {_tuple(input_sets)}, {_tuple(output_sets)}, {_tuple(scalar_args)},",
        ")",
    ]
    if not writes_out:
        lines.append(f"return {', '.join(output_sets)}")
    signature = f"def run({', '.join(params)}) -> {returns}:"
    if len(signature) > 120:
        signature = f"def run(\n{_indent(p + ',' for p in params)}) -> {returns}:"
    return signature + "\n" + _indent(lines)


_KERNEL = '''@triton.jit
def {name}(
{args}):
    first, index, mask, c0, c1, c2, c3 = block_coordinates(numel, n1, n2, n3, BLOCK, WIDE)
{loads}{body}{stores}'''

_MODULE = '''"""{doc}"""
import torch
import triton
import triton.language as tl
from kernels_templates.launcher import launcher

from kernels_templates import elementwise
{imports}
MUTATES = {mutates}
PART_DTYPE = {part_dtype}
BLOCK = {block}


{kernel}

{run}'''


# -- host launcher -----------------------------------------------------------------------------------------

def broadcast_strides(shape, stride, target) -> list[int]:
    """Strides that read a tensor of `shape` expanded to `target` (0 where broadcast), without expanding it."""
    offset = len(target) - len(shape)
    if offset < 0:
        raise ValueError(f"shape {tuple(shape)} does not broadcast to {tuple(target)}")
    strides = [0] * offset
    for size, st, want in zip(shape, stride, target[offset:]):
        if size != want and size != 1:
            raise ValueError(f"shape {tuple(shape)} does not broadcast to {tuple(target)}")
        strides.append(st if size == want else 0)
    return strides


class _Operand(NamedTuple):
    """What the kernel addresses for one tensor: the pointer tensor (real parts, or bool) and strides over the
    iteration shape in the tensor's own elements; parts is 2 for an interleaved complex tensor."""

    pointer: torch.Tensor
    strides: list[int]
    parts: int


def launch(kernel, block: int, part_dtype: torch.dtype, inputs, outputs, scalars) -> None:
    """Run an elementwise kernel over outputs[0].shape: inputs broadcast to it, outputs have it exactly.

    Complex tensors are read through view_as_real, nothing is copied. The kernel takes, per tensor, its pointer
    and MAX_RANK strides, then the scalars, then numel and the inner sizes."""
    tensors = (*inputs, *outputs)
    shape, device = outputs[0].shape, outputs[0].device
    allowed = (dtypes.COMPLEX_OF[part_dtype], part_dtype, torch.bool)
    contiguous = True
    for t in tensors:
        if t.device != device:
            raise ValueError(f"all tensors must be on one device, got {sorted({str(t.device) for t in tensors})}")
        if t.dtype not in allowed:
            parts = torch.view_as_real(t).dtype if t.is_complex() else t.dtype
            raise TypeError(f"this kernel reads {part_dtype} parts, got a tensor of {parts}")
        contiguous = contiguous and t.shape == shape and t.is_contiguous()
    if any(t.shape != shape for t in outputs):
        raise ValueError(f"outputs must all have shape {tuple(shape)}")
    numel = outputs[0].numel()
    if numel == 0:
        return
    with launcher.on_device_of(outputs[0]):
        if contiguous:
            _launch_contiguous(kernel, block, numel, tensors, scalars)
            return
        operands = []
        for t in tensors:
            strides = broadcast_strides(t.shape, t.stride(), shape)
            operands.append(_Operand(torch.view_as_real(t), strides, 2) if t.is_complex() else _Operand(t, strides, 1))
        _launch(kernel, block, tuple(shape), numel, operands[: len(inputs)], operands[len(inputs):], scalars)


def _launch_contiguous(kernel, block, numel, tensors, scalars, eager: bool = False) -> None:
    """Every operand contiguous in the output's shape (the common call): the launch _launch makes for it,
    argument for argument, without collapsing dims. Equal arguments keep Triton's specialization, so kernels
    compiled ahead of time (jitdtypes warm --arch) still match.

    The element count, the tensors' dtypes and alignments and the scalars' types determine every argument's
    specialization here, so a Launcher repeats the launch with the complex tensors themselves as pointers
    (launcher.Launcher.launch_pointers). eager: the caller holds real tensors outside any tracing (an adapter's
    plan, not a module's `run`)."""
    grid, key, constexprs, stride = contiguous_launch(block, numel, tensors, scalars)
    args = []
    for t in tensors:
        args += (t, stride, 0, 0, 0)
    args += (*scalars, numel, 1, 1, 1)
    if kernel.__class__ is launcher.Launcher:
        kernel.launch_pointers(key, grid, args, constexprs, tensors, eager)
    else:
        views = [torch.view_as_real(a) if isinstance(a, torch.Tensor) and a.is_complex() else a for a in args]
        kernel[grid](*views, **constexprs)


def contiguous_launch(block: int, numel, tensors, scalars) -> tuple:
    """(grid, the launcher's key, constexprs, the operands' stride) of _launch_contiguous's launch: the same for
    every call with this element count and these kinds of tensors and scalars (an adapter's plan keeps it)."""
    stride = 1 if numel > 1 else 0  # collapse_dims leaves [numel] with stride 1, or [1] with stride 0
    # a constexpr: under symbolic tracing, bool() guards on it rather than passing a symbolic one along
    wide = bool(numel >= INT32_LIMIT or (2 * numel >= INT32_LIMIT and any(t.is_complex() for t in tensors)))
    key = (numel, wide, *map(type, scalars)) if scalars else (numel, wide)
    return ((numel + block - 1) // block,), key, _constexprs(block, wide, len(tensors)), stride


@functools.lru_cache(maxsize=None)
def _constexprs(block: int, wide: bool, count: int) -> dict:
    """A contiguous launch's keyword arguments (shared: callers only read them)."""
    return {"BLOCK": block, "WIDE": wide, "num_warps": NUM_WARPS, **{f"DENSE{i}": True for i in range(count)}}




def output_shape(*shapes):
    """The shape a module's `run` allocates: traced calls (symbolic sizes) take torch.broadcast_shapes, which
    adds no guards on sizes being equal."""
    return torch.broadcast_shapes(*shapes) if launcher.traced() else common.broadcast_shape(*shapes)


def _launch(kernel, block, shape, numel, inputs, outputs, scalars) -> None:
    operands = (*inputs, *outputs)
    found = strided_launch(block, shape, numel, [op.strides for op in operands], [op.parts for op in operands],
                           scalars)
    if found is None:
        return _launch_dense(kernel, block, shape, numel, inputs, outputs, scalars)
    grid, _, constexprs, operand_strides, inner_sizes = found
    args = []
    for op, strides in zip(operands, operand_strides):
        args += [op.pointer, *strides]
    args += [*scalars, numel, *inner_sizes]
    kernel[grid](*args, **constexprs)


def strided_launch(block: int, shape, numel, strides, parts, scalars):
    """_launch's launch over `shape` for operands read with `strides` (each in its own elements, 0 where
    broadcast) holding `parts` values per element: (grid, the launcher's key, constexprs, each operand's
    strides as the kernel takes them, the inner sizes), or None when more than MAX_RANK dims survive collapsing.
    Determined by these values and the scalars' types, so an adapter's plan keeps it per layout."""
    sizes, collapsed = common.collapse_dims(shape, *strides)
    if len(sizes) > MAX_RANK:
        return None
    padding = MAX_RANK - len(sizes)
    sizes = sizes + [1] * padding
    wide = numel >= INT32_LIMIT
    dense_strides = contiguous_strides(sizes)
    operand_strides, dense = [], {}
    for i, (op_parts, op_strides) in enumerate(zip(parts, collapsed)):
        op_strides = op_strides + [0] * padding
        last = sum((n - 1) * st for n, st in zip(sizes, op_strides))
        wide = wide or op_parts * (last + 1) >= INT32_LIMIT
        operand_strides.append(tuple(op_strides))
        dense[f"DENSE{i}"] = all(st == want for n, st, want in zip(sizes, op_strides, dense_strides) if n > 1)
    key = ("strided", tuple(sizes), tuple(operand_strides), wide, *map(type, scalars))
    constexprs = dict(BLOCK=block, WIDE=wide, num_warps=NUM_WARPS, **dense)
    return ((numel + block - 1) // block,), key, constexprs, operand_strides, tuple(sizes[1:])


def _launch_dense(kernel, block, shape, numel, inputs, outputs, scalars) -> None:
    """More than MAX_RANK dims survived collapsing: copy the inputs dense in the output shape, so only the
    outputs' own layout limits collapsing, and write through dense temporaries when that still leaves too many
    dims. The copies are of real parts, which every dtype can copy natively."""
    dense = contiguous_strides(shape)
    dense_inputs = [
        _Operand(op.pointer.expand(_parts_shape(shape, op.parts)).contiguous(), dense, op.parts) for op in inputs
    ]
    staged = len(common.collapse_dims(shape, *(op.strides for op in outputs))[0]) > MAX_RANK
    if not staged:
        return _launch(kernel, block, shape, numel, dense_inputs, outputs, scalars)
    temps = [
        torch.empty(_parts_shape(shape, op.parts), dtype=op.pointer.dtype, device=op.pointer.device) for op in outputs
    ]
    dense_outputs = [_Operand(temp, dense, op.parts) for temp, op in zip(temps, outputs)]
    _launch(kernel, block, shape, numel, dense_inputs, dense_outputs, scalars)
    for op, temp in zip(outputs, temps):
        op.pointer.copy_(temp)


def _parts_shape(shape, parts: int) -> tuple:
    return (*shape, 2) if parts == 2 else tuple(shape)


def contiguous_strides(shape) -> list[int]:
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= size
    return strides[::-1]
