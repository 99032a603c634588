"""Each complex op's parts become Inductor buffers of their own (jitdtypes/compile_path/realized.py): the body
Inductor builds for a fused kernel holds each formula once instead of once per read; the chain is still one
kernel with eager's values; the lowering comes and goes with jitdtypes; outside Inductor the op is a copy.

complex64 and complex128 opted in: their parts are read from words or strided views of the input, several ops
per read. The 16-bit dtypes' largest bodies (reading and writing their planes) are the same with and without it.
"""

import pytest
import torch
import torch._inductor.lowering  # noqa: F401 - the compile path joins Inductor's table once this is loaded
from torch._inductor import loop_body
from torch._inductor.utils import run_and_get_code

import jitdtypes
from jitdtypes.compile_path import realized

CASES = [torch.complex64, torch.complex128]
IDS = ["complex64", "complex128"]


def chain(x, y, steps):
    z = x
    for step in range(steps):
        z = torch.tanh(z * y + 0.1 * step) / (z.abs() + 1)
    return z


def _largest_body(dtype, monkeypatch):
    """The most nodes in one loop body Inductor built for chain(), the code, the result and the inputs."""
    sizes = []
    original = loop_body.LoopBody.__init__

    def counting(self, *args, **kwargs):
        original(self, *args, **kwargs)
        sizes.append(len(self.root_block.graph.nodes))

    torch.manual_seed(0)
    x, y = (torch.randn(16, 32, dtype=torch.complex64).to(dtype) for _ in range(2))
    torch._dynamo.reset()
    with monkeypatch.context() as patch, torch._inductor.config.patch(force_disable_caches=True):
        patch.setattr(loop_body.LoopBody, "__init__", counting)
        result, (code, *_) = run_and_get_code(torch.compile(chain, fullgraph=True), x, y, 3)
    return max(sizes), code, result, (x, y)


@pytest.mark.parametrize("opted_in", CASES, ids=IDS, indirect=True)
def test_each_formula_is_inlined_once(opted_in, monkeypatch):
    """The largest kernel body, against the same compilation with the op made an identity (every read of a
    part inlining its formula again)."""
    largest, code, result, (x, y) = _largest_body(opted_in, monkeypatch)
    with monkeypatch.context() as patch:
        patch.setattr(realized, "OP", lambda part: part)
        inlined, inlined_code, _, _ = _largest_body(opted_in, monkeypatch)
    assert largest * 1.5 < inlined, (largest, inlined)  # 2317 -> 393 nodes on torch 2.14, 267 -> 133 on 2.11
    assert code.count("cpp_fused") == inlined_code.count("cpp_fused") == 2  # one kernel: defined, called
    expected = chain(x.to(torch.complex128), y.to(torch.complex128), 3)
    tolerance = 1e-5 if opted_in == torch.complex64 else 1e-12
    torch.testing.assert_close(result.to(torch.complex128), expected, rtol=tolerance, atol=tolerance)


def test_the_lowering_comes_and_goes_with_jitdtypes():
    lowerings = torch._inductor.lowering.lowerings
    assert realized.OP in lowerings
    with jitdtypes.disabled():
        assert realized.OP not in lowerings
    assert realized.OP in lowerings


def test_outside_inductor_it_is_a_copy_with_the_gradient_passed_through():
    x = torch.randn(5, requires_grad=True)
    y = realized.OP(x)
    assert torch.equal(y, x) and y.data_ptr() != x.data_ptr()
    (y * torch.arange(5.0)).sum().backward()
    assert torch.equal(x.grad, torch.arange(5.0))
