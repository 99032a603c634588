"""torch.compile on 16-bit complex: four programs, each timed four ways (and a fifth), with first-call times.

Programs: an elementwise chain and a reduction chain over 256x4096 elements, an FNO-style spectral
convolution (rfft -> mix 64 modes -> irfft, forward and backward), and one Adam step of a complex linear layer
(forward, backward, update); with neuraloperator importable, also its SpectralConv in "half" precision
(complex32). Ways: eager jitdtypes, compiled jitdtypes (torch.compile, default Inductor
backend), the compiled in-tree torch._subclasses.complex_tensor.ComplexTensor (float16 parts, so complex32
only; it has no FFT), and the program compiled in complex64/float32. Each in complex32 and bcomplex32, on CPU
and, when present, CUDA (plus the elementwise chains' bandwidth against a plain copy there).

Timing: rounds of calls interleaved across the ways; per way the fastest call (least disturbed by other load
on the machine) and the median. First-call times are measured with Inductor's caches disabled (the first
compile in the process also pays for loading Inductor and the C++ toolchain).

    python -m benchmarks.compile [--rounds 7] [--calls 5] [--devices cpu,cuda] [--programs "elementwise chain"]
                                 [--chart]                    # CSV in benchmarks/results/compile.csv

--chart then draws docs/charts/compile.png from those rows (benchmarks.charts).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch

import jitdtypes
from jitdtypes import dtypes

from benchmarks import charts
from benchmarks.common import write_rows

WAYS = ("eager jitdtypes", "compiled jitdtypes", "compiled jitdtypes, words", "compiled jitdtypes, planes",
        "compiled ComplexTensor", "ComplexTensor + conversion", "compiled planar parts", "planar parts + conversion",
        "compiled complex64")
# the chains' storage ways: every 16-bit complex value a compiled CPU graph reads or writes as 32-bit words, or
# as planes of parts split and merged by kernels of their own (jitdtypes.compile_path.layout_ops)
STORAGE = {"compiled jitdtypes, words": (), "compiled jitdtypes, planes": dtypes.COMPLEX_TARGETS}
SIZE = (256, 4096)


def _complex_tensor_class():
    try:
        from torch._subclasses.complex_tensor import ComplexTensor
    except ImportError:
        return None
    return ComplexTensor


# -- the programs ---------------------------------------------------------------------------------------------


def elementwise_chain(a, b):
    return (a * b + a).exp() / (b + 2)


def reduction_chain(a, b):
    return ((a * b + a).exp() / (b + 2)).sum(-1).mean()


def spectral_conv(x, weights):
    spectrum = torch.fft.rfft(x)
    modes = weights.shape[-1]
    mixed = torch.einsum("bim,iom->bom", spectrum[..., :modes], weights)
    out = torch.zeros(x.shape[0], weights.shape[1], x.shape[-1] // 2 + 1, dtype=mixed.dtype, device=x.device)
    out[..., :modes] = mixed
    return torch.fft.irfft(out, n=x.shape[-1]).float().pow(2).mean()


def _chain_inputs(dtype, device):
    torch.manual_seed(0)
    return [torch.randn(*SIZE, dtype=torch.complex64, device=device).to(dtype) for _ in range(2)]


def _as_complex_tensor(t):
    return _complex_tensor_class()(torch.real(t).contiguous(), torch.imag(t).contiguous())


# -- the chains on planar parts, by hand: float16/bfloat16 (re, im) tensors, the textbook formulas ComplexTensor
# uses (no special-value cases), what the planar design computes for either dtype


def planar_elementwise_chain(ar, ai, br, bi):
    pr, pi = ar * br - ai * bi + ar, ar * bi + ai * br + ai
    scale = pr.exp()
    er, ei = scale * pi.cos(), scale * pi.sin()
    dr = br + 2
    size = dr * dr + bi * bi
    return (er * dr + ei * bi) / size, (ei * dr - er * bi) / size


def planar_reduction_chain(ar, ai, br, bi):
    re, im = planar_elementwise_chain(ar, ai, br, bi)
    return re.sum(-1).mean(), im.sum(-1).mean()


PLANAR_TWINS = {"elementwise chain": planar_elementwise_chain, "reduction chain": planar_reduction_chain}


def _split(t):
    pairs = t.view(dtypes.part_dtype(t.dtype)).unflatten(-1, (-1, 2))
    return pairs[..., 0].contiguous(), pairs[..., 1].contiguous()


def _merge(re, im, dtype):
    return torch.stack([re, im], -1).view(dtype).squeeze(-1)


def _planar_way(program_name, way, a, b):
    compiled = torch.compile(PLANAR_TWINS[program_name], fullgraph=True)
    if way == "planar parts + conversion":
        return lambda: _merge(*compiled(*_split(a), *_split(b)), a.dtype)
    parts = (*_split(a), *_split(b))
    return lambda: compiled(*parts)


def _with_storage(fn, held):
    from jitdtypes.compile_path import layout_ops

    def call():
        with layout_ops.planar_storage(held):
            return fn()

    return call


def _chain_way(program):
    def build(way, dtype, device):
        a, b = _chain_inputs(dtype, device)
        if "planar parts" in way:
            return _planar_way(program.__name__.replace("_", " "), way, a, b), None
        if "ComplexTensor" in way:
            if _complex_tensor_class() is None or dtype != torch.complex32:
                return None, "float16 parts only" if _complex_tensor_class() else "not in this torch"
            compiled = torch.compile(program, fullgraph=True)
            if way == "ComplexTensor + conversion":
                return (lambda: compiled(_as_complex_tensor(a), _as_complex_tensor(b)).as_interleaved()), None
            a, b = _as_complex_tensor(a), _as_complex_tensor(b)
            return (lambda: compiled(a, b)), None
        if way == "compiled complex64":
            a, b = a.to(torch.complex64), b.to(torch.complex64)
        fn = program if way == "eager jitdtypes" else torch.compile(program, fullgraph=True)
        run = lambda: fn(a, b)  # noqa: E731
        return (_with_storage(run, STORAGE[way]) if way in STORAGE else run), None

    return build


def _not_a_chain(build):
    """The chains' extra ways (storage choices, planar parts) do not apply to the other programs."""

    def only_common_ways(way, dtype, device):
        if way in STORAGE or "planar parts" in way:
            return None, "chains only"
        return build(way, dtype, device)

    return only_common_ways


