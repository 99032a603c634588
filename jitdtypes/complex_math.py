"""Complex arithmetic on planar parts: each function takes and returns (re, im) pairs of real tensors.

One library with kernels_templates/complex_math.py and complex_inverse.py, the same formulas as Triton functions
(cexp there is exp here, and so on; tests/test_complex_math_parity.py runs both on the same values): the same
branches, cut-offs, scaling and special-value rules. What differs is the real functions underneath, each side
taking what is fast and accurate where it runs: here torch's sin, cos, atan2 and hypot, and expm1 and log1p
written from exp and log (below); there polynomials. Special values follow C99's Annex G as glibc computes them,
which is what c10::complex and so eager's complex64 kernels give, except where a docstring names eager's own.

`im` may be None for a real operand (a float tensor or Python number next to a complex one), which keeps
mixed real/complex arithmetic as cheap as real arithmetic. The functions run in float32 inside fused kernels,
as `torch.where` on the rare inputs that need a case of their own, so that a chain stays one kernel.
"""

from __future__ import annotations

import math

import torch

_LN2 = math.log(2.0)
_INV_LN2, _INV_LN10 = 1.0 / math.log(2.0), 1.0 / math.log(10.0)
# Parts above this are scaled by 1/4 where a formula adds two of them or their products (|x| + |z|, |z| itself,
# the products of two roots in the inverse functions).
HUGE = 1e38
# tanh z is sign(x) + 4i sin y cos y e^-2|x| to float32 precision past |x| = 9.1, where 2 e^-2|x| is below half
# an ulp of 1 (2^-25).
TANH_LARGE = 9.1
# atanh's squares past 2^60 (whose squares' sum could overflow) are taken of values scaled by 2^-66.
SQUARES_LARGE, SQUARES_SCALE = 2.0**60, 2.0**-66
# sinh and cosh past |x| = 88 (e^88 < 3.4e38 < e^89): e^|x| / 2 applied in two halves of e^(|x| / 2), so that
# sinh(x) cos(y) stays finite where e^|x| overflows.
SINH_LARGE = 88.0
# The same two cut-offs where float64 parts (complex128) reach them: 2 e^-2|x| below half an ulp of 1 (2^-54),
# e^709 < 1.8e308 < e^710. The Triton library has float32 parts only.
TANH_LARGE_FLOAT64, SINH_LARGE_FLOAT64 = 19.1, 709.0


def _cut_off(t: torch.Tensor, for_float32: float, for_float64: float) -> float:
    return for_float64 if t.dtype == torch.float64 else for_float32


def imag_or_zero(im):
    """The imaginary part, 0 for a real operand."""
    return 0.0 if im is None else im


def is_inf(t: torch.Tensor) -> torch.Tensor:
    """t.isinf(), as Inductor's C++ backend vectorizes it: its isinf is a scalar std::isinf loop inside vector
    code, a compare of |t| is one vector op."""
    return t.abs() == math.inf


def is_finite(t: torch.Tensor) -> torch.Tensor:
    """t.isfinite() in two vector ops (t - t is 0 exactly for finite t, NaN for inf and NaN): Inductor's C++
    backend builds isfinite from isnan and an isinf compare, five ops."""
    return (t - t) == 0


def _tensor(value, like: torch.Tensor) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else torch.full_like(like, value)


# -- arithmetic -----------------------------------------------------------------------------------------------


def add(x, y, alpha=1):
    if alpha != 1:
        y = mul(y, (alpha.real, alpha.imag) if isinstance(alpha, complex) else (alpha, None))
    (a, b), (c, d) = x, y
    return a + c, (b if d is None else d if b is None else b + d)


def neg(x):
    a, b = x
    return -a, (None if b is None else -b)


def conj(x):
    a, b = x
    return a, (None if b is None else -b)


def mul(x, y):
    """The textbook product, as c10::complex and eager compute it: Annex G's recovery of infinities from
    inf * 0 = NaN terms (C's _Cmulsc3) is not done."""
    (a, b), (c, d) = x, y
    if b is None and d is None:
        return a * c, None
    if b is None:
        return a * c, a * d
    if d is None:
        return a * c, b * c
    return a * c - b * d, a * d + b * c


