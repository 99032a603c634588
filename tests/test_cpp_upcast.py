"""The compiled guard's C++ upcast (native_guard/upcast.h) gives the Python upcast path's results bit for bit,
and leaves to the Python router every call it does not cover."""

import logging
import os
import subprocess
import sys
import warnings

import pytest
import torch

import jitdtypes
from jitdtypes import dtypes, native_guard
from jitdtypes.routing import path_record
from tests import opinfo_samples as db
from tests.conftest import IDS, TARGETS, enable_or_skip, seed_cache
from tests.opinfo_exclusions import EXCLUDED, RANDOM_OPS
from tests.test_fallback import SCALARS, WRAPPED_NUMBER_OPS

OPS = [op for op in db.ops_supporting(torch.complex64) if db.op_id(op) not in RANDOM_OPS]


@pytest.fixture(autouse=True)
def compiled_guard():
    enable_or_skip("compiled")
    native_guard.set_cpp_upcast(True)
    yield
    native_guard.set_cpp_upcast(os.environ.get(native_guard.CPP_UPCAST_ENV_VAR, "").strip() != "0")
    jitdtypes.enable(os.environ.get("JITDTYPES_GUARD") or "auto")


def cpp_calls() -> int:
    return sum(cell.value for cell in path_record._native_cells.values())


def bits(value):
    """What must be identical: the type, and for a tensor its dtype, shape, strides and every byte."""
    if not isinstance(value, torch.Tensor):
        return value
    if value.layout != torch.strided:
        return value.layout, bits(value.to_dense())
    raw = value.resolve_conj().resolve_neg()
    raw = raw.contiguous().reshape(-1) if raw.numel() else raw.reshape(-1)
    return value.dtype, tuple(value.shape), value.stride(), raw.view(torch.uint8).tolist()


def outcome(call):
    """(result's bits, None) or (None, (exception type, message))."""
    try:
        return [bits(v) for v in db.flat(call())], None
    except Exception as exc:  # noqa: BLE001 - compared between the two paths
        return None, (type(exc), str(exc))


def both_paths(call, observe=outcome):
    """What `observe(call)` sees with the Python path, and with the C++ upcast after a first call (which the
    router takes for each new registration and dtype), and the number of calls upcast in C++ meanwhile."""
    native_guard.set_cpp_upcast(False)
    python = observe(call)
    native_guard.set_cpp_upcast(True)
    observe(call)
    before = cpp_calls()
    compiled = observe(call)
    return python, compiled, cpp_calls() - before


def _variants(op, sample):
    """(variant name, call) for a 16-bit sample: the functional call, in place on a fresh copy of the input,
    and out= with an out tensor of the result's shape and with an empty one (which ATen resizes)."""
    yield "functional", lambda: db.call(op, sample)
    if op.inplace_variant is not None:
        yield "in place", lambda: db.call(op.inplace_variant, sample.transform(
            lambda v: v.clone() if v is sample.input else v))
    if op.supports_out:
        native_guard.set_cpp_upcast(False)
        expected = outcome(lambda: db.call(op, sample))[0]
        if expected and len(expected) == 1 and isinstance(expected[0], tuple):
            dtype, shape = expected[0][:2]
            for name, make in (("out=", lambda: torch.empty(shape, dtype=dtype)),
                               ("out= resized", lambda: torch.empty(0, dtype=dtype))):
                yield name, lambda make=make: op(sample.input, *sample.args, **sample.kwargs, out=make())


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_opinfo_samples_bit_identical(target):
    """Every OpInfo op supporting complex64, on its samples in the 16-bit dtype, functional, in place and
    out=: the same values, dtypes, shapes, strides, or the same error, with and without the C++ upcast."""
    exercised, mismatches = {}, []
    for op in OPS:
        if db.op_id(op) in EXCLUDED.get(dtypes.NAMES[target], {}):
            continue
        for index, sample in enumerate(db.samples(op, torch.complex64)):
            low = db.convert(sample, torch.complex64, target)
            for variant, call in _variants(op, low):
                python, compiled, upcast_in_cpp = both_paths(call)
                if upcast_in_cpp:
                    exercised.setdefault(variant, set()).add(db.op_id(op))
                if python != compiled:
                    mismatches.append(f"{db.op_id(op)} sample {index} {variant}")
    assert not mismatches, mismatches
    counts = {variant: len(ops) for variant, ops in exercised.items()}
    assert counts["functional"] >= 100 and counts["in place"] >= 20, counts
    assert counts["out="] >= 30 and counts["out= resized"] >= 30, counts


