"""Routed calls are specialized per argument kinds and the specializations reused: one op called with argument
kinds that change from call to call (tensor then Python number, number types, conj/neg flags, out= and in
place, zero-dim, complex32 then bcomplex32, mixed dtypes) gives, call after call, exactly what the hand-written
upcast gives (inputs widened to complex64, the op, the result rounded back), under both dispatch guards."""

import pytest
import torch

import jitdtypes
from jitdtypes import dtypes
from jitdtypes.routing import path_record
from jitdtypes.routing import router
from tests.conftest import IDS, TARGETS

EPS = {torch.complex32: 2.0**-10}
if dtypes.BCOMPLEX32:
    EPS[dtypes.BCOMPLEX32] = 2.0**-7


def values(shape, dtype, seed=0):
    """A 16-bit tensor and the same values in complex64."""
    g = torch.Generator().manual_seed(seed)
    low = torch.randn(shape, dtype=torch.complex64, generator=g).to(dtype)
    return low, low.to(torch.complex64)


def rounded(wide: torch.Tensor, dtype) -> torch.Tensor:
    """The hand-written upcast's last step: round a 32-bit result to the 16-bit family of `dtype`."""
    complex_dtype, real_dtype = dtypes.FAMILY_OF[dtype]
    return wide.to(complex_dtype if wide.is_complex() else real_dtype)


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(torch.view_as_real(actual.resolve_conj()) if actual.is_complex() else actual,
                       torch.view_as_real(expected.resolve_conj()) if expected.is_complex() else expected)


def specializations() -> int:
    return sum(len(r.specialized) for r in list(router._all))


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_tensor_and_python_number_operands_alternate(guard, dtype):
    z, wz = values(6, dtype)
    v, wv = values(6, dtype, seed=1)
    before = specializations()
    for _ in range(2):  # the second pass runs on what the first one specialized
        assert_same(z / v, rounded(wz / wv, dtype))
        assert_same(z / 2, rounded(wz / 2, dtype))
        assert_same(z / 2.5, rounded(wz / 2.5, dtype))
        assert_same(z / (1 - 2j), rounded(wz / (1 - 2j), dtype))
        assert_same(z / True, rounded(wz / True, dtype))
        assert_same(torch.add(z, 2.5, alpha=2), rounded(torch.add(wz, 2.5, alpha=2), dtype))
        assert_same(torch.add(z, v, alpha=2), rounded(torch.add(wz, wv, alpha=2), dtype))
        assert_same(z / v, rounded(wz / wv, dtype))
    assert specializations() > before


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_zero_dim_operands_next_to_numbers(guard, dtype):
    z, wz = values(4, dtype)
    for _ in range(2):
        assert_same(z[0] * 2.5, rounded(wz[0] * 2.5, dtype))
        assert_same(z * 2.5, rounded(wz * 2.5, dtype))
        assert_same(z[1] / 3, rounded(wz[1] / 3, dtype))
        assert_same(z / z[1], rounded(wz / wz[1], dtype))


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_conj_and_neg_flags_alternate(guard, dtype):
    z, wz = values((3, 4), dtype)
    m, wm = values((4, 4), dtype, seed=2)
    for _ in range(2):
        assert_same(torch.exp(z.conj()), rounded(torch.exp(wz.conj()), dtype))
        assert_same(torch.exp(z), rounded(torch.exp(wz), dtype))
        assert_same(torch.exp(torch._neg_view(z)), rounded(torch.exp(-wz), dtype))
        assert_same(z @ m.conj(), rounded(wz @ wm.conj(), dtype))
        assert_same(z @ m, rounded(wz @ wm, dtype))
        assert_same(z.conj() @ m.mT.conj().mT, rounded(wz.conj() @ wm.mT.conj().mT, dtype))


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_out_and_in_place_alternate_with_plain_calls(guard, dtype):
    z, wz = values(5, dtype)
    expected = rounded(torch.exp(wz), dtype)
    for _ in range(2):
        out = torch.empty(5, dtype=dtype)
        returned = torch.exp(z, out=out)
        assert returned is out
        assert_same(out, expected)
        assert_same(torch.exp(z), expected)
        resized = torch.empty(0, dtype=dtype)
        torch.exp(z, out=resized)
        assert_same(resized, expected)
        target = z.clone()
        assert target.exp_() is target
        assert_same(target, expected)
        if guard == "python" and dtype != torch.complex32:
            continue  # copying into a conjugated bcomplex32 view needs the compiled guard's copy_
        conj_out = torch.empty(5, dtype=dtype).conj()
        torch.exp(z, out=conj_out)
        assert conj_out.is_conj()
        assert_same(conj_out, expected)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_one_tensor_in_several_positions_alternates_with_distinct_ones(guard, dtype):
    m, wm = values((3, 3), dtype)
    n, wn = values((3, 3), dtype, seed=3)
    for _ in range(2):
        assert_same(m @ m, rounded(wm @ wm, dtype))
        assert_same(m @ n, rounded(wm @ wn, dtype))
        assert_same(torch.addmm(m, m, m), rounded(torch.addmm(wm, wm, wm), dtype))
        assert_same(torch.addmm(m, n, m), rounded(torch.addmm(wm, wn, wm), dtype))
        target = m.clone()
        assert target.addmm_(target, target) is target  # written and read in one call
        assert_same(target, rounded(torch.addmm(wm, wm, wm), dtype))


