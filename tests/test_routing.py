"""The routed call reads top-down: the first routed call on CPU crosses at most 6 files, and no module calls
back into a module below it on the stack; generated sources show their lines in tracebacks."""

import traceback

import pytest
import torch

import jitdtypes
from benchmarks import route_walk
from jitdtypes import native_guard
from jitdtypes.routing import router

from tests.conftest import IDS, TARGETS


@pytest.fixture
def first_routed_call():
    """Every router forgets its specializations and the compiled guard sends routed calls to Python, so the
    next call is routed as a process's first."""
    router.forget_all()
    native_guard.set_cpp_upcast(False)
    yield
    native_guard.set_cpp_upcast(True)
    router.forget_all()


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.parametrize("call", sorted(route_walk.CALLS))
def test_the_first_routed_call_on_cpu_crosses_at_most_six_files(first_routed_call, dtype, call):
    x = torch.randn(16, dtype=torch.complex64).to(dtype)
    expected = route_walk.CALLS[call](x.to(torch.complex64))
    calls = route_walk.walk_with_callers(route_walk.CALLS[call], x)
    files, _ = route_walk.files_crossed([(name, function) for name, function, _ in calls])
    if not files:
        pytest.skip(f"{call} on {dtype} is PyTorch's own kernel here: nothing is routed")
    assert files[0].startswith("<jitdtypes guard of aten::")
    if call == "exp":  # the walk docs/ARCHITECTURE.md tells
        assert files == ["<jitdtypes guard of aten::exp>", "jitdtypes/routing/router.py",
                         "<jitdtypes specialization key of aten::exp>", "jitdtypes/upcast/path.py",
                         "jitdtypes/cpu_kernels/provider.py"]
    if call != "mul_scalar":  # whose first call also makes the number's zero-dim tensor, once per value
        assert len(files) + (jitdtypes.guard() == "compiled") <= 6, files
    for name, function, callers in calls:
        # a module may call itself, and modules above it; never one that is waiting for it further down
        assert name not in callers[1:] or name == callers[0], (name, function, callers)
    result = route_walk.CALLS[call](x)
    torch.testing.assert_close(result.to(expected.dtype), expected, rtol=0.02, atol=0.05)


def test_a_traceback_through_a_guard_shows_its_source():
    x = torch.randn(3, dtype=torch.complex64).to(torch.complex32)
    with pytest.raises(RuntimeError) as raised:
        torch.exp(x, out=torch.empty(3, dtype=torch.int64))
    frames = {frame.filename: frame for frame in traceback.extract_tb(raised.value.__traceback__)}
    guard = frames["<jitdtypes guard of aten::exp.out>"]
    assert guard.name == "jitdtypes_exp_out" and guard.line == "return route(KEYSET, (p0, ), kwargs)"
