"""Ternary elementwise ops on 16-bit complex tensors: addcmul and addcdiv (with a value scalar), where (with a
bool condition) and lerp (with a scalar or tensor weight).

Parameters: see elementwise.py; "scalars" may name where's self or other, or lerp's weight.
"""

from __future__ import annotations

from . import complex_math, elementwise
from .elementwise import BOOL, COMPLEX, SCALAR
from .elementwise_calls import Adapter, written_out, written_self

FAMILY = "ternary"

# -- template source ---------------------------------------------------------------------------------------

# op -> (operand slots in ATen order, kernel body assigning out_re, out_im, the "scalars" forms to pre-generate)
OPS = {
    "addcmul": (
        [("self", COMPLEX), ("tensor1", COMPLEX), ("tensor2", COMPLEX), ("value", SCALAR)],
        """
# self + value * tensor1 * tensor2, multiplied in ATen's order
scaled_re, scaled_im = cmul(value_re, value_im, tensor1_re, tensor1_im)
product_re, product_im = cmul(scaled_re, scaled_im, tensor2_re, tensor2_im)
out_re = self_re + product_re
out_im = self_im + product_im
""",
        [[]],
    ),
    "addcdiv": (
        [("self", COMPLEX), ("tensor1", COMPLEX), ("tensor2", COMPLEX), ("value", SCALAR)],
        """
# self + value * tensor1 / tensor2, in ATen's order
scaled_re, scaled_im = cmul(value_re, value_im, tensor1_re, tensor1_im)
quotient_re, quotient_im = cdiv(scaled_re, scaled_im, tensor2_re, tensor2_im)
out_re = self_re + quotient_re
out_im = self_im + quotient_im
""",
        [[]],
    ),
    "where": (
        [("condition", BOOL), ("self", COMPLEX), ("other", COMPLEX)],
        """
out_re = tl.where(condition, self_re, other_re)
out_im = tl.where(condition, self_im, other_im)
""",
        [[], ["self"], ["other"]],
    ),
    "lerp": (
        [("self", COMPLEX), ("end", COMPLEX), ("weight", COMPLEX)],
        """
# ATen's formula: self + w (end - self) for |w| < 1/2, else end - (end - self)(1 - w); exact at w = 0 and 1.
diff_re = end_re - self_re
diff_im = end_im - self_im
small = hypot(weight_re, weight_im) < 0.5
near_re, near_im = cmul(weight_re, weight_im, diff_re, diff_im)
far_re, far_im = cmul(diff_re, diff_im, 1.0 - weight_re, 0.0 - weight_im)
out_re = tl.where(small, self_re + near_re, end_re - far_re)
out_im = tl.where(small, self_im + near_im, end_im - far_im)
""",
        [[], ["weight"]],
    ),
}


def _slots(op: str):
    return OPS[op][0]


# -- render / variants -------------------------------------------------------------------------------------

def render(params: dict) -> str:
    slots = elementwise.check_params(params, OPS, _slots)
    return elementwise.render_module(
        params, slots=slots, body=OPS[params["op"]][1], result=COMPLEX, library=(complex_math,)
    )


def variants(dtype: str) -> list[dict]:
    return [
        {"op": op, "dtype": dtype, "layout": layout, "out": out, "scalars": scalars, "interpret": False}
        for op, (_, _, forms) in OPS.items()
        for scalars in forms
        for layout in elementwise.LAYOUTS
        for out in (False, True)
    ]


# -- ATen adapters -----------------------------------------------------------------------------------------

FUNCTIONAL, INPLACE, OUT = "functional", "inplace", "out"


def _adapter(op: str, mode: str) -> Adapter:
    """An adapter for one overload of op: the first three arguments fill the op's first three slots (positional
    in every overload); addcmul/addcdiv's keyword-only value defaults to 1."""
    slots = _slots(op)
    if len(slots) == 4:
        def values(args, kwargs):
            return args[0], args[1], args[2], kwargs.get("value", 1)
    else:
        def values(args, kwargs):
            return args[0], args[1], args[2]
    written = {INPLACE: written_self, OUT: written_out}.get(mode)
    return Adapter(op, slots, values, written=written, inplace=mode == INPLACE)


ATEN = {
    "aten::addcmul": _adapter("addcmul", FUNCTIONAL),
    "aten::addcmul_": _adapter("addcmul", INPLACE),
    "aten::addcmul.out": _adapter("addcmul", OUT),
    "aten::addcdiv": _adapter("addcdiv", FUNCTIONAL),
    "aten::addcdiv_": _adapter("addcdiv", INPLACE),
    "aten::addcdiv.out": _adapter("addcdiv", OUT),
    "aten::where.self": _adapter("where", FUNCTIONAL),
    "aten::where.ScalarSelf": _adapter("where", FUNCTIONAL),
    "aten::where.ScalarOther": _adapter("where", FUNCTIONAL),
    "aten::where.self_out": _adapter("where", OUT),
    "aten::lerp.Scalar": _adapter("lerp", FUNCTIONAL),
    "aten::lerp.Tensor": _adapter("lerp", FUNCTIONAL),
    "aten::lerp_.Scalar": _adapter("lerp", INPLACE),
    "aten::lerp_.Tensor": _adapter("lerp", INPLACE),
    "aten::lerp.Scalar_out": _adapter("lerp", OUT),
    "aten::lerp.Tensor_out": _adapter("lerp", OUT),
}
