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
    """c10::complex division: Smith's scaling (no overflow from |y|^2), and x/0 gives inf or NaN per part."""
    (a, b), (c, d) = x, y
    if d is None:
        return a / c, (None if b is None else b / c)
    like = a if isinstance(a, torch.Tensor) else c if isinstance(c, torch.Tensor) else d
    a, b, c, d = (_tensor(v, like) for v in (a, imag_or_zero(b), c, d))
    c_wins = c.abs() >= d.abs()
    ratio = torch.where(c_wins, d / c, c / d)
    scale = 1.0 / torch.where(c_wins, c + d * ratio, d + c * ratio)
    re = torch.where(c_wins, (a + b * ratio) * scale, (a * ratio + b) * scale)
    im = torch.where(c_wins, (b - a * ratio) * scale, (b * ratio - a) * scale)
    both_zero = (c == 0) & (d == 0)
    return torch.where(both_zero, a / c, re), torch.where(both_zero, b / d, im)


def _tensor(value, like: torch.Tensor) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else torch.full_like(like, value)


def reciprocal(x):
    a, b = x
    return div((torch.ones_like(a), None), (a, b))


# -- exponentials and logarithms ------------------------------------------------------------------------------


def exp(x):
    a, b = x
    scale = torch.exp(a)
    # exp(inf + 0i) is inf + 0i, not inf*sin(0) = NaN
    return scale * torch.cos(b), torch.where(b == 0, b, scale * torch.sin(b))


def exp2(x):
    a, b = x
    return exp((a * _LN2, b * _LN2))


def expm1(x):
    """exp(z) - 1 without cancellation near 0: re = expm1(a) cos b - 2 sin^2(b/2)."""
    a, b = x
    half_sin = torch.sin(b * 0.5)
    re = torch.expm1(a) * torch.cos(b) - 2.0 * half_sin * half_sin
    return re, torch.where(b == 0, b, torch.exp(a) * torch.sin(b))


def log(x):
    a, b = x
    return torch.log(torch.hypot(a, b)), torch.atan2(b, a)


def log2(x):
    re, im = log(x)
    return re / _LN2, im / _LN2


def log10(x):
    re, im = log(x)
    return re / _LN10, im / _LN10


def log1p(x):
    """log(1 + z); near 0 the real part is log1p(2a + a^2 + b^2) / 2, which keeps tiny |z| exact."""
    a, b = x
    near_zero = 0.5 * torch.log1p(a * (2.0 + a) + b * b)
    far = torch.log(torch.hypot(1.0 + a, b))
    return torch.where(torch.hypot(a, b) < 0.5, near_zero, far), torch.atan2(b, 1.0 + a)


def sqrt(x):
    """Principal square root with the branch cut on the negative reals, the sign of im kept (-4 - 0i -> -2i)."""
    a, b = x
    t = torch.sqrt(0.5 * a.abs() + 0.5 * torch.hypot(a, b))
    safe_t = torch.where(t == 0, torch.ones_like(t), t)
    right_half = a >= 0
    re = torch.where(right_half, t, b.abs() / (2.0 * safe_t))
    im = torch.where(right_half, b / (2.0 * safe_t), torch.copysign(t, b))
    return torch.where(t == 0, t, re), torch.where(t == 0, b, im)


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


def sin(x):
    a, b = x
    return torch.sin(a) * torch.cosh(b), torch.where(b == 0, b, torch.cos(a) * torch.sinh(b))


def cos(x):
    a, b = x
    return torch.cos(a) * torch.cosh(b), torch.where(b == 0, b, -torch.sin(a) * torch.sinh(b))


def sinh(x):
    a, b = x
    return torch.sinh(a) * torch.cos(b), torch.where(b == 0, b, torch.cosh(a) * torch.sin(b))


def cosh(x):
    a, b = x
    return torch.cosh(a) * torch.cos(b), torch.where(b == 0, b, torch.sinh(a) * torch.sin(b))


def tanh(x):
    """Kahan's formula, with the |re| > 20 limit (where cosh overflows) taken separately."""
    a, b = x
    t = torch.tan(b)
    beta = 1.0 + t * t
    s = torch.sinh(a)
    rho = torch.sqrt(1.0 + s * s)
    denominator = 1.0 + beta * s * s
    large = a.abs() > 20.0
    re = torch.where(large, torch.sign(a), beta * rho * s / denominator)
    im = torch.where(large, 4.0 * torch.sin(b) * torch.cos(b) * torch.exp(-2.0 * a.abs()), t / denominator)
    return re, im


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


def angle(x):
    a, b = x
    return torch.atan2(b, a)


def sgn(x):
    """z / |z|, and 0 at 0."""
    a, b = x
    size = torch.hypot(a, b)
    safe = torch.where(size == 0, torch.ones_like(size), size)
    return torch.where(size == 0, a, a / safe), torch.where(size == 0, b, b / safe)


def nonzero(x):
    a, b = x
    return (a != 0) | (b != 0)
