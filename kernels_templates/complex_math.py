"""fp32 complex math for Triton kernels: @triton.jit functions on (re, im) parts that rendered elementwise modules
import by name (`from kernels_templates.complex_math import cexp`). Inverse functions are in complex_inverse.py.

One library with jitdtypes/complex_math.py, the torch-level formulas of the compile path: each function here is
the one there of the same name without the c (cexp is exp, hypot is magnitude, atan2 is angle), with the same
branches, cut-offs (the constants are that module's), scaling and special-value rules (C99's Annex G as glibc
computes them, which is what c10::complex and eager give); tests/test_complex_math_parity.py runs both on the same
values. The real functions underneath differ: here sin and cos, atan2, hypot, expm1 and log1p are polynomials and
scaled formulas of our own (libdevice's sin and cos put huge arguments through fp64 and local memory; a log near 1
is not accurate on every target), there torch's.

Maxima and minima whose value reaches a result propagate NaN (tl.PropagateNan.ALL), as torch.maximum does: the
default, like fmax, drops it, and |nan + 1i| must not be 1.
"""

import triton
import triton.language as tl

from jitdtypes import complex_math as _torch_level

__all__ = [
    "neg", "sign_bit", "to_bf16", "hypot", "atan2", "log1p", "expm1", "sincos",
    "cmul", "cdiv", "creciprocal", "cexp", "cexpm1", "clog", "clog1p", "csqrt", "cpow",
    "csin", "ccos", "ctan", "csinh", "ccosh", "ctanh", "csigmoid", "csgn",
]

HUGE = tl.constexpr(_torch_level.HUGE)
TANH_LARGE = tl.constexpr(_torch_level.TANH_LARGE)
SQUARES_LARGE = tl.constexpr(_torch_level.SQUARES_LARGE)
SQUARES_SCALE = tl.constexpr(_torch_level.SQUARES_SCALE)
SINH_LARGE = tl.constexpr(_torch_level.SINH_LARGE)


# -- real helpers --------------------------------------------------------------------------------------------

@triton.jit
def neg(v):
    # -v with the sign of zero flipped too, wherever that sign can reach a result (branch cuts, conj, odd
    # functions at 0): Triton before 3.8 compiles unary minus on floats as 0 - v, which is +0 for either zero.
    return v * -1.0


@triton.jit
def sign_bit(v):
    # True for -0.0 too: branch cuts and atan2 follow the sign of zero.
    return v.to(tl.int32, bitcast=True) < 0


@triton.jit
def _is_inf(v):
    return tl.abs(v) == float("inf")


@triton.jit
def _is_finite(v):
    # v - v is 0 for finite v, NaN for inf and NaN
    return (v - v) == 0.0


@triton.jit
def to_bf16(v):
    # Round to nearest even by hand: Triton's interpreter truncates fp32 -> bf16 casts.
    bits = v.to(tl.uint32, bitcast=True)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)
    half = tl.where(v != v, 0x7FC0, bits >> 16).to(tl.uint16)
    return half.to(tl.bfloat16, bitcast=True)


# tl.maximum / tl.minimum default to maxnum semantics, which drop a NaN; these keep it (reductions use them too)
@triton.jit
def nan_maximum(x, y):
    return tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def nan_minimum(x, y):
    return tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def hypot(x, y):
    # max * sqrt(1 + (min/max)^2): the squares can neither overflow nor underflow. hypot(inf, nan) = inf (C99),
    # decided before the formula so that nothing waits for its end.
    ax = tl.abs(x)
    ay = tl.abs(y)
    infinite = (ax == float("inf")) | (ay == float("inf"))
    big = tl.where(infinite, float("inf"), nan_maximum(ax, ay))
    ratio = tl.where(infinite, 0.0, nan_minimum(ax, ay) / tl.where(big == 0.0, 1.0, big))
    return big * tl.sqrt(1.0 + ratio * ratio)