def test_complex32_then_bcomplex32_through_one_op(guard):
    if len(TARGETS) < 2:
        pytest.skip("this torch build has no bcomplex32")
    for _ in range(2):
        for dtype in TARGETS:
            z, wz = values((2, 3), dtype)
            assert_same(z.sum(), rounded(wz.sum(), dtype))
            assert_same(z.sum(0), rounded(wz.sum(0), dtype))
            assert_same(z.abs(), rounded(wz.abs(), dtype))
            assert_same(torch.cumsum(z, 1), rounded(torch.cumsum(wz, 1), dtype))


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_dtype_arguments_and_mixed_dtypes_alternate(guard, dtype):
    z, wz = values(6, dtype)
    x = torch.randn(6)
    real16 = dtypes.REAL_OF[dtype]
    h = x.to(real16)
    for _ in range(2):
        assert_same(z.sum(dtype=torch.complex64), wz.sum())
        assert_same(z.sum(), rounded(wz.sum(), dtype))
        assert_same(z.sum(dtype=dtype), rounded(wz.sum(), dtype))
        assert_same(z * x, wz * x)  # complex32 with float32 promotes to complex64: no rounding
        assert_same(torch.exp(z) * h, rounded(rounded(torch.exp(wz), dtype).to(torch.complex64) * h.float(), dtype))


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_grad_and_inference_mode_alternate(guard, dtype):
    m, wm = values((3, 3), dtype)
    expected = rounded(wm @ wm.mT, dtype)
    for _ in range(2):
        leaf = m.clone().requires_grad_()
        product = leaf @ leaf.mT
        assert product.requires_grad
        assert_same(product.detach(), expected)
        (grad,) = torch.autograd.grad(product, leaf, torch.ones_like(product))
        wide_leaf = wm.clone().requires_grad_()
        wide_product = wide_leaf @ wide_leaf.mT
        (wide_grad,) = torch.autograd.grad(wide_product, wide_leaf, torch.ones_like(wide_product))
        assert grad.dtype == dtype
        torch.testing.assert_close(grad.to(torch.complex64), wide_grad, rtol=4 * EPS[dtype], atol=4 * EPS[dtype])
        with torch.inference_mode():
            inferred = m @ m.mT
        assert inferred.is_inference()
        assert_same(inferred, expected)
        assert_same(m @ m.mT, expected)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_routed_calls_are_counted_per_path(guard, dtype):
    z, _ = values(3, dtype)
    path_record.reset()
    for _ in range(5):
        torch.exp(z)
    name = dtypes.NAMES[dtype]
    assert path_record.calls()[("aten::exp", name, "cpu")] == {path_record.UPCAST: 5}


def test_other_dtypes_never_reach_a_specialization(guard):
    before = specializations()
    x, c = torch.randn(6), torch.randn(6, dtype=torch.complex64)
    for value in (x.exp(), x / 2, c / 2.5, c.sum(), c @ c, torch.exp(c.conj()), torch.fft.fft(c)):
        assert value.dtype in (torch.float32, torch.complex64)
    assert specializations() == before


