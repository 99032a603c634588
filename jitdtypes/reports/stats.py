"""`jitdtypes.stats()`: per (op, dtype, device), PyTorch's support, the path calls take, and the calls seen."""

from __future__ import annotations


def stats() -> list[dict]:
    """One row per (op, dtype, device) that jitdtypes knows about: its support in plain PyTorch, the path a
    call takes (native, template, upcast, or generated where a generated CPU kernel is installed or cached:
    its calls count with the path it stands in for) and the calls seen in this process, by path."""
    from .. import cpu_kernels, discovery, dtypes, installer
    from ..routing import path_record, registrar

    def generated(overload, dtype, device_type, path):
        known = dtypes.BY_NAME.get(dtype)
        return (path_record.GENERATED if device_type == "cpu" and known is not None
                and cpu_kernels.available(overload, known) else path)

    guard = installer.guard()
    calls = path_record.calls()
    rows = []
    for device_type in installer.device_types():
        found = installer.discoveries.get(device_type) or discovery.load_or_discover(device_type)
        for finding in found.findings:
            for dtype, support in sorted(finding.status.items()):
                key = (finding.overload, dtype, device_type)
                seen = calls.pop(key, {})
                planned = registrar.planned_path(finding.overload, device_type, support)
                path = max(seen, key=seen.get) if seen else planned
                rows.append(_row(key, support, generated(finding.overload, dtype, device_type, path), seen, guard))
        for dtype, names in sorted(found.supported.items()):
            rows += [_row((name, dtype, device_type), "native", generated(name, dtype, device_type, "native"), {},
                          guard) for name in names]
        for name in found.crashed:  # its probe crashed or hung: support unknown, PyTorch's kernel kept
            keys = [(name, dtypes.NAMES[d], device_type) for d in dtypes.COMPLEX_TARGETS]
            rows += [_row(key, "crashed", "native", calls.pop(key, {}), guard) for key in keys]
        if device_type == "cpu":  # ops PyTorch serves that a generated kernel takes over (sum): not listed above
            listed = {(r["op"], r["dtype"]) for r in rows if r["device"] == "cpu"}
            overridden = {(o, dtypes.NAMES[d]) for o, d in cpu_kernels.eligible if o in cpu_kernels.OVERRIDDEN}
            rows += [_row((o, d, "cpu"), "native", generated(o, d, "cpu", "native"), calls.pop((o, d, "cpu"), {}),
                          guard) for o, d in sorted(overridden - listed)]
    rows += [_row(key, "unknown", max(seen, key=seen.get), seen, guard) for key, seen in calls.items()]
    return sorted(rows, key=lambda r: (r["device"], r["dtype"], r["op"]))


def _row(key, support, path, seen, guard) -> dict:
    op, dtype, device = key
    return {
        "op": op, "dtype": dtype, "device": device, "support": support, "path": path,
        "calls": sum(seen.values()), "calls_by_path": dict(seen), "guard": guard,
    }