@triton.jit
def atan2(y, x):
    # atan of min/max in [0, 1], reduced to |u| <= tan(pi/8) for the Cephes atanf polynomial, then
    # unfolded by octant; the signs of zero pick the side of the cut as in C's atan2.
    ax = tl.abs(x)
    ay = tl.abs(y)
    big = tl.maximum(ax, ay)
    small = tl.minimum(ax, ay)
    t = tl.where(small == big, 1.0, small / tl.where(big == 0.0, 1.0, big))
    t = tl.where(big == 0.0, 0.0, t)
    reduced = t > 0.41421356237309503
    u = tl.where(reduced, (t - 1.0) / (t + 1.0), t)
    z = u * u
    p = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * u + u
    a = tl.where(reduced, 0.7853981633974483 + p, p)
    a = tl.where(ay > ax, 1.5707963267948966 - a, a)
    a = tl.where(sign_bit(x), 3.141592653589793 - a, a)
    a = tl.where(sign_bit(y), neg(a), a)
    return tl.where((x != x) | (y != y), x + y, a)


@triton.jit
def log1p(t):
    # log(1 + t) = 2 atanh(s), s = t / (2 + t), summed where 1 + t would lose t's low bits (t in -1/3 .. 1/2, where
    # |s| < 1/5 and the first omitted term is below 1e-8 of the sum); a polynomial rather than Kahan's
    # log(u) t / (u - 1) trick, which needs a log accurate near 1 on every target. 2s is t - t s, exact for
    # subnormal t.
    s = t / (2.0 + t)
    s2 = s * s
    series = (t - t * s) * (1.0 + s2 * (0.3333333333333333 + s2 * (0.2 + s2 * (
        0.14285714285714285 + s2 * 0.1111111111111111))))
    return tl.where((t > -0.3333333333333333) & (t < 0.5), series, tl.log(1.0 + t))


@triton.jit
def expm1(t):
    # Taylor series where exp(t) - 1 would cancel (|t| < 1/2; the first omitted term is below 3e-10).
    series = t * (1.0 + t * 0.5 * (1.0 + t * 0.3333333333333333 * (1.0 + t * 0.25 * (1.0 + t * 0.2 * (
        1.0 + t * 0.16666666666666666 * (1.0 + t * 0.14285714285714285 * (1.0 + t * 0.125 * (
            1.0 + t * 0.1111111111111111))))))))
    return tl.where(tl.abs(t) < 0.5, series, tl.exp(t) - 1.0)


@triton.jit
def _quarter_turns(a):
    # (k mod 4, r) with a = k pi/2 + r, |r| <= pi/4, for finite a >= 4, exactly (Payne-Hanek on integers): a is
    # m 2^(e - 158) with m its mantissa in 32 bits and e its biased exponent, 2/pi is T 2^-192 with T the 192-bit
    # integer whose 32-bit words multiply m below, so a * 2/pi = (m T) 2^(e - 350): the 64 bits of m T from bit
    # 288 - e up are k mod 4 and 62 bits of fraction.
    bits = a.to(tl.uint32, bitcast=True)
    e = (bits >> 23).to(tl.int32)
    m = ((bits << 8) | 0x80000000).to(tl.uint64)
    low32 = 0xFFFFFFFF
    product = m * 0x3C439041
    r0 = product & low32
    product = (product >> 32) + m * 0xDB629599
    r1 = product & low32
    product = (product >> 32) + m * 0xF534DDC0
    r2 = product & low32
    product = (product >> 32) + m * 0xFC2757D1
    r3 = product & low32
    product = (product >> 32) + m * 0x4E441529
    r4 = product & low32
    product = (product >> 32) + m * 0xA2F9836E
    r5 = product & low32
    r6 = product >> 32
    start = 288 - e
    word = tl.minimum(start >> 5, 4)
    shift = (start & 31).to(tl.uint64)
    lowest = tl.where(word == 1, r1, tl.where(word == 2, r2, tl.where(word == 3, r3, tl.where(word == 4, r4, r0))))
    middle = tl.where(word == 1, r2, tl.where(word == 2, r3, tl.where(word == 3, r4, tl.where(word == 4, r5, r1))))
    highest = tl.where(word == 1, r3, tl.where(word == 2, r4, tl.where(word == 3, r5, tl.where(word == 4, r6, r2))))
    window = ((middle << 32) | lowest) >> shift
    window = window | tl.where(shift == 0, 0, highest << ((64 - shift) & 63))
    quadrant = (window >> 62).to(tl.int32)
    fraction = window & 0x3FFFFFFFFFFFFFFF
    up = fraction >= 0x2000000000000000
    signed = fraction.to(tl.int64) - tl.where(up, 0x4000000000000000, 0)
    turns = ((signed >> 31).to(tl.float32) * 4.656612873077393e-10
             + (signed & 0x7FFFFFFF).to(tl.float32) * 2.168404344971009e-19)
    return tl.where(up, quadrant + 1, quadrant), turns * 1.5707963267948966


