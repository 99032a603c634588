"""Unary elementwise ops on 16-bit complex tensors: exp, logs, roots, trigonometric and hyperbolic functions and
their inverses, sigmoid, abs/angle (real results), sgn, neg, conj_physical, square.

Every formula runs in fp32 on (re, im), from complex_math.py and complex_inverse.py (the compile path's formulas,
jitdtypes/complex_math.py, in Triton), chosen to stay accurate where the textbook one cancels or overflows; the
result is rounded once to the part dtype. Branch cuts lie where C99 and PyTorch put them, with the side chosen
by the sign of a zero part (the tests compare against PyTorch's complex128 results). Infinite and NaN parts give
C99 Annex G's values for exp, log, sqrt and the trigonometric and hyperbolic functions, eager's for expm1,
log1p, sigmoid and reciprocal, and propagate through the inverse functions. The sign of an exactly zero result
part can differ from PyTorch's in a few places (acos on the real segment follows C99's -0i, square(-0 + 0i)
gives -0).

Parameters: see elementwise.py; unary modules have no scalar operands ("scalars": []).
"""

from __future__ import annotations

from . import complex_inverse, complex_math, elementwise
from .elementwise import COMPLEX, REAL
from .elementwise_calls import Adapter, written_out, written_self

FAMILY = "unary"

# -- template source ---------------------------------------------------------------------------------------

# op -> kernel body over self_re, self_im (fp32), assigning out_re, out_im, or out for REAL_RESULT ops: a call
# of the formula in complex_math.py or complex_inverse.py, where one exists.
OPS = {
    "exp": "out_re, out_im = cexp(self_re, self_im)",
    "expm1": "out_re, out_im = cexpm1(self_re, self_im)",
    "log": "out_re, out_im = clog(self_re, self_im)",
    "log1p": "out_re, out_im = clog1p(self_re, self_im)",
    "log2": """
log_re, log_im = clog(self_re, self_im)
out_re = log_re * 1.4426950408889634
out_im = log_im * 1.4426950408889634
""",
    "log10": """
log_re, log_im = clog(self_re, self_im)
out_re = log_re * 0.4342944819032518
out_im = log_im * 0.4342944819032518
""",
    "sqrt": "out_re, out_im = csqrt(self_re, self_im)",
    "rsqrt": """
root_re, root_im = csqrt(self_re, self_im)
out_re, out_im = creciprocal(root_re, root_im)
""",
    "reciprocal": "out_re, out_im = creciprocal(self_re, self_im)",
    "sin": "out_re, out_im = csin(self_re, self_im)",
    "cos": "out_re, out_im = ccos(self_re, self_im)",
    "tan": "out_re, out_im = ctan(self_re, self_im)",
    "sinh": "out_re, out_im = csinh(self_re, self_im)",
    "cosh": "out_re, out_im = ccosh(self_re, self_im)",
    "tanh": "out_re, out_im = ctanh(self_re, self_im)",
    "asin": "out_re, out_im = casin(self_re, self_im)",
    "acos": "out_re, out_im = cacos(self_re, self_im)",
    "atan": "out_re, out_im = catan(self_re, self_im)",
    "asinh": "out_re, out_im = casinh(self_re, self_im)",
    "acosh": "out_re, out_im = cacosh(self_re, self_im)",
    "atanh": "out_re, out_im = catanh(self_re, self_im)",
    "sigmoid": "out_re, out_im = csigmoid(self_re, self_im)",
    "abs": "out = hypot(self_re, self_im)",
    "angle": "out = atan2(self_im, self_re)",
    "sgn": "out_re, out_im = csgn(self_re, self_im)",
    "neg": """
out_re = neg(self_re)
out_im = neg(self_im)
""",
    "conj_physical": """
out_re = self_re
out_im = neg(self_im)
""",
    "square": """
# (x - y)(x + y) stays accurate where x^2 - y^2 cancels.
out_re = (self_re - self_im) * (self_re + self_im)
out_im = 2.0 * (self_re * self_im)
""",
}

REAL_RESULT = frozenset({"abs", "angle"})
SLOTS = [("self", COMPLEX)]


# -- render / variants -------------------------------------------------------------------------------------

def render(params: dict) -> str:
    slots = elementwise.check_params(params, OPS, lambda op: SLOTS)
    op = params["op"]
    return elementwise.render_module(
        params,
        slots=slots,
        body=OPS[op],
        result=REAL if op in REAL_RESULT else COMPLEX,
        library=(complex_math, complex_inverse),
    )


def variants(dtype: str) -> list[dict]:
    return [
        {"op": op, "dtype": dtype, "layout": layout, "out": out, "scalars": [], "interpret": False}
        for op in OPS
        for layout in elementwise.LAYOUTS
        for out in (False, True)
    ]


# -- ATen adapters -----------------------------------------------------------------------------------------

def _first(args, kwargs):
    return (args[0],)


def _adapters(op: str) -> dict:
    result = REAL if op in REAL_RESULT else COMPLEX
    adapters = {f"aten::{op}": Adapter(op, SLOTS, _first, result=result),
                f"aten::{op}.out": Adapter(op, SLOTS, _first, result=result, written=written_out)}
    # abs_ of a complex tensor is an error in ATen (its result is real), and angle has no in-place form.
    if result == COMPLEX:
        adapters[f"aten::{op}_"] = Adapter(op, SLOTS, _first, written=written_self, inplace=True)
    return adapters


ATEN = {name: adapter for op in OPS for name, adapter in _adapters(op).items()}
