"""Generated CPU kernels beyond one flat run of elements: reductions over dims (one model per layout of the
reduced dims, table.DIM_MODELS) and binary ops with a broadcast operand (table.BINARY_MODELS), each model
chosen per call in C++ (native_guard/generated.h). Each call is checked against the model run directly
(bits) and against complex64 on the same rounded inputs; calls no model fits keep the path they had."""

from __future__ import annotations

import contextlib

from pathlib import Path

import pytest
import torch

import jitdtypes
from jitdtypes import cpu_kernels, dtypes
from jitdtypes.cpu_kernels import provider
from jitdtypes.cpu_kernels import table

from .cpu_kernel_support import BCOMPLEX32, bits, eager_kernels, inputs, model_result
from .opinfo_samples import op_db

pytestmark = pytest.mark.skipif(
    not jitdtypes.is_enabled() or jitdtypes.guard() != "compiled", reason="needs the compiled guard")


def _provided(cases):
    """Each case's package built (or found) and installed, as a first call in eager mode does."""
    with eager_kernels():
        for overload, dtype, _ in cases:
            assert (overload, dtype) in cpu_kernels.eligible, f"{overload} has no generated kernel for {dtype}"
            provider._requested.discard((overload, dtype))  # an earlier test may have asked with kernels off
            cpu_kernels.first_need(overload, dtype)
    status = cpu_kernels.status()
    for overload, dtype, _ in cases:
        assert status[(overload, dtypes.NAMES[dtype])] == "installed", status
    return dict(provider._installed)


def _withdrawn(cases):
    for overload, dtype, _ in cases:  # later tests in this process expect the kernels' absence
        cpu_kernels.uninstall(overload, dtype)


# Reductions over dims: one model per layout of the reduced dims (table.DIM_MODELS), chosen in C++
DIM_CASES = [("aten::sum.dim_IntList", torch.complex32, "sum"),
             ("aten::mean.dim", BCOMPLEX32 or torch.complex32, "mean")]
DIM_IDS = [f"{name}-{dtypes.NAMES[d]}" for _, d, name in DIM_CASES]
# (input shape, dims, the model that serves it, the shape the model sees)
DIM_LAYOUTS = [((64, 96), (-1,), "rows", (64, 96)), ((64, 96), (0,), "columns", (64, 96)),
               ((8, 64, 12), (1,), "middle", (8, 64, 12)), ((8, 64, 12), (1, 0), "columns", (512, 12)),
               ((8, 64, 12), None, "whole", (6144,)), ((64, 96), (), "whole", (6144,)),
               ((8, 1, 64, 12), (2, 3), "rows", (8, 768)), ((8, 1, 64, 12), (1, 2), "middle", (8, 64, 12)),
               ((8, 1, 64, 12), (-3, 0), "columns", (8, 768))]


@pytest.fixture(scope="module")
def reducing():
    installed = _provided(DIM_CASES)
    for _, dtype, name in DIM_CASES:
        getattr(torch, name)(inputs(dtype, (4, 4), 1)[0], 0)  # the guard's first call routes
    yield installed
    _withdrawn(DIM_CASES)


def _reduced(name, x, dims, keepdim=False, **kwargs):
    return getattr(torch, name)(x, dims, keepdim, **kwargs)


@pytest.mark.parametrize("overload,dtype,name", DIM_CASES, ids=DIM_IDS)
def test_dim_reductions_take_the_model_of_their_layout(reducing, overload, dtype, name):
    path = reducing[(overload, dtype)]
    for shape, dims, model, seen in DIM_LAYOUTS:
        (x,) = inputs(dtype, shape, 1)
        for keepdim in (False, True):
            got = _reduced(name, x, dims, keepdim)
            wide = _reduced(name, x.to(torch.complex64), dims, keepdim)
            assert got.dtype == dtype and got.shape == wide.shape, (shape, dims, keepdim)
            packaged = model_result(path, model, [x.reshape(seen)], dtype)
            assert torch.equal(bits(got), bits(packaged.reshape(wide.shape))), (shape, dims, model)
            torch.testing.assert_close(got.to(torch.complex64), wide, rtol=2 ** -7, atol=2 ** -7)


