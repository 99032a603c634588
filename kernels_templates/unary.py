"""Unary elementwise ops on 16-bit complex tensors: exp, logs, roots, trigonometric and hyperbolic functions and
their inverses, sigmoid, abs/angle (real results), sgn, neg, conj_physical, square.

Every formula runs in fp32 on (re, im) and is chosen to stay accurate where the textbook one cancels or
overflows; the result is rounded once to the part dtype. Branch cuts lie where C99 and PyTorch put them, with
the side chosen by the sign of a zero part (the tests compare against PyTorch's complex128 results). The sign
of an exactly zero result part can differ from PyTorch's in a few places (acos on the real segment follows
C99's -0i, square(-0 + 0i) gives -0, log1p(-0 + 0i) gives +0). Non-finite inputs propagate but do not
reproduce every special case of C99's Annex G.

Parameters: see elementwise.py; unary modules have no scalar operands ("scalars": []).
"""

from __future__ import annotations

from . import complex_math, elementwise
from .elementwise import COMPLEX, REAL
from .elementwise_calls import Adapter, written_out, written_self

FAMILY = "unary"

# -- template source ---------------------------------------------------------------------------------------

MATH = {
    "_expm1": '''
@triton.jit
def _expm1(t):
    # Taylor series where exp(t) - 1 would cancel (|t| < 1/2; the first omitted term is below 3e-10).
    series = t * (1.0 + t * 0.5 * (1.0 + t * 0.3333333333333333 * (1.0 + t * 0.25 * (1.0 + t * 0.2 * (
        1.0 + t * 0.16666666666666666 * (1.0 + t * 0.14285714285714285 * (1.0 + t * 0.125 * (
            1.0 + t * 0.1111111111111111))))))))
    return tl.where(tl.abs(t) < 0.5, series, tl.exp(t) - 1.0)
''',
    "_creciprocal": '''
@triton.jit
def _creciprocal(x, y):
    # 1 / (x + iy): _cdiv with the numerator fixed at 1 + 0i, so (u, v) there is (1, 0) or (0, 1). The
    # "+ 0.0" and "0.0 -" keep what adding that 0 does in _cdiv and c10: a zero result part is +0.
    scale = tl.where(tl.maximum(tl.abs(x), tl.abs(y)) > 1e38, 0.25, 1.0)
    x = x * scale
    y = y * scale
    real_larger = tl.abs(x) >= tl.abs(y)
    p = tl.where(real_larger, x, y)
    q = tl.where(real_larger, y, x)
    zero = p == 0.0
    ratio = tl.where(zero, 0.0, q / tl.where(zero, 1.0, p))
    s = tl.where(zero, float("inf"), 1.0 / (p + q * ratio)) * scale
    return tl.where(real_larger, s, (ratio + 0.0) * s), tl.where(real_larger, (0.0 - ratio) * s, _neg(s))
''',
    "_csqrt": '''
@triton.jit
def _csqrt(x, y):
    # Kahan: t = sqrt((|x| + |z|) / 2) never cancels and the other part is y / 2t. Near the top of the
    # fp32 range sqrt(z) = 2 sqrt(z / 4) keeps |x| + |z| finite. The imaginary part takes y's sign, zero
    # included: sqrt(-4 + 0i) = 2i, sqrt(-4 - 0i) = -2i.
    big = tl.maximum(tl.abs(x), tl.abs(y)) > 1e38
    x = tl.where(big, 0.25 * x, x)
    y = tl.where(big, 0.25 * y, y)
    t = tl.sqrt(0.5 * (tl.abs(x) + _hypot(x, y)))
    other = y / (2.0 * tl.where(t == 0.0, 1.0, t))
    negative = _sign_bit(x)
    re = tl.where(negative, tl.abs(other), t)
    im = tl.where(negative, tl.where(_sign_bit(y), _neg(t), t), other)
    grow = tl.where(big, 2.0, 1.0)
    return re * grow, im * grow
''',
    "_clog1p": '''
@triton.jit
def _clog1p(x, y):
    # For |z| < 1/2, log|1 + z| = 0.5 log1p(x (2 + x) + y^2) keeps a small real part; elsewhere log(1 + z)
    # loses nothing to the rounding of 1 + x.
    small = tl.maximum(tl.abs(x), tl.abs(y)) < 0.5
    re = tl.where(small, 0.5 * _log1p(x * (2.0 + x) + y * y), _log_abs(1.0 + x, y))
    return re, _atan2(y, 1.0 + x)
''',
    "_sinh_cosh_times": '''
@triton.jit
def _sinh_cosh_times(t, a, b):
    # (sinh(t) a, cosh(t) b). sinh goes through expm1, exact for small t. Beyond |t| = 20, where both equal
    # e^|t| / 2 in fp32, e^|t| is applied in two halves so the products stay finite where e^|t| overflows.
    at = tl.abs(t)
    em1 = _expm1(at)
    e = em1 + 1.0
    large = at > 20.0
    half = tl.exp(0.5 * at)
    sinh_a = tl.where(large, (0.5 * half * a) * half, 0.5 * (em1 + em1 / e) * a)
    cosh_b = tl.where(large, (0.5 * half * b) * half, 0.5 * (e + 1.0 / e) * b)
    return tl.where(_sign_bit(t), _neg(sinh_a), sinh_a), cosh_b
''',
    "_ctanh": '''
@triton.jit
def _ctanh(x, y):
    # Kahan: with t = tan y, s = sinh x, rho = cosh x = sqrt(1 + s^2), beta = 1 + t^2,
    # tanh z = (beta rho s + i t) / (1 + beta s^2), free of cancellation. For |x| > 9, tanh z equals
    # sign(x) + 4i sin y cos y e^(-2|x|) to fp32 precision, and s^2 would grow towards overflow.
    ax = tl.abs(x)
    em1 = _expm1(ax)
    s = 0.5 * (em1 + em1 / (em1 + 1.0))
    s = tl.where(_sign_bit(x), _neg(s), s)
    sin, cos = _sincos(y)
    t = sin / cos
    beta = 1.0 + t * t
    den = 1.0 + beta * s * s
    large = ax > 9.0
    re = tl.where(large, tl.where(_sign_bit(x), -1.0, 1.0), beta * tl.sqrt(1.0 + s * s) * s / den)
    im = tl.where(large, 4.0 * sin * cos * tl.exp(-2.0 * ax), t / den)
    return re, im
''',
    "_asinh": '''
@triton.jit
def _asinh(v):
    # Real asinh: log1p(a + a^2 / (1 + sqrt(1 + a^2))) equals log(a + sqrt(1 + a^2)) without its
    # cancellation for small a; past 2^12 the 1 no longer counts and a^2 may overflow: log(2a).
    a = tl.abs(v)
    r = tl.where(a > 4096.0, tl.log(a) + 0.6931471805599453, _log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a))))
    return tl.where(_sign_bit(v), _neg(r), r)
''',
    # Inverse functions after Kahan, "Branch cuts for complex elementary functions" (1987): written with
    # s1 = sqrt(1 + z) and s2 = sqrt(1 - z) (sqrt(z - 1), sqrt(z + 1) for acosh), each accurate and never
    # cancelling, they keep full relative accuracy near the branch points and put the cuts where C99 does,
    # on the side given by the sign of a zero imaginary part. 1 - z negates y (not 0 - y) to keep that sign.
    "_casin": '''
@triton.jit
def _casin(x, y):
    # asin z = atan2(x, Re(s2 s1)) + i asinh(Im(conj(s2) s1))
    s1_re, s1_im = _csqrt(1.0 + x, y)
    s2_re, s2_im = _csqrt(1.0 - x, _neg(y))
    return _atan2(x, s2_re * s1_re - s2_im * s1_im), _asinh(s2_re * s1_im - s2_im * s1_re)
''',
    "_cacos": '''
@triton.jit
def _cacos(x, y):
    # acos z = 2 atan2(Re s2, Re s1) + i asinh(Im(conj(s1) s2))
    s1_re, s1_im = _csqrt(1.0 + x, y)
    s2_re, s2_im = _csqrt(1.0 - x, _neg(y))
    return 2.0 * _atan2(s2_re, s1_re), _asinh(s1_re * s2_im - s1_im * s2_re)
''',
    "_cacosh": '''
@triton.jit
def _cacosh(x, y):
    # acosh z = asinh(Re(conj(s1) s2)) + 2i atan2(Im s1, Re s2), s1 = sqrt(z - 1), s2 = sqrt(z + 1)
    s1_re, s1_im = _csqrt(x - 1.0, y)
    s2_re, s2_im = _csqrt(x + 1.0, y)
    return _asinh(s1_re * s2_re + s1_im * s2_im), 2.0 * _atan2(s1_im, s2_re)
''',
    "_catanh": '''
@triton.jit
def _catanh(x, y):
    # atanh z = 1/4 log1p(4x / ((1 - x)^2 + y^2)) + i/2 atan2(2y, (1 - x)(1 + x) - y^2): the factors are
    # exact for 16-bit inputs near z = +-1. Evaluated at |x| and made odd, so z = -1 gives -inf rather than
    # log1p(-inf); dividing the denominators instead of doubling x and y keeps them finite.
    ax = tl.abs(x)
    re = 0.25 * _log1p(ax / (0.25 * ((1.0 - ax) * (1.0 - ax) + y * y)))
    im = 0.5 * _atan2(y, 0.5 * ((1.0 - ax) * (1.0 + ax) - y * y))
    return tl.where(_sign_bit(x), _neg(re), re), im
''',
}

