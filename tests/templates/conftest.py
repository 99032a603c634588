"""Shared fixtures for template tests: render + load a template for Triton's CPU interpreter, and compare
16-bit complex results against a complex128 reference."""

import importlib

import pytest
import torch

from jitdtypes import dtypes
from kernels_templates import common

pytest.importorskip("triton")

EPS = {"complex32": 2.0**-10, "bcomplex32": 2.0**-7}
DTYPE_NAMES = sorted(dtypes.COMPLEX_BY_NAME)


@pytest.fixture
def load():
    """load(family_name) -> loader(params) -> the rendered module's `run`, executed in the interpreter."""

    def for_family(family_name):
        family = importlib.import_module(f"kernels_templates.{family_name}")

        def loader(params, key=None):  # key: the engine's shortcut (kernels_templates/common.py); renders anyway
            params = {"interpret": True, **params}
            source = family.render(params)
            return common.exec_source(source, f"jd_test_{family_name}_{params['op']}").run

        return loader

    return for_family


def assert_close_16bit(actual, expected, dtype_name, ulps=2.0, scale=None):
    """actual (16-bit complex or real) vs a complex128/float64 reference: each component within `ulps`
    16-bit ulps relative to the magnitude (or to `scale`, e.g. the norm of a reduction's inputs)."""
    eps = EPS[dtype_name]
    a = actual.to(torch.complex128 if actual.is_complex() else torch.float64)
    e = expected.to(a.dtype)
    assert a.shape == e.shape, (a.shape, e.shape)
    if a.numel() == 0:
        return
    magnitude = e.abs() if scale is None else torch.as_tensor(scale, dtype=torch.float64)
    tolerance = ulps * eps * magnitude + 1e-30
    err = (a - e).abs()
    finite = torch.isfinite(e.abs()) if e.is_complex() else torch.isfinite(e)
    bad = ~(err <= tolerance) & finite  # NaN where the reference is finite counts as bad
    assert not bad.any(), f"max err {err[finite].max().item():.3g} at tol {tolerance.max().item():.3g}"
    assert torch.equal(torch.isfinite(a.abs() if a.is_complex() else a)[~finite], torch.zeros_like(bad)[~finite])


def elementwise_params(op, dtype, layout="interleaved", out=False, scalars=()):
    """The params dict the elementwise families (unary, binary, ternary) render from."""
    return {"op": op, "dtype": dtype, "layout": layout, "out": out, "scalars": list(scalars)}


def random_rounded(dtype, shape, scale=1.0, seed=0):
    """Random complex values in a 16-bit dtype, and the same values in complex128."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, dtype=torch.complex64, generator=g) * scale).to(dtypes.COMPLEX_BY_NAME[dtype])
    return x, x.to(torch.complex128)