def _spectral_build(way, dtype, device):
    if "ComplexTensor" in way:
        return None, "no FFT"
    torch.manual_seed(0)
    wide = way == "compiled complex64"
    x = torch.randn(8, 16, 1024, device=device)
    weights = torch.randn(16, 16, 64, dtype=torch.complex64, device=device) * 0.1
    if not wide:
        x, weights = x.to(dtypes.REAL_OF[dtype]), weights.to(dtype)
    x.requires_grad_()
    weights.requires_grad_()
    fn = spectral_conv if way == "eager jitdtypes" else torch.compile(spectral_conv, fullgraph=True)

    def forward_backward():
        fn(x, weights).backward()

    return forward_backward, None


def _optimizer_build(way, dtype, device):
    if "ComplexTensor" in way:
        return None, "no autograd/optimizer support"
    torch.manual_seed(0)
    wide = way == "compiled complex64"
    layer = torch.nn.Linear(256, 256, dtype=torch.complex64, device=device)
    x = torch.randn(256, 256, dtype=torch.complex64, device=device)
    target = torch.randn(256, 256, dtype=torch.complex64, device=device)
    if not wide:
        layer, x, target = layer.to(dtype), x.to(dtype), target.to(dtype)
    optimizer = torch.optim.Adam(layer.parameters(), lr=1e-3, eps=1e-3)

    def step():
        optimizer.zero_grad()
        loss = (layer(x) - target).abs().pow(2).mean()
        (loss * 1024).backward()
        optimizer.step()

    return (step if way == "eager jitdtypes" else torch.compile(step)), None


