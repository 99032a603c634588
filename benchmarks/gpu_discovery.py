"""GPU discovery check: a first import's discovery, on CUDA and CPU side by side as an import runs it, from an
empty cache in a fresh process; reports per device the time, the overloads probed, overrides, crashed
overloads (with why) and probing processes, and the wall time against the 90 s target.

    python -m benchmarks.gpu_discovery [--out DIR]        # needs CUDA; DIR gets the table, JSON and records
    python -m benchmarks.gpu_discovery --devices cpu --overloads aten::exp,aten::sin   # a quick CPU run

Exit status 1 when discovery took longer than the target. Rows are also appended to
benchmarks/results/gpu_discovery.csv.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

TARGET_S = 90.0

# Runs in a fresh process on an empty cache. A subset of overloads is probed without the cache (a partial
# result must never be stored where an import would read it).
_DISCOVER = """
import concurrent.futures, dataclasses, json, sys, time
from jitdtypes.discovery import results
devices, overloads = json.loads(sys.argv[1]), json.loads(sys.argv[2])
start = time.perf_counter()
if overloads is None:
    found = results.load_or_discover_all(devices)
else:
    workers = results.default_workers(len(devices))
    with concurrent.futures.ThreadPoolExecutor(len(devices)) as pool:
        found = dict(zip(devices, pool.map(lambda d: results.discover(d, overloads, workers), devices)))
wall = time.perf_counter() - start
print(json.dumps({"wall_s": wall, "devices": {d: {"overrides": len(f.findings), "crashed": f.crashed, **f.stats}
                                              for d, f in found.items()}}))
"""


def measure(devices: list[str], overloads: list[str] | None = None, keep: Path | None = None) -> dict:
    """Discovery of `devices` side by side in a fresh process with an empty cache (its discovery records are
    copied to `keep`): {"wall_s": ..., "devices": {device: {overrides, crashed, probed, workers, children,
    seconds}}}. Progress lines go to stderr as they come."""
    with tempfile.TemporaryDirectory(prefix="jitdtypes-gpu-discovery-") as cache:
        # probe: a shipped result (CPU on the CI builds) would be read, not measured
        env = {**os.environ, "JITDTYPES_CACHE_DIR": cache, "JITDTYPES_DISABLE": "1", "JITDTYPES_DISCOVERY": "probe"}
        run = subprocess.run([sys.executable, "-c", _DISCOVER, json.dumps(devices), json.dumps(overloads)],
                             env=env, stdout=subprocess.PIPE, text=True, check=True)
        if keep is not None and Path(cache, "discovery").is_dir():
            keep.mkdir(parents=True, exist_ok=True)
            for record in Path(cache, "discovery").glob("*.json"):
                shutil.copy(record, keep / record.name)
    return json.loads(run.stdout.strip().splitlines()[-1])


def table(result: dict) -> list[str]:
    lines = [f"{'device':8} {'probed':>7} {'overrides':>9} {'crashed':>7} {'processes':>9} {'workers':>7} "
             f"{'seconds':>8}"]
    for device, found in result["devices"].items():
        lines.append(f"{device:8} {found['probed']:>7} {found['overrides']:>9} {len(found['crashed']):>7} "
                     f"{found['children']:>9} {found['workers']:>7} {found['seconds']:>8.1f}")
    verdict = "within" if result["wall_s"] <= TARGET_S else "OVER"
    lines.append(f"all devices side by side: {result['wall_s']:.1f} s ({verdict} the {TARGET_S:.0f} s target)")
    for device, found in result["devices"].items():
        lines += [f"crashed on {device}: {name}: {why}" for name, why in sorted(found["crashed"].items())]
    return lines


def rows(result: dict) -> list[dict]:
    return [{"device_probed": device, "seconds": found["seconds"], "wall_s": round(result["wall_s"], 2),
             "probed": found["probed"], "overrides": found["overrides"], "crashed": len(found["crashed"]),
             "children": found["children"], "workers": found["workers"]}
            for device, found in result["devices"].items()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="cpu,cuda", help="comma-separated device types (default: cpu,cuda)")
    parser.add_argument("--overloads", help="comma-separated overloads to probe instead of all (not cached)")
    parser.add_argument("--out", type=Path, help="write gpu_discovery.txt, gpu_discovery.json and the records here")
    args = parser.parse_args(argv)
    devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    if "cuda" in devices and not torch.cuda.is_available():
        print("gpu_discovery needs a CUDA device for --devices cuda; none is available here "
              "(try --devices cpu)")
        return 0
    overloads = [o.strip() for o in args.overloads.split(",")] if args.overloads else None
    result = measure(devices, overloads, keep=args.out / "records" if args.out else None)
    device = torch.cuda.get_device_name() if "cuda" in devices else "cpu"
    lines = [f"torch {torch.__version__}, {device}, {os.cpu_count()} cores"] + table(result)
    print("\n".join(lines))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu_discovery.txt").write_text("\n".join(lines) + "\n")
        (args.out / "gpu_discovery.json").write_text(json.dumps(result, indent=1))
    from benchmarks.common import write_rows

    write_rows("gpu_discovery", rows(result))
    return 0 if result["wall_s"] <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
