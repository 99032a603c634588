"""Build one generated CPU kernel: `python -m jitdtypes.cpu_kernels.build OVERLOAD DTYPE PACKAGE`.

Run in a child process (jitdtypes/cpu_kernels): it imports Dynamo and Inductor, which the calling process
must not pay for. The op is exported over 1-D inputs of a symbolic length (so the package serves every size)
with jitdtypes enabled, so AOTInductor lowers it through the compile path's decompositions. bcomplex32 tensors
cross the package boundary as int32 words (AOTInductor's C shim has no bcomplex32).
"""

from __future__ import annotations

import contextlib
import os
import sys

import torch

import jitdtypes
from jitdtypes import dtypes, schema
from jitdtypes.cpu_kernels import table
from jitdtypes.compile_path import bits, decompositions
from jitdtypes.cpu_kernels import _SHIM_DTYPES


# Inductor splits a loop over the CPU's threads only where the example's length says there is work enough
# (cpp.decide_parallel_depth): exported over 64 elements, every package ran on one thread. complex32 exp at 1M
# elements: 2.07 ms on one, 1.16 ms on both cores; at 8 elements the guard's call costs the same either way
# (2.6 us), so one package serves every size. table.SERIAL ones keep the short example.
EXAMPLE_LENGTH, SERIAL_EXAMPLE_LENGTH = 1 << 16, 64


class Kernel(torch.nn.Module):
    def __init__(self, op, dtype: torch.dtype, words: bool) -> None:
        super().__init__()
        self.op, self.dtype, self.words = op, dtype, words

    def forward(self, *tensors):
        if self.words:
            tensors = [t.view(self.dtype) for t in tensors]
        result = self.op(*tensors)
        return result.view(torch.int32) if self.words and result.dtype == self.dtype else result


class LanesKernel(Kernel):
    """The real op on the parts as one flat tensor (table.LANES): float32 arithmetic, one rounding."""

    def forward(self, *tensors):
        part = dtypes.part_dtype(self.dtype)
        lanes = [t.view(part).to(torch.float32) for t in tensors]
        return self.op(*lanes).to(part).view(torch.int32 if self.words else self.dtype)


def build(overload: str, dtype: torch.dtype, package: str) -> None:
    assert jitdtypes.is_enabled(), "the compile path is what compiles the kernel"
    import torch._inductor

    words = dtype not in _SHIM_DTYPES
    op = schema.overload(overload).op
    arity = 2 if table.GENERATED[overload] == table.BINARY else 1
    torch.manual_seed(0)
    serial = (overload, dtypes.NAMES[dtype]) in table.SERIAL
    examples = [torch.randn(SERIAL_EXAMPLE_LENGTH if serial else EXAMPLE_LENGTH, dtype=torch.complex64).to(dtype)
                for _ in range(arity)]
    if words:
        examples = [t.view(torch.int32) for t in examples]
    length = torch.export.Dim("n", min=2)
    reads = table.reads(overload, dtypes.NAMES[dtype])
    kernel = (LanesKernel if reads == table.LANES else Kernel)(op, dtype, words)
    with contextlib.ExitStack() as stack:
        stack.enter_context(decompositions.parts_reduced_apart())  # the reduction reads its input
        if reads == table.HALVES:
            stack.enter_context(bits.read_as_halves())
        program = torch.export.export(kernel, tuple(examples),
                                      dynamic_shapes=(tuple({0: length} for _ in examples),))  # forward(*tensors)
        torch._inductor.aoti_compile_and_package(program, package_path=package)


def main() -> None:
    overload, dtype_name, package = sys.argv[1:4]
    if hasattr(os, "nice"):
        os.nice(10)  # a background build: the caller's own work comes first
    build(overload, dtypes.COMPLEX_BY_NAME[dtype_name], package)


if __name__ == "__main__":
    main()