@triton.jit
def sincos(v):
    # (sin v, cos v) to a few fp32 ulps without libdevice, whose sin/cos compute huge arguments in fp64 with a
    # table in local memory (and made ptxas spill on the common path). a = |v| is reduced by k quarter turns: for
    # a <= 800 (k < 2^9) with pi/2 in three parts of 15 significant bits, so that every k * part is exact in fp32
    # without an FMA (the interpreter has none); past that, by _quarter_turns, which a block runs only when it
    # holds such an argument. Taylor polynomials on |r| <= pi/4 are within an fp32 ulp.
    a = tl.abs(v)
    k = tl.floor(a * 0.6366197723675814 + 0.5)
    r = ((a - k * 1.57080078125) + k * 4.454515874385834e-06) - k * 6.077272018956137e-11
    quadrant = k.to(tl.int32)
    if tl.max(a) > 800.0:
        huge_quadrant, huge_r = _quarter_turns(a)
        huge = a > 800.0
        quadrant = tl.where(huge, huge_quadrant, quadrant)
        r = tl.where(huge, huge_r, r)
    x = r * r
    s = r + r * x * (-0.16666666666666666 + x * (0.008333333333333333 + x * (-0.0001984126984126984 + x * (
        2.7557319223985893e-06))))
    c = 1.0 + x * (-0.5 + x * (0.041666666666666664 + x * (-0.001388888888888889 + x * (
        2.48015873015873e-05 - x * 2.755731922398589e-07))))
    odd = (quadrant & 1) != 0
    sin = tl.where(odd, c, s)
    cos = tl.where(odd, s, c)
    sin = tl.where((quadrant & 2) != 0, neg(sin), sin)
    cos = tl.where(((quadrant + 1) & 2) != 0, neg(cos), cos)
    finite = a < float("inf")
    return tl.where(finite, tl.where(sign_bit(v), neg(sin), sin), float("nan")), tl.where(finite, cos, float("nan"))


@triton.jit
def _sinh(t):
    # (sinh t, e^|t|, e^-|t|): (e^|t| - e^-|t|) / 2 signed like t, and below |t| = 1, where that cancels, the
    # Taylor series to t^11 (the next term is under 2^-32 of it).
    size = tl.abs(t)
    e = tl.exp(size)
    inverse = 1.0 / e
    s = t * t
    series = t * (1.0 + s * (0.16666666666666666 + s * (0.008333333333333333 + s * (
        0.0001984126984126984 + s * (2.7557319223985893e-06 + s * 2.505210838544172e-08)))))
    difference = 0.5 * (e - inverse)
    return tl.where(size < 1.0, series, tl.where(sign_bit(t), neg(difference), difference)), e, inverse


@triton.jit
def _sinh_cosh_times(t, a, b):
    # (sinh(t) a, cosh(t) b), finite wherever the products are: past |t| = SINH_LARGE e^|t| / 2 is applied in
    # two halves of e^(|t|/2).
    sinh_t, e, inverse = _sinh(t)
    half = tl.exp(0.5 * tl.abs(t))
    large = tl.abs(t) > SINH_LARGE
    sinh_a = tl.where(large, (tl.where(sign_bit(t), -0.5, 0.5) * half * a) * half, sinh_t * a)
    cosh_b = tl.where(large, (0.5 * half * b) * half, 0.5 * (e + inverse) * b)
    return sinh_a, cosh_b


