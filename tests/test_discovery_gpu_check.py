"""benchmarks/gpu_discovery.py, the discovery part of the GPU check: on this CPU-only machine it says it needs
CUDA, and its measurement and report run for real on CPU with two overloads."""

import json

import pytest
import torch

from benchmarks import gpu_discovery


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the check would run in full")
def test_says_it_needs_cuda_without_one(capsys):
    assert gpu_discovery.main([]) == 0
    assert "needs a CUDA device" in capsys.readouterr().out


def test_measures_and_reports_discovery_in_a_fresh_process(tmp_path):
    result = gpu_discovery.measure(["cpu"], ["aten::exp", "aten::sin"], keep=tmp_path)
    cpu = result["devices"]["cpu"]
    assert cpu["probed"] == 2 and cpu["crashed"] == {} and cpu["children"] >= 1
    assert 0 < cpu["seconds"] <= result["wall_s"] + 0.01  # seconds are rounded to 0.01
    assert list(tmp_path.iterdir()) == []  # a subset is never cached, so there is no record to keep
    lines = gpu_discovery.table(result)
    assert lines[1].split()[:4] == ["cpu", "2", str(cpu["overrides"]), "0"]
    assert lines[2].startswith("all devices side by side: ") and "within the 90 s target" in lines[2]
    crashed = {**result, "devices": {"cuda": {**cpu, "crashed": {"aten::sin": "its probing process died of SIGSEGV"}}}}
    assert gpu_discovery.table(crashed)[-1] == "crashed on cuda: aten::sin: its probing process died of SIGSEGV"


def test_the_command_writes_its_table_and_json(tmp_path, capsys):
    """main() end to end, as benchmarks/gpu_session.sh runs it (there with every overload, on CUDA and CPU)."""
    assert gpu_discovery.main(["--devices", "cpu", "--overloads", "aten::exp,aten::cos", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(f"torch {torch.__version__}, cpu, ")
    assert (tmp_path / "gpu_discovery.txt").read_text().splitlines() == printed
    result = json.loads((tmp_path / "gpu_discovery.json").read_text())
    assert result["devices"]["cpu"]["probed"] == 2 and result["devices"]["cpu"]["crashed"] == {}
