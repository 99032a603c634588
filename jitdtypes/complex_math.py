"""Complex arithmetic on planar parts: each function takes and returns (re, im) pairs of real tensors.

`im` may be None for a real operand (a float tensor or Python number next to a complex one), which keeps
mixed real/complex arithmetic as cheap as real arithmetic. The formulas follow c10::complex and libstdc++
(ATen's complex64 kernels, which eager jitdtypes rounds from), including their special cases where a naive
formula would overflow or turn an exact zero into NaN; they run in float32 inside fused kernels.
"""

from __future__ import annotations

import math

import torch

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_LN2_HIGH = 2839 / 4096  # ln 2 to 12 bits
_EXP_OF_MINUS_LN2_LOW = math.exp(_LN2_HIGH - _LN2)


def imag_or_zero(im):
    """The imaginary part, 0 for a real operand."""
    return 0.0 if im is None else im


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
    (a, b), (c, d) = x, y
    if b is None and d is None:
        return a * c, None
    if b is None:
        return a * c, a * d
    if d is None:
        return a * c, b * c
    return a * c - b * d, a * d + b * c


def div(x, y):
    """c10::complex division: Smith's scaling (no overflow from |y|^2), and x/0 gives inf or NaN per part.

    Bit for bit c10's two branches, but the operands are chosen before the arithmetic, so each step runs once
    instead of once per branch (two divisions fewer; a bcomplex32 exp/div chain over 256x4096 elements 6%
    faster), and x/0 is x * inf, which c10's x / |0| is, without a division."""
    (a, b), (c, d) = x, y
    if d is None:
        return a / c, (None if b is None else b / c)
    like = a if isinstance(a, torch.Tensor) else c if isinstance(c, torch.Tensor) else d
    a, b, c, d = (_tensor(v, like) for v in (a, imag_or_zero(b), c, d))
    c_wins = c.abs() >= d.abs()
    larger, smaller = torch.where(c_wins, c, d), torch.where(c_wins, d, c)
    ratio = smaller / larger
    scale = 1.0 / (larger + smaller * ratio)
    # c wins: re (a + b r) s, im (b - a r) s; d wins: re (a r + b) s, im (b r - a) s
    u, v = torch.where(c_wins, a, b), torch.where(c_wins, b, a)
    u_ratio = u * ratio
    re = (u + v * ratio) * scale
    im = torch.where(c_wins, v - u_ratio, u_ratio - v) * scale
    both_zero = (c == 0) & (d == 0)  # c10 divides by |c| and |d| there: 1 / (-0 + 0i) is inf + i NaN
    return torch.where(both_zero, a * math.inf, re), torch.where(both_zero, b * math.inf, im)


def is_inf(t: torch.Tensor) -> torch.Tensor:
    """t.isinf(), as Inductor's C++ backend vectorizes it: its isinf is a scalar std::isinf loop inside vector
    code (about a fifth of an exp/div chain's kernel time, 256x4096 complex32), a compare of |t| is one vector op."""
    return t.abs() == math.inf


def is_finite(t: torch.Tensor) -> torch.Tensor:
    """t.isfinite() in two vector ops (t - t is 0 exactly for finite t, NaN for inf and NaN): Inductor's C++
    backend builds isfinite from isnan and an isinf compare, five ops."""
    return (t - t) == 0


def _tensor(value, like: torch.Tensor) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else torch.full_like(like, value)


def reciprocal(x):
    a, b = x
    return div((torch.ones_like(a), None), (a, b))


# -- real functions, from those Inductor's C++ backend vectorizes fast on every torch -----------------------------
# On torch 2.14 (not 2.11) Inductor's C++ code runs float32 expm1 and log1p through Sleef calls about 40x slower
# than its exp and log (1M elements on 2 cores: expm1 5.7 ms, log1p 5.2 ms, exp 0.12 ms, log 0.17 ms; 2.11:
# 0.13 and 0.27 ms), and sinh and cosh as scalar std::sinh/std::cosh loops (9.0 and 3.9 ms; 2.11: 0.46, 0.44 ms).
# Written with exp, log and polynomials instead, they stay within 3 float32 ulps of the exact values, far below a
# 16-bit result's rounding.


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


