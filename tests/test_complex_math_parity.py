"""One complex-math library in two languages: every formula of jitdtypes/complex_math.py (torch, float32 tensors:
the compile path) against its Triton twin in kernels_templates/complex_math.py and complex_inverse.py (run by a
small kernel in Triton's interpreter), on the same float32 inputs.

Inputs: special values (zeros of both signs, subnormals, the smallest normal, huge parts around the HUGE scaling
threshold, infinities, NaN, and values on both sides of every cut-off of the formulas and of their real
functions) crossed with each other as (re, im) pairs, and for the binary formulas a smaller set of complex values
crossed with itself; then random values with log-uniform magnitudes over most of float32's range.

Agreement: each result part falls in the same class on both sides (NaN, +inf, -inf, +0, -0, finite nonzero), any
difference fails; finite results are within ULPS[function] ulps of the larger part's magnitude (float32 ulps:
|a - b| <= n 2^-23 2^floor(log2 max(|re|, |im|)), the measure of a complex function's accuracy), and each part
within PART_ULPS[function] ulps of its own magnitude (but where a part may cancel), so that a part much smaller
than the other is checked too. The two sides share every branch, cut-off and special case, and differ only in
the real functions underneath: torch's sin, cos, exp, log, atan2 and hypot, and Kahan's expm1
and log1p from exp and log, against Triton's polynomials and scaled formulas and numpy's exp, log and sqrt (what
the interpreter runs).

Each side is also held to complex128 (numpy's, PyTorch's for log1p) on other random values, within the same ULPS,
and, for the functions that follow C99's Annex G, to its NaN and infinite parts on the special values.
"""

import math

import numpy as np
import pytest
import torch

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

from jitdtypes import complex_math as torch_level  # noqa: E402
from kernels_templates import complex_inverse, complex_math  # noqa: E402

# numpy reports overflow and invalid operations in the lanes that the formulas' where() calls discard.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

inf, nan = math.inf, math.nan


# -- the two libraries, function by function ---------------------------------------------------------------------

@triton.jit
def _angle(x, y):
    return complex_math.atan2(y, x)


# name -> (torch-level function, Triton function, inputs: 1 real, 2 one complex, 4 two complex; outputs: 1 or 2)
FUNCTIONS = {
    "mul": (torch_level.mul, complex_math.cmul, 4, 2),
    "div": (torch_level.div, complex_math.cdiv, 4, 2),
    "pow": (torch_level.power, complex_math.cpow, 4, 2),
    "reciprocal": (torch_level.reciprocal, complex_math.creciprocal, 2, 2),
    "exp": (torch_level.exp, complex_math.cexp, 2, 2),
    "expm1": (torch_level.expm1, complex_math.cexpm1, 2, 2),
    "log": (torch_level.log, complex_math.clog, 2, 2),
    "log1p": (torch_level.log1p, complex_math.clog1p, 2, 2),
    "sqrt": (torch_level.sqrt, complex_math.csqrt, 2, 2),
    "sin": (torch_level.sin, complex_math.csin, 2, 2),
    "cos": (torch_level.cos, complex_math.ccos, 2, 2),
    "tan": (torch_level.tan, complex_math.ctan, 2, 2),
    "sinh": (torch_level.sinh, complex_math.csinh, 2, 2),
    "cosh": (torch_level.cosh, complex_math.ccosh, 2, 2),
    "tanh": (torch_level.tanh, complex_math.ctanh, 2, 2),
    "sigmoid": (torch_level.sigmoid, complex_math.csigmoid, 2, 2),
    "sgn": (torch_level.sgn, complex_math.csgn, 2, 2),
    "abs": (torch_level.magnitude, complex_math.hypot, 2, 1),
    "angle": (torch_level.angle, _angle, 2, 1),
    "asin": (torch_level.asin, complex_inverse.casin, 2, 2),
    "acos": (torch_level.acos, complex_inverse.cacos, 2, 2),
    "atan": (torch_level.atan, complex_inverse.catan, 2, 2),
    "asinh": (torch_level.asinh, complex_inverse.casinh, 2, 2),
    "acosh": (torch_level.acosh, complex_inverse.cacosh, 2, 2),
    "atanh": (torch_level.atanh, complex_inverse.catanh, 2, 2),
    "real expm1": (torch_level.real_expm1, complex_math.expm1, 1, 1),
    "real log1p": (torch_level.real_log1p, complex_math.log1p, 1, 1),
    "real asinh": (torch_level.real_asinh, complex_inverse.asinh, 1, 1),
}