BINARY_OPS = [op for op in OPS if isinstance(op, torch.testing._internal.opinfo.core.BinaryUfuncInfo)]


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_opinfo_binary_ops_with_python_numbers_bit_identical(target):
    """Binary OpInfo ops with a Python number of each kind as the other operand, both ways round where the
    op takes a number first."""
    x = _tensor(target, 5)
    exercised, mismatches = set(), []
    for op in BINARY_OPS:
        for number in (2, 70000, 2.5, 0.1, 0.5j, True):
            for name, call in (("right", lambda: op(x, number)), ("left", lambda: op(number, x))):
                python, compiled, upcast_in_cpp = both_paths(call)
                if upcast_in_cpp:
                    exercised.add(db.op_id(op))
                if python != compiled:
                    mismatches.append(f"{db.op_id(op)} {number!r} {name}")
    assert not mismatches, mismatches
    assert len(exercised) >= 5, sorted(exercised)


# beyond test_fallback's SCALARS: ints past float16's range and past float32's exact ones, -inf, complex
# parts float32 cannot hold, False
NUMBERS = SCALARS + [70000, 2**24 + 1, -2**62, float("-inf"), 0.1 + 1e300j, complex("nan+1j"), False]
# test_fallback's grid writes in place on real dtypes only; these on complex ones, and out= of the right shape
GRID_OPS = WRAPPED_NUMBER_OPS + [
    lambda a, s: a.mul_(s), lambda a, s: a.div_(s), lambda a, s: a.sub_(s, alpha=3),
    lambda a, s: torch.div(a, s, out=torch.empty_like(a)), lambda a, s: torch.add(s, a, out=torch.empty_like(a)),
]


@pytest.mark.parametrize("shape", [(3,), ()], ids=["1d", "0d"])
@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_wrapped_number_grid_bit_identical(target, shape):
    """test_fallback's grid of ops taking Python numbers (in place and out= among them), every kind and class
    of number, on 16-bit tensors: the C++ upcast gives the Python path's results and errors bit for bit.
    Wrapped numbers next to zero-dim tensors are left to the router (Scalar overloads are upcast in C++)."""
    x = _tensor(target, *shape)
    upcast, mismatches = 0, []
    for op in GRID_OPS:
        for number in NUMBERS:
            python, compiled, upcast_in_cpp = both_paths(lambda: op(x.clone(), number))
            upcast += upcast_in_cpp
            if python != compiled:
                mismatches.append(f"{op} {number!r}")
    assert not mismatches, mismatches
    assert upcast > 50 or not shape, upcast


