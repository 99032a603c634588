"""Charts of the main comparisons, 16-bit complex against complex64, drawn from the benchmarks' CSV rows.

    python -m benchmarks.charts [--results benchmarks/results] [--out docs/charts] [--elements 1048576]

cpu_eager.png  eager CPU calls (benchmarks.cpu_eager): complex64's median time over the 16-bit call's, per call,
               grouped by op family, at one size (--elements; default 1M elements where measured, else the
               largest size measured).
compile.png    compiled programs (benchmarks.compile): compiled complex64's fastest call over compiled jitdtypes',
               per program, one panel per device.

One bar per 16-bit dtype; above the line at 1.0 the 16-bit dtype is faster than complex64. The CSVs accumulate
every run, so each bar is the latest row of its (call or program, dtype, size or device). `benchmarks.cpu_eager
--chart` and `benchmarks.compile --chart` draw their chart after a run. Needs matplotlib (pip install
".[charts]"), imported only when a chart is drawn; this module imports neither torch nor jitdtypes.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
DEFAULT_OUT = Path(__file__).parent.parent / "docs" / "charts"
EAGER_ELEMENTS = 1 << 20  # the size issue 23's eager targets are stated at
WIDE_RANGE = 10  # largest ratio over smallest beyond which the ratio axis is logarithmic
INSTALL_HINT = 'the charts need matplotlib: pip install ".[charts]"'

Ratios = dict[str, dict[str, float]]  # dtype -> label (call or program) -> complex64 time / 16-bit time


def require_matplotlib() -> None:
    """Exit with one line saying what to install when matplotlib is missing (before a long benchmark run)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit(INSTALL_HINT) from None


def read_rows(path: Path) -> list[dict]:
    with Path(path).open(newline="") as f:
        return list(csv.DictReader(f))


def latest(rows: list[dict], *columns: str) -> list[dict]:
    """The last row of each combination of `columns` (runs are appended in order), in first-seen order."""
    found: dict[tuple, dict] = {}
    for row in rows:
        found[tuple(row.get(column, "") for column in columns)] = row
    return list(found.values())


def eager_ratios(rows: list[dict], elements: int | None = None) -> tuple[Ratios, int]:
    """benchmarks.cpu_eager's `complex64_over_jitdtypes` per dtype and call at `elements` (see the module's
    docstring for the default), and the size chosen. A call measured at a size of its own (the 512x512 matmul)
    keeps that size."""
    rows = [r for r in latest(rows, "dtype", "call", "elements") if r.get("complex64_over_jitdtypes")]
    if not rows:
        return {}, 0
    calls_at: dict[int, set[str]] = {}
    for r in rows:
        calls_at.setdefault(int(r["elements"]), set()).add(r["call"])
    if elements is None:
        elements = EAGER_ELEMENTS if EAGER_ELEMENTS in calls_at else max(calls_at)
    ratios: Ratios = {}
    for r in rows:
        if int(r["elements"]) == elements:
            ratios.setdefault(r["dtype"], {})[r["call"]] = float(r["complex64_over_jitdtypes"])
    for r in rows:
        if calls_at[int(r["elements"])] == {r["call"]} and r["call"] not in ratios.get(r["dtype"], {}):
            ratios.setdefault(r["dtype"], {})[r["call"]] = float(r["complex64_over_jitdtypes"])
    return ratios, elements


def families(rows: list[dict]) -> dict[str, str]:
    """Call -> op family, from benchmarks.cpu_eager's `family` column (rows without one: no family)."""
    return {r["call"]: r.get("family") or "" for r in rows}


def compile_ratios(rows: list[dict]) -> dict[str, Ratios]:
    """Per device: compiled complex64's fastest call over compiled jitdtypes' (benchmarks.compile's `min_ms`),
    per dtype and program, where both ran."""
    fastest: dict[tuple[str, str, str, str], float] = {}
    for r in latest(rows, "device", "program", "dtype", "way"):
        if r.get("min_ms"):
            fastest[r["device"], r["program"], r["dtype"], r["way"]] = float(r["min_ms"])
    ratios: dict[str, Ratios] = {}
    for (device, program, dtype, way), ms in fastest.items():
        wide = fastest.get((device, program, dtype, "compiled complex64"))
        if way == "compiled jitdtypes" and wide:
            ratios.setdefault(device, {}).setdefault(dtype, {})[program] = wide / ms
    return ratios


