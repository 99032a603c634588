"""`jitdtypes warm`: generate every template kernel for some dtypes ahead of time (and on CUDA compile
them, so the first real call does not)."""

from __future__ import annotations

import dataclasses
import importlib

from jitdtypes.cache_tools.store import KernelStore

from . import engine, selftest


@dataclasses.dataclass
class Summary:
    total: int = 0
    generated: int = 0
    cached: int = 0
    compiled: int = 0
    failed: list = dataclasses.field(default_factory=list)  # (label, error)


def kernels_to_warm(dtype_names: list[str], ops: set[str] | None) -> list[tuple[str, dict]]:
    wanted = []
    for family in engine.FAMILIES:
        module = importlib.import_module(f"jitdtypes.kernels_templates.{family}")
        for dtype in dtype_names:
            wanted += [(family, params) for params in module.variants(dtype) if not ops or params["op"] in ops]
    return wanted


def warm(dtype_names: list[str], device_type: str, ops: set[str] | None = None, progress=None) -> Summary:
    """progress(done, total, label) is called before each kernel."""
    kernels = kernels_to_warm(dtype_names, ops)
    summary = Summary(total=len(kernels))
    store = KernelStore()
    for done, (family, params) in enumerate(kernels):
        label = f"{family}/{params['op']} {params.get('dtype')} " + " ".join(
            f"{k}={v}" for k, v in sorted(params.items()) if k not in ("op", "dtype", "interpret"))
        if progress:
            progress(done, summary.total, label)
        try:
            _, generated = engine.ensure_source(store, family, {**params, "interpret": device_type == "cpu"},
                                                device_type)
        except Exception as exc:  # noqa: BLE001 - reported in the summary, the run goes on
            summary.failed.append((label, f"{type(exc).__name__}: {exc}"))
            continue
        summary.generated += generated
        summary.cached += not generated
    if device_type == "cuda":
        _compile(dtype_names, ops, summary, progress)
    return summary


def _compile(dtype_names, ops, summary: Summary, progress) -> None:
    """Run each family's representative calls once on the GPU: Triton compiles what they launch."""
    calls = [c for c in selftest.representative_calls("cuda", small=True)
             if not ops or c[2].removeprefix("aten::").split(".")[0] in ops]
    for index, (family, label, overload, build, _) in enumerate(calls):
        for dtype_name in dtype_names:
            if progress:
                progress(index, len(calls), f"compile {family}/{label} {dtype_name}")
            try:
                args, kwargs, _, _ = build(selftest.target_dtypes()[dtype_name])
                if engine.adapter_for(overload, "cuda")(tuple(args), kwargs) is NotImplemented:
                    raise RuntimeError("the adapter declined its representative call")
                summary.compiled += 1
            except Exception as exc:  # noqa: BLE001
                summary.failed.append((f"compile {family}/{label} {dtype_name}", f"{type(exc).__name__}: {exc}"))