def test_switching_the_cpu_backend_forgets_specializations():
    z, _ = values(4, torch.complex32)
    torch.exp(z)
    assert specializations() > 0
    previous = jitdtypes.triton_kernels.engine.cpu_backend()
    try:
        jitdtypes.set_cpu_backend("triton-interpret")
        assert specializations() == 0
    finally:
        jitdtypes.set_cpu_backend(previous)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_template_path_with_out_and_without(dtype):
    """Under the interpreter, exp and exp.out take template kernels call after call, out= or not, plain or
    conjugated out= (PyTorch's conjugate fallback hands the kernel a plain temporary), each call counted."""
    previous = jitdtypes.triton_kernels.engine.cpu_backend()
    jitdtypes.set_cpu_backend("triton-interpret")
    try:
        z, wz = values(6, dtype)
        tolerance = {"rtol": 2 * EPS[dtype], "atol": 2 * EPS[dtype]}
        path_record.reset()
        for _ in range(2):
            out = torch.empty(6, dtype=dtype)
            assert torch.exp(z, out=out) is out
            torch.testing.assert_close(out.to(torch.complex64), torch.exp(wz), **tolerance)
            conj_out = torch.empty(6, dtype=dtype).conj()
            assert torch.exp(z, out=conj_out) is conj_out
            torch.testing.assert_close(conj_out.resolve_conj().to(torch.complex64), torch.exp(wz), **tolerance)
            torch.testing.assert_close(torch.exp(z).to(torch.complex64), torch.exp(wz), **tolerance)
        calls = path_record.calls()
        name = dtypes.NAMES[dtype]
        assert calls[("aten::exp.out", name, "cpu")] == {path_record.TEMPLATE: 4}
        assert calls[("aten::exp", name, "cpu")] == {path_record.TEMPLATE: 2}
    finally:
        jitdtypes.set_cpu_backend(previous)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_template_plans_follow_argument_kinds_that_change(dtype):
    """Under the interpreter, div called with argument kinds and values that change from call to call: each
    kind's plan (kinds checked once, values per call) gives what the upcast gives, through the kernel for
    tensors and numbers of any layout and broadcast, and declines an operand the kernel cannot read (bool) to
    the upcast path."""
    previous = jitdtypes.triton_kernels.engine.cpu_backend()
    jitdtypes.set_cpu_backend("triton-interpret")
    try:
        z, wz = values((2, 3), dtype, seed=1)
        w, ww = values((2, 3), dtype, seed=2)
        row, wrow = values(3, dtype, seed=3)
        flags = torch.ones(2, 3, dtype=torch.bool)
        template, upcast = path_record.TEMPLATE, path_record.UPCAST
        cases = [
            (lambda: z / w, lambda: wz / ww, template),
            (lambda: z / 3, lambda: wz / 3, template),
            (lambda: z / -0.5j, lambda: wz / -0.5j, template),
            (lambda: z / row, lambda: wz / wrow, template),  # broadcast: through the module's `run`
            (lambda: z.t() / w.t(), lambda: wz.t() / ww.t(), template),  # not contiguous: likewise
            (lambda: z / w.conj(), lambda: wz / ww.conj(), template),  # PyTorch resolves the flag first
            (lambda: z / flags, lambda: wz / flags, upcast),
        ]
        tolerance = {"rtol": 2 * EPS[dtype], "atol": 2 * EPS[dtype]}
        path_record.reset()
        for _ in range(2):
            for ours, reference, _ in cases:
                result = ours()
                assert result.dtype == dtype
                torch.testing.assert_close(result.to(torch.complex64), reference(), **tolerance)
        expected = {path: 2 * sum(taken == path for *_, taken in cases) for path in (template, upcast)}
        assert path_record.calls()[("aten::div.Tensor", dtypes.NAMES[dtype], "cpu")] == expected
    finally:
        jitdtypes.set_cpu_backend(previous)


