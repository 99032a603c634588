"""Differential run: every compile-path decomposition's program on special values, Inductor against references.

`tests/special_values.py` holds the inputs (every pair of inf, nan, +-0, subnormals, 65504, values whose
results overflow float16, float32 values at 16-bit rounding edges) and one program per decomposition. All
programs of one dtype and layout are compiled as one graph with Inductor (its vector code on, unless
--scalar) and compared, NaN-aware and sign of zero included, with two references:

- `decomposed`: backend="aot_eager_decomp_partition", the same decomposed graph (float32 parts, int32 words)
  run by ATen. A difference here is Inductor's code generation (or libm against Sleef for transcendental
  functions: compare with --scalar to tell).
- `eager`: backend="aot_eager", eager jitdtypes (complex64 ATen kernels, rounded). A difference here and not
  in `decomposed` is a formula of the compile path that disagrees with ATen on that special value.

One graph of ~110 programs took 757 s to compile on 2 busy cores (Inductor's cache makes a rerun cheap);
--programs picks some by name, --references-only compares the decomposed graph with eager (the formulas
alone, no Inductor compile: seconds).

    python -m benchmarks.special_values [--dtypes complex32,bcomplex32] [--layouts contiguous,...] [--scalar]
        [--programs "exp,x / y,..."] [--references-only]
"""

from __future__ import annotations

import argparse
import time

import torch

import torch._inductor.config as inductor_config
import torch._inductor.lowering  # noqa: F401 - the compile path joins Inductor's table once this is loaded
from jitdtypes import dtypes  # importing jitdtypes installs the compile path
from tests import special_values

def runner(programs):
    """A function running `programs` on a dict of inputs, for torch.compile."""
    def run_all(tensors):
        return [p.run(*(tensors[name] for name in p.operands)) for p in programs]

    return run_all


def _as_float(value: torch.Tensor) -> torch.Tensor:
    if value.is_complex():
        return torch.view_as_real(value if value.dtype == torch.complex128 else value.to(torch.complex64))
    return value if value.dtype == torch.bool else value.float()


def differing(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Where the two differ: values, signs of zero, NaN against a number (NaN payloads are not compared)."""
    a, b = _as_float(actual), _as_float(expected)
    if a.dtype == torch.bool:
        return a != b
    same = ((a == b) & (torch.signbit(a) == torch.signbit(b))) | (a.isnan() & b.isnan())
    return ~same


def _flat(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def compare(programs, results, references, name: str) -> list[str]:
    lines = []
    for program, got, expected in zip(programs, results, references):
        for a, b in zip(_flat(got), _flat(expected)):
            if a.shape != b.shape or a.dtype != b.dtype:
                lines.append(f"  {program.name} vs {name}: {a.dtype}{tuple(a.shape)} against {b.dtype}{tuple(b.shape)}")
                continue
            bad = differing(a, b)
            if bad.any():
                where = [tuple(i) for i in bad.nonzero()[:2].tolist()]
                shown = [(i, _as_float(a)[i].item(), _as_float(b)[i].item()) for i in where]
                lines.append(f"  {program.name} vs {name}: {int(bad.sum())} of {bad.numel()} differ, e.g. "
                             f"(index, compiled, {name}) {shown}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtypes", default=",".join(dtypes.NAMES[d] for d in dtypes.COMPLEX_TARGETS))
    parser.add_argument("--layouts", default=",".join(special_values.LAYOUTS))
    parser.add_argument("--scalar", action="store_true", help="Inductor's scalar C++ (cpp.simdlen=0)")
    parser.add_argument("--programs", help="comma-separated program names (default: all)")
    parser.add_argument("--references-only", action="store_true",
                        help="compare the decomposed graph with eager only (no Inductor compile)")
    args = parser.parse_args()
    by_name = {dtypes.NAMES[d]: d for d in dtypes.COMPLEX_TARGETS}
    programs = special_values.PROGRAMS
    if args.programs:
        names = args.programs.split(",")
        unknown = set(names) - {p.name for p in programs}
        if unknown:
            parser.error(f"no programs named {sorted(unknown)}")
        programs = [p for p in programs if p.name in names]
    run_all = runner(programs)
    covered = {o for p in programs for o in p.covers}
    print(f"{len(programs)} programs covering {len(covered)} decompositions")
    for dtype in (by_name[n] for n in args.dtypes.split(",")):
        for layout in args.layouts.split(","):
            tensors = special_values.inputs(dtype, layout)
            references = {}
            for name, backend in (("eager", "aot_eager"), ("decomposed", "aot_eager_decomp_partition")):
                torch._dynamo.reset()
                references[name] = torch.compile(run_all, backend=backend, fullgraph=True)(tensors)
            if args.references_only:
                print(f"{dtypes.NAMES[dtype]} {layout}: decomposed graph against eager", flush=True)
                lines = compare(programs, references["decomposed"], references["eager"], "eager")
                print("\n".join(lines) or "  all equal to eager", flush=True)
                continue
            torch._dynamo.reset()
            started = time.perf_counter()
            with inductor_config.patch({"cpp.simdlen": 0} if args.scalar else {}):
                results = torch.compile(run_all, fullgraph=True)(tensors)
            print(f"{dtypes.NAMES[dtype]} {layout}: compiled in {time.perf_counter() - started:.0f} s", flush=True)
            for name, reference in references.items():
                print("\n".join(compare(programs, results, reference, name)) or f"  all equal to {name}", flush=True)


if __name__ == "__main__":
    main()
