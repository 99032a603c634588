"""The JIT kernel engine: templates rendered on first use, cached by content key, verified, loaded once."""

import json
import os
import subprocess
import sys
import threading

import pytest
import torch

import jitdtypes
from cache_tools.store import KERNELS, SOURCE, Store, sha256
from jitdtypes.triton_kernels import engine
from tests.conftest import seed_cache


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """A cache without kernels, the triton-interpret CPU backend and no kernels loaded in this process."""
    seed_cache(tmp_path)
    monkeypatch.setenv("JITDTYPES_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(engine, "_loaded", {})
    monkeypatch.setattr(engine, "counters", engine.Counter())
    previous = engine.cpu_backend()
    jitdtypes.set_cpu_backend("triton-interpret")
    yield tmp_path
    jitdtypes.set_cpu_backend(previous)


def _entries(root):
    return sorted((root / "kernels").glob("*/*/meta.json"))


def _c32(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.complex64, generator=torch.Generator().manual_seed(seed)).to(torch.complex32)


def test_first_call_generates_and_records_metadata(fresh_cache):
    x = _c32(7, 5)
    y = torch.exp(x)
    torch.testing.assert_close(y.to(torch.complex64), torch.exp(x.to(torch.complex64)), rtol=2e-3, atol=2e-3)
    assert engine.counters["generated"] == 1 and engine.counters["loaded"] == 1
    (meta_path,) = _entries(fresh_cache)
    meta = json.loads(meta_path.read_text())
    source = (meta_path.parent / SOURCE).read_text()
    assert meta["family"] == "unary" and meta["op"] == "exp" and meta["dtype"] == "complex32"
    assert meta["layout"] == "interleaved" and meta["device"] == "cpu-interpreter"
    assert meta["files"] == {SOURCE: sha256(source)} and meta["bytes"] == len(source.encode())
    assert meta["created"] <= meta["last_used"] and meta["torch"] == torch.__version__
    assert meta_path.parent.name == meta["key"] == engine.kernel_key("unary", meta["params"], "cpu")
    assert oct(os.stat(fresh_cache / "kernels").st_mode & 0o777) == "0o700"
    torch.exp(_c32(3))  # same kernel: neither generated nor imported again in this process
    assert engine.counters["generated"] == 1 and engine.counters["loaded"] == 1
    assert ("aten::exp", "complex32", "cpu") in {(r["op"], r["dtype"], r["device"]) for r in jitdtypes.stats()
                                                 if r["calls_by_path"].get("template")}


_SECOND_PROCESS = """
import torch, jitdtypes
from jitdtypes.triton_kernels import engine
x = torch.randn(6, 3, dtype=torch.complex64).to(torch.complex32)
y = torch.exp(x) @ x.mT
print(dict(engine.counters))
"""


def test_a_second_process_with_a_warm_cache_generates_nothing(fresh_cache):
    env = {**os.environ, "JITDTYPES_CPU_BACKEND": "triton-interpret", "JITDTYPES_CACHE_DIR": str(fresh_cache)}
    runs = [subprocess.run([sys.executable, "-c", _SECOND_PROCESS], env=env, capture_output=True, text=True,
                           timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    first, second = (eval(run.stdout.strip().splitlines()[-1]) for run in runs)  # noqa: S307 - our own dict
    assert first["generated"] == 2 and first.get("read_from_cache", 0) == 0
    assert second.get("generated", 0) == 0 and second["read_from_cache"] == 2
    assert len(_entries(fresh_cache)) == 2


def test_a_corrupted_entry_is_regenerated_not_imported(fresh_cache, caplog):
    x = _c32(4)
    torch.sin(x)
    (meta_path,) = _entries(fresh_cache)
    source_path = meta_path.parent / SOURCE
    source_path.write_text(source_path.read_text().replace("def run(", "def run_garbled("))
    engine.forget_kernels()
    with caplog.at_level("WARNING", logger="jitdtypes"):
        y = torch.sin(x)
    torch.testing.assert_close(y.to(torch.complex64), torch.sin(x.to(torch.complex64)), rtol=2e-3, atol=2e-3)
    assert engine.counters["regenerated_corrupt"] == 1 and engine.counters["generated"] == 2
    assert [r for r in caplog.records if "does not match its recorded sha256" in r.getMessage()]
    assert sha256(source_path.read_text()) == json.loads(meta_path.read_text())["files"][SOURCE]


def test_threads_calling_a_new_op_at_once_generate_it_once(fresh_cache):
    x = _c32(16)
    barrier = threading.Barrier(8)
    results, errors = [None] * 8, []

    def worker(i):
        try:
            barrier.wait()
            results[i] = torch.tan(x)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert engine.counters["generated"] == 1 and engine.counters["loaded"] == 1
    for r in results[1:]:
        assert torch.equal(torch.view_as_real(r), torch.view_as_real(results[0]))


def test_key_depends_on_params_and_device():
    params = {"op": "exp", "dtype": "complex32", "layout": "interleaved", "out": False, "scalars": []}
    key = engine.kernel_key("unary", {**params, "interpret": True}, "cpu")
    assert key != engine.kernel_key("unary", {**params, "dtype": "bcomplex32", "interpret": True}, "cpu")
    assert key != engine.kernel_key("binary", {**params, "interpret": True}, "cpu")
    assert key == engine.kernel_key("unary", {**params, "interpret": True}, "cpu")


def test_calls_a_template_does_not_cover_take_the_upcast_path(fresh_cache):
    x = _c32(3, 4)
    y = x.to(torch.complex64)
    mixed = x * torch.ones(4, dtype=torch.float16)  # real tensor operand: the template declines
    torch.testing.assert_close(mixed.to(torch.complex64), y, rtol=0, atol=0)
    assert torch.acos(x).dtype == torch.complex32


def test_template_kernels_are_custom_ops_with_fake_implementations(fresh_cache):
    torch.exp(_c32(5))
    names = [name for name in dir(torch.ops.jitdtypes) if name.startswith("unary_exp_")]
    assert names, "the kernel should be registered as a jitdtypes:: custom op"
    qualname = f"jitdtypes::{names[0]}"
    assert "Tensor" in str(getattr(torch.ops.jitdtypes, names[0]).default._schema)
    # triton_op registers the Python function as its fake kernel: torch.compile traces it, not a graph break
    assert torch._C._dispatch_has_kernel_for_dispatch_key(qualname, "Meta")


def test_store_rejects_entries_that_do_not_name_their_key(tmp_path):
    def build(workspace):
        (workspace / SOURCE).write_text("print('hi')\n")
        return {"op": "x"}

    store = Store(KERNELS, tmp_path)
    entry, _ = store.ensure("ab" * 32, build)
    assert store.read("ab" * 32).read_bytes(SOURCE) == b"print('hi')\n"
    meta = json.loads((entry.directory / "meta.json").read_text())
    meta["key"] = "cd" * 32
    (entry.directory / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(Exception, match="does not name this key"):
        store.read("ab" * 32)