def _close_to_rounded(ours: torch.Tensor, wide: torch.Tensor, dtype) -> None:
    """ours within two 16-bit ulps (of the largest magnitude, for sums that cancel) of the complex64 result."""
    expected = rounded(wide, dtype)
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    ours, wide = ours.to(torch.complex64), wide.to(torch.complex64)
    scale = max(wide.abs().max().item(), 1.0) if wide.numel() else 1.0
    torch.testing.assert_close(ours, wide, rtol=2 * EPS[dtype], atol=2 * EPS[dtype] * scale)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_value_plans_follow_values_that_change(dtype):
    """Under the interpreter, reductions, scans, products and FFTs called with one kind of arguments but values
    that change from call to call (shapes, layouts, dims, keepdim, correction, norm orders, alpha and beta, FFT
    lengths): each value signature's plan gives the complex64 result rounded, call after call, and a norm order
    no kernel has goes to the upcast path."""
    previous = jitdtypes.triton_kernels.engine.cpu_backend()
    jitdtypes.set_cpu_backend("triton-interpret")
    try:
        z, wz = values((2, 3), dtype, seed=1)
        r, wr = values(5, dtype, seed=2)
        m, wm = values((4, 4), dtype, seed=3)
        v, wv = values(4, dtype, seed=4)
        s, ws = values((4, 8), dtype, seed=5)
        cases = [
            (lambda: z.sum(0), lambda: wz.sum(0)),
            (lambda: z.sum(1, keepdim=True), lambda: wz.sum(1, keepdim=True)),
            (lambda: z.t().sum(0), lambda: wz.t().sum(0)),
            (lambda: r.sum(0), lambda: wr.sum(0)),
            (lambda: torch.var(z, 1, correction=0), lambda: torch.var(wz, 1, correction=0)),
            (lambda: torch.var(z, 1, correction=1), lambda: torch.var(wz, 1, correction=1)),
            (lambda: torch.linalg.vector_norm(z, 1), lambda: torch.linalg.vector_norm(wz, 1)),
            (lambda: torch.linalg.vector_norm(z, 3.5), lambda: torch.linalg.vector_norm(wz, 3.5)),
            (lambda: torch.linalg.vector_norm(z, -1), lambda: torch.linalg.vector_norm(wz, -1)),  # upcast
            (lambda: torch.cumsum(z, 0), lambda: torch.cumsum(wz, 0)),
            (lambda: torch.cumsum(z, 1), lambda: torch.cumsum(wz, 1)),
            (lambda: torch.cumsum(z.t(), 1), lambda: torch.cumsum(wz.t(), 1)),
            (lambda: m @ m, lambda: wm @ wm),
            (lambda: m[:2] @ m.t(), lambda: wm[:2] @ wm.t()),
            (lambda: torch.addmm(m, m, m, beta=0.5, alpha=2), lambda: torch.addmm(wm, wm, wm, beta=0.5, alpha=2)),
            (lambda: torch.addmm(m, m, m, beta=0, alpha=1j), lambda: torch.addmm(wm, wm, wm, beta=0, alpha=1j)),
            (lambda: m @ v, lambda: wm @ wv),
            (lambda: m[1:] @ v, lambda: wm[1:] @ wv),
            (lambda: torch.fft.fft(s), lambda: torch.fft.fft(ws)),
            (lambda: torch.fft.fft(s, dim=0), lambda: torch.fft.fft(ws, dim=0)),
            (lambda: torch.fft.fft(s[:, :4], norm="ortho"), lambda: torch.fft.fft(ws[:, :4], norm="ortho")),
        ]
        path_record.reset()
        for _ in range(2):
            for ours, reference in cases:
                _close_to_rounded(ours(), reference(), dtype)
        name = dtypes.NAMES[dtype]
        calls = path_record.calls()
        template, upcast = path_record.TEMPLATE, path_record.UPCAST
        for op, count in [("aten::sum.dim_IntList", 8), ("aten::cumsum", 6), ("aten::mm", 4), ("aten::addmm", 4),
                          ("aten::addmv_", 4), ("aten::_fft_c2c", 6)]:
            assert calls.pop((op, name, "cpu")) == {template: count}, op
        # routed where PyTorch lacks them for this dtype (complex32 has its own var and norms)
        assert calls.pop(("aten::linalg_vector_norm", name, "cpu"), None) in (None, {template: 4, upcast: 2})
        assert calls.pop(("aten::var.correction", name, "cpu"), None) in (None, {template: 4})
        assert all(set(paths) == {template} for (_, routed, _), paths in calls.items() if routed == name), calls
    finally:
        jitdtypes.set_cpu_backend(previous)
