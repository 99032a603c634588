"""Build one generated CPU kernel: `python -m jitdtypes.cpu_kernels.build OVERLOAD DTYPE PACKAGE [into]`.

Run in a child process (jitdtypes/cpu_kernels): it imports Dynamo and Inductor, which the calling process
must not pay for. The op is exported over 1-D inputs of a symbolic length (so the package serves every size;
a dim reduction over one model per layout of its reduced dims, table.DIM_MODELS, every size symbolic)
with jitdtypes enabled, so AOTInductor lowers it through the compile path's decompositions. bcomplex32 tensors
cross the package boundary as int32 words (AOTInductor's C shim has no bcomplex32). `into`: the package of the
op's writing forms (table.INTO), which takes the written tensor first and returns nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys

import torch

import jitdtypes
from jitdtypes import dtypes, schema
from jitdtypes.cpu_kernels import table
from jitdtypes.compile_path import bits, decompositions, planar


# Inductor splits a loop over the CPU's threads only where the example's length says there is work enough
# (cpp.decide_parallel_depth): exported over 64 elements, every package ran on one thread, which halves a large
# call's speed on two cores; a small call costs the same either way, so one package serves every size.
# table.SERIAL ones keep the short example.
EXAMPLE_LENGTH, SERIAL_EXAMPLE_LENGTH = 1 << 16, 64


class Kernel(torch.nn.Module):
    def __init__(self, op, dtype: torch.dtype, words: bool, dims: tuple[int, ...] | None = None,
                 into: bool = False) -> None:
        super().__init__()
        self.op, self.dtype, self.words, self.dims, self.into = op, dtype, words, dims, into

    def forward(self, *tensors):
        if not self.into:
            return self.result(*tensors)
        written, *tensors = tensors
        written.copy_(self.result(*tensors))  # Inductor stores the result there: no tensor of its own
        return ()

    def result(self, *tensors):
        if self.words:
            tensors = [t.view(self.dtype) for t in tensors]
        result = self.op(*tensors) if self.dims is None else self.op(*tensors, list(self.dims))
        return result.view(torch.int32) if self.words and result.dtype == self.dtype else result


def _is_column(lanes: torch.Tensor) -> bool:
    """An operand of one element per row (the columns model's smaller one): its two lanes, a size export keeps
    static, where the others' last dims are symbolic."""
    return isinstance(lanes.shape[-1], int) and lanes.shape[-1] == 2


class LanesKernel(Kernel):
    """The real op on the parts as one flat tensor (table.LANES): float32 arithmetic, one rounding. A column
    operand's two lanes spread along its row by parity, which keeps the row's loads contiguous (and vectorized,
    where words of a column operand are not)."""

    def result(self, *tensors):
        part = dtypes.part_dtype(self.dtype)
        lanes = [t.view(part).to(torch.float32) for t in tensors]  # an into model's are lanes already
        n = max((t.shape[-1] for t in lanes if not _is_column(t)), default=2)
        odd = (torch.arange(n, dtype=torch.int32) & 1) == 1  # int32: & stays out of Inductor's indexing
        lanes = [torch.where(odd, t[..., 1:], t[..., :1]) if _is_column(t) else t for t in lanes]
        result = self.op(*lanes) if self.dims is None else self.op(*lanes, list(self.dims))
        return result.to(part) if self.into else result.to(part).view(torch.int32 if self.words else self.dtype)


class PairsKernel(Kernel):
    """The op's formula per lane of the parts as one flat tensor (table.PAIRS): each lane takes its element's
    other part from its neighbour (contiguous loads one lane ahead and one behind, which Inductor vectorizes
    with the CPU's conversions, where complex32's words cost a dozen vector operations per part), runs the
    compile path's decomposition on those parts and keeps its own part of the result. Lanes 1 to n-2 of the
    last dim in one vector loop; its first and last lane apart, so that no load leaves the tensor."""

    def forward(self, *tensors):
        if not self.into:
            return torch.cat(self.pieces(*tensors), -1).view(self.dtype)
        written, *tensors = tensors
        written.copy_(torch.cat(self.pieces(*tensors), -1))
        return ()

    def pieces(self, *tensors):
        """The result's first lane, lanes 1 to n-2 and last lane, each rounded (Inductor then stores them
        rounded into the cat's slices; rounded after the cat, they took a float32 buffer and a pass more)."""
        part = dtypes.part_dtype(self.dtype)
        lanes = [t.view(part).to(torch.float32) for t in tensors]  # an into model's are lanes already
        n = lanes[0].shape[-1]  # the first operand is never a column (the package swaps commutative ones)
        odd = (torch.arange(1, n - 1, dtype=torch.int32) & 1) == 1  # int32: & stays out of Inductor's indexing
        # a column's element is the same for its whole row
        inner = self._own_parts([(t[..., :1], t[..., 1:]) if _is_column(t) else (
            torch.where(odd, t[..., :-2], t[..., 1:-1]), torch.where(odd, t[..., 1:-1], t[..., 2:])) for t in lanes])
        first = self._own_parts([(t[..., :1], t[..., 1:2]) for t in lanes])[0]
        last = self._own_parts([(t[..., :1], t[..., 1:]) if _is_column(t) else (t[..., -2:-1], t[..., -1:])
                                for t in lanes])[1]
        return [piece.to(part) for piece in (first, torch.where(odd, inner[1], inner[0]), last)]

    def _own_parts(self, parts):
        """(re, im) of the op's result from each operand's (re, im)."""
        values = [planar.assemble(re, im, self.dtype) for re, im in parts]  # packing unused: Inductor drops it
        return planar.parts(decompositions.TABLE[self.op](*values))


# Each model's inputs: their example shapes with a name per symbolic size (None: a broadcast 1), and the dims
# a dim reduction reduces. A dim reduction's models are table.DIM_MODELS, a binary op's table.BINARY_MODELS.
_MATRIX = ((256, 256), ("rows", "columns"))
_DIM_MODEL_LAYOUTS = {"whole": ([((EXAMPLE_LENGTH,), ("length",))], (0,)), "rows": ([_MATRIX], (1,)),
                      "columns": ([_MATRIX], (0,)),
                      "middle": ([((16, 64, 64), ("outer", "length", "inner"))], (1,))}
_BINARY_MODEL_LAYOUTS = {"rows": [_MATRIX, ((1, 256), (None, "columns"))],
                         "columns": [_MATRIX, ((256, 1), ("rows", None))]}


def _layouts(overload: str, dtype_name: str, into: bool) -> dict:
    """model name -> (inputs, reduced dims)"""
    kind = table.GENERATED[overload]
    flat = ((SERIAL_EXAMPLE_LENGTH if table.serial(overload, dtype_name) else EXAMPLE_LENGTH,), ("length",))
    if into:  # the written tensor, then the inputs
        return {table.into_model(overload, dtype_name): ([flat] * (3 if kind == table.BINARY else 2), None)}
    if kind == table.DIM_REDUCTION:
        return {**_DIM_MODEL_LAYOUTS, "whole": ([flat], (0,))}
    if kind == table.BINARY:
        return {"model": ([flat, flat], None), **{name: (inputs, None) for name, inputs in _BINARY_MODEL_LAYOUTS.items()}}
    return {"model": ([flat] * (3 if kind == table.TERNARY else 1), None)}


def _programs(overload: str, dtype: torch.dtype, words: bool, into: bool) -> dict:
    """The exported programs of the package, by model name."""
    op, dtype_name = schema.overload(overload).op, dtypes.NAMES[dtype]
    torch.manual_seed(0)
    programs = {}
    for name, (inputs, dims) in _layouts(overload, dtype_name, into).items():
        reading = table.reads(overload, dtype_name, name)
        if reading in table.AS_LANES:
            kernel = (LanesKernel if reading == table.LANES else PairsKernel)(op, dtype, words, dims, into)
        elif into:
            kernel = Kernel(op, dtype, True, dims, into)  # words for complex32 too: Inductor has no complex copy
        elif table.GENERATED[overload] == table.DIM_REDUCTION:
            # the compile path's decomposition itself: exporting mean.dim of bcomplex32 runs fake tensors
            # through torch._refs.mean, whose complex(count) specializes every symbolic size (export refuses it)
            kernel = Kernel(decompositions.TABLE[op], dtype, words, dims)
        else:
            kernel = Kernel(op, dtype, words, dims, into)
        examples = [torch.randn(shape, dtype=torch.complex64).to(dtype) for shape, _ in inputs]
        if name == table.INTO_LANES:
            examples = [t.view(dtypes.part_dtype(dtype)) for t in examples]
        elif words or name == table.INTO:
            examples = [t.view(torch.int32) for t in examples]
        least = 4 if name == table.INTO_LANES else 2  # lanes: two per element (PairsKernel slices 1:-1)
        sizes = {size: torch.export.Dim(f"{name}_{size}", min=least)
                 for _, names in inputs for size in names if size}
        dynamic = tuple({axis: sizes[size] for axis, size in enumerate(names) if size} for _, names in inputs)
        programs[name] = torch.export.export(kernel, tuple(examples), dynamic_shapes=(dynamic,))  # forward(*tensors)
    return programs


def build(overload: str, dtype: torch.dtype, package: str, into: bool = False) -> None:
    assert jitdtypes.is_enabled(), "the compile path is what compiles the kernel"
    import torch._inductor
    from torch._inductor.package import package_aoti

    words = dtypes.NAMES[dtype] not in table.SHIM_DTYPES
    with contextlib.ExitStack() as stack:
        stack.enter_context(decompositions.parts_reduced_apart())  # the reduction reads its input
        if table.reads(overload, dtypes.NAMES[dtype]) == table.HALVES:
            stack.enter_context(bits.read_as_halves())
        # one AOTInductor build per model, packaged together (what aoti_compile_and_package does for one)
        files = {name: torch._inductor.aot_compile(program.module(check_guards=False), program.example_inputs[0],
                                                   options={"aot_inductor.package": True})
                 for name, program in _programs(overload, dtype, words, into).items()}
        package_aoti(package, files)

def main() -> None:
    overload, dtype_name, package = sys.argv[1:4]
    if hasattr(os, "nice"):
        os.nice(10)  # a background build: the caller's own work comes first
    build(overload, dtypes.COMPLEX_BY_NAME[dtype_name], package, into=sys.argv[4:] == [table.INTO])


if __name__ == "__main__":
    main()