@pytest.mark.parametrize("overload,dtype,name", DIM_CASES, ids=DIM_IDS)
def test_dim_reductions_that_do_not_fit_take_the_upcast(reducing, overload, dtype, name):
    (x,) = inputs(dtype, (8, 64, 12), 1)
    for reduce in (lambda t: _reduced(name, t, (0, 2)),  # reduced dims apart
                 lambda t: _reduced(name, t.transpose(0, 1), (0,)),  # not contiguous
                 lambda t: _reduced(name, t[:4, :4].contiguous(), (0,))):  # below min_numel
        assert torch.equal(bits(reduce(x)), bits(reduce(x.to(torch.complex64)).to(dtype)))
    as_complex64 = _reduced(name, x, (0,), dtype=torch.complex64)  # dtype=
    assert as_complex64.dtype == torch.complex64
    assert torch.equal(as_complex64, _reduced(name, x.to(torch.complex64), (0,)))
    with pytest.raises(IndexError, match="Dimension out of range"):
        _reduced(name, x, (3,))


@contextlib.contextmanager
def _from_two_elements(overload, dtype, path):
    """The package installed from 2 elements on, so that OpInfo's small sample tensors reach it."""
    from jitdtypes import native_guard

    models = table.models(overload, dtypes.NAMES[dtype])
    native_guard.install_generated(overload, "CPU", dtype, [Path(path).with_name(f"{model}{table.LIBRARY_SUFFIX}")
                                                           for model in models], models, 2,
                                   words=dtype != torch.complex32)
    try:
        yield
    finally:
        cpu_kernels.uninstall(overload, dtype)
        cpu_kernels.ensure(overload, dtype)


def _opinfo_results(name, dtype):
    """(sample, the call's result, complex64's on the same rounded input) for every OpInfo sample of `name`."""
    (info,) = [op for op in op_db() if op.name == name and op.variant_test_name == ""]
    for sample in info.sample_inputs("cpu", torch.complex64):
        narrow = sample.input.to(dtype)
        yield (sample, info.op(narrow, *sample.args, **sample.kwargs),
               info.op(narrow.to(torch.complex64), *sample.args, **sample.kwargs))


@pytest.mark.parametrize("overload,dtype,name", DIM_CASES, ids=DIM_IDS)
def test_dim_reduction_opinfo_samples_agree_with_complex64(reducing, overload, dtype, name):
    """Every OpInfo sample through the guard: values, dtype and shape against complex64."""
    checked = 0
    with _from_two_elements(overload, dtype, reducing[(overload, dtype)]):
        for sample, got, expected in _opinfo_results(name, dtype):
            assert got.shape == expected.shape, sample
            if "dtype" not in sample.kwargs:
                assert got.dtype == dtype, sample
            torch.testing.assert_close(got.to(torch.complex64), expected.to(torch.complex64), rtol=2 ** -7,
                                       atol=2 ** -7 * max(1.0, float(expected.abs().max())) if got.numel() else 0,
                                       equal_nan=True)
            checked += 1
    assert checked >= 10, checked


# The variance and standard deviation over dims, which PyTorch serves itself (more slowly), by the dim
# reductions' models, the default correction only
SPREAD_CASES = [("aten::var.correction", torch.complex32, "var")]
if BCOMPLEX32 is not None:
    SPREAD_CASES.append(("aten::std.correction", BCOMPLEX32, "std"))
SPREAD_IDS = [f"{name}-{dtypes.NAMES[d]}" for _, d, name in SPREAD_CASES]


@pytest.fixture(scope="module")
def spreading():
    yield _provided(SPREAD_CASES)
    _withdrawn(SPREAD_CASES)