# op -> kernel body over self_re, self_im (fp32), assigning out_re, out_im, or out for REAL_RESULT ops.
OPS = {
    "exp": "out_re, out_im = _cexp(self_re, self_im)",
    "expm1": """
# Re = e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y/2): no cancellation near 0.
half_sin, _ = _sincos(0.5 * self_im)
_, cos_y = _sincos(self_im)
out_re = _expm1(self_re) * cos_y - 2.0 * half_sin * half_sin
_, out_im = _cexp(self_re, self_im)
""",
    "log": "out_re, out_im = _clog(self_re, self_im)",
    "log1p": "out_re, out_im = _clog1p(self_re, self_im)",
    "log2": """
log_re, log_im = _clog(self_re, self_im)
out_re = log_re * 1.4426950408889634
out_im = log_im * 1.4426950408889634
""",
    "log10": """
log_re, log_im = _clog(self_re, self_im)
out_re = log_re * 0.4342944819032518
out_im = log_im * 0.4342944819032518
""",
    "sqrt": "out_re, out_im = _csqrt(self_re, self_im)",
    "rsqrt": """
root_re, root_im = _csqrt(self_re, self_im)
out_re, out_im = _creciprocal(root_re, root_im)
""",
    "reciprocal": "out_re, out_im = _creciprocal(self_re, self_im)",
    "sin": """
# sin z = sin x cosh y + i cos x sinh y; sin(+-0) cosh y stays +-0 even where cosh y overflows.
sin_x, cos_x = _sincos(self_re)
sinh_cos, cosh_sin = _sinh_cosh_times(self_im, cos_x, sin_x)
out_re = tl.where(self_re == 0.0, self_re, cosh_sin)
out_im = sinh_cos
""",
    "cos": """
# cos z = cos x cosh y - i sin x sinh y; for x = +-0 the imaginary part is a signed zero.
sin_x, cos_x = _sincos(self_re)
sinh_sin, cosh_cos = _sinh_cosh_times(self_im, sin_x, cos_x)
out_re = cosh_cos
out_im = tl.where(self_re == 0.0, _neg(self_re * self_im), _neg(sinh_sin))
""",
    "tan": """
# tan z = -i tanh(iz)
tanh_re, tanh_im = _ctanh(_neg(self_im), self_re)
out_re = tanh_im
out_im = _neg(tanh_re)
""",
    "sinh": """
# sinh z = sinh x cos y + i cosh x sin y; for y = +-0 the imaginary part is y.
sin_y, cos_y = _sincos(self_im)
sinh_cos, cosh_sin = _sinh_cosh_times(self_re, cos_y, sin_y)
out_re = sinh_cos
out_im = tl.where(self_im == 0.0, self_im, cosh_sin)
""",
    "cosh": """
# cosh z = cosh x cos y + i sinh x sin y; for y = +-0 the imaginary part is a zero signed like x y.
sin_y, cos_y = _sincos(self_im)
sinh_sin, cosh_cos = _sinh_cosh_times(self_re, sin_y, cos_y)
out_re = cosh_cos
out_im = tl.where(self_im == 0.0, self_re * self_im, sinh_sin)
""",
    "tanh": "out_re, out_im = _ctanh(self_re, self_im)",
    "asin": "out_re, out_im = _casin(self_re, self_im)",
    "acos": "out_re, out_im = _cacos(self_re, self_im)",
    "atan": """
# atan z = -i atanh(iz)
atanh_re, atanh_im = _catanh(_neg(self_im), self_re)
out_re = atanh_im
out_im = _neg(atanh_re)
""",
    "asinh": """
# asinh z = -i asin(iz)
asin_re, asin_im = _casin(_neg(self_im), self_re)
out_re = asin_im
out_im = _neg(asin_re)
""",
    "acosh": "out_re, out_im = _cacosh(self_re, self_im)",
    "atanh": "out_re, out_im = _catanh(self_re, self_im)",
    "sigmoid": """
# 1 / (1 + e^-z) for Re z >= 0 and e^z / (1 + e^z) below: the exponential never exceeds 1 in magnitude.
negative = self_re < 0.0
decay = tl.exp(-tl.abs(self_re))
sin_y, cos_y = _sincos(self_im)
exp_re = decay * cos_y
exp_im = tl.where(negative, decay, _neg(decay)) * sin_y
out_re, out_im = _cdiv(tl.where(negative, exp_re, 1.0), tl.where(negative, exp_im, 0.0), 1.0 + exp_re, exp_im)
""",
    "abs": "out = _hypot(self_re, self_im)",
    "angle": "out = _atan2(self_im, self_re)",
    "sgn": """
# z / |z| with |z| from _hypot, so large parts cannot overflow; sgn(0) = 0.
magnitude = _hypot(self_re, self_im)
nonzero = magnitude != 0.0
safe = tl.where(nonzero, magnitude, 1.0)
out_re = tl.where(nonzero, self_re / safe, 0.0)
out_im = tl.where(nonzero, self_im / safe, 0.0)
""",
    "neg": """
out_re = _neg(self_re)
out_im = _neg(self_im)
""",
    "conj_physical": """
out_re = self_re
out_im = _neg(self_im)
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
        library={**complex_math.MATH, **MATH},
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
