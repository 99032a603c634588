"""Test-only: make probing children meet, on any machine, the hazards a GPU brings (see tests/test_discovery_*).

JITDTYPES_PROBE_FAULTS is read by each probing child, never by an ordinary import. It lists faults and the
overloads they strike, e.g. "device-assert:aten::exp,hang:aten::sin.out":

- device-assert: the overload's first call raises exactly what a CUDA device-side assert raises, and every
  later call in that process raises it again (the CUDA context is poisoned);
- cuda-error: every call of the overload raises a CUDA library error that leaves the device working
  (as cuBLAS does when it refuses arguments);
- hang: the overload's first call never returns;
- exit: the overload's first call kills its process, as a segfaulting kernel does.

Discovery results probed under faults are cached under their own key, never where an ordinary import looks.
"""

from __future__ import annotations

import os
import signal
import time

from .probe import Call

ENV = "JITDTYPES_PROBE_FAULTS"
DEVICE_ASSERT, CUDA_ERROR, HANG, EXIT = "device-assert", "cuda-error", "hang", "exit"
DEVICE_ASSERT_MESSAGE = (
    "CUDA error: device-side assert triggered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
    "be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)
CUDA_ERROR_MESSAGE = "CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmEx(handle, opa, opb, ...)`"


def spec() -> str:
    return os.environ.get(ENV, "").strip()


def parse(text: str) -> dict[str, str]:
    """'hang:aten::sin,exit:aten::cos' -> {'aten::sin': 'hang', 'aten::cos': 'exit'}."""
    faults = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        fault, _, overload = item.partition(":")
        if fault not in (DEVICE_ASSERT, CUDA_ERROR, HANG, EXIT) or not overload:
            raise ValueError(f"{ENV}: {item!r} is not FAULT:OVERLOAD with FAULT one of "
                             f"{DEVICE_ASSERT}, {CUDA_ERROR}, {HANG}, {EXIT}")
        faults[overload] = fault
    return faults


class Faults:
    """The faults of one probing process; `caller(overload, call)` wraps how that overload's probe calls ops."""

    def __init__(self, text: str):
        self.by_overload = parse(text)
        self.poisoned = False

    def caller(self, overload: str, call: Call) -> Call:
        fault = self.by_overload.get(overload)

        def faulty(fn, *args, **kwargs):
            if self.poisoned:
                raise RuntimeError(DEVICE_ASSERT_MESSAGE)
            if fault == DEVICE_ASSERT:
                self.poisoned = True
                raise RuntimeError(DEVICE_ASSERT_MESSAGE)
            if fault == CUDA_ERROR and hasattr(fn, "_schema"):  # the op itself, not the device check
                raise RuntimeError(CUDA_ERROR_MESSAGE)
            if fault == HANG:
                while True:
                    time.sleep(3600)
            if fault == EXIT:
                os.kill(os.getpid(), signal.SIGKILL)
            return call(fn, *args, **kwargs)

        return faulty
