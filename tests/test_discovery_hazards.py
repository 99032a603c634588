"""Discovery survives what probing meets on a GPU, simulated on this CPU by the probing children's test hook
(JITDTYPES_PROBE_FAULTS, jitdtypes/simulated_faults.py; no GPU is pretended): a device-side assert that poisons
its process, a CUDA library error that does not, a hung probe, a crashing kernel. Each run probes a few
overloads (all with their own CPU kernel, so one probing pass), which keeps it to seconds."""

import logging

import pytest

from jitdtypes.discovery import results, runner, simulated_faults

# Probed in this order by one worker: the faults below strike early ones, so later ones run after them.
SUBSET = ["aten::exp", "aten::sin", "aten::cumsum", "aten::mul.Tensor", "aten::neg", "aten::cos"]
DEVICE_ASSERT = "RuntimeError: CUDA error: device-side assert triggered"


def verdicts(found: results.Discovery) -> dict:
    """overload -> per-dtype status, for every overload that got a verdict."""
    status = {f.overload: f.status for f in found.findings}
    for dtype, names in found.supported.items():
        for name in names:
            status.setdefault(name, {})[dtype] = "supported"
    return status


@pytest.fixture(scope="module")
def clean():
    return verdicts(results.discover("cpu", SUBSET, workers=1))


def probe_with_faults(monkeypatch, faults: str, workers=1, **options) -> results.Discovery:
    monkeypatch.setenv(simulated_faults.ENV, faults)
    return results.discover("cpu", SUBSET, workers=workers, **options)


def test_clean_run_gives_every_overload_a_verdict(clean):
    assert sorted(clean) == sorted(SUBSET)
    assert all(status for status in clean.values())


def test_a_device_assert_ends_its_child_and_later_overloads_are_probed_right(monkeypatch, clean, caplog):
    monkeypatch.setattr(results, "PROGRESS_EVERY_S", 0.0)
    with caplog.at_level(logging.WARNING, logger="jitdtypes"):
        found = probe_with_faults(monkeypatch, "device-assert:aten::sin,cuda-error:aten::cumsum")
    assert found.crashed == {"aten::sin": DEVICE_ASSERT}
    # cumsum's CUDA library error left the device working: its calls failed, nothing crashed, no verdict
    assert verdicts(found) == {name: s for name, s in clean.items() if name not in ("aten::sin", "aten::cumsum")}
    assert found.stats["children"] == 2  # one restart, past sin
    assert "probing cpu: 6/6 overloads done, 1 crashed" in caplog.text
    assert "1 crashed their probe" in caplog.text


def test_a_hung_probe_is_cut_off_and_a_dead_child_restarted(monkeypatch, clean):
    found = probe_with_faults(monkeypatch, "hang:aten::sin,exit:aten::mul.Tensor", probe_timeout_s=3)
    assert found.crashed == {"aten::sin": "its probing process timed out after 3 s",
                             "aten::mul.Tensor": "its probing process died of SIGKILL"}
    assert verdicts(found) == {name: s for name, s in clean.items() if name not in found.crashed}
    assert found.stats["children"] == 3


def test_faults_are_checked_and_results_under_them_cached_apart(monkeypatch):
    with pytest.raises(ValueError, match="FAULT:OVERLOAD"):
        simulated_faults.parse("explode:aten::exp")
    assert simulated_faults.parse("hang:aten::add.Tensor, exit:aten::sin") == {"aten::add.Tensor": "hang",
                                                                           "aten::sin": "exit"}
    ordinary = results.cache_path("cpu")
    monkeypatch.setenv(simulated_faults.ENV, "hang:aten::sin")
    assert results.cache_path("cpu") != ordinary


def test_workers_share_the_overloads_and_restart_on_their_own(monkeypatch, clean):
    monkeypatch.setattr(runner, "_SHARE_MIN", 1)
    found = probe_with_faults(monkeypatch, "device-assert:aten::exp", workers=2)
    assert found.crashed == {"aten::exp": DEVICE_ASSERT}
    assert verdicts(found) == {name: s for name, s in clean.items() if name != "aten::exp"}
    assert found.stats["children"] == 3  # two workers, one of them restarted once