# -- arithmetic -----------------------------------------------------------------------------------------------

@triton.jit
def cmul(ar, ai, br, bi):
    # The textbook product, as c10::complex and eager compute it: Annex G's recovery of infinities from
    # inf * 0 = NaN terms (C's _Cmulsc3) is not done.
    return ar * br - ai * bi, ar * bi + ai * br


@triton.jit
def _smith(a, b, c, d):
    # (a + bi) / (c + di) by Smith's algorithm, c10::complex's branches with the operands chosen first: divide
    # through by the larger part of the divisor, so no square is formed. A zero divisor gives a / |0| per part as in c10 (x * inf): 1 / (-0 + 0i) is inf + i NaN; a divisor below 3e-39,
    # whose inverse overflows, gives inf or NaN, as in c10.
    c_wins = tl.abs(c) >= tl.abs(d)
    larger = tl.where(c_wins, c, d)
    smaller = tl.where(c_wins, d, c)
    ratio = smaller / larger
    factor = 1.0 / (larger + smaller * ratio)
    # c wins: re (a + b r) f, im (b - a r) f; d wins: re (a r + b) f, im (b r - a) f
    u = tl.where(c_wins, a, b)
    v = tl.where(c_wins, b, a)
    u_ratio = u * ratio
    re = (u + v * ratio) * factor
    im = tl.where(c_wins, v - u_ratio, u_ratio - v) * factor
    zero = c_wins & (larger == 0.0)
    return tl.where(zero, a * float("inf"), re), tl.where(zero, b * float("inf"), im)


@triton.jit
def cdiv(ar, ai, br, bi):
    # Smith's division, unscaled as in c10::complex and complex64: sums past 3.4e38 (bf16 parts) give inf, NaN or
    # 0 as complex64's do (the torch-level div says why).
    return _smith(ar, ai, br, bi)


@triton.jit
def creciprocal(x, y):
    # 1 / z: Smith's division of 1 + 0i, unscaled as in c10: where |z| passes 1.7e38 the result, below 6e-39, is
    # 0 (as eager gives) rather than that subnormal.
    return _smith(1.0, 0.0, x, y)


# -- exponentials, logarithms, roots, powers --------------------------------------------------------------------

@triton.jit
def cexp(x, y):
    # e^x cis(y) with e^x applied in two halves of e^(x/2), so that e^x cos(y) stays finite where e^x alone
    # overflows. Annex G: exp of a real number is real (exp(inf + 0i) = inf + 0i), exp(+inf + i nonfinite) =
    # inf + i NaN, exp(-inf + i nonfinite) = 0 + 0i.
    half = tl.exp(0.5 * x)
    sin, cos = sincos(y)
    re = (half * cos) * half
    im = tl.where(y == 0.0, y, (half * sin) * half)
    infinite_re = _is_inf(x) & ~_is_finite(y)
    return tl.where(infinite_re, half, re), tl.where(infinite_re, tl.where(x > 0.0, y - y, 0.0), im)


@triton.jit
def cexpm1(x, y):
    # exp(z) - 1 without cancellation near 0: re = expm1(x) cos y - 2 sin^2(y/2), im = e^x sin y, c10::complex's
    # formula. It has no real-axis case: expm1(inf + 0i) is inf + i NaN (inf * sin 0), and so it is here.
    half_sin, _ = sincos(0.5 * y)
    sin_y, cos_y = sincos(y)
    return expm1(x) * cos_y - 2.0 * half_sin * half_sin, tl.exp(x) * sin_y


@triton.jit
def _log_magnitude(x, y):
    # log|x + iy| without forming |z|^2: log m + log1p((n/m)^2) / 2 with m, n the larger and smaller part, and
    # near |z| = 1, where that cancels, log1p((m - 1)(m + 1) + n^2) / 2 (exact products for 16-bit inputs): one
    # log1p either way. log(inf + i NaN) = inf (Annex G): an infinite part makes m inf and the log1p term 0.
    ax = tl.abs(x)
    ay = tl.abs(y)
    infinite = (ax == float("inf")) | (ay == float("inf"))
    big = tl.where(infinite, float("inf"), nan_maximum(ax, ay))
    small = nan_minimum(ax, ay)
    ratio = small / tl.where(big == 0.0, 1.0, big)
    far = tl.log(big) + 0.5 * log1p(tl.where(infinite, 0.0, ratio * ratio))
    near = 0.5 * log1p((big - 1.0) * (big + 1.0) + small * small)
    return tl.where((big > 0.5) & (big < 2.0), near, far)