def _tensor(target, *shape):
    return torch.randn(shape, dtype=torch.complex64).to(target)


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_common_calls_are_upcast_in_cpp(target):
    z, w, m = _tensor(target, 8), _tensor(target, 8), _tensor(target, 4, 4)
    # overloads PyTorch's CPU kernels lack both dtypes for: elementwise, reductions, scans, matmul family
    for call in (lambda: z.exp(), lambda: z.sqrt(), lambda: z / w, lambda: z.sum(), lambda: z.sum(0, keepdim=True),
                 lambda: z.prod(), lambda: torch.cumsum(z, 0), lambda: m @ m, lambda: torch.bmm(m[None], m[None]),
                 lambda: torch.addmm(m, m, m), lambda: torch.dot(z, w),
                 # lazy flags resolved above the CPU key
                 lambda: z.conj().exp(), lambda: torch._neg_view(z).exp(), lambda: torch._neg_view(m) @ m):
        python, compiled, upcast_in_cpp = both_paths(call)
        assert python[0] is not None
        assert compiled == python
        assert upcast_in_cpp >= 1


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_numbers_in_place_and_out_are_upcast_in_cpp(target):
    z, w, m = _tensor(target, 8), _tensor(target, 8), _tensor(target, 4, 4)
    real = dtypes.REAL_OF[target]
    calls = {
        "an int": lambda: z / 2, "a large int": lambda: z / (2**40 + 1), "a float": lambda: z / 0.1,
        "a complex number": lambda: torch.div(z, 0.5j),
        "a number first": lambda: torch.div(2.5, z),
        "in place": lambda: z.clone().exp_(), "in place, a number": lambda: z.clone().div_(3),
        "in place, shared input": lambda: (lambda c: c.div_(c))(z.clone()),
        "mv (addmv_ in place)": lambda: m @ z[:4], "out=": lambda: torch.exp(z, out=torch.empty(8, dtype=target)),
        "out= resized": lambda: torch.div(z, w, out=torch.empty(0, dtype=target)),
        "out= real": lambda: torch.angle(z, out=torch.empty(8, dtype=real)),
        # lazy conj flags of written tensors are resolved above the CPU key
        "conj out=": lambda: torch.exp(z, out=torch.empty(8, dtype=target).conj()),
        "conj in place": lambda: z.clone().conj().exp_(),
    }
    for what, call in calls.items():
        python, compiled, upcast_in_cpp = both_paths(call)
        assert python[0] is not None, what
        assert compiled == python, what
        assert upcast_in_cpp >= 1, what


@pytest.mark.parametrize("variant", ["in place", "out="])
@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_written_tensor_is_the_callers(target, variant):
    """The result is the caller's tensor itself, written once: its version counter moves as on the Python
    path, and views of it see the values."""
    z = _tensor(target, 8)

    def run():
        dst = z.clone() if variant == "in place" else torch.empty(8, dtype=target)
        view, version = dst[2:], dst._version
        result = dst.exp_() if variant == "in place" else torch.exp(z, out=dst)
        return result is dst, dst._version - version, bits(view), bits(result)

    python, compiled, upcast_calls = both_paths(run, observe=lambda run: run())
    assert upcast_calls == 1
    assert compiled == python
    assert compiled[:2] == (True, 1)


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_out_resize_warns_as_on_the_python_path(target):
    z = _tensor(target, 8)

    def run():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = torch.exp(z, out=torch.empty(3, dtype=target))
        return bits(result), sorted({(w.category, str(w.message)) for w in caught})

    python, compiled, upcast_calls = both_paths(run, observe=lambda run: run())
    assert upcast_calls == 1
    assert compiled == python
    assert "was resized" in python[1][0][1]


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_calls_outside_the_common_case_take_the_python_path(target):
    z, w, m = _tensor(target, 8), _tensor(target, 8), _tensor(target, 4, 4)
    other = dtypes.BCOMPLEX32 if target == torch.complex32 else torch.complex32
    real = torch.randn(8)
    calls = {
        # mm lets a lazy conj flag through to the CPU kernel (neg flags never get there, nor exp's conj)
        "conj input": lambda: m.conj() @ m,
        "a float32 tensor": lambda: z * real,
        "dtype=": lambda: z.sum(dtype=target),
        "a number next to zero-dim tensors only": lambda: torch.div(z[0], 2.5),
        "out= of another dtype": lambda: torch.abs(z, out=torch.empty(8, dtype=torch.float32)),
        "a bool": lambda: torch.div(z, True),
    }
    if other is not None:
        calls["mixed 16-bit dtypes"] = lambda: z + w.to(other)
        calls["out= of the other 16-bit dtype"] = lambda: torch.exp(z, out=torch.empty(8, dtype=other))
    for what, call in calls.items():
        python, compiled, upcast_in_cpp = both_paths(call)
        assert compiled == python, what
        assert upcast_in_cpp == 0, what


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_stats_count_calls_upcast_in_cpp(target):
    z = _tensor(target, 8)
    z.tan()  # the registration's first call of this dtype: the router's
    path_record.reset()
    before = cpp_calls()
    for _ in range(5):
        z.tan()
    assert cpp_calls() - before == 5
    assert path_record.calls()[("aten::tan", dtypes.NAMES[target], "cpu")] == {path_record.UPCAST: 5}
    row = next(r for r in jitdtypes.stats() if (r["op"], r["dtype"], r["device"]) ==
               ("aten::tan", dtypes.NAMES[target], "cpu"))
    assert row["path"] == path_record.UPCAST
    assert (row["calls"], row["calls_by_path"]) == (5, {path_record.UPCAST: 5})


