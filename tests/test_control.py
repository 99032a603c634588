"""Turning jitdtypes off and on, and seeing what it did: env var, disable/enable/disabled, stats, logging, CLI."""

import json
import logging
import os
import subprocess
import sys

import pytest
import torch

import jitdtypes
from tests.conftest import CLI

SNIPPET = """
import torch, jitdtypes
x = torch.ones(3, dtype=torch.complex32)
try:
    torch.exp(x)
    print("worked", jitdtypes.is_enabled())
except NotImplementedError:
    print("rejected", jitdtypes.is_enabled())
"""


def _run(code, **env):
    result = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_environment_variable_installs_nothing():
    assert _run(SNIPPET, JITDTYPES_DISABLE="1") == "rejected False"
    assert _run(SNIPPET, JITDTYPES_DISABLE="0") == "worked True"


def test_disable_enable_and_context_manager():
    x = torch.ones(3, dtype=torch.complex32)
    assert jitdtypes.is_enabled()
    with jitdtypes.disabled():
        with pytest.raises(NotImplementedError):
            torch.exp(x)
    assert torch.exp(x).dtype == torch.complex32
    jitdtypes.disable()
    try:
        assert not jitdtypes.is_enabled()
        with pytest.raises(NotImplementedError):
            torch.exp(x)
        with jitdtypes.disabled():  # nested in a disabled state, it leaves it disabled
            pass
        assert not jitdtypes.is_enabled()
    finally:
        jitdtypes.enable()
    jitdtypes.enable()  # idempotent
    assert torch.exp(x).dtype == torch.complex32


def test_stats_records_the_path_each_call_took():
    x = torch.ones(4, dtype=torch.complex32)
    before = {(r["op"], r["dtype"], r["device"]): r for r in jitdtypes.stats()}
    torch.exp(x)
    torch.exp(x)
    rows = {(r["op"], r["dtype"], r["device"]): r for r in jitdtypes.stats()}
    row, earlier = rows[("aten::exp", "complex32", "cpu")], before[("aten::exp", "complex32", "cpu")]
    assert row["support"] == "missing" and row["path"] in ("upcast", "template")  # the most used path so far
    assert row["calls"] == earlier["calls"] + 2
    assert row["calls_by_path"]["upcast"] == earlier["calls_by_path"].get("upcast", 0) + 2  # the CPU default
    assert rows[("aten::add.Tensor", "complex32", "cpu")]["path"] == "native"  # PyTorch has this one
    for r in rows.values():
        assert {"op", "dtype", "device", "path"} <= r.keys() and r["path"] in ("native", "template", "upcast")


def test_first_fallback_per_op_and_dtype_is_logged(caplog):
    with caplog.at_level(logging.DEBUG, logger="jitdtypes"):
        torch.atan(torch.ones(2, dtype=torch.complex32) * 0.5)
        torch.atan(torch.ones(2, dtype=torch.complex32) * 0.5)
    messages = [r.getMessage() for r in caplog.records if "aten::atan " in r.getMessage() + " "]
    assert messages == ["aten::atan on complex32/cpu -> upcast"]


def test_cli_version_and_ops():
    version = subprocess.run([CLI, "--version"], capture_output=True, text=True, timeout=300)
    assert version.stdout.strip() == f"jitdtypes {jitdtypes.__version__}"
    listing = subprocess.run([CLI, "ops", "--dtype", "complex32", "--device", "cpu", "--json"],
                             capture_output=True, text=True, timeout=300)
    assert listing.returncode == 0, listing.stderr
    rows = json.loads(listing.stdout)
    assert rows and all(r["dtype"] == "complex32" and r["device"] == "cpu" for r in rows)
    assert {r["guard"] for r in rows} == {jitdtypes.guard()}
    by_op = {r["op"]: r for r in rows}
    assert by_op["aten::exp"]["path"] == "upcast" and by_op["aten::mul.Tensor"]["path"] == "native"
    table = subprocess.run([CLI, "ops", "--path", "upcast"], capture_output=True, text=True, timeout=300)
    lines = table.stdout.splitlines()
    assert lines[0].startswith(f"guard: {jitdtypes.guard()}")
    assert lines[1].split() == ["op", "dtype", "device", "support", "path", "calls"]
    assert lines[-1].endswith("upcast") and "rows" in lines[-1]


_COMPILE_ACROSS_DISABLE = """
import torch, torch._dynamo, jitdtypes
f = lambda x: torch.as_tensor(x.numpy() * 2) + x.clone()
def run():
    torch._dynamo.reset()
    return torch.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
first = run()
with jitdtypes.disabled():
    second = run()
third = run()
print(first.tolist(), second.tolist(), third.tolist())
"""


@pytest.mark.parametrize("guard", ["compiled", "python"])
def test_compiling_after_disable_uses_pytorch_kernels_again(guard):
    # The Python dispatcher caches which key's kernel to call; removing ours must not leave it pointing at
    # nothing (that was a segfault, so it runs in a child process).
    run = subprocess.run([sys.executable, "-c", _COMPILE_ACROSS_DISABLE], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "JITDTYPES_GUARD": guard})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split("\n")[-2] == "[3.0, 3.0] [3.0, 3.0] [3.0, 3.0]"
