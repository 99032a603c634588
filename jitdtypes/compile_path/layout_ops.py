"""The boundary of a planar region: interleaved 16-bit complex storage <-> planes of 16-bit parts, as custom ops.

Inside compiled CPU code a 16-bit complex value's parts can be held as two planes of float16/bfloat16:
Inductor's C++ backend then loads them as `Vectorized<Half>` and converts with the CPU's own instructions.
Read as 32-bit words instead (compile_path/bits.py, the default), every fused kernel decodes each half with
about fifteen integer operations and three bit casts per part. With planes a graph reads each input once into
planes (`to_planes`, a kernel of its own that Inductor cannot fuse into its consumers, so they stay
vectorized) and writes each result from planes (`from_planes`). Inductor could split the halves itself only
with a transposed tile (slow) or a scalar int16 loop that drags its consumers into
scalar code too; these ops run the guard library's AVX2 shuffles (native_guard/planes.h), or ATen's integer
casts where that library is not loaded.

Words stay the default: on the 2-core machine this was measured on, the two extra passes over memory cost
what the cheaper loads save (single ops and chains, both dtypes), and each op adds a Python custom-op call that
small tensors would feel, and that an AOTInductor package has to run through Python. Measurements: docs/COMPILE.md, `python -m benchmarks.compile`.
`JITDTYPES_PLANAR_STORAGE=complex32,bcomplex32` (or `planar_storage`) holds those dtypes as planes.
"""

from __future__ import annotations

import contextlib
import os

import torch
from torch import Tensor

from .. import dtypes

ENV_VAR = "JITDTYPES_PLANAR_STORAGE"


def _requested() -> frozenset:
    names = [n.strip() for n in os.environ.get(ENV_VAR, "").split(",") if n.strip()]
    unknown = [n for n in names if n not in dtypes.COMPLEX_BY_NAME]
    if unknown:
        raise ValueError(f"{ENV_VAR}: {', '.join(unknown)} not among {', '.join(dtypes.COMPLEX_BY_NAME)}")
    return frozenset(dtypes.COMPLEX_BY_NAME[n] for n in names)


# on CPU only: CUDA's Triton kernels read words at full speed
PLANAR_STORAGE = _requested()


def holds_planes(dtype: torch.dtype, device: torch.device) -> bool:
    """Whether compiled code reads and writes tensors of `dtype` on `device` through planes."""
    return device.type == "cpu" and dtype in PLANAR_STORAGE


def storage_tag(held=None) -> str:
    """What Inductor's and AOTAutograd's caches must key on: the same Dynamo graph compiles to other code."""
    held = PLANAR_STORAGE if held is None else held
    return "planes-" + "-".join(sorted(dtypes.NAMES[d] for d in held)) if held else ""


@contextlib.contextmanager
def planar_storage(held):
    """Graphs traced inside hold exactly the dtypes in `held` as planes (comparisons: benchmarks, tests)."""
    global PLANAR_STORAGE
    config = torch.compiler.config
    saved, saved_tag = PLANAR_STORAGE, getattr(config, "cache_key_tag", None)
    PLANAR_STORAGE = frozenset(held)
    if saved_tag is not None:
        config.cache_key_tag = "+".join(t for t in (saved_tag, "storage", storage_tag()) if t)
    try:
        yield
    finally:
        PLANAR_STORAGE = saved
        if saved_tag is not None:
            config.cache_key_tag = saved_tag


def _native_move(words: Tensor, planes: Tensor, split: bool) -> bool:
    from .. import native_guard

    try:
        native_guard.move_planes(words.data_ptr(), planes[0].data_ptr(), planes[1].data_ptr(), words.numel(), split)
    except (OSError, RuntimeError):  # no compiler, or the build failed: ATen's integer casts do it
        return False
    return True


@torch.library.custom_op("jitdtypes::to_planes", mutates_args=(), schema="(Tensor x) -> Tensor")
def to_planes(x: Tensor) -> Tensor:
    """(2, *x.shape) of x's part dtype, contiguous: x's real parts, then its imaginary parts (conj/neg flags are
    the caller's to resolve: the bits are the storage's)."""
    words = x.view(torch.int32).contiguous()
    planes = torch.empty((2, *x.shape), dtype=torch.int16, device=x.device)
    if words.numel() and not (x.device.type == "cpu" and _native_move(words, planes, split=True)):
        planes[0] = words.to(torch.int16)  # the low 16 bits
        planes[1] = (words >> 16).to(torch.int16)
    return planes.view(dtypes.part_dtype(x.dtype))


@to_planes.register_fake
def _to_planes_fake(x: Tensor) -> Tensor:
    return x.new_empty((2, *x.shape), dtype=dtypes.part_dtype(x.dtype))


@torch.library.custom_op("jitdtypes::from_planes", mutates_args=(), schema="(Tensor planes) -> Tensor")
def from_planes(planes: Tensor) -> Tensor:
    """The contiguous complex tensor of shape planes.shape[1:] whose parts are planes[0] and planes[1]."""
    parts = planes.contiguous().view(torch.int16)
    words = torch.empty(planes.shape[1:], dtype=torch.int32, device=planes.device)
    if words.numel() and not (planes.device.type == "cpu" and _native_move(words, parts, split=False)):
        words.copy_((parts[0].to(torch.int32) & 0xFFFF) | (parts[1].to(torch.int32) << 16))
    return words.view(dtypes.complex_of(planes.dtype))


@from_planes.register_fake
def _from_planes_fake(planes: Tensor) -> Tensor:
    return planes.new_empty(planes.shape[1:], dtype=dtypes.complex_of(planes.dtype))


def unpack(x: Tensor) -> tuple[Tensor, Tensor]:
    """(re, im) of a 16-bit complex tensor of any strides as its part dtype, lazy conj/neg flags applied."""
    conj, neg = x.is_conj(), x.is_neg()
    raw = x.conj() if conj else x  # strips the flag: a view of the same storage
    raw = torch._neg_view(raw) if neg else raw
    planes = torch.ops.jitdtypes.to_planes(raw)
    re, im = planes[0], planes[1]
    if neg:
        re, im = -re, -im
    return re, (-im if conj else im)


def pack(re: Tensor, im: Tensor, dtype: torch.dtype) -> Tensor:
    """The `dtype` tensor with these parts (same shape, any float dtype: rounded once to the part dtype)."""
    part = dtypes.part_dtype(dtype)
    return torch.ops.jitdtypes.from_planes(torch.stack([re.to(part), im.to(part)]))