def _smith(a, b, c, d):
    """(a + bi) / (c + di) by Smith's algorithm, c10::complex's branches with the operands chosen first: divide
    through by the larger part of the divisor, so no square is formed; each step runs once instead of once per
    branch. A zero divisor gives a / |0| per part as in c10 (x * inf, without a division): 1 / (-0 + 0i) is
    inf + i NaN; a divisor below 3e-39, whose inverse overflows, gives inf or NaN, as in c10."""
    c_wins = c.abs() >= d.abs()
    larger, smaller = torch.where(c_wins, c, d), torch.where(c_wins, d, c)
    ratio = smaller / larger
    factor = 1.0 / (larger + smaller * ratio)
    # c wins: re (a + b r) f, im (b - a r) f; d wins: re (a r + b) f, im (b r - a) f
    u, v = torch.where(c_wins, a, b), torch.where(c_wins, b, a)
    u_ratio = u * ratio
    re = (u + v * ratio) * factor
    im = torch.where(c_wins, v - u_ratio, u_ratio - v) * factor
    zero = c_wins & (larger == 0)
    return torch.where(zero, a * math.inf, re), torch.where(zero, b * math.inf, im)


def div(x, y):
    """Smith's division (_smith), unscaled, as c10::complex and so complex64 divide: operands whose sums c + d r
    or a + b r pass 3.4e38 (bfloat16 parts can) give inf, NaN or 0 as they do in complex64. Scaling them first
    would cost every quotient of a compiled chain a compare, a select and four products for inputs that the
    16-bit results cannot hold anyway, and would part the compiled values from eager's."""
    (a, b), (c, d) = x, y
    if d is None:
        return a / c, (None if b is None else b / c)
    like = a if isinstance(a, torch.Tensor) else c if isinstance(c, torch.Tensor) else d
    a, b, c, d = (_tensor(v, like) for v in (a, imag_or_zero(b), c, d))
    return _smith(a, b, c, d)


def reciprocal(x):
    """1 / z: Smith's division of 1 + 0i, unscaled as in c10: where |z| passes 1.7e38 the result, below 6e-39,
    is 0 (as eager gives) rather than that subnormal."""
    a, b = x
    return _smith(torch.ones_like(a), torch.zeros_like(a), a, b)


# -- real functions, from those Inductor's C++ backend vectorizes fast on every torch -----------------------------
# On torch 2.14 (not 2.11) Inductor's C++ code runs float32 expm1 and log1p through Sleef calls many times slower
# than its exp and log, and sinh and cosh as scalar std::sinh/std::cosh loops. Written with exp, log and
# polynomials instead, they stay within 3 float32 ulps of the exact values, far below a 16-bit result's rounding.
# The Triton library has its own (polynomials there, where a log near 1 is not accurate on every target).


def real_expm1(x: torch.Tensor) -> torch.Tensor:
    """e^x - 1 without cancellation (Kahan): (u - 1) x / log u with u = e^x corrects the rounding of u."""
    u = torch.exp(x)
    u_minus_one = u - 1.0
    corrected = u_minus_one * (x / torch.log(u))  # the ratio first: (u - 1) x overflows before e^x does
    return torch.where(u == 1.0, x, torch.where(is_inf(u_minus_one) | (u_minus_one == -1.0), u_minus_one, corrected))


def real_log1p(x: torch.Tensor) -> torch.Tensor:
    """log(1 + x) without cancellation (Kahan): log(u) x / (u - 1) with u = 1 + x corrects the rounding of u."""
    u = 1.0 + x
    u_minus_one = u - 1.0
    log_u = torch.log(u)
    return torch.where(u_minus_one == 0, x, torch.where(is_inf(u) | (u == 0), log_u, log_u * (x / u_minus_one)))


def _sinh(t: torch.Tensor):
    """(sinh t, e^|t|, e^-|t|): (e^|t| - e^-|t|) / 2 signed like t, and below |t| = 1, where that cancels, the
    Taylor series to t^11 (the next term is under 2^-32 of it: a float32 series; float64 parts take torch's sinh,
    as complex128's kernels do)."""
    size = t.abs()
    e = torch.exp(size)
    inverse = 1.0 / e
    if t.dtype == torch.float64:
        return torch.sinh(t), e, inverse
    s = t * t
    series = t * (1.0 + s * (0.16666666666666666 + s * (0.008333333333333333 + s * (
        0.0001984126984126984 + s * (2.7557319223985893e-06 + s * 2.505210838544172e-08)))))
    return torch.where(size < 1.0, series, torch.copysign(0.5 * (e - inverse), t)), e, inverse


