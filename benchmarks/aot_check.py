"""Compiled-code check: every template kernel compiled for real GPUs, on a machine without one.

    python -m benchmarks.aot_check [--arch sm_80,sm_90] [--dtype complex32,bcomplex32] [--family fft,...]
                                   [--subset] [--kernels] [--json] [--jobs N]

Each family's variants() are rendered for CUDA and each module's `run` is called on CPU tensors of
representative shapes, with Triton's launcher replaced by a recorder that keeps the grid and the arguments
specialized as JITFunction.run would (pointer alignment, integers divisible by 16 or equal to 1). torch.cuda's
device queries answer for the target arch, so launchers pick the configs they would pick there. Every distinct
launch is compiled with triton.compile for that arch (PTX, then a cubin from the ptxas in the triton wheel) and
read back with the wheel's cuobjdump: registers, spills, shared memory, the narrowest and widest global load and
store, tensor-core and fp64 instructions, and for GEMMs the wgmma waits and whether operand tiles pass through
registers on their way to shared memory inside the K loop.

The cases, the recorder and the compile step live in jitdtypes/triton_kernels/aot.py, which `jitdtypes warm --arch` shares.

Prints one summary row per (arch, dtype, family) and every failed criterion (--kernels: one row per kernel
too), or JSON with --json. Table runs append rows to benchmarks/results/aot_check.csv. --subset compiles a few
variants per family (the CI test). Exit status 1 when a kernel does not compile or a criterion fails. Compiled
kernels land in Triton's cache (TRITON_CACHE_DIR), so a second run mostly reads them back.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from jitdtypes.triton_kernels.aot import (ARCHES, CASES, FILL, GEMM, STORE_WIDTH, WIDTH, Arch, Launch,
    compile_launch, families, map_launches, recording)
from jitdtypes import dtypes, torch_compat
from kernels_templates import common

FILL_PER_SM = 2  # 1M-element reductions and scans launch at least this many programs per SM
MIN_ACCESS_BITS = 64
MAX_SM80_GEMM_REGISTERS = 240

# --subset: a few variants per family, enough to notice a template that stops compiling for real GPUs.
SUBSET = {
    "unary": lambda p: p["op"] in ("exp", "abs") and p["layout"] == "interleaved" and not p["out"],
    "binary": lambda p: p["op"] == "mul" and p["layout"] == "interleaved" and not p["out"] and not p["scalars"],
    "ternary": lambda p: p["op"] == "where" and p["layout"] == "interleaved" and p["out"] and not p["scalars"],
    "reductions": lambda p: p["op"] == "var",
    "scans": lambda p: p["op"] == "cumsum",
    "matmul": lambda p: not p["conj_a"] and not p["conj_b"],
    "fft": lambda p: (p["op"], p["n"], p["inverse"]) in (("fft_c2c", 1024, False), ("fft_c2r", 2048, True)),
}


_SOURCES = Path(tempfile.mkdtemp(prefix="jitdtypes-aot-check-"))


def load_module(family, params: dict):
    """The module rendered for CUDA from params, executed from a file (compiled Triton reads its source back)."""
    source = family.render({**params, "interpret": False})
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = _SOURCES / f"{family.FAMILY}_{key}.py"
    path.write_text(source)
    return common.exec_source(source, f"aot_{family.FAMILY}_{key}", filename=str(path))


def variant_label(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items() if k not in ("dtype", "interpret"))


def collect(arch: Arch, selected: dict, dtype_names, subset: bool) -> tuple[list[dict], list[Launch], list[dict]]:
    """One row per distinct kernel launched for `arch`, listing the cases that launched it; the launches to
    compile (same order); one row per FILL case with the most programs any of its launches has."""
    rows, launches, index, fills = [], [], {}, []
    for family_name, family in selected.items():
        for dtype in dtype_names:
            for params in family.variants(dtype):
                if subset and not SUBSET[family_name](params):
                    continue
                run = load_module(family, params).run
                for case in CASES[family_name](family, params, run):
                    if subset and not case.subset:
                        continue
                    with recording(arch) as recorded:
                        run(*case.args)
                    if FILL in case.judge:
                        fills.append({"arch": arch.name, "family": family_name, "dtype": dtype,
                                      "variant": variant_label(params), "case": case.label,
                                      "programs": max(math.prod(launch.grid) for launch in recorded)})
                    for launch in recorded:
                        key = launch.key()
                        if key not in index:
                            index[key] = len(rows)
                            launches.append(launch)
                            rows.append({"arch": arch.name, "family": family_name, "dtype": dtype,
                                         "variant": variant_label(params), "kernel": launch.kernel.__name__,
                                         "num_warps": launch.options.num_warps,
                                         "num_stages": launch.options.num_stages, "cases": []})
                        rows[index[key]]["cases"].append({"case": case.label, "grid": list(launch.grid),
                                                          "programs": math.prod(launch.grid),
                                                          "judge": case.judged(launch.kernel.__name__)})
    return rows, launches, fills


# -- compiling and reading the code --------------------------------------------------------------------------

def _tool(name: str) -> str:
    import triton

    return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)


_LOAD = re.compile(r"\b(?:LDG|LDGSTS)\.[A-Z0-9_.]+")
_STORE = re.compile(r"\bSTG\.[A-Z0-9_.]+")
_FP64 = re.compile(r"\b(?:DADD|DMUL|DFMA|DSETP|DMNMX|DMMA)\b|\.F64\b")
_WGMMA_WAIT = re.compile(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)")


def _access_bits(instruction: str) -> int:
    tokens = set(instruction.split(".")[1:])
    for token, bits in (("256", 256), ("128", 128), ("64", 64), ("U16", 16), ("S16", 16), ("U8", 8), ("S8", 8)):
        if token in tokens:
            return bits
    return 32


def _access_counts(pattern, sass: str) -> dict[int, int]:
    """{bits: instructions} of the global accesses matching `pattern`, except reads of constant tables (the
    non-coherent LDG.E.CONSTANT: libdevice's sin/cos reduction reads its table of 2/pi bits that way)."""
    counts: dict[int, int] = {}
    for match in pattern.finditer(sass):
        if ".CONSTANT" in match.group(0):
            continue
        bits = _access_bits(match.group(0))
        counts[bits] = counts.get(bits, 0) + 1
    return dict(sorted(counts.items()))


def loop_round_trips(ttgir: str) -> int:
    """Register -> shared memory writes (local_alloc of a value, local_store) inside loops that run a dot: operand
    tiles that take a detour through registers every iteration instead of being copied to shared memory.
    MLIR prints a region's opening brace at the end of a line and its closing one at the start of a line."""
    count, stack = 0, []  # per open region: [is a loop, register -> shared writes, holds a dot]
    for line in ttgir.splitlines():
        text = line.strip()
        if text.startswith("}") and stack:
            is_loop, writes, has_dot = stack.pop()
            if is_loop and has_dot:
                count += writes
            elif stack:  # a branch inside a loop: its writes and dots are the loop's
                stack[-1][1] += writes
                stack[-1][2] = stack[-1][2] or has_dot
        if stack:
            stack[-1][1] += bool(re.search(r"ttg\.local_store|ttg\.local_alloc %", text))
            stack[-1][2] = stack[-1][2] or bool(re.search(r"warp_group_dot |tt\.dot |tc_gen5_mma ", text))
        if text.endswith("{"):
            stack.append([bool(re.search(r"\bscf\.for\b", text)), 0, False])
    return count


def ptxas_spills(ptx: str, arch: Arch, options) -> tuple[int, int]:
    """(spill store bytes, stack frame bytes) from `ptxas -v`, run with the options Triton runs it with."""
    from triton.backends.nvidia.compiler import sm_arch_from_capability

    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "kernel.ptx"
        source.write_text(ptx)
        extra = options.ptx_options.split() if options.ptx_options else []
        log = subprocess.run(
            [torch_compat.ptxas_path(arch.capability), "-lineinfo", "-v", "--regAllocOptLevel=2", *extra,
             f"--gpu-name={sm_arch_from_capability(arch.capability)}", str(source), "-o", f"{source}.o"],
            capture_output=True, text=True, check=True).stderr
    spills = sum(int(n) for n in re.findall(r"(\d+) bytes spill stores", log))
    stack = sum(int(n) for n in re.findall(r"(\d+) bytes stack frame", log))
    return spills, stack


def inspect_compiled(compiled, arch: Arch, options) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        cubin = Path(scratch) / "kernel.cubin"
        cubin.write_bytes(compiled.asm["cubin"])
        usage, sass = (subprocess.run([_tool("cuobjdump"), flag, str(cubin)], capture_output=True, text=True,
                                      check=True).stdout for flag in ("-res-usage", "-sass"))
    resources = {name: int(n) for name, n in re.findall(r"\b(REG|STACK|LOCAL):(\d+)", usage)}
    # Local memory holds spills or a stack frame (libdevice's sin/cos argument reduction for huge arguments keeps
    # an array there); only ptxas tells which, so it runs again for the kernels that use any.
    spills, stack = ptxas_spills(compiled.asm["ptx"], arch, options) if any(resources.values()) else (0, 0)
    return {
        "registers": resources.get("REG", 0),
        "spill_bytes": spills,
        "stack_bytes": stack,
        "shared_bytes": compiled.metadata.shared,
        "loads": _access_counts(_LOAD, sass),
        "stores": _access_counts(_STORE, sass),
        "table_loads": len(re.findall(r"\bLDG\.[A-Z0-9_.]*CONSTANT", sass)),
        "tma": len(re.findall(r"\bUTMA(?:LDG|STG)\b", sass)),
        "atomics": len(re.findall(r"\b(?:RED|ATOMG)\.", sass)),
        "tensor_core": {op: n for op in ("HMMA", "HGMMA", "LDSM") if (n := len(re.findall(rf"\b{op}\.", sass)))},
        "wgmma_waits": sorted({int(n) for n in _WGMMA_WAIT.findall(compiled.asm["ptx"])}),
        "fp64": len(_FP64.findall(sass)),
        "loop_round_trips": loop_round_trips(compiled.asm["ttgir"]),
    }


def compile_and_inspect(launch: Launch, arch: Arch) -> dict:
    started = time.perf_counter()
    try:
        compiled = compile_launch(launch, arch)
        result = {"compiled": True, **inspect_compiled(compiled, arch, launch.options)}
    except Exception as exc:  # noqa: BLE001 - a kernel that does not compile is a row of the report
        cause = exc.__cause__ or exc  # Triton's CompilationError names the source line, its cause the problem
        message = (str(cause).strip().splitlines() or [""])[0]
        result = {"compiled": False, "error": f"{type(cause).__name__}: {message[:300]}"}
    result["compile_s"] = round(time.perf_counter() - started, 2)
    return result


# -- criteria and tables ---------------------------------------------------------------------------------------

def failures(row: dict, arch: Arch) -> list[str]:
    """The issue's criteria this kernel misses, for the cases that launched it."""
    if not row["compiled"]:
        return [f"does not compile: {row['error']}"]
    missed = []
    if row["spill_bytes"]:
        missed.append(f"spills {row['spill_bytes']} bytes")
    judged = {name for case in row["cases"] for name in case["judge"]}
    narrowest_load, narrowest_store = min(row["loads"], default=None), min(row["stores"], default=None)
    if WIDTH in judged and narrowest_load is not None and narrowest_load < MIN_ACCESS_BITS:
        missed.append(f"{narrowest_load}-bit global loads")
    if STORE_WIDTH in judged and narrowest_store is not None and narrowest_store < MIN_ACCESS_BITS:
        missed.append(f"{narrowest_store}-bit global stores")
    if GEMM in judged:
        core = row["tensor_core"]
        if arch.capability >= 90:
            if not core.get("HGMMA") or max(row["wgmma_waits"], default=0) < 1:
                missed.append("wgmma waited on right after issue" if core.get("HGMMA") else "no wgmma")
            if row["loop_round_trips"]:
                missed.append(f"{row['loop_round_trips']} operand register->shared writes per K step")
        else:
            if not core.get("LDSM"):
                missed.append("no ldmatrix")
            if row["registers"] > MAX_SM80_GEMM_REGISTERS:
                missed.append(f"{row['registers']} registers")
    return missed


def summary(rows: list[dict], fills: list[dict]) -> list[dict]:
    """One row per (arch, dtype, family), keyed by the table's column titles (docs/GPU.md explains them)."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["arch"], row["dtype"], row["family"]), []).append(row)
    table = []
    for (arch_name, dtype, family), kernels in groups.items():
        needed = FILL_PER_SM * ARCHES[arch_name].sm_count
        ok = [k for k in kernels if k["compiled"]]
        judged = {name: [k for k in ok if name in {j for c in k["cases"] for j in c["judge"]}]
                  for name in (WIDTH, STORE_WIDTH, GEMM)}
        gemm = judged[GEMM]
        programs = [f["programs"] for f in fills if (f["arch"], f["dtype"], f["family"]) == (arch_name, dtype, family)]
        table.append({
            "arch": arch_name, "dtype": dtype, "family": family, "variants": len({k["variant"] for k in kernels}),
            "kernels": len(kernels), "compiled": len(ok), "max regs": max((k["registers"] for k in ok), default=0),
            "spilling": sum(bool(k["spill_bytes"]) for k in ok),
            "max spill B": max((k["spill_bytes"] for k in ok), default=0),
            "min load bits": min((min(k["loads"]) for k in judged[WIDTH] if k["loads"]), default=None),
            "min store bits": min((min(k["stores"]) for k in judged[STORE_WIDTH] if k["stores"]), default=None),
            "min programs 1M+": min(programs, default=None), "needed": needed if programs else None,
            "tensor core": "+".join(sorted({op for k in ok for op in k["tensor_core"]})) or "-",
            "wgmma waits": sorted({w for k in gemm for w in k["wgmma_waits"]}) if gemm else None,
            "K-loop reg->smem": max((k["loop_round_trips"] for k in gemm), default=None),
            "GEMM regs": max((k["registers"] for k in gemm), default=None),
            "fp64": sum(bool(k["fp64"]) for k in ok), "stack": sum(bool(k["stack_bytes"]) for k in ok),
            "failing": sum(bool(k["failures"]) for k in kernels) + sum(p < needed for p in programs),
        })
    return table


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return ",".join(map(str, value)) or "-"
    return str(value)


def markdown_table(table: list[dict]) -> str:
    titles = list(table[0]) if table else []
    lines = ["| " + " | ".join(titles) + " |", "|" + "---|" * len(titles)]
    return "\n".join(lines + ["| " + " | ".join(_cell(row[t]) for t in titles) + " |" for row in table])


def kernel_lines(rows: list[dict]) -> list[str]:
    lines = []
    for row in rows:
        cases = "; ".join(f"{c['case']}: {c['programs']} programs" for c in row["cases"])
        if row["compiled"]:
            code = (f"regs {row['registers']} spill {row['spill_bytes']} stack {row['stack_bytes']} "
                    f"smem {row['shared_bytes']} ld {row['loads']} st {row['stores']} tc {row['tensor_core']} "
                    f"waits {row['wgmma_waits']} round trips {row['loop_round_trips']} fp64 {row['fp64']}")
        else:
            code = row["error"]
        lines.append(f"{row['arch']} {row['dtype']:10} {row['family']:10} {row['variant']} [{row['kernel']} "
                     f"w{row['num_warps']} s{row['num_stages']}] {cases} | {code} ({row['compile_s']} s)")
    return lines


def check(arch_names, dtype_names, family_names, subset: bool, jobs: int) -> tuple[list[dict], list[dict]]:
    """(kernel rows with their compiled code and failed criteria, FILL case rows)."""
    selected = {name: module for name, module in families().items() if name in family_names}
    all_rows, all_fills = [], []
    for arch_name in arch_names:
        arch = ARCHES[arch_name]
        rows, launches, fills = collect(arch, selected, dtype_names, subset)
        for row, result in zip(rows, map_launches(compile_and_inspect, launches, arch, jobs)):
            row.update(result)
            row["failures"] = failures(row, arch)
        for fill in fills:
            fill["enough"] = fill["programs"] >= FILL_PER_SM * arch.sm_count
        all_rows += rows
        all_fills += fills
    return all_rows, all_fills


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_80,sm_90", help="comma-separated, from " + ", ".join(ARCHES))
    parser.add_argument("--dtype", default=",".join(dtypes.COMPLEX_BY_NAME), help="comma-separated 16-bit complex dtypes")
    parser.add_argument("--family", default=",".join(CASES), help="comma-separated template families")
    parser.add_argument("--subset", action="store_true", help="a few variants per family (the CI test)")
    parser.add_argument("--kernels", action="store_true", help="also print one line per kernel")
    parser.add_argument("--json", action="store_true", help="print JSON (kernels, fill cases, summary) instead")
    parser.add_argument("--jobs", type=int, default=1, help="compile in this many processes")
    args = parser.parse_args(argv)
    arch_names, dtype_names, family_names = (value.split(",") for value in (args.arch, args.dtype, args.family))
    unknown = sorted(set(arch_names) - set(ARCHES)) + sorted(set(dtype_names) - set(dtypes.COMPLEX_BY_NAME))
    unknown += sorted(set(family_names) - set(CASES))
    if unknown:
        parser.error(f"unknown arch, dtype or family: {', '.join(unknown)}")

    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*support is experimental")  # the 16-bit complex dtypes
        rows, fills = check(arch_names, dtype_names, family_names, args.subset, args.jobs)
    table = summary(rows, fills)
    missed = [f"{r['arch']} {r['dtype']} {r['family']} {r['variant']} [{r['kernel']}]: {', '.join(r['failures'])}"
              for r in rows if r["failures"]]
    missed += [f"{f['arch']} {f['dtype']} {f['family']} {f['variant']}: {f['programs']} programs for {f['case']}"
               for f in fills if not f["enough"]]
    if args.json:
        print(json.dumps({"kernels": rows, "fill": fills, "summary": table}, indent=1))
    else:
        if args.kernels:
            print("\n".join(kernel_lines(rows)))
        print(markdown_table(table))
        print(f"{len(rows)} kernels, {sum(r['compiled'] for r in rows)} compiled, {len(missed)} criteria missed, "
              f"{time.perf_counter() - started:.0f} s")
        print("\n".join(missed))
        from benchmarks.common import write_rows

        write_rows("aot_check", [{"kind": "summary", **row} for row in table])
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
