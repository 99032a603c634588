"""Inverse trigonometric and hyperbolic functions for Triton kernels, fp32 on (re, im) parts, built on
complex_math.py's helpers; rendered unary modules import them by name. The same formulas as the inverse
functions of jitdtypes/complex_math.py (casin is asin there, asinh is real_asinh).

After Kahan, "Branch cuts for complex elementary functions" (1987): written with s1 = sqrt(1 + z) and
s2 = sqrt(1 - z) (sqrt(z - 1), sqrt(z + 1) for acosh), each accurate and never cancelling, they keep full relative
accuracy near the branch points and put the cuts where C99 does, on the side given by the sign of a zero imaginary
part. 1 - z negates y (not 0 - y) to keep that sign. Past HUGE the products of two roots would overflow (they grow
like |z|): the roots are taken of (1 +- z) / 4, half the roots, the atan2 arguments scaled alike, and asinh of the
quarter products is asinh of the products less 2 log 2 (they are past 2^12 there). Infinite and NaN parts
propagate through the formulas, which do not single out Annex G's cases for these functions.
"""

import triton
import triton.language as tl

from kernels_templates.complex_math import (HUGE, SQUARES_LARGE, SQUARES_SCALE, atan2, csqrt, log1p, neg,
                                            sign_bit)

__all__ = ["asinh", "casin", "cacos", "catan", "casinh", "cacosh", "catanh"]


@triton.jit
def _asinh(v, log_scale):
    # asinh(v e^log_scale), for log_scale 0 or |v| past 2^12: log1p(a + a^2 / (1 + sqrt(1 + a^2))) equals
    # log(a + sqrt(1 + a^2)) without its cancellation for small a; past 2^12 the 1 no longer counts and a^2 may
    # overflow: log(2a).
    a = tl.abs(v)
    r = tl.where(a > 4096.0, tl.log(a) + (0.6931471805599453 + log_scale),
                 log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a))))
    return tl.where(sign_bit(v), neg(r), r)


@triton.jit
def asinh(v):
    return _asinh(v, 0.0)


@triton.jit
def _root_scale(x, y):
    # (1/4 where a part passes HUGE else 1, the log of its inverse square: what asinh of quarter products adds)
    big = tl.maximum(tl.abs(x), tl.abs(y), propagate_nan=tl.PropagateNan.ALL) > HUGE
    return tl.where(big, 0.25, 1.0), tl.where(big, 1.3862943611198906, 0.0)


@triton.jit
def casin(x, y):
    # asin z = atan2(x, Re(s2 s1)) + i asinh(Im(conj(s2) s1))
    scale, log_scale = _root_scale(x, y)
    s1_re, s1_im = csqrt((1.0 + x) * scale, y * scale)
    s2_re, s2_im = csqrt((1.0 - x) * scale, neg(y) * scale)
    return atan2(x * scale, s2_re * s1_re - s2_im * s1_im), _asinh(s2_re * s1_im - s2_im * s1_re, log_scale)


@triton.jit
def cacos(x, y):
    # acos z = 2 atan2(Re s2, Re s1) + i asinh(Im(conj(s1) s2))
    scale, log_scale = _root_scale(x, y)
    s1_re, s1_im = csqrt((1.0 + x) * scale, y * scale)
    s2_re, s2_im = csqrt((1.0 - x) * scale, neg(y) * scale)
    return 2.0 * atan2(s2_re, s1_re), _asinh(s1_re * s2_im - s1_im * s2_re, log_scale)


@triton.jit
def cacosh(x, y):
    # acosh z = asinh(Re(conj(s1) s2)) + 2i atan2(Im s1, Re s2), s1 = sqrt(z - 1), s2 = sqrt(z + 1)
    scale, log_scale = _root_scale(x, y)
    s1_re, s1_im = csqrt((x - 1.0) * scale, y * scale)
    s2_re, s2_im = csqrt((x + 1.0) * scale, y * scale)
    return _asinh(s1_re * s2_re + s1_im * s2_im, log_scale), 2.0 * atan2(s1_im, s2_re)


@triton.jit
def catanh(x, y):
    # atanh z = 1/4 log1p(4x / ((1 - x)^2 + y^2)) + i/2 atan2(2y, (1 - x)(1 + x) - y^2): the factors are
    # exact for 16-bit inputs near z = +-1. Evaluated at |x| and made odd, so z = -1 gives -inf rather than
    # log1p(-inf); dividing the denominators instead of doubling x and y keeps them finite. Past SQUARES_LARGE
    # the squares would overflow: (1 - x) and y enter them scaled by SQUARES_SCALE, the numerators by its square.
    ax = tl.abs(x)
    scale = tl.where(tl.maximum(ax, tl.abs(y), propagate_nan=tl.PropagateNan.ALL) > SQUARES_LARGE,
                     SQUARES_SCALE, 1.0)
    below = (1.0 - ax) * scale
    above = (1.0 + ax) * scale
    other = y * scale
    re = 0.25 * log1p(ax * scale * scale / (0.25 * (below * below + other * other)))
    im = 0.5 * atan2(y * scale * scale, 0.5 * (below * above - other * other))
    return tl.where(sign_bit(x), neg(re), re), im


@triton.jit
def catan(x, y):
    # atan z = -i atanh(iz)
    atanh_re, atanh_im = catanh(neg(y), x)
    return atanh_im, neg(atanh_re)


@triton.jit
def casinh(x, y):
    # asinh z = -i asin(iz)
    asin_re, asin_im = casin(neg(y), x)
    return asin_im, neg(asin_re)
