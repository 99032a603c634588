"""What jitdtypes costs everyone else: per-call overhead for other dtypes, and import time.

Per call: float32 ops on 8 elements, one that got an override (exp) and one that did not, with and
without the overrides installed, measured in interleaved rounds in one process; medians and ratios.
Import: `import jitdtypes` after `import torch` in fresh processes (discovery cache warm).
Targets: at most +2 us on overridden ops, nothing measurable on others, import <= 0.5 s.
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch

import jitdtypes
from benchmarks.common import per_call_us, percentiles, write_rows

ROUNDS = 31


def _not_overridden_op():
    registered = {name for name, _ in jitdtypes._registration.keys}
    for name, fn in [("aten::relu", torch.relu), ("aten::floor", torch.floor), ("aten::clamp", torch.clamp)]:
        if name not in registered:
            return name, fn
    raise RuntimeError("every candidate op has an override")


def per_call_overhead() -> list[dict]:
    x = torch.randn(8)
    other_name, other_fn = _not_overridden_op()
    cases = [("aten::exp (overridden)", lambda: torch.exp(x)), (f"{other_name} (not overridden)", lambda: other_fn(x))]
    rows = []
    for label, fn in cases:
        with_us, without_us = [], []
        for round_index in range(ROUNDS):
            # alternate which state goes first so drift (clock, caches) does not favour either
            for enabled in (True, False) if round_index % 2 else (False, True):
                (jitdtypes.enable if enabled else jitdtypes.disable)()
                (with_us if enabled else without_us).append(per_call_us(fn))
        jitdtypes.enable()
        w, wo = percentiles(with_us), percentiles(without_us)
        rows.append({
            "case": label, "without_p50_us": round(wo[1], 3), "with_p50_us": round(w[1], 3),
            "added_us": round(w[1] - wo[1], 3), "ratio": round(w[1] / wo[1], 3),
            "with_p20_us": round(w[0], 3), "with_p80_us": round(w[2], 3),
            "without_p20_us": round(wo[0], 3), "without_p80_us": round(wo[2], 3),
        })
    return rows


_IMPORT_TIMER = """
import time
start = time.perf_counter(); import torch; torch_s = time.perf_counter() - start
start = time.perf_counter(); {stmt}; extra_s = time.perf_counter() - start
print(torch_s, extra_s)
"""


def import_time(repeats: int = 7) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JITDTYPES_DISABLE"}
    subprocess.run([sys.executable, "-c", "import jitdtypes"], env=env, check=True)  # warm discovery cache
    samples = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", _IMPORT_TIMER.format(stmt="import jitdtypes")], env=env,
                             capture_output=True, text=True, check=True).stdout.split()
        samples.append((float(out[0]), float(out[1])))
    torch_p = percentiles([s[0] for s in samples])
    jit_p = percentiles([s[1] for s in samples])
    return {"case": "import jitdtypes after import torch", "torch_p50_s": round(torch_p[1], 3),
            "added_p50_s": round(jit_p[1], 3), "added_p80_s": round(jit_p[2], 3),
            "ratio": round((torch_p[1] + jit_p[1]) / torch_p[1], 3)}


def main() -> None:
    rows = per_call_overhead()
    print(f"per-call overhead, float32 on 8 elements, {ROUNDS} interleaved rounds (medians, us)")
    print(f"{'case':34} {'without':>9} {'with':>9} {'added':>8} {'ratio':>7}")
    for r in rows:
        print(f"{r['case']:34} {r['without_p50_us']:9.3f} {r['with_p50_us']:9.3f} {r['added_us']:8.3f} {r['ratio']:7.3f}")
    imp = import_time()
    print(f"\nimport torch: {imp['torch_p50_s']:.3f} s; import jitdtypes adds {imp['added_p50_s']:.3f} s "
          f"(p80 {imp['added_p80_s']:.3f} s), ratio {imp['ratio']:.3f}")
    print(f"\nrows appended to {write_rows('overhead_per_call', rows)} and {write_rows('overhead_import', [imp])}")


if __name__ == "__main__":
    main()