def _pytorchs(overload, dtype, fn):
    """fn() with the package uninstalled: PyTorch's own kernel."""
    cpu_kernels.uninstall(overload, dtype)
    try:
        with_pytorch = fn()
    finally:
        cpu_kernels.ensure(overload, dtype)
    return with_pytorch


@pytest.mark.parametrize("overload,dtype,name", SPREAD_CASES, ids=SPREAD_IDS)
def test_spread_takes_the_model_of_its_layout(spreading, overload, dtype, name):
    spread, part = getattr(torch, name), dtypes.part_dtype(dtype)
    for shape, dims, model, seen in DIM_LAYOUTS:
        (x,) = inputs(dtype, shape, 1)
        for keepdim in (False, True):
            got = spread(x, dims, keepdim=keepdim)
            wide = spread(x.to(torch.complex64), dims, keepdim=keepdim)
            assert got.dtype == part and got.shape == wide.shape, (shape, dims, keepdim)
            packaged = model_result(spreading[(overload, dtype)], model, [x.reshape(seen)], dtype)
            assert torch.equal(bits(got), bits(packaged.reshape(wide.shape))), (shape, dims, model)
            torch.testing.assert_close(got.float(), wide, rtol=torch.finfo(part).eps, atol=0)
            assert torch.equal(bits(spread(x, dims, correction=1, keepdim=keepdim)), bits(got))


@pytest.mark.parametrize("overload,dtype,name", SPREAD_CASES, ids=SPREAD_IDS)
def test_spread_calls_that_do_not_fit_keep_pytorchs_kernel(spreading, overload, dtype, name):
    spread = getattr(torch, name)
    (x,) = inputs(dtype, (8, 64, 12), 1)
    for call in (lambda: spread(x, (0, 2)),  # reduced dims apart
                 lambda: spread(x.transpose(0, 1), 0),  # not contiguous
                 lambda: spread(x, 1, correction=0), lambda: spread(x, correction=2.5),
                 lambda: spread(x[:2, :2, :2].contiguous())):  # below min_numel
        assert torch.equal(bits(call()), bits(_pytorchs(overload, dtype, call)))
    wide = x.to(torch.complex64)
    assert torch.equal(spread(wide, 1), _pytorchs(overload, dtype, lambda: spread(wide, 1)))


@pytest.mark.parametrize("overload,dtype,name", SPREAD_CASES, ids=SPREAD_IDS)
def test_spread_opinfo_samples_agree_with_complex64(spreading, overload, dtype, name):
    """Every OpInfo sample through the guard: values, dtype and shape against complex64."""
    part = dtypes.part_dtype(dtype)
    checked = 0
    with _from_two_elements(overload, dtype, spreading[(overload, dtype)]):
        for sample, got, expected in _opinfo_results(name, dtype):
            assert got.dtype == part and got.shape == expected.shape, sample
            torch.testing.assert_close(got.float(), expected, rtol=2 * torch.finfo(part).eps,
                                       atol=torch.finfo(part).tiny, equal_nan=True)
            checked += 1
    assert checked >= 10, checked


# Binary ops with a broadcast operand: the rows and columns models (table.BINARY_MODELS)
BROADCAST_CASES = [("aten::div.Tensor", torch.complex32, "div"), ("aten::add.Tensor", torch.complex32, "add"),
                   ("aten::mul.Tensor", torch.complex32, "mul")]  # rows: lanes with their pairs (table.PAIRS)
if BCOMPLEX32 is not None:  # words; add: lanes, a column spread by parity
    BROADCAST_CASES += [("aten::mul.Tensor", BCOMPLEX32, "mul"), ("aten::add.Tensor", BCOMPLEX32, "add")]
BROADCAST_IDS = [f"{name}-{dtypes.NAMES[d]}" for _, d, name in BROADCAST_CASES]
# (larger operand's shape, smaller one's, the model, how the model sees them)
BROADCASTS = [((64, 128), (128,), "rows", (64, 128), (1, 128)),
              ((64, 128), (64, 1), "columns", (64, 128), (64, 1)),
              ((4, 16, 128), (1, 16, 128), "rows", (4, 2048), (1, 2048)),
              ((4, 16, 128), (4, 1, 1), "columns", (4, 2048), (4, 1)),
              ((8, 1, 512), (8, 1, 1), "columns", (8, 512), (8, 1))]