def real_sinh_cosh(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(sinh a, cosh a): e^|a|/2 is e^(|a| - ln 2) past |a| = 88, where e^|a| overflows float32 and cosh does not
    yet (up to 89.4); below |a| = 1 sinh is its Taylor series to a^11 (the next term is under 2^-32 of it), free
    of the cancellation in e^|a|/2 - e^-|a|/2; a zero keeps its sign."""
    size = a.abs()
    # e^|a| / 2; past 88 as e^(|a| - ln 2): |a| minus ln 2's leading 12 bits is exact, the rest a factor
    half_exp = torch.where(size < 88.0, 0.5 * torch.exp(size), torch.exp(size - _LN2_HIGH) * _EXP_OF_MINUS_LN2_LOW)
    half_exp_of_minus = 0.25 / half_exp  # e^-|a| / 2
    square = a * a
    series = a * (1.0 + square * (1 / 6 + square * (1 / 120 + square * (1 / 5040 + square * (1 / 362880
                                                                                        + square / 39916800)))))
    sinh_of_size = half_exp - half_exp_of_minus
    sinh = torch.where(size < 1.0, series, torch.where(a < 0, -sinh_of_size, sinh_of_size))
    return sinh, half_exp + half_exp_of_minus


# -- exponentials and logarithms ------------------------------------------------------------------------------


def exp(x):
    a, b = x
    scale = torch.exp(a)
    re, im = scale * torch.cos(b), torch.where(b == 0, b, scale * torch.sin(b))  # exp(inf + 0i) = inf + 0i
    # Annex G (glibc's cexpf): exp(+inf + i nonfinite) = inf + i NaN, exp(-inf + i nonfinite) = 0 + 0i, not NaN
    infinite_re = is_inf(a) & ~is_finite(b)
    return (torch.where(infinite_re, scale, re),
            torch.where(infinite_re, torch.where(a > 0, b - b, torch.zeros_like(b)), im))


def exp2(x):
    a, b = x
    return exp((a * _LN2, b * _LN2))


def expm1(x):
    """exp(z) - 1 without cancellation near 0: re = expm1(a) cos b - 2 sin^2(b/2). c10::complex's expm1 has no
    real-axis special case: expm1(inf + 0i) is inf + i NaN there (inf * sin 0), and so it is here."""
    a, b = x
    half_sin = torch.sin(b * 0.5)
    re = real_expm1(a) * torch.cos(b) - 2.0 * half_sin * half_sin
    return re, torch.exp(a) * torch.sin(b)


def log(x):
    a, b = x
    size = torch.hypot(a, b)
    # |z| past float32's range (bfloat16 parts near 3e38): log |z/2| + log 2, as clogf scales
    overflows = is_inf(size) & is_finite(a) & is_finite(b)
    re = torch.where(overflows, torch.log(torch.hypot(a * 0.5, b * 0.5)) + _LN2, torch.log(size))
    # near |z| = 1, log |z| = log1p(x^2 + y^2 - 1) / 2 with x >= y, as clogf: log(1 + 1e-7i) is 5e-15, not 0
    big, small = torch.maximum(a.abs(), b.abs()), torch.minimum(a.abs(), b.abs())
    near_one = (size > 0.5) & (size < 2.0)
    re = torch.where(near_one, 0.5 * real_log1p((big - 1.0) * (big + 1.0) + small * small), re)
    return re, torch.atan2(b, a)


def log2(x):
    re, im = log(x)
    return re / _LN2, im / _LN2


def log10(x):
    re, im = log(x)
    return re / _LN10, im / _LN10


def log1p(x):
    """c10::complex's CPU log1p (numpy's): u = 1 + z; z where u == 1, else log(u) * z / (u - 1), which undoes
    the rounding of 1 + z (the factor is 1 where u - 1 == z)."""
    a, b = x
    u_re = 1.0 + a
    shifted = u_re - 1.0
    log_u = log((u_re, b))
    corrected = mul(log_u, div((a, b), (shifted, b)))
    unchanged, exact = (u_re == 1.0) & (b == 0), (shifted == a) & (b == b)  # complex ==: NaN is unequal
    return tuple(torch.where(unchanged, part, torch.where(exact, log_part, corrected_part))
                 for part, log_part, corrected_part in zip((a, b), log_u, corrected))


def sqrt(x):
    """Principal square root with the branch cut on the negative reals, the sign of im kept (-4 - 0i -> -2i)."""
    a, b = x
    t = torch.sqrt(0.5 * a.abs() + 0.5 * torch.hypot(a, b))
    # (|a| + |z|) / 2 past float32's range (bfloat16 parts near 3e38): sqrt(2) sqrt((|a| + |z|) / 4)
    overflows = is_inf(t) & is_finite(a) & is_finite(b)
    t = torch.where(overflows, math.sqrt(2.0) * torch.sqrt(0.25 * a.abs() + torch.hypot(a * 0.25, b * 0.25)), t)
    safe_t = torch.where(t == 0, torch.ones_like(t), t)
    right_half = a >= 0
    re = torch.where(right_half, t, b.abs() / (2.0 * safe_t))
    im = torch.where(right_half, b / (2.0 * safe_t), torch.copysign(t, b))
    re, im = torch.where(t == 0, t, re), torch.where(t == 0, b, im)
    # sqrt(x + i inf) = inf + i inf for every x, NaN included (Annex G; b / 2t would be inf / inf)
    infinite_im = is_inf(b)
    return torch.where(infinite_im, b.abs(), re), torch.where(infinite_im, b, im)


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
    """z ** w = exp(w log z); 0 ** w is 0 (libstdc++'s pow for complex operands)."""
    a, b = x
    re, im = exp(mul(w, log(x)))
    zero = (a == 0) & (b == 0)
    return torch.where(zero, torch.zeros_like(re), re), torch.where(zero, torch.zeros_like(im), im)


# -- trigonometric and hyperbolic --------------------------------------------------------------------------------


# On the real axis (b == 0) the imaginary part is an exact zero: where() keeps inf * 0 from making it NaN.
# A non-finite imaginary part follows Annex G (glibc's csinhf, ccoshf, ctanhf, as c10::complex calls them):
# sinh(0 + i inf) = 0 + i NaN, cosh(inf + i NaN) = inf + i NaN ..., where the products give NaN for both
# parts. sin, cos and tan are sinh, cosh and tanh of iz, as in Annex G, so they meet the same special cases.


def sinh(x):
    a, b = x
    sinh_a, cosh_a = real_sinh_cosh(a)
    re, im = sinh_a * torch.cos(b), torch.where(b == 0, b, cosh_a * torch.sin(b))
    nonfinite_im = ~is_finite(b)
    kept = torch.where(a == 0, a, torch.full_like(a, math.inf))  # the real part of sinh(0 or +-inf + i nonfinite)
    return torch.where(nonfinite_im & ((a == 0) | is_inf(a)), kept, re), im


def cosh(x):
    a, b = x
    sinh_a, cosh_a = real_sinh_cosh(a)
    re, im = cosh_a * torch.cos(b), torch.where(b == 0, b, sinh_a * torch.sin(b))
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
    """Kahan's formula, with the |re| > 20 limit (where cosh overflows) taken separately."""
    a, b = x
    t = torch.tan(b)
    beta = 1.0 + t * t
    s = real_sinh_cosh(a)[0]
    rho = torch.sqrt(1.0 + s * s)
    denominator = 1.0 + beta * s * s
    large = a.abs() > 20.0
    re = torch.where(large, torch.sign(a), beta * rho * s / denominator)
    im = torch.where(large, 4.0 * torch.sin(b) * torch.cos(b) * torch.exp(-2.0 * a.abs()), t / denominator)
    # Annex G: tanh(+-inf + iy) = +-1 + 0i for every y, tanh(finite + i nonfinite) is NaN + i NaN but for
    # tanh(0 + i nonfinite) = 0 + i NaN, and the real axis keeps an exact zero (tanh(NaN + 0i) = NaN + 0i)
    finite_re_nonfinite_im = is_finite(a) & ~is_finite(b)
    re = torch.where(finite_re_nonfinite_im, torch.where(a == 0, a, b - b), re)
    return re, torch.where(b == 0, b, torch.where(is_inf(a), torch.zeros_like(b), im))


def tan(x):
    # tan(z) = -i tanh(iz)
    a, b = x
    re, im = tanh((-b, a))
    return im, -re


def sigmoid(x):
    a, b = x
    e_re, e_im = exp((-a, -b))
    return reciprocal((1.0 + e_re, e_im))


# -- real-valued -------------------------------------------------------------------------------------------------


def magnitude(x):
    a, b = x
    return torch.hypot(a, b)


def magnitude_of_half_parts(x):
    """|z| of a complex32 value: its parts are float16 numbers (|part| <= 65504), so in float32 a*a and b*b are
    exact and their sum cannot overflow or underflow, and the plain root is hypot to float32 rounding. hypot's
    scaling is what costs: Inductor's scalar C++ for a complex32 abs over 1M elements took 2.1 ms with
    std::hypot, 0.82 ms with the root. Parts computed in float32 beyond float16's range give inf either way, as
    eager's rounding to float16 would; hypot(inf, nan) is inf (C99), kept."""
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
    size = torch.hypot(a, b)
    safe = torch.where(size == 0, torch.ones_like(size), size)
    return torch.where(size == 0, a, a / safe), torch.where(size == 0, b, b / safe)


def nonzero(x):
    a, b = x
    return (a != 0) | (b != 0)
