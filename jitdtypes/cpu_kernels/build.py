"""Build generated CPU kernels into the cache: `python -m jitdtypes.cpu_kernels.build REQUEST` (main).

Run in a process of its own (the builder, started by provider.py): it imports Dynamo and Inductor, which the
calling process must not pay for, and it owns the build: it holds the key's lock, builds in a workspace inside
the cache and publishes there, so a build finishes and lands even when the process that asked has ended.

The op is exported over 1-D inputs of a symbolic length (so the package serves every size; a dim reduction
over one model per layout of its reduced dims, table.DIM_MODELS, every size symbolic) with jitdtypes enabled,
so AOTInductor lowers it through the compile path's decompositions; each model is one shared library
(`<model>.so`). bcomplex32 tensors cross the boundary as int32 words (AOTInductor's C shim has no bcomplex32).
`into`: the package of the op's writing forms (table.INTO), which takes the written tensor first and returns
nothing.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import torch

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

import jitdtypes
from jitdtypes import dtypes, schema
from jitdtypes.cpu_kernels import table
from jitdtypes.compile_path import bits, decompositions, planar
from cache_tools.store import CPU_KERNELS, BuildFailed, Store


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


def build(overload: str, dtype: torch.dtype, directory: Path, into: bool = False) -> None:
    """Each model's shared library (`<model>.so`, table.models' names) into `directory`: what the typed guard
    loads as it is, so that no process extracts a package into $TMPDIR."""
    assert jitdtypes.is_enabled(), "the compile path is what compiles the kernel"
    import torch._inductor

    words = dtypes.NAMES[dtype] not in table.SHIM_DTYPES
    with contextlib.ExitStack() as stack:
        stack.enter_context(decompositions.parts_reduced_apart())  # the reduction reads its input
        if table.reads(overload, dtypes.NAMES[dtype]) == table.HALVES:
            stack.enter_context(bits.read_as_halves())
        for name, program in _programs(overload, dtype, words, into).items():
            scratch = directory / f".{name}"  # AOTInductor writes its sources and objects beside the library
            scratch.mkdir()
            made = Path(torch._inductor.aot_compile(program.module(check_guards=False), program.example_inputs[0],
                                                    options={"aot_inductor.output_path": str(scratch / "model.so")}))
            made.rename(directory / f"{name}{table.LIBRARY_SUFFIX}")
            # what a graph with extern kernels needs beside its library (AOTIModelContainerRunner reads it)
            if made.with_suffix(".json").is_file():
                made.with_suffix(".json").rename(directory / f"{name}.json")
            shutil.rmtree(scratch)


def _make(job: dict, workspace: Path) -> dict:
    """One package's files into `workspace`, and what its metadata says. A failure of the exporter or the
    compiler is a BuildFailed (the store remembers it); losing the workspace, or being interrupted
    (KeyboardInterrupt, SystemExit from SIGTERM), is not."""
    started = time.monotonic()
    described = {"overload": job["overload"], "dtype": job["dtype"], "into": job["into"],
                 "torch": torch.__version__, "device": "cpu"}
    try:
        build(job["overload"], dtypes.COMPLEX_BY_NAME[job["dtype"]], workspace, job["into"])
    except MemoryError:
        raise
    except Exception as exc:
        if not workspace.is_dir():
            raise
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        raise BuildFailed(f"building it failed: {type(exc).__name__}: {lines[-1][:300] if lines else ''}",
                          described) from exc
    return {**described, "build_seconds": round(time.monotonic() - started, 2), "peak_rss_bytes": peak_rss(),
            "builder_pid": os.getpid()}


def peak_rss() -> int:
    """The most memory this process and the largest of its finished children (the compiler) held at once,
    in bytes: an upper bound on a build's peak."""
    if resource is None:
        return 0
    scale = 1 if sys.platform == "darwin" else 1024  # Linux counts kilobytes
    return scale * (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss +
                    resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def _interrupted(signum, frame) -> None:
    raise SystemExit(128 + signum)  # unwinds through the store: the workspace goes, nothing is recorded


def main() -> int:
    """`python -m jitdtypes.cpu_kernels.build REQUEST`: REQUEST is JSON {"jobs": [{"key", "overload",
    "dtype", "into"}], "retry": bool}. Each job's package is found in the cache or built into it (the store's
    check-lock-check: this process holds the key's lock for the whole build, whoever asked for it). One JSON
    line per job on stdout: {"key", "built"} or {"key", "error"}. Exit status 1 if a job failed."""
    request = json.loads(sys.argv[1])
    signal.signal(signal.SIGTERM, _interrupted)
    if hasattr(os, "nice"):
        os.nice(10)  # a background build: every other process's work comes first
    store, failed = Store(CPU_KERNELS), False
    for job in request["jobs"]:
        try:
            _, built = store.ensure(job["key"], functools.partial(_make, job), retry=bool(request.get("retry")))
            line = {"key": job["key"], "built": built}
        except BuildFailed as exc:  # RememberedFailure included
            line, failed = {"key": job["key"], "error": str(exc)}, True
        try:
            print(json.dumps(line), flush=True)
        except OSError:  # whoever asked has gone (a build handed over): the cache has the result
            pass
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
