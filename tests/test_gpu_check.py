"""The GPU check script: on a CPU-only machine it says it needs CUDA; its validation part runs (tiny, in
Triton's interpreter) and every template family passes it."""

import subprocess
import sys

import pytest
import torch

from benchmarks import gpu_check


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the script would time it")
def test_says_it_needs_cuda_without_one():
    run = subprocess.run([sys.executable, "-m", "benchmarks.gpu_check"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "needs a CUDA device" in run.stdout


def test_validation_of_every_family_passes_in_the_interpreter():
    import jitdtypes

    backend = jitdtypes.engine.cpu_backend()
    jitdtypes.set_cpu_backend("triton-interpret")
    try:
        rows = gpu_check.validate("cpu", small=True)
    finally:
        jitdtypes.set_cpu_backend(backend)
    families = {r["family"] for r in rows}
    assert families == {"unary", "binary", "ternary", "reductions", "scans", "matmul", "fft"}
    assert [r for r in rows if r["status"] != "ok"] == []