def _sinh_cosh_times(t, a, b):
    """(sinh(t) a, cosh(t) b), finite wherever the products are: past |t| = SINH_LARGE e^|t| / 2 is applied in
    two halves of e^(|t|/2)."""
    sinh_t, e, inverse = _sinh(t)
    half = torch.exp(0.5 * t.abs())
    large = t.abs() > _cut_off(t, SINH_LARGE, SINH_LARGE_FLOAT64)
    sinh_a = torch.where(large, (torch.copysign(torch.full_like(t, 0.5), t) * half * a) * half, sinh_t * a)
    cosh_b = torch.where(large, (0.5 * half * b) * half, 0.5 * (e + inverse) * b)
    return sinh_a, cosh_b


# -- exponentials, logarithms, roots, powers ----------------------------------------------------------------------


def exp(x):
    """e^x cis(y) with e^x applied in two halves of e^(x/2), so that e^x cos(y) stays finite where e^x alone
    overflows (x in 88.7 .. 89.4, or a small cos y). Annex G: exp of a real number is real (exp(inf + 0i) =
    inf + 0i), exp(+inf + i nonfinite) = inf + i NaN, exp(-inf + i nonfinite) = 0 + 0i."""
    a, b = x
    half = torch.exp(0.5 * a)
    re, im = (half * torch.cos(b)) * half, torch.where(b == 0, b, (half * torch.sin(b)) * half)
    infinite_re = is_inf(a) & ~is_finite(b)
    return (torch.where(infinite_re, half, re),
            torch.where(infinite_re, torch.where(a > 0, b - b, torch.zeros_like(b)), im))


def exp2(x):
    a, b = x
    return exp((a * _LN2, b * _LN2))


def expm1(x):
    """exp(z) - 1 without cancellation near 0: re = expm1(x) cos y - 2 sin^2(y/2), im = e^x sin y, c10::complex's
    formula. It has no real-axis case: expm1(inf + 0i) is inf + i NaN (inf * sin 0), and so it is here."""
    a, b = x
    half_sin = torch.sin(b * 0.5)
    return real_expm1(a) * torch.cos(b) - 2.0 * half_sin * half_sin, torch.exp(a) * torch.sin(b)


def _log_magnitude(a, b):
    """log|a + bi| without forming |z|^2: log m + log1p((n/m)^2) / 2 with m, n the larger and smaller part, and
    near |z| = 1, where that cancels, log1p((m - 1)(m + 1) + n^2) / 2 (exact products for 16-bit inputs): one
    log1p either way. log(inf + i NaN) = inf (Annex G): an infinite part makes m inf and the log1p term 0."""
    infinite = is_inf(a) | is_inf(b)
    big = torch.where(infinite, math.inf, torch.maximum(a.abs(), b.abs()))
    small = torch.minimum(a.abs(), b.abs())
    ratio = small / torch.where(big == 0, 1.0, big)
    near = (big > 0.5) & (big < 2.0)
    t = torch.where(near, (big - 1.0) * (big + 1.0) + small * small, torch.where(infinite, 0.0, ratio * ratio))
    return 0.5 * real_log1p(t) + torch.where(near, 0.0, torch.log(big))


def log(x):
    a, b = x
    return _log_magnitude(a, b), torch.atan2(b, a)


def log2(x):
    re, im = log(x)
    return re * _INV_LN2, im * _INV_LN2


def log10(x):
    re, im = log(x)
    return re * _INV_LN10, im * _INV_LN10


def log1p(x):
    """c10::complex's CPU log1p (numpy's), so that it gives eager's values: u = 1 + z; z where u == 1, else
    log(u) z / (u - 1), which undoes the rounding of 1 + z (the factor is 1 where u - 1 == z). Its division is
    c10's, unscaled. Eager's values include NaN where the exact result is not (log1p(1e-39 + inf i), and a
    divisor part below 3e-39, where 1 / (u - 1) overflows)."""
    a, b = x
    u_re = 1.0 + a
    shifted = u_re - 1.0
    log_u = log((u_re, b))
    quotient = _smith(a, b, shifted, b)
    corrected = mul(log_u, quotient)
    unchanged, exact = (u_re == 1.0) & (b == 0), (shifted == a) & (b == b)  # complex ==: NaN is unequal
    return tuple(torch.where(unchanged, part, torch.where(exact, log_part, corrected_part))
                 for part, log_part, corrected_part in zip((a, b), log_u, corrected))