# Bounds, in float32 ulps of the larger part's magnitude, of each side against the other and against complex128:
# each side's real functions are within 1 to 2 ulps of exact. 4 where a formula is arithmetic or goes through one
# real function (mul, div, reciprocal, sqrt, abs, angle, sgn, log, the real expm1 and log1p); 6 where it combines
# several: sin, cos, sinh and exp together (sin, cos, sinh, cosh, tan, tanh, expm1), e^(x/2) applied twice (exp,
# pow and sigmoid), log, a quotient and a product (log1p), two roots, atan2 and asinh (the inverse functions). pow
# and sigmoid get their conditioning on top (_conditioned).
ONE_STEP = {"mul", "div", "reciprocal", "sqrt", "abs", "angle", "sgn", "log", "real expm1", "real log1p"}
ULPS = {name: 4 if name in ONE_STEP else 6 for name in FUNCTIONS}
# The two sides also agree on each part to twice that in ulps of the part itself, so that a wrong formula for a
# part much smaller than the other (tanh's 4 sin y cos y e^-2|x| next to 1) cannot hide in the larger part's ulps;
# but for the results whose parts may cancel or are conditioned: expm1's real part, expm1(x) cos y - 2 sin^2(y/2),
# and pow and sigmoid.
PART_ULPS = {name: 2 * ULPS[name] for name in FUNCTIONS if name not in {"expm1", "pow", "sigmoid"}}
# Annex G's special values: what these functions return for infinite and NaN parts is checked against numpy's
# complex128 (the others keep eager's values or propagate NaN: the libraries' docstrings).
ANNEX_G = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "abs", "angle"]


