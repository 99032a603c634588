"""What the generated-CPU-kernel tests share: inputs, the upcast path's result by its definition, packages run
directly (tests/test_cpu_kernels.py, tests/test_cpu_kernel_layouts.py)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import torch

from jitdtypes import cpu_kernels, dtypes
from jitdtypes.cpu_kernels import table

BCOMPLEX32 = getattr(torch, "bcomplex32", None)  # torch >= 2.14


@contextlib.contextmanager
def eager_kernels():
    """JITDTYPES_CPU_KERNELS=eager for a module fixture (monkeypatch is per test), restored afterwards."""
    previous = os.environ.get(cpu_kernels.ENV_VAR)
    os.environ[cpu_kernels.ENV_VAR] = cpu_kernels.EAGER
    try:
        yield
    finally:
        os.environ.pop(cpu_kernels.ENV_VAR) if previous is None else os.environ.update({cpu_kernels.ENV_VAR: previous})


def inputs(dtype, shape, count, seed=0):
    torch.manual_seed(seed)
    return [(torch.randn(shape, dtype=torch.complex64) + (2 if i else 0)).to(dtype) for i in range(count)]


def call(name, tensors):
    return getattr(torch, name)(*tensors)


def upcast(name, tensors, dtype):
    """The upcast path's result by its definition: complex64 on the rounded inputs, rounded once."""
    wide = call(name, [t.to(torch.complex64) for t in tensors])
    return wide.to(dtype if wide.is_complex() else dtypes.part_dtype(dtype))


def bits(t):
    return t.contiguous().view(torch.int32 if t.dtype.itemsize == 4 else torch.int16)


def _runner(path, model):
    """The model's shared library loaded as the typed guard loads it (nothing extracted anywhere)."""
    return torch._C._aoti.AOTIModelContainerRunnerCpu(str(Path(path).with_name(f"{model}{table.LIBRARY_SUFFIX}")), 1)


def package_result(path, tensors, dtype):
    """The package's flat model ("model", next to the library at `path`) run on these tensors, flattened."""
    words = dtype != torch.complex32
    flat = [t.reshape(-1).view(torch.int32) if words else t.reshape(-1) for t in tensors]
    out = _runner(path, "model").run(flat)[0]
    out = out.view(dtype) if out.dtype == torch.int32 else out
    return out.view(tensors[0].shape) if out.numel() == tensors[0].numel() else out  # a full reduction's 0-dim


def model_result(path, model, tensors, dtype):
    """One model of a package (its library next to the one at `path`) run on these tensors as they are
    (bcomplex32 as int32 words)."""
    out = _runner(path, model).run([t if dtype == torch.complex32 else t.view(torch.int32) for t in tensors])[0]
    return out.view(dtype) if out.dtype == torch.int32 else out