def sqrt(x):
    """Kahan's: t = sqrt((|x| + |z|) / 2) never cancels and the other part is y / 2t; principal root with the
    branch cut on the negative reals, the sign of im kept (-4 - 0i -> -2i). Parts past HUGE are scaled by 1/4
    (sqrt z = 2 sqrt(z/4)) so that |x| + |z| stays finite. Annex G: sqrt(x + i inf) = inf + i inf for every x."""
    a, b = x
    big = torch.maximum(a.abs(), b.abs()) > HUGE
    scale = torch.where(big, 0.25, 1.0)
    c, d = a * scale, b * scale
    # Annex G's inf + i inf for an infinite y, whatever x, decided on t and y / 2t before they are combined
    infinite_im = is_inf(b)
    t = torch.where(infinite_im, math.inf, torch.sqrt(0.5 * (c.abs() + torch.hypot(c, d))))
    other = torch.where(infinite_im, d, d / (2.0 * torch.where(t == 0, 1.0, t)))
    negative = c < 0
    grow = torch.where(big, 2.0, 1.0)
    re = torch.where(negative, other.abs(), t) * grow
    im = torch.where(negative, torch.copysign(t, d), other) * grow
    return re, im


def rsqrt(x):
    return reciprocal(sqrt(x))


def pow_scalar(x, exponent):
    """z ** number with ATen's special cases (square, cube, sqrt, reciprocal ...), else exp(w log z)."""
    special = {
        1: lambda: x, 2: lambda: mul(x, x), 3: lambda: mul(mul(x, x), x), 0.5: lambda: sqrt(x),
        -0.5: lambda: rsqrt(x), -1: lambda: reciprocal(x), -2: lambda: reciprocal(mul(x, x)),
    }
    if not isinstance(exponent, complex) and exponent in special:
        return special[exponent]()
    if not isinstance(exponent, complex) and exponent == 0:
        return torch.ones_like(x[0]), torch.zeros_like(x[0])
    w = (exponent.real, exponent.imag) if isinstance(exponent, complex) else (exponent, None)
    return power(x, w)


def power(x, w):
    """z ** w = exp(w log z), and 0 ** w = 0 for Re w > 0 as C's cpow gives (exp(w log 0) is NaN there); 0 ** w
    for other w is what exp(w log 0) gives (0 ** 0 is NaN)."""
    a, b = x
    re, im = exp(mul(w, log(x)))
    zero = (a == 0) & (b == 0) & (w[0] > 0)
    return torch.where(zero, 0.0, re), torch.where(zero, 0.0, im)


# -- trigonometric and hyperbolic --------------------------------------------------------------------------------


# On the real axis (b == 0) the imaginary part is an exact zero: where() keeps inf * 0 from making it NaN.
# A non-finite imaginary part follows Annex G (glibc's csinhf, ccoshf, ctanhf, as c10::complex calls them):
# sinh(0 + i inf) = 0 + i NaN, cosh(inf + i NaN) = inf + i NaN ..., where the products give NaN for both
# parts. sin, cos and tan are sinh, cosh and tanh of iz, as in Annex G, so they meet the same special cases.


def sinh(x):
    a, b = x
    re, im = _sinh_cosh_times(a, torch.cos(b), torch.sin(b))
    im = torch.where(b == 0, b, im)
    nonfinite_im = ~is_finite(b)
    kept = torch.where(a == 0, a, torch.full_like(a, math.inf))  # the real part of sinh(0 or +-inf + i nonfinite)
    return torch.where(nonfinite_im & ((a == 0) | is_inf(a)), kept, re), im


def cosh(x):
    a, b = x
    im, re = _sinh_cosh_times(a, torch.sin(b), torch.cos(b))
    # cosh(-x + 0i) = cosh(x - 0i) (even, conj); for NaN x the zero keeps y's sign, as glibc's
    im = torch.where(b == 0, torch.where(torch.signbit(a) & (a == a), -b, b), im)
    nonfinite_im = ~is_finite(b)
    return (torch.where(nonfinite_im & is_inf(a), a.abs(), re),
            torch.where(nonfinite_im & (a == 0), torch.zeros_like(a), im))


def sin(x):
    # sin(z) = -i sinh(iz); glibc's csinf gives +inf as the imaginary part where sinh's sign rule would flip it
    a, b = x
    re, im = sinh((-b, a))
    return im, torch.where(is_inf(b) & ~is_finite(a), b.abs(), -re)