def _neuralop_build(way, dtype, device):
    """neuraloperator's SpectralConv (a real client, if installed): fno_block_precision="half" runs its FFTs
    and mode mixing in complex32; complex64 is its "full" precision."""
    from neuralop.layers.spectral_convolution import SpectralConv

    if "ComplexTensor" in way or dtype != torch.complex32:
        return None, "no such mode in the client"
    torch.manual_seed(0)
    precision = "full" if way == "compiled complex64" else "half"
    conv = SpectralConv(16, 16, n_modes=(16, 16), fno_block_precision=precision).to(device)
    x = torch.randn(8, 16, 64, 64, device=device)
    loss = lambda: conv(x).float().pow(2).mean()  # noqa: E731
    fn = loss if way == "eager jitdtypes" else torch.compile(loss)

    def forward_backward():
        conv.zero_grad()
        fn().backward()

    return forward_backward, None


PROGRAMS = {
    "elementwise chain": _chain_way(elementwise_chain),
    "reduction chain": _chain_way(reduction_chain),
    "spectral conv fwd+bwd": _not_a_chain(_spectral_build),
    "Adam step (complex linear)": _not_a_chain(_optimizer_build),
}
try:
    import neuralop  # noqa: F401 - optional: pip install --no-deps --target DIR neuraloperator (+ its deps)

    PROGRAMS["neuralop SpectralConv fwd+bwd"] = _not_a_chain(_neuralop_build)
except ImportError:
    pass


# -- timing -------------------------------------------------------------------------------------------------------


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(fn, device) -> float:
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - start


