"""The compiled guard's conversion between 16-bit complex and complex64 (native_guard/convert.h), which copy_
and the C++ upcast use: bit for bit ATen's conversion on every 16-bit pattern and on float32 patterns at every
rounding boundary, in every layout; the fallback kernel alike; routed results unchanged."""

import os
import subprocess
import sys

import pytest
import torch

from jitdtypes import native_guard
from tests.conftest import IDS, TARGETS, enable_or_skip


@pytest.fixture(autouse=True)
def compiled_guard():
    enable_or_skip("compiled")
    initial = native_guard.conversion()
    yield
    native_guard.set_conversion(initial)


def words(t: torch.Tensor) -> torch.Tensor:
    """The tensor's elements as integer words (a NaN compares by its bits)."""
    t = t.contiguous().reshape(-1)
    return t.view(torch.int32) if t.dtype in (torch.complex64, torch.float32) else t.view(torch.int16)


def converted(make_destination, source, mode: str) -> torch.Tensor:
    assert native_guard.set_conversion(mode) == mode
    return make_destination().copy_(source)


def all_16_bit_patterns(dtype) -> torch.Tensor:
    return torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(dtype)


def float_patterns() -> torch.Tensor:
    """float32 bit patterns: halfway, just below and just above it, and the ends, for a rounding bit at each
    position from 13 (Half's, normal) to 24 (Half's smallest subnormal; BFloat16's is 16), under every prefix;
    signs, infinities, NaNs with every payload class; and random words."""
    parts = []
    for shift in range(13, 25):
        prefix = torch.arange(0, 1 << (32 - shift), dtype=torch.int64) << shift
        half = 1 << (shift - 1)
        for low in (0, 1, half - 1, half, half + 1, (1 << shift) - 1):
            parts.append(prefix | low)
    parts.append(torch.randint(0, 1 << 32, (1 << 20,), generator=torch.Generator().manual_seed(0)))
    bits = torch.cat(parts)
    return torch.where(bits >= 1 << 31, bits - (1 << 32), bits).to(torch.int32).view(torch.float32)


