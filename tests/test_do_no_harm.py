"""Do no harm: with the overrides installed, under either dispatch guard, every OpInfo sample in float32,
float16, complex64 and int64 gives bit-identical results (dtype, shape, strides, bytes) to plain PyTorch, and
raises where it raised, the same exception type with the same message."""

import math

import pytest
import torch

import jitdtypes
from tests import opinfo_samples as db
from tests.opinfo_exclusions import UNINITIALIZED_OPS

DTYPES = [torch.float32, torch.float16, torch.complex64, torch.int64]
SAMPLES = 3


def _bits(t: torch.Tensor):
    t = t.detach()
    if t.layout != torch.strided:
        t = t.to_dense()
    t = t.resolve_conj().resolve_neg()
    flat = t.contiguous().reshape(-1)
    return flat.view(torch.uint8) if flat.numel() else flat


def _fingerprint(value):
    if isinstance(value, torch.Tensor):
        stride = value.stride() if value.layout == torch.strided else None
        return ("tensor", value.dtype, tuple(value.shape), stride, value.is_conj(), value.is_neg(), _bits(value))
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return ("value", value)


def _metadata(value):
    return _fingerprint(value)[:-1] if isinstance(value, torch.Tensor) else _fingerprint(value)


def _same(a, b) -> bool:
    if a[0] != b[0] or len(a) != len(b):
        return False
    if a[0] == "tensor" and isinstance(a[-1], torch.Tensor):
        return a[:-1] == b[:-1] and torch.equal(a[-1], b[-1])
    return a == b


def _run_all(ops, dtype):
    outcomes = {}
    for op in ops:
        for index, sample in enumerate(db.samples(op, dtype, limit=SAMPLES)):
            torch.manual_seed(1234)
            try:
                result = db.call(op, sample)
                fingerprint = _fingerprint
                if db.op_id(op) in UNINITIALIZED_OPS:
                    fingerprint = _metadata  # torch.empty & co: the bytes are whatever memory held
                outcomes[(db.op_id(op), index)] = ("ok", [fingerprint(v) for v in db.flat(result)])
            except Exception as exc:
                outcomes[(db.op_id(op), index)] = ("error", (type(exc).__name__, str(exc)))
    return outcomes


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_results_bit_identical_with_and_without_jitdtypes(dtype, guard):
    ops = db.ops_supporting(dtype)
    assert jitdtypes.is_enabled()
    with jitdtypes.disabled():
        assert not jitdtypes.is_enabled()
        before = _run_all(ops, dtype)
    assert jitdtypes.guard() == guard
    after = _run_all(ops, dtype)
    assert before.keys() == after.keys()
    differences = []
    for key, (kind, payload) in before.items():
        after_kind, after_payload = after[key]
        if kind == "error":
            if after_kind != "error" or after_payload != payload:
                now = after_payload if after_kind == "error" else "no error"
                differences.append((key, f"raised {payload} before, {now} now"))
        elif after_kind != "ok":
            differences.append((key, f"worked before, raises {after_payload} now"))
        elif len(payload) != len(after_payload) or not all(map(_same, payload, after_payload)):
            differences.append((key, "different result"))
    compared = sum(1 for kind, _ in before.values() if kind == "ok")
    assert compared > 100, "too few samples ran to mean anything"
    assert not differences, f"{len(differences)} of {len(before)} samples differ: {differences[:20]}"


def test_import_leaves_triton_unimported():
    """`import jitdtypes` (discovery and guard cached, as in this session) installs every override without
    importing triton: code that never routes a 16-bit complex call to a template never pays for it (~0.1 s)."""
    import subprocess
    import sys

    code = ("import sys, jitdtypes; assert jitdtypes.is_enabled(); "
            "print(sorted(m for m in sys.modules if m == 'triton' or m.startswith('triton.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
