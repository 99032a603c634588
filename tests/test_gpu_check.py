"""The GPU check script: on a CPU-only machine it says it needs CUDA; its validation part runs (tiny, in
Triton's interpreter) and every template family passes it; every part runs end to end against a simulated GPU
(Triton compiling for sm_90, nothing launched), as it would on the lent GPU machine's torch and Triton."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import gpu_check

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the script would time it")
def test_says_it_needs_cuda_without_one():
    run = subprocess.run([sys.executable, "-m", "benchmarks.gpu_check"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "needs a CUDA device" in run.stdout


def test_validation_of_every_family_passes_in_the_interpreter():
    import jitdtypes

    backend = jitdtypes.triton_kernels.engine.cpu_backend()
    jitdtypes.set_cpu_backend("triton-interpret")
    try:
        rows = gpu_check.validate("cpu", small=True)
    finally:
        jitdtypes.set_cpu_backend(backend)
    families = {r["family"] for r in rows}
    assert families == {"unary", "binary", "ternary", "reductions", "scans", "matmul", "fft"}
    assert [r for r in rows if r["status"] != "ok"] == []


def test_latency_rows_compare_first_calls_on_empty_and_imported_warm_caches(monkeypatch):
    """The latency part's wiring (it needs CUDA to run): first calls once on empty caches, once on a cache warmed
    in another directory, exported and imported into an empty one, each with its Triton compilations."""
    children, commands = [], []

    def child(code, cache, **env):
        children.append((code, cache, env))
        if code is gpu_check._FIRST_CALLS:
            warm = "imported" in cache
            return {"seconds": {"exp": 0.01 if warm else 0.9}, "compiled": {"exp": 0 if warm else 1}}
        if code is gpu_check._IMPORT:
            return {"import": 0.5}
        return {"seconds": {"cpu": 15.0, "cuda": 20.0, "guard and install": 1.0},
                "notes": {"cpu": "empty cache, 377 overrides, 0 crashed"}}

    def cli(cache, *args, **env):
        commands.append((cache.rsplit("/", 1)[-1], args[:2], env))
        if args[0] == "cache" and args[1] == "export":
            open(args[2], "wb").close()

    monkeypatch.setattr(gpu_check, "_child", child)
    monkeypatch.setattr(gpu_check, "_cli", cli)
    rows = gpu_check.latency_rows()
    imports = [(r["metric"], r["ours"], r["baseline"]) for r in rows if r["metric"].startswith("first import")]
    assert imports == [("first import: discovery cpu", "15 s", "empty cache, 377 overrides, 0 crashed"),
                       ("first import: discovery cuda", "20 s", "empty cache"),
                       ("first import: guard and install", "1 s", "empty cache")]
    first = [(r["metric"], r["ours"], r["baseline"]) for r in rows if r["metric"].startswith("first call")]
    assert first == [("first call exp", "0.9 s", "empty kernel and Triton caches, 1 Triton compilation"),
                     ("first call exp", "0.01 s", "imported warm cache, empty Triton cache, 0 Triton compilations")]
    assert [(cache, args) for cache, args, _ in commands] == [
        ("warm", ("warm", "--dtype")), ("warm", ("cache", "export")), ("imported", ("cache", "import"))]
    first_call_runs = [(cache, env["TRITON_CACHE_DIR"]) for code, cache, env in children
                       if code is gpu_check._FIRST_CALLS]
    assert [c.rsplit("/", 1)[-1] for c, _ in first_call_runs] == ["cache", "imported"]
    assert len({t for _, t in first_call_runs} | {commands[0][2]["TRITON_CACHE_DIR"]}) == 3  # no Triton cache shared


@pytest.mark.device_simulation
@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the session runs for real there")
def test_the_gpu_session_runs_every_step_on_a_simulated_gpu(tmp_path):
    """benchmarks/gpu_session.sh, the one command a lent GPU machine runs, end to end against a simulated sm_90
    (Triton compiling every kernel for it, nothing launched), as it would run on that machine's torch and Triton;
    with this session's cache, so that the guard is not built again."""
    environment = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compiled Triton
    run = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_session.sh"), str(tmp_path)],
                         env={**environment, "SIMULATE": "sm_90", "PYTHON": sys.executable}, cwd=ROOT,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "compile.txt", "gpu_check.txt", "gpu_discovery.txt", "logs.tar.gz", "summary.txt"]
    steps = [line.split()[:2] for line in (tmp_path / "summary.txt").read_text().splitlines()
             if line.split()[:1] in (["guard"], ["discovery"], ["import"], ["gpu_check"], ["compile"])][:5]
    assert sorted(steps) == [["compile", "ok"], ["discovery", "ok"], ["gpu_check", "ok"], ["guard", "ok"],
                             ["import", "ok"]]
    assert "cpu " in (tmp_path / "gpu_discovery.txt").read_text()
    lines = (tmp_path / "gpu_check.txt").read_text().splitlines()
    validated = [line.split() for line in lines if line.startswith("validate")]
    assert {fields[1] for fields in validated} == {"unary", "binary", "ternary", "reductions", "scans", "matmul", "fft"}
    # every representative call reached a kernel launch with a result of complex64's shape and mapped dtype
    assert [line for line in lines if line.startswith("validate") and " launched " not in line] == []
    timed = {line.split()[1] for line in lines if line.startswith("time")}
    assert {"elementwise", "sum", "cumsum", "GEMM", "FFT"} <= timed
    assert all("(simulated)" in line for line in lines if line.startswith("time"))
    latency = [line for line in lines if line.startswith("latency")]
    assert any("first import: install" in line for line in latency)
    assert not any("first import: discovery" in line for line in latency)  # gpu_discovery measures it
    assert sum("first call" in line for line in latency) == 14  # 7 ops, on an empty and on an imported cache