def draw(panels: list[tuple[str, Ratios]], ylabel: str, path: Path, groups: dict[str, str] | None = None) -> Path:
    """Grouped bars, one panel per (title, ratios), one bar per dtype, a line at 1.0; labels ordered by `groups`
    (label -> group name, named above each group); written as a PNG."""
    from matplotlib.figure import Figure  # no pyplot: no display backend, no global figure state
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    groups = groups or {}
    values = [v for _, ratios in panels for by_label in ratios.values() for v in by_label.values() if v > 0]
    logarithmic = bool(values) and max(values) / min(values) > WIDE_RANGE
    labels_per_panel = []
    for _, ratios in panels:
        labels = list(dict.fromkeys(label for by_label in ratios.values() for label in by_label))
        order = list(dict.fromkeys(groups.get(label, "") for label in labels))
        labels_per_panel.append(sorted(labels, key=lambda label: order.index(groups.get(label, ""))))
    width = max(6.0, 0.45 * max((len(labels) for labels in labels_per_panel), default=1) + 2)
    figure = Figure(figsize=(width, 4.4 * len(panels)), layout="constrained")
    for axes, (title, ratios), labels in zip(figure.subplots(len(panels), 1, squeeze=False)[:, 0], panels,
                                             labels_per_panel):
        bar = 0.8 / max(1, len(ratios))
        for i, (dtype, by_label) in enumerate(ratios.items()):
            positions = [j + (i - (len(ratios) - 1) / 2) * bar for j, label in enumerate(labels) if label in by_label]
            axes.bar(positions, [by_label[label] for label in labels if label in by_label], bar, label=dtype)
        axes.axhline(1.0, color="black", linewidth=0.8)
        if logarithmic:
            axes.set_yscale("log")
            axes.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
            axes.yaxis.set_minor_formatter(NullFormatter())
        _name_groups(axes, [groups.get(label, "") for label in labels])
        axes.set_xlim(-0.6, len(labels) - 0.4)
        axes.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=8)
        axes.margins(y=0.12)  # room for the group names above the tallest bar
        axes.set_ylabel(ylabel)
        axes.set_title(title, fontsize=10, loc="left")
        axes.legend(fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=len(ratios), frameon=False)
        axes.grid(axis="y", alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    return path


def _name_groups(axes, group_of_position: list[str]) -> None:
    """A dotted line between groups of bars, and each group's name at the top of the panel."""
    start = 0
    for end in range(1, len(group_of_position) + 1):
        if end < len(group_of_position) and group_of_position[end] == group_of_position[start]:
            continue
        if group_of_position[start]:
            axes.text((start + end - 1) / 2, 0.98, group_of_position[start], transform=axes.get_xaxis_transform(),
                      ha="center", va="top", fontsize=8, color="dimgray")
        if end < len(group_of_position):
            axes.axvline(end - 0.5, color="gray", linestyle=":", linewidth=0.8)
        start = end


def draw_eager(results: Path = RESULTS, out: Path = DEFAULT_OUT, elements: int | None = None) -> Path:
    rows = read_rows(Path(results) / "cpu_eager.csv")
    ratios, chosen = eager_ratios(rows, elements)
    if not ratios:
        raise SystemExit(f"no rows with timings in {Path(results) / 'cpu_eager.csv'}")
    title = f"eager on CPU, {chosen:,} elements (16-bit faster above 1)"
    return draw([(title, ratios)], "complex64 time / 16-bit time", Path(out) / "cpu_eager.png", families(rows))


def draw_compile(results: Path = RESULTS, out: Path = DEFAULT_OUT) -> Path:
    per_device = compile_ratios(read_rows(Path(results) / "compile.csv"))
    if not per_device:
        raise SystemExit(f"no program with both compiled ways timed in {Path(results) / 'compile.csv'}")
    panels = [(f"torch.compile on {device} (16-bit faster above 1)", ratios) for device, ratios in per_device.items()]
    return draw(panels, "compiled complex64 / compiled 16-bit", Path(out) / "compile.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS, help="the directory holding the CSVs")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the directory the PNGs go to")
    parser.add_argument("--elements", type=int, help="the size of the eager chart (default: 1M where measured)")
    options = parser.parse_args()
    require_matplotlib()
    drawers = {"cpu_eager.csv": lambda: draw_eager(options.results, options.out, options.elements),
               "compile.csv": lambda: draw_compile(options.results, options.out)}
    present = [name for name in drawers if (options.results / name).exists()]
    if not present:
        raise SystemExit(f"no cpu_eager.csv or compile.csv in {options.results}: run benchmarks.cpu_eager or "
                         "benchmarks.compile first")
    for name in present:
        print("chart:", drawers[name]())


if __name__ == "__main__":
    main()
