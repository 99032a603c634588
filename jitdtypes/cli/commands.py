"""`jitdtypes ops`, `warm` and `demo`: the commands that run the library."""

from __future__ import annotations

import json
import os
import sys

from .parser import UsageError


def print_table(rows: list[dict], columns: list[str]) -> None:
    widths = {c: max([len(c)] + [len(str(r[c])) for r in rows]) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns).rstrip())
    for row in rows:
        print("  ".join(str(row[c]).ljust(widths[c]) for c in columns).rstrip())


def _enable_unless_disabled() -> None:
    import jitdtypes

    if os.environ.get("JITDTYPES_DISABLE", "").strip() in ("", "0"):
        jitdtypes.enable()


def _refuse_absent_dtype(name: str | None) -> None:
    """A 16-bit complex dtype this torch build lacks is a usage error, said with the release that has it."""
    from jitdtypes import dtypes

    if name in dtypes.ABSENT:
        raise UsageError(f"--dtype {name}: {dtypes.ABSENT[name]}")


def _refuse_absent_cuda(device: str | None) -> None:
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device here")


def ops(args) -> int:
    import jitdtypes

    _refuse_absent_dtype(args.dtype)
    _refuse_absent_cuda(args.device)
    _enable_unless_disabled()
    rows = jitdtypes.stats()
    if args.dtype:
        rows = [r for r in rows if r["dtype"] == args.dtype]
    if args.device:
        rows = [r for r in rows if r["device"] == args.device]
    if args.path:
        rows = [r for r in rows if r["path"] == args.path]
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    registration = jitdtypes.installer.registration()
    if registration is not None:
        from jitdtypes import native_guard

        typed = f", {len(registration.typed)} of {len(registration.keys)} typed" if registration.compiled else ""
        why = native_guard.why_python() if registration.compiled is None else None
        print(f"guard: {registration.guard}{typed}" + (f" ({why})" if why else ""))
    print_table(rows, ["op", "dtype", "device", "support", "path", "calls"])
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["path"]] = counts.get(row["path"], 0) + 1
    crashed = sum(row["support"] == "crashed" for row in rows)
    print(f"{len(rows)} (op, dtype, device) rows: " + ", ".join(f"{n} {p}" for p, n in sorted(counts.items()))
          + (f"; {crashed} crashed in probing (they keep PyTorch's kernel)" if crashed else ""))
    return 0


def arches_named(names: list[str] | None) -> list:
    from ..triton_kernels import aot

    try:
        return [aot.arch_named(name) for name in names or []]
    except ValueError as exc:
        raise UsageError(f"--arch: {exc}") from None


def warm(args) -> int:
    import torch

    from .. import dtype_table, dtypes
    from . import warm

    arches = arches_named(args.arch)
    device = args.device or ("cuda" if torch.cuda.is_available() or arches else "cpu")
    if arches and device != "cuda":
        raise UsageError("--arch compiles for GPUs: use it with --device cuda")
    if device == "cuda" and not arches and not torch.cuda.is_available():
        raise UsageError("no CUDA device here: name the GPU arches to compile for, e.g. --arch sm_80,sm_90")
    _refuse_absent_dtype(args.dtype)
    names = sorted(n for n in dtype_table.COMPLEX if n not in dtypes.ABSENT) if args.dtype == "all" else [args.dtype]
    ops = set(args.ops) if args.ops else None
    without_triton = warm.triton_missing()
    if without_triton and device == "cuda":
        raise UsageError(f"--device cuda makes Triton kernels, and {without_triton}")
    if without_triton:
        from ..cpu_kernels import table

        known, kind = {o.removeprefix("aten::").split(".")[0] for o in (*table.GENERATED, *table.WRITING)}, "CPU"
    else:
        known, kind = {params["op"] for _, params in warm.kernels_to_warm(names, None)}, "template"
    if ops and not ops <= known:
        raise UsageError(f"--ops: unknown ops {sorted(ops - known)}; {kind} ops are: {', '.join(sorted(known))}")

    guard_line = _warm_guard()
    _warm_discovery()
    if device == "cpu":  # the registrar offers the generated CPU kernels to build (the command imports jitdtypes
        _enable_unless_disabled()  # without enabling it)
    progress = warm.ProgressReport(sys.stderr, sys.stderr.isatty())
    try:
        summary = warm.warm(names, device, ops, progress, arches, args.jobs)
    finally:
        progress.close()
    for label, error in summary.failed:
        print(f"failed: {label}: {error}")
    compiled = (f", compiled {summary.compiled} (Triton cache files {summary.triton_bytes:,} bytes)"
                if device == "cuda" else "")
    target = f"{device} {','.join(a.name for a in arches)}" if arches else device
    print(guard_line)
    if without_triton:
        print(f"Triton kernels skipped: {without_triton}")
    peak = f", largest build {summary.build_peak_rss / 2 ** 20:.0f} MB" if summary.build_peak_rss else ""
    print(f"warm {','.join(names)} on {target}: {summary.total} kernels: generated {summary.generated}, "
          f"already cached {summary.cached}{compiled}, failed {len(summary.failed)}{peak}")
    return 1 if summary.failed else 0


def _warm_discovery() -> None:
    """Probe every device here that has no cached discovery results (whatever JITDTYPES_DISCOVERY says)."""
    from jitdtypes import discovery, installer

    for found in discovery.load_or_discover_all(installer.device_types()).values():
        print(discovery.summary(found))


def _warm_guard() -> str:
    """Build (or find) the compiled dispatch guard, as the next import would; a remembered failed build is
    tried again."""
    from jitdtypes import native_guard

    try:
        chosen = native_guard.resolve(retry=True)
    except native_guard.GuardUnavailable as exc:
        return f"guard: unavailable ({exc})"
    if chosen != native_guard.COMPILED:
        return f"guard: {chosen} ({native_guard.why_python()})"
    return f"guard: compiled, {native_guard.info()['path']}"


def demo(args) -> int:
    from . import demo

    _refuse_absent_cuda(args.device)
    _enable_unless_disabled()
    return demo.run(device=args.device, size=args.size)