def cos(x):
    # cos(z) = cosh(iz)
    a, b = x
    return cosh((-b, a))


def tanh(x):
    """Kahan's formula, free of cancellation: with t = tan y, s = sinh x, rho = cosh x = sqrt(1 + s^2) and
    beta = 1 + t^2, tanh z = (beta rho s + i t) / (1 + beta s^2); past |x| = TANH_LARGE, where s^2 grows towards
    overflow, sign(x) + 4i sin y cos y e^-2|x|. Annex G: tanh(+-inf + iy) = +-1 + 0i for every y (the zero
    signed like sin 2y, or like y where that is not finite), tanh(finite + i nonfinite) is NaN + i NaN but for
    tanh(0 + i nonfinite) = 0 + i NaN, and the real axis keeps an exact zero (tanh(NaN + 0i) = NaN + 0i)."""
    a, b = x
    sin_b, cos_b = torch.sin(b), torch.cos(b)
    t = sin_b / cos_b
    beta = 1.0 + t * t
    s = _sinh(a)[0]
    denominator = 1.0 + beta * s * s
    large = a.abs() > _cut_off(a, TANH_LARGE, TANH_LARGE_FLOAT64)
    re = torch.where(large, torch.copysign(torch.ones_like(a), a),
                     beta * torch.sqrt(1.0 + s * s) * s / denominator)
    im = torch.where(large, 4.0 * sin_b * cos_b * torch.exp(-2.0 * a.abs()), t / denominator)
    finite_im = is_finite(b)
    re = torch.where(is_finite(a) & ~finite_im, torch.where(a == 0, a, b - b), re)
    im = torch.where(is_inf(a) & ~finite_im, torch.copysign(torch.zeros_like(b), b), im)
    return re, torch.where(b == 0, b, im)


def tan(x):
    # tan(z) = -i tanh(iz)
    a, b = x
    re, im = tanh((-b, a))
    return im, -re


def sigmoid(x):
    """1 / (1 + e^-z), ATen's formula, so that it gives eager's values: e^-z overflows for Re z < -88.7, where
    the result is NaN (the exact one is below 3e-39)."""
    a, b = x
    e_re, e_im = exp((-a, -b))
    return reciprocal((1.0 + e_re, e_im))


# -- real-valued -------------------------------------------------------------------------------------------------


def magnitude(x):
    a, b = x
    return torch.hypot(a, b)


def magnitude_of_half_parts(x):
    """|z| of a complex32 value: its parts are float16 numbers (|part| <= 65504), so in float32 a*a and b*b are
    exact and their sum cannot overflow or underflow, and the plain root is hypot to float32 rounding, without
    hypot's scaling, which Inductor's C++ backend runs as a scalar std::hypot loop. Parts computed in float32
    beyond float16's range give inf either way, as eager's rounding to float16 would; hypot(inf, nan) is inf
    (C99), kept."""
    a, b = x
    infinite = (a.abs() == math.inf) | (b.abs() == math.inf)
    return torch.where(infinite, math.inf, torch.sqrt(a * a + b * b))


def angle(x):
    a, b = x
    return torch.atan2(b, a)


def sgn(x):
    """z / |z|, and 0 at 0. On infinite parts eager itself differs by kernel: complex64's vectorized sgn divides
    each part by |z| (sgn(0 + i inf) = 0 + i NaN), its scalar sgn_impl divides by the complex |z| + 0i
    (NaN + i NaN); this is the vectorized one (docs/COMPILE.md)."""
    a, b = x
    scale = torch.where(torch.maximum(a.abs(), b.abs()) > HUGE, 0.25, 1.0)  # |z| may pass 3.4e38, |z / 4| not
    a, b = a * scale, b * scale
    size = torch.hypot(a, b)
    zero = size == 0
    safe = torch.where(zero, 1.0, size)
    return torch.where(zero, 0.0, a / safe), torch.where(zero, 0.0, b / safe)


def nonzero(x):
    a, b = x
    return (a != 0) | (b != 0)