def measure(program: str, dtype, device: str, rounds: int, calls: int) -> list[dict]:
    """One row per way: fastest and median call, first call (compile for the compiled ways)."""
    runs, rows = {}, []
    for way in WAYS:
        torch._dynamo.reset()
        fn, reason = PROGRAMS[program](way, dtype, device)
        row = {"device": device, "program": program, "dtype": dtypes.NAMES[dtype], "way": way}
        if fn is None:
            rows.append({**row, "note": reason})
            continue
        try:
            row["first_call_s"] = round(_timed(fn, device), 2)
            fn()
        except Exception as exc:  # a way that cannot run this program is reported, not fatal
            rows.append({**row, "note": f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"})
            continue
        runs[way] = (fn, [])
        rows.append(row)
    for _ in range(rounds):  # interleaved, so that load on the machine hits every way alike
        for fn, samples in runs.values():
            samples.extend(_timed(fn, device) for _ in range(calls))
    for row in rows:
        if row["way"] in runs:
            samples = runs[row["way"]][1]
            row["min_ms"] = round(min(samples) * 1e3, 3)
            row["median_ms"] = round(statistics.median(samples) * 1e3, 3)
    eager = next((r.get("min_ms") for r in rows if r["way"] == "eager jitdtypes"), None)
    for row in rows:
        if eager and row.get("min_ms"):
            row["speedup_vs_eager"] = round(eager / row["min_ms"], 2)
    return rows


def copy_bandwidth_row(dtype, device: str, rounds: int) -> dict:
    """GB/s of the compiled elementwise chain (2 complex inputs read, 1 written) against a device copy."""
    a, b = _chain_inputs(dtype, device)
    torch._dynamo.reset()
    chain = torch.compile(elementwise_chain, fullgraph=True)
    chain(a, b)
    moved = 3 * a.numel() * a.element_size()
    chain_s = min(_timed(lambda: chain(a, b), device) for _ in range(rounds * 5))
    copy_s = min(_timed(lambda: a.clone(), device) for _ in range(rounds * 5))
    chain_gbs, copy_gbs = moved / chain_s / 1e9, 2 * a.numel() * a.element_size() / copy_s / 1e9
    return {"device": device, "program": "elementwise chain bandwidth", "dtype": dtypes.NAMES[dtype],
            "way": "compiled jitdtypes", "GB_per_s": round(chain_gbs, 1), "copy_GB_per_s": round(copy_gbs, 1),
            "percent_of_copy": round(100 * chain_gbs / copy_gbs, 1)}


def _print_table(rows: list[dict]) -> None:
    for device in dict.fromkeys(r["device"] for r in rows):
        print(f"\n{device}: fastest and median call in ms, speedup vs eager jitdtypes, first call (compile) in s")
        keys = dict.fromkeys((r["program"], r["dtype"]) for r in rows if r["device"] == device and "way" in r)
        for program, dtype in keys:
            if program.endswith("bandwidth"):
                continue
            print(f"\n{program}, {dtype}")
            found = {r["way"]: r for r in rows if (r["device"], r["program"], r["dtype"]) == (device, program, dtype)}
            for way in WAYS:
                row = found.get(way, {})
                if "min_ms" in row:
                    print(f"  {way:30} {row['min_ms']:9.3f} {row['median_ms']:9.3f} "
                          f"{row.get('speedup_vs_eager', 0):7.2f}x {row['first_call_s']:6.1f}s")
                elif row.get("note") != "chains only":
                    print(f"  {way:30} n/a: {row.get('note', '')}")
            _print_targets(found)
        for r in rows:
            if r["device"] == device and r["program"].endswith("bandwidth"):
                print(f"{r['program']} {r['dtype']}: {r['GB_per_s']} GB/s, copy {r['copy_GB_per_s']} GB/s "
                      f"({r['percent_of_copy']}%)")


def _print_targets(found: dict) -> None:
    """compiled jitdtypes' fastest call over each planar reference's (the issue's targets: at most 1.0 against a
    reference given the interleaved data, at most 1.3 against one given planar parts)."""
    ours = found.get("compiled jitdtypes", {}).get("min_ms")
    ratios = [f"{ours / found[way]['min_ms']:.2f} x {way}" for way in
              ("ComplexTensor + conversion", "compiled ComplexTensor", "planar parts + conversion",
               "compiled planar parts") if ours and found.get(way, {}).get("min_ms")]
    if ratios:
        print("  compiled jitdtypes = " + ", ".join(ratios))


def main() -> None:
    # one table, not pages of warnings: the dtypes are experimental in PyTorch, and first calls are meant to compile
    warnings.filterwarnings("ignore", message=".*support is experimental.*")
    warnings.filterwarnings("ignore", message=".*dynamo_pgo force disabled.*")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated program names")
    parser.add_argument("--devices", default="cpu,cuda", help="comma-separated device types (those present)")
    parser.add_argument("--chart", action="store_true",
                        help="then draw docs/charts/compile.png from the CSV rows (needs matplotlib)")
    args = parser.parse_args()
    if args.chart:
        charts.require_matplotlib()  # now, not after the run
    assert jitdtypes.is_enabled(), "the benchmark measures jitdtypes: unset JITDTYPES_DISABLE"
    assert jitdtypes.installer.compile_installation() is not None, "jitdtypes.enable() installs the compile path"
    import torch._inductor.config

    torch._inductor.config.force_disable_caches = True  # first calls are real compiles
    present = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    devices = [d for d in args.devices.split(",") if d in present]
    rows = []
    for device in devices:
        for program in args.programs.split(","):
            for dtype in dtypes.COMPLEX_TARGETS:
                rows += measure(program, dtype, device, args.rounds, args.calls)
        if device == "cuda":
            rows += [copy_bandwidth_row(dtype, device, args.rounds) for dtype in dtypes.COMPLEX_TARGETS]
    _print_table(rows)
    print("\nrows appended to", write_rows("compile", rows))
    if args.chart:
        print("chart:", charts.draw_compile())


if __name__ == "__main__":
    main()
