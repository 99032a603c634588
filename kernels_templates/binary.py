"""Binary elementwise ops on 16-bit complex tensors: add and sub (with alpha), mul, div, pow; either operand may
be a Python number (complex, float, int or bool), kept in fp32 by the kernel rather than rounded to 16 bits.

Parameters: see elementwise.py; "scalars" is [], [second operand] or [first operand], e.g. ["other"].
"""

from __future__ import annotations

from . import complex_math, elementwise
from .elementwise import COMPLEX, SCALAR
from .elementwise_calls import Adapter, written_out, written_self

FAMILY = "binary"

# -- template source ---------------------------------------------------------------------------------------

# op -> (operand slots in ATen order, kernel body assigning out_re, out_im)
OPS = {
    "add": (
        [("self", COMPLEX), ("other", COMPLEX), ("alpha", SCALAR)],
        """
scaled_re, scaled_im = cmul(alpha_re, alpha_im, other_re, other_im)
out_re = self_re + scaled_re
out_im = self_im + scaled_im
""",
    ),
    "sub": (
        [("self", COMPLEX), ("other", COMPLEX), ("alpha", SCALAR)],
        """
scaled_re, scaled_im = cmul(alpha_re, alpha_im, other_re, other_im)
out_re = self_re - scaled_re
out_im = self_im - scaled_im
""",
    ),
    "mul": (
        [("self", COMPLEX), ("other", COMPLEX)],
        "out_re, out_im = cmul(self_re, self_im, other_re, other_im)",
    ),
    "div": (
        [("self", COMPLEX), ("other", COMPLEX)],
        "out_re, out_im = cdiv(self_re, self_im, other_re, other_im)",
    ),
    "pow": (
        [("self", COMPLEX), ("exponent", COMPLEX)],
        "out_re, out_im = cpow(self_re, self_im, exponent_re, exponent_im)",
    ),
}

# ATen's pow(Tensor, Scalar) fills ones for a zero exponent, 0^0 included (pow(Tensor, Tensor) gives nan there).
_ZERO_SCALAR_EXPONENT = """
zero_exponent = (exponent_re == 0.0) & (exponent_im == 0.0)
out_re = tl.where(zero_exponent, 1.0, out_re)
out_im = tl.where(zero_exponent, 0.0, out_im)
"""


def _slots(op: str):
    return OPS[op][0]


# -- render / variants -------------------------------------------------------------------------------------

def render(params: dict) -> str:
    slots = elementwise.check_params(params, OPS, _slots)
    body = OPS[params["op"]][1]
    if params["op"] == "pow" and "exponent" in params["scalars"]:
        body += _ZERO_SCALAR_EXPONENT
    return elementwise.render_module(
        params, slots=slots, body=body, result=COMPLEX, library=(complex_math,)
    )


def variants(dtype: str) -> list[dict]:
    result = []
    for op, (slots, _) in OPS.items():
        first, second = (name for name, kind in slots if kind == COMPLEX)
        for scalars in ([], [second], [first]):
            for layout in elementwise.LAYOUTS:
                for out in (False, True):
                    result.append(
                        {"op": op, "dtype": dtype, "layout": layout, "out": out, "scalars": scalars, "interpret": False}
                    )
    return result


# -- ATen adapters -----------------------------------------------------------------------------------------

FUNCTIONAL, INPLACE, OUT = "functional", "inplace", "out"


def _adapter(op: str, mode: str, *, swapped: bool = False, rounds: bool = False) -> Adapter:
    """An adapter for one overload of op. swapped: rsub's operands, which are sub's in reverse order; rounds:
    the overload takes a rounding mode.

    alpha is read from args or kwargs alike: it is positional in the Scalar overloads and keyword-only in the
    Tensor ones."""
    slots = _slots(op)
    if len(slots) == 3:
        def values(args, kwargs):
            first, second = (args[1], args[0]) if swapped else (args[0], args[1])
            return first, second, args[2] if len(args) > 2 else kwargs.get("alpha", 1)
    elif swapped:
        def values(args, kwargs):
            return args[1], args[0]
    else:
        def values(args, kwargs):
            return args[0], args[1]
    written = {INPLACE: written_self, OUT: written_out}.get(mode)
    return Adapter(op, slots, values, written=written, inplace=mode == INPLACE, declines=_rounding if rounds else None)


def _rounding(args, kwargs) -> bool:
    return kwargs.get("rounding_mode") is not None  # floor/trunc division is not defined for complex numbers


def _aten() -> dict:
    table = {}
    for op in ("add", "sub", "mul", "div"):
        table.update({
            f"aten::{op}.Tensor": _adapter(op, FUNCTIONAL),
            f"aten::{op}.Scalar": _adapter(op, FUNCTIONAL),
            f"aten::{op}_.Tensor": _adapter(op, INPLACE),
            f"aten::{op}_.Scalar": _adapter(op, INPLACE),
            f"aten::{op}.out": _adapter(op, OUT),
            f"aten::{op}.Scalar_out": _adapter(op, OUT),
        })
    table.update({
        "aten::div.Tensor_mode": _adapter("div", FUNCTIONAL, rounds=True),
        "aten::div.Scalar_mode": _adapter("div", FUNCTIONAL, rounds=True),
        "aten::div_.Tensor_mode": _adapter("div", INPLACE, rounds=True),
        "aten::div_.Scalar_mode": _adapter("div", INPLACE, rounds=True),
        "aten::div.out_mode": _adapter("div", OUT, rounds=True),
        "aten::div.Scalar_mode_out": _adapter("div", OUT, rounds=True),
        "aten::rsub.Tensor": _adapter("sub", FUNCTIONAL, swapped=True),
        "aten::rsub.Scalar": _adapter("sub", FUNCTIONAL, swapped=True),
        "aten::rsub.Tensor_out": _adapter("sub", OUT, swapped=True),
        "aten::rsub.Scalar_out": _adapter("sub", OUT, swapped=True),
        "aten::pow.Tensor_Tensor": _adapter("pow", FUNCTIONAL),
        "aten::pow.Tensor_Scalar": _adapter("pow", FUNCTIONAL),
        "aten::pow.Scalar": _adapter("pow", FUNCTIONAL),
        "aten::pow_.Tensor": _adapter("pow", INPLACE),
        "aten::pow_.Scalar": _adapter("pow", INPLACE),
        "aten::pow.Tensor_Tensor_out": _adapter("pow", OUT),
        "aten::pow.Tensor_Scalar_out": _adapter("pow", OUT),
        "aten::pow.Scalar_out": _adapter("pow", OUT),
    })
    return table


ATEN = _aten()
