"""OpInfo backward sweep: how many ops with complex64 autograd give, in each 16-bit complex dtype, complex64's
gradients on the same rounded inputs (the check of tests/test_opinfo_backward.py, on every sample asked for),
with the failing ops, their errors and, for "not implemented" errors, the ATen overload that raised.

    python -m benchmarks.backward_sweep [--samples 3 20] [--plain] [--errors]

--plain adds plain PyTorch's counts; --errors prints the distribution of passing samples' errors (in units of
the dtype's epsilon, see tests/opinfo_backward.grad_error), from which the test's tolerance is chosen.
"""

from __future__ import annotations

import argparse
import time

import torch

import jitdtypes
from jitdtypes import dtypes
from tests import opinfo_backward as bwd
from tests import opinfo_samples as db
from tests.opinfo_exclusions import EXCLUDED


def sweep(target, samples: int):
    """op id -> (passed, why not, errors of its samples)."""
    outcomes = {}
    for op in bwd.backward_ops():
        if db.op_id(op) in EXCLUDED[dtypes.NAMES[target]]:
            continue
        results = bwd.check_samples(op, target, range(samples))
        bad = [r for r in results if r.error > bwd.GRAD_ULPS]
        why = None
        if not results:
            why = "no sample complex64 can differentiate"
        elif bad:
            first = bad[0]
            why = first.raised or f"sample {first.index}: error {first.error:.3g} eps"
            if first.raised and bwd.NOT_IMPLEMENTED.search(first.raised):
                why += f"  [raised in {bwd.raising_overload(op, first.index, target) or 'a derivative formula'}]"
        outcomes[db.op_id(op)] = (bool(results) and not bad, why, [r.error for r in results])
    return outcomes


def _percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, nargs="+", default=[3, 20])
    parser.add_argument("--plain", action="store_true")
    parser.add_argument("--errors", action="store_true")
    options = parser.parse_args()
    for samples in options.samples:
        for target in dtypes.COMPLEX_TARGETS:
            name = dtypes.NAMES[target]
            started = time.monotonic()
            ours = sweep(target, samples)
            seconds = time.monotonic() - started
            usable = [op for op, (_, why, _) in ours.items() if why != "no sample complex64 can differentiate"]
            line = f"{samples:2} samples {name:10}: jitdtypes {sum(ours[op][0] for op in usable)} / {len(usable)}"
            if options.plain:
                with jitdtypes.disabled():
                    plain = sweep(target, samples)
                line += f", plain PyTorch {sum(plain[op][0] for op in usable)} / {len(usable)}"
            excluded = sorted(set(EXCLUDED[name]) & {db.op_id(op) for op in bwd.backward_ops()})
            print(f"{line}   (excluded as in the forward suite: {', '.join(excluded)}) [{seconds:.0f} s]", flush=True)
            for op in sorted(op for op in usable if not ours[op][0]):
                print(f"    {op}: {ours[op][1]}")
            if options.errors:
                finite = sorted(e for _, _, errors in ours.values() for e in errors if e != float("inf"))
                print("    finite sample errors, eps units: " + ", ".join(
                    f"p{int(100 * q)} {_percentile(finite, q):.3g}" for q in (0.5, 0.9, 0.95, 0.99, 1.0)))
                worst = sorted(((e, op) for op, (_, _, errors) in ours.items() for e in errors if e in finite),
                               reverse=True)[:12]
                print("    largest: " + ", ".join(f"{op} {e:.3g}" for e, op in worst))
    print(f"\ntorch {torch.__version__}")


if __name__ == "__main__":
    main()