@pytest.fixture(scope="module")
def broadcasting():
    """The cases' packages, for their in-place and out= forms too (each form's slot installs its own)."""
    forms = [(f"aten::{name}{form}", dtype, name) for _, dtype, name in BROADCAST_CASES for form in ("_.Tensor", ".out")]
    installed = _provided(BROADCAST_CASES + forms)
    for _, dtype, name in BROADCAST_CASES:  # each form's first call routes
        x, w = inputs(dtype, (4,), 2)
        getattr(torch, name)(x, w), getattr(x.clone(), f"{name}_")(w), getattr(torch, name)(x, w, out=x.clone())
    yield installed
    _withdrawn(BROADCAST_CASES + forms)


def _without_kernel(overload, dtype, compute):
    """What serves the call without the package (the upcast, or PyTorch's own kernel for complex32 add)."""
    cpu_kernels.uninstall(overload, dtype)
    try:
        return compute()
    finally:
        cpu_kernels.ensure(overload, dtype)


@pytest.mark.parametrize("overload,dtype,name", BROADCAST_CASES, ids=BROADCAST_IDS)
def test_broadcast_operands_take_the_rows_or_columns_model(broadcasting, overload, dtype, name):
    path, op = broadcasting[(overload, dtype)], getattr(torch, name)
    for large, small, model, seen_large, seen_small in BROADCASTS:
        x, w = inputs(dtype, large, 1)[0], inputs(dtype, small, 2, seed=1)[1]
        packaged = model_result(path, model, [x.view(seen_large), w.view(seen_small)], dtype).view(large)
        orders = [(x, w)] + ([(w, x)] if table.commutative(overload) else [])  # the package swaps them
        for a, b in orders:
            got, wide = op(a, b), op(a.to(torch.complex64), b.to(torch.complex64))
            assert got.dtype == dtype and got.shape == wide.shape == large
            assert torch.equal(bits(got), bits(packaged)), (large, small, model)
            torch.testing.assert_close(got.to(torch.complex64), wide, rtol=2 ** -7, atol=2 ** -7)
        into = x.clone()  # in place, and out=: the same model's values copied in
        getattr(into, f"{name}_")(w)
        out = torch.empty_like(x)
        op(x, w, out=out)
        assert torch.equal(bits(into), bits(packaged)) and torch.equal(bits(out), bits(packaged))


@pytest.mark.parametrize("overload,dtype,name", BROADCAST_CASES, ids=BROADCAST_IDS)
def test_broadcasts_no_model_fits_keep_their_path(broadcasting, overload, dtype, name):
    op = getattr(torch, name)
    x, row = inputs(dtype, (4, 16, 128), 1)[0], inputs(dtype, (128,), 2, seed=1)[1]
    column = inputs(dtype, (64, 1), 2, seed=2)[1]
    calls = [lambda: op(x, column[:16]),  # broadcast along the middle dims
             lambda: op(column, column.view(1, 64)),  # both broadcast
             lambda: op(x.transpose(0, 1), row),  # the larger one not contiguous
             lambda: op(x, row[:1].view(()))]  # a one-element tensor
    if not table.commutative(overload):
        calls.append(lambda: op(row, x))  # the smaller one first
    for compute in calls:
        assert torch.equal(bits(compute()), bits(_without_kernel(overload, dtype, compute)))
    small = inputs(dtype, (table.min_numel(overload, dtypes.NAMES[dtype]) // 128 - 1, 128), 1)[0]  # too few
    assert torch.equal(bits(op(small, row)), bits(_without_kernel(overload, dtype, lambda: op(small, row))))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        getattr(row.clone(), f"{name}_")(x)  # in place into the smaller one: PyTorch's error