def test_the_first_call_of_each_dtype_goes_to_the_router(caplog):
    jitdtypes.disable()
    jitdtypes.enable("compiled")  # fresh guards and routers
    caplog.set_level(logging.DEBUG, logger="jitdtypes")
    for target in TARGETS:
        z = _tensor(target, 8)
        before = cpp_calls()
        z.sinh()
        assert cpp_calls() == before
        assert f"aten::sinh on {dtypes.NAMES[target]}/cpu -> upcast" in caplog.text
        z.sinh()
        z.sinh()
        assert cpp_calls() == before + 2
    assert caplog.text.count("aten::sinh on") == len(TARGETS)


def test_triton_interpret_backend_turns_it_off():
    z = _tensor(torch.complex32, 8)
    z.exp(), z.exp()
    previous = jitdtypes.triton_kernels.engine.cpu_backend()
    jitdtypes.set_cpu_backend("triton-interpret")
    try:
        assert not native_guard.cpp_upcast_enabled()
        before = cpp_calls()
        result = z.exp()
        assert cpp_calls() == before
        assert result.dtype == torch.complex32
    finally:
        jitdtypes.set_cpu_backend(previous)
    assert native_guard.cpp_upcast_enabled()
    before = cpp_calls()
    z.exp()
    assert cpp_calls() == before + 1


def test_probing_with_overrides_bypassed_turns_it_off():
    from jitdtypes.routing import registrar

    registrar.bypass(frozenset({"aten::exp"}))
    try:
        assert not native_guard.cpp_upcast_enabled()
    finally:
        registrar.bypass(frozenset())
    assert native_guard.cpp_upcast_enabled()


def test_python_guard_is_unaffected():
    jitdtypes.enable("python")
    assert jitdtypes.guard() == "python"
    z, w = _tensor(torch.complex32, 8), _tensor(torch.complex32, 8)
    before = cpp_calls()
    for _ in range(3):
        result = z * w
    assert cpp_calls() == before
    expected = (z.to(torch.complex64) * w.to(torch.complex64)).to(torch.complex32)
    assert bits(result) == bits(expected)


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_kernel_errors_read_as_on_the_python_path(target):
    a, b, z = _tensor(target, 4, 3), _tensor(target, 4, 4), _tensor(target, 8)
    for call in (lambda: a @ b, lambda: torch.dot(z, z[:4]), lambda: torch.addmm(b, a, b)):
        python, compiled, upcast_in_cpp = both_paths(call)
        assert python[1] is not None
        assert compiled == python
        assert upcast_in_cpp == 0


_COUNT_CPP_CALLS = """
import torch, jitdtypes
from jitdtypes import native_guard
from jitdtypes.routing import path_record
z = torch.randn(8, dtype=torch.complex64).to(torch.complex32)
for _ in range(3):
    z.exp()
print(native_guard.cpp_upcast_enabled(), sum(cell.value for cell in path_record._native_cells.values()))
"""


@pytest.mark.parametrize("setting, expected", [("0", "False 0"), ("1", "True 2")])
def test_environment_variable_switches_it(tmp_path, setting, expected):
    env = {**os.environ, "JITDTYPES_CACHE_DIR": str(seed_cache(tmp_path / "cache")),
           "JITDTYPES_GUARD": "compiled", native_guard.CPP_UPCAST_ENV_VAR: setting}
    done = subprocess.run([sys.executable, "-c", _COUNT_CPP_CALLS], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == expected