@triton.jit
def clog(x, y):
    return _log_magnitude(x, y), atan2(y, x)


@triton.jit
def clog1p(x, y):
    # c10::complex's CPU log1p (numpy's), so that it gives eager's values: u = 1 + z; z where u == 1, else
    # log(u) z / (u - 1), which undoes the rounding of 1 + z (the factor is 1 where u - 1 == z). Its division is
    # c10's, unscaled.
    u_re = 1.0 + x
    shifted = u_re - 1.0
    log_re, log_im = clog(u_re, y)
    quotient_re, quotient_im = _smith(x, y, shifted, y)
    corrected_re, corrected_im = cmul(log_re, log_im, quotient_re, quotient_im)
    unchanged = (u_re == 1.0) & (y == 0.0)
    exact = (shifted == x) & (y == y)
    return (tl.where(unchanged, x, tl.where(exact, log_re, corrected_re)),
            tl.where(unchanged, y, tl.where(exact, log_im, corrected_im)))


@triton.jit
def csqrt(x, y):
    # Kahan's: t = sqrt((|x| + |z|) / 2) never cancels and the other part is y / 2t; the branch cut on the
    # negative reals, the sign of im kept (-4 - 0i -> -2i). Parts past HUGE are scaled by 1/4 (sqrt z =
    # 2 sqrt(z/4)) so that |x| + |z| stays finite. Annex G: sqrt(x + i inf) = inf + i inf for every x.
    big = nan_maximum(tl.abs(x), tl.abs(y)) > HUGE
    scale = tl.where(big, 0.25, 1.0)
    c = x * scale
    d = y * scale
    # Annex G's inf + i inf for an infinite y, whatever x, decided on t and y / 2t before they are combined
    infinite_im = _is_inf(y)
    t = tl.where(infinite_im, float("inf"), tl.sqrt(0.5 * (tl.abs(c) + hypot(c, d))))
    other = tl.where(infinite_im, d, d / (2.0 * tl.where(t == 0.0, 1.0, t)))
    negative = c < 0.0
    grow = tl.where(big, 2.0, 1.0)
    re = tl.where(negative, tl.abs(other), t) * grow
    im = tl.where(negative, tl.where(sign_bit(d), neg(t), t), other) * grow
    return re, im


@triton.jit
def cpow(x, y, wr, wi):
    # z^w = exp(w log z), and 0^w = 0 for Re w > 0 as C's cpow gives (exp(w log 0) is NaN there); 0^w for other
    # w is what exp(w log 0) gives (0^0 is NaN).
    log_re, log_im = clog(x, y)
    power_re, power_im = cmul(wr, wi, log_re, log_im)
    re, im = cexp(power_re, power_im)
    zero = (x == 0.0) & (y == 0.0) & (wr > 0.0)
    return tl.where(zero, 0.0, re), tl.where(zero, 0.0, im)


# -- trigonometric and hyperbolic -------------------------------------------------------------------------------
# On the real axis (y == 0) the imaginary part is an exact zero: where() keeps inf * 0 from making it NaN. A
# non-finite imaginary part follows Annex G (glibc's csinhf, ccoshf, ctanhf): sinh(0 + i inf) = 0 + i NaN,
# cosh(inf + i NaN) = inf + i NaN ..., where the products give NaN for both parts. sin, cos and tan are sinh,
# cosh and tanh of iz, as in Annex G, so they meet the same special cases.

