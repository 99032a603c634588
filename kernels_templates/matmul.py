"""Complex matmul family: out = alpha * op(A) @ op(B) + beta * C for 16-bit complex operands, op = identity or conj.

The kernels, their launch configurations and their host launcher are real Triton and Python code in
matmul_kernels.py (how the product is computed is told there). What varies per variant, the dtype and the two
conjugations, is rendered here as the few lines that bind matmul_kernels.Matmul to them, with the torch-facing
`run` whose annotations torch.library.triton_op reads. The ATen overloads' adapters are in matmul_calls.py.
"""

from __future__ import annotations

import torch

from jitdtypes import dtypes

from . import common
from . import matmul_kernels  # what rendered modules import (render names it): part of this family's kernel key
from .matmul_calls import Product

FAMILY = "matmul"

TEMPLATE = '''\
"""Rendered by kernels_templates/matmul.py: out = alpha * op(a) @ op(b) + beta * c on $dtype pairs (conj_a=$conj_a,
conj_b=$conj_b), computed by kernels_templates/matmul_kernels.py."""

from typing import Optional

import torch

from $kernels import Matmul
# the kernels this module launches (adapters and tests look them up here)
from $kernels import complex_matmul_kernel, expand_kernel, finish_split_kernel  # noqa: F401

MUTATES = ("out",)
product = Matmul(conj_a=$conj_a, conj_b=$conj_b, interpret=$interpret, bf16=$bf16)
# what matmul_calls.py's plans launch by themselves
THIN, thin_key, prepared_thin = product.THIN, product.thin_key, product.prepared_thin


def run(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: Optional[torch.Tensor],
        alpha_re: float, alpha_im: float, beta_re: float, beta_im: float) -> None:
    """out = alpha * op(a) @ op(b) + beta * (bias, or out's own values when bias is None), batched over dim 0
    (Matmul.run)."""
    product.run(a, b, out, bias, alpha_re, alpha_im, beta_re, beta_im)
'''


def render(params: dict) -> str:
    return common.render(
        TEMPLATE, kernels=matmul_kernels.__name__,
        dtype=params["dtype"],
        conj_a=bool(params["conj_a"]),
        conj_b=bool(params["conj_b"]),
        interpret=bool(params["interpret"]),
        bf16=dtypes.PART_BY_NAME[params["dtype"]] == torch.bfloat16,
    )


def variants(dtype: str) -> list[dict]:
    return [
        {"op": "matmul", "dtype": dtype, "conj_a": conj_a, "conj_b": conj_b, "interpret": False}
        for conj_a in (False, True)
        for conj_b in (False, True)
    ]


# -- ATen adapters (matmul_calls.py) -------------------------------------------------------------------

ATEN = {
    "aten::mm": Product("mm"),
    "aten::mm.out": Product("mm", out=True),
    "aten::bmm": Product("bmm"),
    "aten::bmm.out": Product("bmm", out=True),
    "aten::addmm": Product("mm", with_bias=True),
    "aten::addmm.out": Product("mm", with_bias=True, out=True),
    "aten::addmm_": Product("mm", with_bias=True, in_place=True),
    "aten::baddbmm": Product("bmm", with_bias=True),
    "aten::baddbmm_": Product("bmm", with_bias=True, in_place=True),
    "aten::baddbmm.out": Product("bmm", with_bias=True, out=True),
    "aten::addmv": Product("mv", with_bias=True),
    "aten::addmv.out": Product("mv", with_bias=True, out=True),
    "aten::addmv_": Product("mv", with_bias=True, in_place=True),
    "aten::mv": Product("mv"),
    "aten::mv.out": Product("mv", out=True),
    "aten::dot": Product("dot"),
    "aten::dot.out": Product("dot", out=True),
    "aten::vdot": Product("dot", conj_a=True),
    "aten::vdot.out": Product("dot", out=True, conj_a=True),
}