# -- inverse trigonometric and hyperbolic -------------------------------------------------------------------------
# After Kahan, "Branch cuts for complex elementary functions" (1987): written with s1 = sqrt(1 + z) and
# s2 = sqrt(1 - z) (sqrt(z - 1), sqrt(z + 1) for acosh), each accurate and never cancelling, they keep full
# relative accuracy near the branch points and put the cuts where C99 does, on the side given by the sign of a
# zero imaginary part. 1 - z negates y (not 0 - y) to keep that sign. Past HUGE the products of two roots would
# overflow (they grow like |z|): the roots are taken of (1 +- z) / 4, half the roots, the atan2 arguments scaled
# alike, and asinh of the quarter products is asinh of the products less 2 log 2 (they are past 2^12 there).
# Infinite and NaN parts propagate through the formulas, which do not single out Annex G's cases for these.


def real_asinh(v: torch.Tensor, log_scale=0.0) -> torch.Tensor:
    """asinh(v e^log_scale), for log_scale 0 or |v| past 2^12: log1p(a + a^2 / (1 + sqrt(1 + a^2))) equals
    log(a + sqrt(1 + a^2)) without its cancellation for small a; past 2^12 the 1 no longer counts and a^2 may
    overflow: log(2a)."""
    a = v.abs()
    r = torch.where(a > 4096.0, torch.log(a) + (_LN2 + log_scale),
                    real_log1p(a + a * a / (1.0 + torch.sqrt(1.0 + a * a))))
    return torch.where(torch.signbit(v), -r, r)


def _root_scale(a, b):
    """(1/4 where a part passes HUGE else 1, the log of its inverse square: what asinh of quarter products adds)."""
    big = torch.maximum(a.abs(), b.abs()) > HUGE
    return torch.where(big, 0.25, 1.0), torch.where(big, 2.0 * _LN2, 0.0)


def asin(x):
    # asin z = atan2(x, Re(s2 s1)) + i asinh(Im(conj(s2) s1))
    a, b = x
    scale, log_scale = _root_scale(a, b)
    s1_re, s1_im = sqrt(((1.0 + a) * scale, b * scale))
    s2_re, s2_im = sqrt(((1.0 - a) * scale, -b * scale))
    return (torch.atan2(a * scale, s2_re * s1_re - s2_im * s1_im),
            real_asinh(s2_re * s1_im - s2_im * s1_re, log_scale))


def acos(x):
    # acos z = 2 atan2(Re s2, Re s1) + i asinh(Im(conj(s1) s2))
    a, b = x
    scale, log_scale = _root_scale(a, b)
    s1_re, s1_im = sqrt(((1.0 + a) * scale, b * scale))
    s2_re, s2_im = sqrt(((1.0 - a) * scale, -b * scale))
    return 2.0 * torch.atan2(s2_re, s1_re), real_asinh(s1_re * s2_im - s1_im * s2_re, log_scale)


def acosh(x):
    # acosh z = asinh(Re(conj(s1) s2)) + 2i atan2(Im s1, Re s2), s1 = sqrt(z - 1), s2 = sqrt(z + 1)
    a, b = x
    scale, log_scale = _root_scale(a, b)
    s1_re, s1_im = sqrt(((a - 1.0) * scale, b * scale))
    s2_re, s2_im = sqrt(((a + 1.0) * scale, b * scale))
    return real_asinh(s1_re * s2_re + s1_im * s2_im, log_scale), 2.0 * torch.atan2(s1_im, s2_re)


def atanh(x):
    """atanh z = 1/4 log1p(4x / ((1 - x)^2 + y^2)) + i/2 atan2(2y, (1 - x)(1 + x) - y^2): the factors are exact
    for 16-bit inputs near z = +-1. Evaluated at |x| and made odd, so z = -1 gives -inf rather than log1p(-inf);
    dividing the denominators instead of doubling x and y keeps them finite. Past SQUARES_LARGE the squares
    would overflow: (1 - x) and y enter them scaled by SQUARES_SCALE, the numerators by its square."""
    a, b = x
    size = a.abs()
    scale = torch.where(torch.maximum(size, b.abs()) > SQUARES_LARGE, SQUARES_SCALE, 1.0)
    below, above, other = (1.0 - size) * scale, (1.0 + size) * scale, b * scale
    re = 0.25 * real_log1p(size * scale * scale / (0.25 * (below * below + other * other)))
    im = 0.5 * torch.atan2(b * scale * scale, 0.5 * (below * above - other * other))
    return torch.where(torch.signbit(a), -re, re), im


def atan(x):
    # atan z = -i atanh(iz)
    a, b = x
    re, im = atanh((-b, a))
    return im, -re


def asinh(x):
    # asinh z = -i asin(iz)
    a, b = x
    re, im = asin((-b, a))
    return im, -re
