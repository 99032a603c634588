"""First-call latency of a templated op on CPU (Triton interpreter backend): with an empty kernel cache
(render + write + import + register + run) and in a fresh process with a warm cache (read + verify + import
+ register + run), and warm with triton and torch._inductor already imported, as under torch.compile
(registering a triton_op imports torch._inductor, about a second the first time in a process). Each in its
own process; the discovery cache is warmed first so it is not counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from benchmarks.common import percentiles, write_rows

_CHILD = """
import json, time
import torch, jitdtypes
if {preload}:
    import triton, torch._inductor  # what a torch.compile user has loaded already
from jitdtypes import engine
x = torch.randn(1024, dtype=torch.complex64).to(torch.complex32)
start = time.perf_counter(); torch.exp(x); first = time.perf_counter() - start
start = time.perf_counter(); torch.exp(x); second = time.perf_counter() - start
print(json.dumps({"first_s": first, "second_s": second, **engine.counters}))
"""


def _child(cache: str, preload: bool = False) -> dict:
    env = {**os.environ, "JITDTYPES_CACHE_DIR": cache, "JITDTYPES_CPU_BACKEND": "triton-interpret"}
    code = _CHILD.replace("{preload}", str(preload))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(repeats: int = 5) -> None:
    discovery = os.environ.get("JITDTYPES_CACHE_DIR")
    cold, warm, preloaded = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            if discovery:  # reuse the discovery results and compiled guard, start with no kernels
                for part in ("discovery", "guard"):
                    os.symlink(os.path.join(discovery, part), os.path.join(cache, part))
            cold.append(_child(cache))
            warm.append(_child(cache))
            preloaded.append(_child(cache, preload=True))
    assert all(r.get("generated") == 1 for r in cold) and all(r.get("generated", 0) == 0 for r in warm)
    rows = []
    for label, runs in (("empty cache", cold), ("warm cache, fresh process", warm),
                        ("warm cache, triton+inductor imported", preloaded)):
        p20, p50, p80 = percentiles([r["first_s"] * 1e3 for r in runs])
        second = percentiles([r["second_s"] * 1e3 for r in runs])[1]
        rows.append({"case": f"torch.exp complex32, {label}", "first_call_p50_ms": round(p50, 1),
                     "first_call_p20_ms": round(p20, 1), "first_call_p80_ms": round(p80, 1),
                     "second_call_p50_ms": round(second, 2),
                     "generated": runs[0].get("generated", 0), "read_from_cache": runs[0].get("read_from_cache", 0)})
    print(f"{'case':58} {'first call':>11} {'second call':>12}  generated  read")
    for r in rows:
        print(f"{r['case']:58} {r['first_call_p50_ms']:8.1f} ms {r['second_call_p50_ms']:9.2f} ms  "
              f"{r['generated']:9}  {r['read_from_cache']:4}")
    print(json.dumps(rows))
    write_rows("latency", rows)


if __name__ == "__main__":
    main()