def modes():
    return ["vector", "portable"] if native_guard.set_conversion("vector") == "vector" else ["portable"]


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_widening_every_16_bit_pattern(target):
    source = all_16_bit_patterns(target)
    expected = words(converted(lambda: torch.empty(source.shape, dtype=torch.complex64), source, "aten"))
    for mode in modes():
        got = converted(lambda: torch.empty(source.shape, dtype=torch.complex64), source, mode)
        assert torch.equal(words(got), expected), mode


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_narrowing_float_patterns_at_every_rounding_boundary(target):
    source = float_patterns()
    source = torch.view_as_complex(source[: source.numel() // 2 * 2].reshape(-1, 2))
    expected = words(converted(lambda: torch.empty(source.shape, dtype=target), source, "aten"))
    for mode in modes():
        got = converted(lambda: torch.empty(source.shape, dtype=target), source, mode)
        assert torch.equal(words(got), expected), mode


def _layouts(dtype):
    """(name, source, destination of a dtype): layouts the conversion takes, and those it leaves to ATen."""
    base = torch.randn(40, 34, dtype=torch.complex64).to(dtype)
    like = lambda s: lambda d: torch.empty_strided(s.shape, s.stride(), dtype=d)  # noqa: E731
    for n in (1, 7, 15, 16, 17, 33, 1000):
        yield f"contiguous {n}", base.reshape(-1)[:n], like(base.reshape(-1)[:n])
    yield "zero-size", base[:0], like(base[:0])
    yield "storage offset 1", base.reshape(-1)[1:202], like(base.reshape(-1)[1:202])
    yield "transposed", base.t(), like(base.t())
    yield "transposed into contiguous", base.t(), lambda d: torch.empty(base.t().shape, dtype=d)
    yield "strided", base[:, ::3], like(base[:, ::3])
    yield "broadcast", base[0], lambda d: torch.empty(base.shape, dtype=d)
    yield "conjugated", base.conj() if dtype == torch.complex32 else base, like(base)


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
@pytest.mark.parametrize("direction", ["widen", "narrow"])
def test_layouts_as_aten(target, direction):
    """copy_ and to() in each layout: ATen's shapes, strides and bits."""
    for name, source, make in _layouts(target):
        source = source if direction == "widen" else source.to(torch.complex64)
        wide = torch.complex64 if direction == "widen" else target
        results = {}
        for mode in ["aten", *modes()]:
            native_guard.set_conversion(mode)
            for how, dst in (("copy_", make(wide).copy_(source)), ("to", source.to(wide))):
                results[mode, how] = (dst.shape, dst.stride(), words(dst))
        for (mode, how), (shape, stride, bits) in results.items():
            reference = results["aten", how]
            assert (shape, stride) == reference[:2] and torch.equal(bits, reference[2]), (name, mode, how)


def test_overlapping_copy_left_to_aten():
    storage = torch.randn(64, dtype=torch.complex64)
    low = storage.view(torch.float32).view(torch.complex32)[:64]
    for mode in modes():
        native_guard.set_conversion(mode)
        with pytest.raises(RuntimeError, match="memory location"):
            storage.copy_(low)


def _routed_calls(x, m):
    yield "sum", lambda: x.sum()
    yield "abs", lambda: x.abs()
    yield "exp", lambda: x.exp()
    yield "matmul", lambda: m @ m
    yield "fft", lambda: torch.fft.fft(m)
    yield "in place", lambda: x.clone().mul_(x)
    yield "out=", lambda: torch.exp(x, out=torch.empty_like(x))
    yield "transposed", lambda: m.t().exp()


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
@pytest.mark.parametrize("cpp_upcast", [True, False], ids=["C++ upcast", "Python upcast"])
def test_routed_results_unchanged(target, cpp_upcast):
    """The upcast path's results with the conversion are ATen's conversion's, bit for bit."""
    native_guard.set_cpp_upcast(cpp_upcast)
    try:
        x = torch.randn(1000, dtype=torch.complex64).to(target)
        m = torch.randn(48, 48, dtype=torch.complex64).to(target)
        for name, call in _routed_calls(x, m):
            results = {}
            for mode in ["aten", *modes()]:
                native_guard.set_conversion(mode)
                call()  # the first call of a registration goes to the router
                result = call()
                results[mode] = (result.dtype, result.shape, result.stride(), words(result))
            for mode, (dtype, shape, stride, bits) in results.items():
                reference = results["aten"]
                assert (dtype, shape, stride) == reference[:3] and torch.equal(bits, reference[3]), (name, mode)
    finally:
        native_guard.set_cpp_upcast(os.environ.get(native_guard.CPP_UPCAST_ENV_VAR, "").strip() != "0")


def _in_subprocess(code: str, **env) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, JITDTYPES_GUARD="compiled", **env), check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


CHECK = """
import torch, jitdtypes
from jitdtypes import native_guard
from tests.test_conversion import all_16_bit_patterns, float_patterns, words
mode = native_guard.conversion()
ok = []
for target in jitdtypes.dtypes.COMPLEX_TARGETS:
    low = all_16_bit_patterns(target)
    wide = torch.view_as_complex(float_patterns()[:1 << 21].reshape(-1, 2))
    got = (words(low.to(torch.complex64)), words(wide.to(target)))
    native_guard.set_conversion("aten")
    ok.append(all(torch.equal(a, b) for a, b in zip(got, (words(low.to(torch.complex64)), words(wide.to(target))))))
    native_guard.set_conversion(mode)
print(mode, all(ok))
"""


def test_fallback_chosen_by_environment():
    """JITDTYPES_CONVERSION=portable: the kernel that needs no CPU feature, bit for bit ATen's."""
    assert _in_subprocess(CHECK, JITDTYPES_CONVERSION="portable") == "portable True"


def test_default_is_atens_copy():
    """Unset, ATen's own copy (the vector kernels lose end to end on fresh buffers: convert.h)."""
    assert _in_subprocess(CHECK) == "aten True"


def test_default_capability():
    """Under ATen's DEFAULT capability (its Half NaNs rounded without F16C) ATen's own copy runs, and the
    portable kernel, asked for, follows ATen's NaN rule there."""
    assert _in_subprocess(CHECK, ATEN_CPU_CAPABILITY="default", JITDTYPES_CONVERSION="vector") == "aten True"
    assert _in_subprocess(CHECK, ATEN_CPU_CAPABILITY="default", JITDTYPES_CONVERSION="portable") == "portable True"
