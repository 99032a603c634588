"""`jitdtypes demo`: the checks, then the op table (ops.py) and the Fourier neural operator's memory (fno.py)."""

from __future__ import annotations

import sys

import torch

import jitdtypes

from ... import dtypes
from . import fno, ops

MIN_SIZE = 8  # the FFT cases' rows and the FNO's modes are size // 8


def run(device: str | None = None, size: int | None = None) -> int:
    """The demo on `device` (default: cuda when available, else cpu), with tensors of side `size` (default:
    each case's own). Exit status: 0; 1 when a call failed with jitdtypes; 2 when the device, the size or
    jitdtypes itself is not to be had."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device not in ("cpu", "cuda"):
        print(f"jitdtypes demo: device {device!r}: choose cpu or cuda", file=sys.stderr)
        return 2
    if device == "cuda" and not torch.cuda.is_available():
        print(f"jitdtypes demo: no CUDA device is available to torch {torch.__version__} (CUDA "
              f"{torch.version.cuda or 'not built in'}); run it on cpu", file=sys.stderr)
        return 2
    if size is not None and size < MIN_SIZE:
        print(f"jitdtypes demo: size {size}: at least {MIN_SIZE}", file=sys.stderr)
        return 2
    if not jitdtypes.is_enabled():
        print("jitdtypes demo: jitdtypes is disabled (JITDTYPES_DISABLE=1 or jitdtypes.disable()); the demo "
              "compares plain PyTorch with jitdtypes enabled", file=sys.stderr)
        return 2
    print(f"jitdtypes {jitdtypes.__version__} demo on {device} (torch {torch.__version__}, {jitdtypes.guard()} "
          "guard), eager mode")
    for name, why in dtypes.ABSENT.items():
        print(f"{name}: {why}")
    failures = ops.report(device, size)
    print()
    failures += fno.report(device, size)
    return 1 if failures else 0