@triton.jit
def csinh(x, y):
    sin_y, cos_y = sincos(y)
    re, im = _sinh_cosh_times(x, cos_y, sin_y)
    im = tl.where(y == 0.0, y, im)
    nonfinite_im = ~_is_finite(y)
    kept = tl.where(x == 0.0, x, float("inf"))  # the real part of sinh(0 or +-inf + i nonfinite)
    return tl.where(nonfinite_im & ((x == 0.0) | _is_inf(x)), kept, re), im


@triton.jit
def ccosh(x, y):
    sin_y, cos_y = sincos(y)
    im, re = _sinh_cosh_times(x, sin_y, cos_y)
    # cosh(-x + 0i) = cosh(x - 0i) (even, conj); for NaN x the zero keeps y's sign, as glibc's
    im = tl.where(y == 0.0, tl.where(sign_bit(x) & (x == x), neg(y), y), im)
    nonfinite_im = ~_is_finite(y)
    return (tl.where(nonfinite_im & _is_inf(x), tl.abs(x), re),
            tl.where(nonfinite_im & (x == 0.0), 0.0, im))


@triton.jit
def csin(x, y):
    # sin(z) = -i sinh(iz); glibc's csinf gives +inf as the imaginary part where sinh's sign rule would flip it
    re, im = csinh(neg(y), x)
    return im, tl.where(_is_inf(y) & ~_is_finite(x), tl.abs(y), neg(re))


@triton.jit
def ccos(x, y):
    # cos(z) = cosh(iz)
    return ccosh(neg(y), x)


@triton.jit
def ctanh(x, y):
    # Kahan's formula, free of cancellation: with t = tan y, s = sinh x, rho = cosh x = sqrt(1 + s^2) and
    # beta = 1 + t^2, tanh z = (beta rho s + i t) / (1 + beta s^2); past |x| = TANH_LARGE, where s^2 grows towards
    # overflow, sign(x) + 4i sin y cos y e^-2|x|. Annex G: tanh(+-inf + iy) = +-1 + 0i for every y (the zero
    # signed like sin 2y, or like y where that is not finite), tanh(finite + i nonfinite) is NaN + i NaN but for
    # tanh(0 + i nonfinite) = 0 + i NaN, and the real axis keeps an exact zero (tanh(NaN + 0i) = NaN + 0i).
    sin_y, cos_y = sincos(y)
    t = sin_y / cos_y
    beta = 1.0 + t * t
    s, _, _ = _sinh(x)
    den = 1.0 + beta * s * s
    large = tl.abs(x) > TANH_LARGE
    re = tl.where(large, tl.where(sign_bit(x), -1.0, 1.0), beta * tl.sqrt(1.0 + s * s) * s / den)
    im = tl.where(large, 4.0 * sin_y * cos_y * tl.exp(-2.0 * tl.abs(x)), t / den)
    finite_im = _is_finite(y)
    re = tl.where(_is_finite(x) & ~finite_im, tl.where(x == 0.0, x, y - y), re)
    zero = tl.zeros_like(y)  # a literal -0.0 would be +0
    im = tl.where(_is_inf(x) & ~finite_im, tl.where(sign_bit(y), neg(zero), zero), im)
    return re, tl.where(y == 0.0, y, im)


@triton.jit
def ctan(x, y):
    # tan(z) = -i tanh(iz)
    re, im = ctanh(neg(y), x)
    return im, neg(re)


@triton.jit
def csigmoid(x, y):
    # 1 / (1 + e^-z), ATen's formula, so that it gives eager's values: e^-z overflows for Re z < -88.7, where
    # the result is NaN (the exact one is below 3e-39).
    e_re, e_im = cexp(neg(x), neg(y))
    return creciprocal(1.0 + e_re, e_im)


@triton.jit
def csgn(x, y):
    # z / |z|, and 0 at 0; |z| may pass 3.4e38, |z / 4| not.
    scale = tl.where(nan_maximum(tl.abs(x), tl.abs(y)) > HUGE, 0.25, 1.0)
    x = x * scale
    y = y * scale
    size = hypot(x, y)
    zero = size == 0.0
    safe = tl.where(zero, 1.0, size)
    return tl.where(zero, 0.0, x / safe), tl.where(zero, 0.0, y / safe)
