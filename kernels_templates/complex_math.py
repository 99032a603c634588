"""fp32 complex math for Triton kernels, as the source of @triton.jit helpers that rendered modules include.

A module includes only the helpers its kernel reaches (elementwise.jit_helpers). Maxima and minima whose value
reaches a result propagate NaN (tl.PropagateNan.ALL): the default, like fmax, drops it, and |nan + 1i| must not
be 1.
"""


MATH = {
    "_neg": '''
@triton.jit
def _neg(v):
    # -v with the sign of zero flipped too, wherever that sign can reach a result (branch cuts, conj, odd
    # functions at 0): Triton before 3.8 compiles unary minus on floats as 0 - v, which is +0 for either zero.
    return v * -1.0
''',
    "_sign_bit": '''
@triton.jit
def _sign_bit(v):
    # True for -0.0 too: branch cuts and atan2 follow the sign of zero.
    return v.to(tl.int32, bitcast=True) < 0
''',
    "_to_bf16": '''
@triton.jit
def _to_bf16(v):
    # Round to nearest even by hand: Triton's interpreter truncates fp32 -> bf16 casts.
    bits = v.to(tl.uint32, bitcast=True)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)
    half = tl.where(v != v, 0x7FC0, bits >> 16).to(tl.uint16)
    return half.to(tl.bfloat16, bitcast=True)
''',
    "_magnitudes": '''
@triton.jit
def _magnitudes(x, y):
    # (max, min, min/max) of |x| and |y|, NaN kept: scaling by the larger part keeps squares in range.
    ax = tl.abs(x)
    ay = tl.abs(y)
    big = tl.maximum(ax, ay, propagate_nan=tl.PropagateNan.ALL)
    small = tl.minimum(ax, ay, propagate_nan=tl.PropagateNan.ALL)
    return big, small, small / tl.where(big == 0.0, 1.0, big)
''',
    "_hypot": '''
@triton.jit
def _hypot(x, y):
    # max * sqrt(1 + (min/max)^2): the squares can neither overflow nor underflow.
    big, _, ratio = _magnitudes(x, y)
    return tl.where(big == float("inf"), big, big * tl.sqrt(1.0 + ratio * ratio))
''',
    "_atan2": '''
@triton.jit
def _atan2(y, x):
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
    a = tl.where(_sign_bit(x), 3.141592653589793 - a, a)
    a = tl.where(_sign_bit(y), _neg(a), a)
    return tl.where((x != x) | (y != y), x + y, a)
''',
    "_log1p": '''
@triton.jit
def _log1p(t):
    # log(1 + t) = 2 atanh(s), s = t / (2 + t), summed where 1 + t would lose t's low bits; a polynomial
    # rather than Kahan's log(u) * t / (u - 1) trick, which needs a log accurate near 1 on every target.
    s = t / (2.0 + t)
    s2 = s * s
    series = 2.0 * s * (1.0 + s2 * (0.3333333333333333 + s2 * (0.2 + s2 * (
        0.14285714285714285 + s2 * 0.1111111111111111))))
    return tl.where(tl.abs(t) < 0.25, series, tl.log(1.0 + t))
''',
    "_log_abs": '''
@triton.jit
def _log_abs(x, y):
    # log|x + iy| without forming |z|^2 (overflow). Near |z| = 1 it is 0.5 log1p((m - 1)(m + 1) + n^2),
    # whose products are exact for 16-bit inputs, instead of the cancelling log(m) + 0.5 log1p((n/m)^2).
    big, small, ratio = _magnitudes(x, y)
    far = tl.log(big) + 0.5 * _log1p(ratio * ratio)
    near = 0.5 * _log1p((big - 1.0) * (big + 1.0) + small * small)
    r = tl.where((big > 0.5) & (big < 2.0), near, far)
    return tl.where(big == float("inf"), big, r)
''',
    "_clog": '''
@triton.jit
def _clog(x, y):
    return _log_abs(x, y), _atan2(y, x)
''',
    "_quarter_turns": '''
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
    turns = (signed >> 31).to(tl.float32) * 4.656612873077393e-10 + (signed & 0x7FFFFFFF).to(tl.float32) * 2.168404344971009e-19
    return tl.where(up, quadrant + 1, quadrant), turns * 1.5707963267948966
''',
    "_sincos": '''
@triton.jit
def _sincos(v):
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
    sin = tl.where((quadrant & 2) != 0, _neg(sin), sin)
    cos = tl.where(((quadrant + 1) & 2) != 0, _neg(cos), cos)
    finite = a < float("inf")
    return tl.where(finite, tl.where(_sign_bit(v), _neg(sin), sin), float("nan")), tl.where(finite, cos, float("nan"))
''',
    "_cexp": '''
@triton.jit
def _cexp(x, y):
    # e^x applied in two halves, so e^x cos(y) stays finite where e^x alone overflows; exp of a real
    # number stays real (and keeps the sign of its zero imaginary part) even when e^x is inf.
    half = tl.exp(0.5 * x)
    sin, cos = _sincos(y)
    re = (half * cos) * half
    im = (half * sin) * half
    return re, tl.where(y == 0.0, y, im)
''',
    "_cmul": '''
@triton.jit
def _cmul(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br
''',
    "_cdiv": '''
@triton.jit
def _cdiv(ar, ai, br, bi):
    # Smith's algorithm as in c10::complex (numpy's variant), down to the signs of zero: divide through by
    # the larger part of b so no square is formed. p is that part, q the other, and u, v are a's parts in the
    # matching roles. Operands near the top of the fp32 range (reachable with bf16 parts) are scaled by 1/4 so
    # the sums below cannot overflow. A zero divisor gives a / |0| per part, like c10.
    a_big = tl.maximum(tl.abs(ar), tl.abs(ai)) > 1e38
    b_big = tl.maximum(tl.abs(br), tl.abs(bi)) > 1e38
    a_scale = tl.where(a_big, 0.25, 1.0)
    b_scale = tl.where(b_big, 0.25, 1.0)
    ar = ar * a_scale
    ai = ai * a_scale
    br = br * b_scale
    bi = bi * b_scale
    real_larger = tl.abs(br) >= tl.abs(bi)
    p = tl.where(real_larger, br, bi)
    q = tl.where(real_larger, bi, br)
    u = tl.where(real_larger, ar, ai)
    v = tl.where(real_larger, ai, ar)
    zero = p == 0.0
    ratio = tl.where(zero, 0.0, q / tl.where(zero, 1.0, p))
    scale = tl.where(zero, float("inf"), 1.0 / (p + q * ratio)) * (b_scale / a_scale)
    re = (u + v * ratio) * scale
    return re, tl.where(real_larger, (v - u * ratio) * scale, (u * ratio - v) * scale)
''',
}