@triton.jit
def _apply(fn: tl.constexpr, x_ptr, y_ptr, z_ptr, w_ptr, re_ptr, im_ptr, n, INPUTS: tl.constexpr,
           OUTPUTS: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    x = tl.load(x_ptr + i, mask=mask)
    y = tl.load(y_ptr + i, mask=mask)
    z = tl.load(z_ptr + i, mask=mask)
    w = tl.load(w_ptr + i, mask=mask)
    if INPUTS == 1:
        tl.store(re_ptr + i, fn(x), mask=mask)
    elif OUTPUTS == 1:
        tl.store(re_ptr + i, fn(x, y), mask=mask)
    elif INPUTS == 2:
        re, im = fn(x, y)
        tl.store(re_ptr + i, re, mask=mask)
        tl.store(im_ptr + i, im, mask=mask)
    else:
        re, im = fn(x, y, z, w)
        tl.store(re_ptr + i, re, mask=mask)
        tl.store(im_ptr + i, im, mask=mask)


def run_triton(name, x, y, z, w):
    fn, inputs, outputs = FUNCTIONS[name][1:]
    re, im = torch.empty_like(x), torch.empty_like(x)
    block = 1024
    _apply[(triton.cdiv(x.numel(), block),)](fn, x, y, z, w, re, im, x.numel(), INPUTS=inputs, OUTPUTS=outputs,
                                             BLOCK=block)
    return (re,) if outputs == 1 else (re, im)


def run_torch(name, x, y, z, w):
    fn, _, inputs, outputs = FUNCTIONS[name]
    result = fn(x) if inputs == 1 else fn((x, y)) if inputs == 2 else fn((x, y), (z, w))
    return (result,) if outputs == 1 else result


def run_reference(name, x, y, z, w):
    """numpy's complex128 results (C99 Annex G as FreeBSD's msun computes it), rounded to float32 parts;
    PyTorch's for log1p."""
    zx, zw = (torch.complex(re.double(), im.double()).numpy() for re, im in ((x, y), (z, w)))
    with np.errstate(all="ignore"):
        reference = {
            "mul": lambda: zx * zw, "div": lambda: zx / zw, "pow": lambda: zx**zw, "reciprocal": lambda: 1 / zx,
            "sigmoid": lambda: 1 / (1 + np.exp(-zx)),
            # numpy's is log(1 + z), which loses a small z; PyTorch's (c10's) keeps it
            "log1p": lambda: torch.log1p(torch.from_numpy(zx)).numpy(),
            "abs": lambda: np.abs(zx), "angle": lambda: np.angle(zx),
            "sgn": lambda: np.where(zx == 0, 0, zx / np.where(zx == 0, 1, np.abs(zx))),
            "asin": lambda: np.arcsin(zx), "acos": lambda: np.arccos(zx), "atan": lambda: np.arctan(zx),
            "asinh": lambda: np.arcsinh(zx), "acosh": lambda: np.arccosh(zx), "atanh": lambda: np.arctanh(zx),
            "real expm1": lambda: np.expm1(zx.real), "real log1p": lambda: np.log1p(zx.real),
            "real asinh": lambda: np.arcsinh(zx.real),
        }.get(name, lambda: getattr(np, name)(zx))()
    reference = torch.from_numpy(np.asarray(reference))
    if reference.is_complex():
        return reference.real.float(), reference.imag.float()
    return (reference.float(),)


# -- inputs ---------------------------------------------------------------------------------------------------

def _around(value):
    """value and its float32 neighbours."""
    v = torch.tensor([value], dtype=torch.float32)
    return [torch.nextafter(v, torch.tensor([-inf])).item(), v.item(), torch.nextafter(v, torch.tensor([inf])).item()]


# 88.72 .. 89.4: e^x overflows float32 where exp, sinh and cosh, applying e^(x/2) twice, stay finite.
SPECIAL = sorted({
    0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, -0.3, 1.4e-45, -1e-40, 1e-39, 1.1754944e-38, 1e-30,
    3.4028235e38, -1.7e38, 65504.0, 1e4, -1e8, inf, -inf, nan,
    *_around(torch_level.HUGE), *_around(torch_level.TANH_LARGE), *_around(-torch_level.SINH_LARGE),
    *_around(88.72), 88.9, *_around(89.4), *_around(800.0), *_around(4096.0), *_around(0.25), *_around(-0.5),
    *_around(2.0), *_around(math.pi / 2), *_around(math.pi),
}, key=lambda v: (math.isnan(v), v))
COMPLEX_SPECIAL = [0.0, -0.0, 1.0, -2.0, 1e-40, 3e38, 1.5e38, 0.5, inf, -inf, nan]


def _pairs(values):
    v = torch.tensor(values, dtype=torch.float32)
    return v.repeat_interleave(len(v)), v.repeat(len(v))


def special_inputs(inputs):
    """(x, y, z, w): every (re, im) pair of SPECIAL, or every pair of COMPLEX_SPECIAL values for two operands."""
    if inputs == 4:
        re, im = _pairs(COMPLEX_SPECIAL)
        n = re.numel()
        return re.repeat_interleave(n), im.repeat_interleave(n), re.repeat(n), im.repeat(n)
    x, y = _pairs(SPECIAL)
    return x, y, y.flip(0), x.flip(0)


def random_inputs(count=3000, seed=0, top=60):
    """(x, y, z, w): complex values with magnitudes log-uniform in 2^-top .. 2^top, uniform angles, and as many
    more of magnitude around 1 (where the formulas switch branches)."""
    g = np.random.default_rng(seed)
    magnitude = np.concatenate([np.exp2(g.uniform(-top, top, count)), np.exp2(g.uniform(-3, 3, count))])
    angle = g.uniform(-np.pi, np.pi, (2, 2 * count))
    parts = [magnitude * np.cos(angle[0]), magnitude * np.sin(angle[0]),
             magnitude[::-1] * np.cos(angle[1]), magnitude[::-1] * np.sin(angle[1])]
    return tuple(torch.tensor(p, dtype=torch.float32) for p in parts)


# -- comparison ------------------------------------------------------------------------------------------------

CLASS_NAMES = ["finite", "nan", "+inf", "-inf", "+0", "-0"]


def classes(t: torch.Tensor) -> torch.Tensor:
    c = torch.zeros(t.shape, dtype=torch.int64)
    c[t.isnan()] = 1
    c[t == inf] = 2
    c[t == -inf] = 3
    c[(t == 0) & ~torch.signbit(t)] = 4
    c[(t == 0) & torch.signbit(t)] = 5
    return c


def _ulp(largest: torch.Tensor) -> torch.Tensor:
    return torch.exp2(torch.floor(torch.log2(largest.double().clamp_min(2.0**-126))) - 23)


def ulps_apart(a, b) -> torch.Tensor:
    """|a - b| in float32 ulps of the larger part's magnitude (per element; parts of a complex result share it)."""
    ulp = _ulp(torch.stack([p.abs() for p in (*a, *b)]).amax(0))
    return torch.stack([(p.double() - q.double()).abs() for p, q in zip(a, b)]).amax(0) / ulp


def part_ulps_apart(a, b) -> torch.Tensor:
    """|a - b| in float32 ulps of each part's own magnitude, the largest over the parts (per element)."""
    return torch.stack([(p.double() - q.double()).abs() / _ulp(torch.maximum(p.abs(), q.abs()))
                        for p, q in zip(a, b)]).amax(0)


def _conditioned(name, inputs, base):
    """Per element ulps allowed: `base`, and for pow and sigmoid what their conditioning adds. pow is exp(p),
    p = w log z: a few ulps of |p| in p are that many times |p| ulps of the result (4 |p| for two sides); sigmoid is
    1 / (1 + e^-z): the error of e^-z grows by k = |e^-z / (1 + e^-z)| = e^-x |sigmoid z| (taken from complex128)."""
    x, y, z, w = (v.double() for v in inputs)
    if name == "pow":
        zx, zw = torch.complex(x, y), torch.complex(z, w)
        power = zw * torch.log(zx)
        return base + 4.0 * torch.maximum(power.real.abs(), power.imag.abs()).nan_to_num(posinf=math.inf)
    if name == "sigmoid":
        k = torch.exp(-x) * torch.sigmoid(torch.complex(x, y)).abs()
        return base * (1.0 + k)
    return torch.full_like(x, float(base))


def _determined(name, inputs):
    """The inputs whose results' classes the formula determines: for pow, e^p cis(p) with p = w log z, the signs
    of the parts follow cos and sin of Im p, which a few ulps of |p| (the sides' allowed difference) can move
    across zero; those elements are left out (0^w, whose rule decides, stays)."""
    if name != "pow":
        return inputs
    x, y, z, w = (v.double() for v in inputs)
    base = torch.complex(x, y)
    power = torch.complex(z, w) * torch.log(base)
    uncertainty = 4 * 2.0**-23 * torch.maximum(power.real.abs(), power.imag.abs())
    cos, sin = torch.cos(power.imag).abs(), torch.sin(power.imag).abs()
    exact = (uncertainty == 0) | ((cos > uncertainty) & (sin > uncertainty))
    keep = (base == 0) | (power.isfinite() & exact)
    return tuple(v[keep] for v in inputs)


def disagreements(a, b, inputs, limit=None, classes_of=classes, part_limit=None, show=6):
    """Lines naming the elements where results a and b differ in class (as `classes_of` tells them apart), or,
    both finite, by more than `limit` ulps of the larger part (a number or one per element) or `part_limit` ulps
    of a part's own magnitude."""
    class_differs = torch.zeros(a[0].shape, dtype=torch.bool)
    for p, q in zip(a, b):
        class_differs |= classes_of(p) != classes_of(q)
    finite = torch.stack([p.isfinite() for p in (*a, *b)]).all(0)
    too_far = torch.zeros_like(class_differs)
    if limit is not None and finite.any():
        limit = torch.as_tensor(limit, dtype=torch.float64).expand(finite.shape)
        too_far[finite] = ulps_apart([p[finite] for p in a], [q[finite] for q in b]) > limit[finite]
    if part_limit is not None and finite.any():
        too_far[finite] |= part_ulps_apart([p[finite] for p in a], [q[finite] for q in b]) > part_limit
    wrong = class_differs | too_far
    lines = []
    for i in wrong.nonzero().flatten()[:show].tolist():
        operands = ", ".join(f"{v[i].item():.9g}" for v in inputs)
        lines.append(f"({operands}): {tuple(p[i].item() for p in a)} vs {tuple(q[i].item() for q in b)}")
    return [f"{int(wrong.sum())} of {wrong.numel()} differ"] + lines if wrong.any() else []


def _nonfinite_classes(t: torch.Tensor) -> torch.Tensor:
    """NaN, +inf, -inf, or neither: the classes the reference test compares (C99 leaves many zero signs open)."""
    c = torch.zeros(t.shape, dtype=torch.int64)
    c[t.isnan()] = 1
    c[t == inf] = 2
    c[t == -inf] = 3
    return c


# -- tests -----------------------------------------------------------------------------------------------------

def _compared(name, inputs):
    return run_torch(name, *inputs), run_triton(name, *inputs)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_libraries_agree_on_special_values(name):
    inputs = special_inputs(FUNCTIONS[name][2])
    inputs = _determined(name, inputs)
    limit = _conditioned(name, inputs, ULPS[name])
    wrong = disagreements(*_compared(name, inputs), inputs[:FUNCTIONS[name][2]], limit,
                          part_limit=PART_ULPS.get(name))
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_libraries_agree_on_random_values(name):
    inputs = _determined(name, random_inputs())
    limit = _conditioned(name, inputs, ULPS[name])
    wrong = disagreements(*_compared(name, inputs), inputs[:FUNCTIONS[name][2]], limit,
                          part_limit=PART_ULPS.get(name))
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("side", ["torch", "triton"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_each_library_matches_complex128_on_random_values(name, side):
    inputs = _determined(name, random_inputs(seed=1))
    if name == "sigmoid":  # e^-z overflows below Re z = -88.7: eager's NaN there (the libraries' docstrings)
        inputs = tuple(v[inputs[0] > -88.7] for v in inputs)
    result = (run_torch if side == "torch" else run_triton)(name, *inputs)
    expected = run_reference(name, *inputs)
    limit = _conditioned(name, inputs, ULPS[name])
    wrong = disagreements(result, expected, inputs[:FUNCTIONS[name][2]], limit, classes_of=_nonfinite_classes)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("side", ["torch", "triton"])
@pytest.mark.parametrize("name", ANNEX_G)
def test_special_values_follow_annex_g(name, side):
    """NaN and infinite parts of the results as numpy's complex128 gives them, on the special values whose finite
    parts stay below 2^60 (larger ones overflow float32 intermediates where complex128's do not: the parity test
    holds them)."""
    inputs = special_inputs(2)
    small = torch.stack([v.isnan() | v.isinf() | (v.abs() < 2.0**60) for v in inputs[:2]]).all(0)
    inputs = tuple(v[small] for v in inputs)
    result = (run_torch if side == "torch" else run_triton)(name, *inputs)
    wrong = disagreements(result, run_reference(name, *inputs), inputs[:2], classes_of=_nonfinite_classes)
    assert not wrong, "\n".join(wrong)
