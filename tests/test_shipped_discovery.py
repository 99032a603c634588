"""Discovery results ship for the torch builds CI tests: on those, the committed file is this code's own (the
test fails when the code discovery runs changed without it), and a first import with an empty cache probes
nothing on CPU; a shipped file that does not verify is refused."""

import json
import os
import subprocess
import sys

import pytest
import torch

from jitdtypes.discovery import results

SHIPPED_HERE = torch.__version__ in results.CI_TORCH_BUILDS
REGENERATE = "JITDTYPES_DISABLE=1 python -m jitdtypes.discovery --ship"


@pytest.mark.skipif(not SHIPPED_HERE, reason=f"no results ship for torch {torch.__version__}")
def test_the_shipped_result_for_this_ci_build_is_this_codes_own():
    path = results.shipped_path()
    assert path.is_file(), f"no shipped discovery result for torch {torch.__version__}: run `{REGENERATE}`"
    found, why_not = results.check(path)
    assert why_not is None, f"{path.name}: {why_not}; run `{REGENERATE}` under torch {torch.__version__}"
    assert found.findings and found.stats["probed"] > 2000 and not found.crashed
    same_version = list(results.SHIPPED.glob(f"cpu-torch{torch.__version__}-*.json"))
    assert same_version == [path], "stale shipped results of this torch version are left"


@pytest.mark.skipif(not SHIPPED_HERE, reason=f"no results ship for torch {torch.__version__}")
def test_the_shipped_verdicts_are_what_this_session_probed():
    probed = results.load(results.cache_path("cpu"))
    if probed is None:
        pytest.skip("this session read its discovery results from elsewhere")
    shipped = results.load(results.shipped_path())
    verdicts = lambda found: sorted((f.overload, f.level, sorted(f.status.items())) for f in found.findings)  # noqa: E731
    assert verdicts(shipped) == verdicts(probed)
    assert {d: sorted(o) for d, o in shipped.supported.items()} == {d: sorted(o) for d, o in probed.supported.items()}


def test_only_ci_builds_ship_results():
    for path in results.SHIPPED.glob("*.json"):
        record = json.loads(path.read_text())
        assert record["torch"] in results.CI_TORCH_BUILDS and record["device_type"] == "cpu", path.name


@pytest.mark.skipif(not SHIPPED_HERE, reason=f"no results ship for torch {torch.__version__}")
@pytest.mark.parametrize("mode", ["auto", "cached"])
def test_a_first_import_on_a_shipped_build_probes_nothing(tmp_path, mode):
    env = {**os.environ, "JITDTYPES_CACHE_DIR": str(tmp_path / "empty"), "JITDTYPES_DISCOVERY": mode,
           "JITDTYPES_GUARD": "python"}
    script = ("import torch, jitdtypes\n"
              "z = torch.randn(4, dtype=torch.complex64).to(torch.complex32)\n"
              "print(len(jitdtypes.installer.registration().keys), abs(complex(torch.exp(z)[0]) - complex(torch.exp(z.to(torch.complex64))[0])) < 1e-2)\n")
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    registered, right = run.stdout.split()
    assert int(registered) > 300 and right == "True"
    assert "probing" not in run.stderr and "no cached discovery results" not in run.stderr
    assert not (tmp_path / "empty" / "discovery").exists()  # nothing copied into the cache


def test_a_shipped_result_that_does_not_verify_is_refused(tmp_path, monkeypatch, caplog):
    record = json.loads(results.Discovery("cpu", [], {"complex32": ["aten::exp"]}).to_json())
    record["supported"]["complex32"].append("aten::tampered")  # the sha256 no longer matches
    monkeypatch.setattr(results, "SHIPPED", tmp_path)
    monkeypatch.setenv("JITDTYPES_CACHE_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv(results.ENV, "auto")  # the session's own mode, probe, reads no shipped results
    results.shipped_path().write_text(json.dumps(record))
    with caplog.at_level("WARNING", logger="jitdtypes"):
        assert results.stored("cpu") is None
    assert "shipped discovery result" in caplog.text and "does not match its sha256" in caplog.text
    valid = results.Discovery("cpu", [], {"complex32": ["aten::exp"]})
    results.shipped_path().write_text(valid.to_json())
    assert results.stored("cpu").supported == {"complex32": ["aten::exp"]}
    assert results.stored("cuda") is None  # CUDA is always probed on the machine
    monkeypatch.setenv(results.ENV, "probe")
    assert results.stored("cpu") is None  # this machine's own verdicts are wanted
