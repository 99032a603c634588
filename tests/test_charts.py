"""benchmarks.charts on small synthetic CSVs: the ratios it reads are the rows' values, latest run first, and
the charts it draws are PNG files."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import charts

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
REPOSITORY = Path(__file__).parent.parent


def _write(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for row in rows for k in row)), restval="")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _eager_row(dtype, call, elements, ratio):
    family = {"x.exp()": "elementwise", "x.cumsum(0)": "scans"}.get(call, "")
    return {"dtype": dtype, "call": call, "family": family, "elements": elements, "complex64_us": 10.0,
            "jitdtypes_us": round(10.0 / ratio, 3), "complex64_over_jitdtypes": ratio, "machine": "x86_64"}


EAGER_ROWS = [
    _eager_row("complex32", "x.exp()", 1048576, 9.5),  # an earlier run of this call, superseded below
    _eager_row("complex32", "x.exp()", 4096, 3.0),
    _eager_row("complex32", "x.exp()", 1048576, 16.1),
    _eager_row("complex32", "x.cumsum(0)", 1048576, 0.57),
    _eager_row("complex32", "m @ m 512^2", 262144, 0.97),  # measured at one size only
    _eager_row("bcomplex32", "x.exp()", 1048576, 27.31),
    _eager_row("bcomplex32", "x.cumsum(0)", 1048576, 0.62),
]


def _compile_row(device, program, dtype, way, min_ms):
    return {"device": device, "program": program, "dtype": dtype, "way": way, "min_ms": min_ms,
            "median_ms": min_ms * 1.1, "first_call_s": 3.0}


COMPILE_ROWS = [
    _compile_row("cpu", "elementwise chain", "complex32", "compiled jitdtypes", 1.35),
    _compile_row("cpu", "elementwise chain", "complex32", "compiled complex64", 20.6),
    _compile_row("cpu", "elementwise chain", "bcomplex32", "compiled jitdtypes", 0.71),
    _compile_row("cpu", "elementwise chain", "bcomplex32", "compiled complex64", 20.1),
    _compile_row("cpu", "spectral conv fwd+bwd", "complex32", "compiled jitdtypes", 2.79),
    _compile_row("cpu", "spectral conv fwd+bwd", "complex32", "compiled complex64", 2.43),
    {"device": "cpu", "program": "spectral conv fwd+bwd", "dtype": "complex32", "way": "compiled ComplexTensor",
     "note": "no FFT"},  # a way that did not run
    {"device": "cpu", "program": "elementwise chain bandwidth", "dtype": "complex32", "way": "compiled jitdtypes",
     "GB_per_s": 10.0},
]


def test_eager_ratios_are_the_latest_rows_values_at_the_chosen_size():
    ratios, elements = charts.eager_ratios([{k: str(v) for k, v in r.items()} for r in EAGER_ROWS])
    assert elements == 1048576
    assert ratios == {"complex32": {"x.exp()": 16.1, "x.cumsum(0)": 0.57, "m @ m 512^2": 0.97},
                      "bcomplex32": {"x.exp()": 27.31, "x.cumsum(0)": 0.62}}
    assert charts.eager_ratios([{k: str(v) for k, v in r.items()} for r in EAGER_ROWS], 4096)[0]["complex32"] == {
        "x.exp()": 3.0, "m @ m 512^2": 0.97}
    assert charts.families(EAGER_ROWS) == {"x.exp()": "elementwise", "x.cumsum(0)": "scans", "m @ m 512^2": ""}


def test_compile_ratios_are_compiled_complex64_over_compiled_jitdtypes():
    ratios = charts.compile_ratios([{k: str(v) for k, v in r.items()} for r in COMPILE_ROWS])
    assert ratios == {"cpu": {"complex32": {"elementwise chain": 20.6 / 1.35, "spectral conv fwd+bwd": 2.43 / 2.79},
                              "bcomplex32": {"elementwise chain": 20.1 / 0.71}}}


def test_charts_are_drawn_as_png_files(tmp_path):
    pytest.importorskip("matplotlib")
    _write(tmp_path / "cpu_eager.csv", EAGER_ROWS)
    _write(tmp_path / "compile.csv", COMPILE_ROWS)
    out = tmp_path / "charts"
    run = subprocess.run([sys.executable, "-m", "benchmarks.charts", "--results", str(tmp_path), "--out", str(out)],
                         cwd=REPOSITORY, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    for name in ("cpu_eager.png", "compile.png"):
        data = (out / name).read_bytes()
        assert len(data) > len(PNG_SIGNATURE) and data.startswith(PNG_SIGNATURE), name
        assert str(out / name) in run.stdout


def test_without_matplotlib_the_chart_flag_says_what_to_install(tmp_path):
    # a module that raises ImportError stands in for a missing matplotlib; the benchmarks exit before they
    # enable jitdtypes, so the check must come first
    (tmp_path / "matplotlib.py").write_text("raise ImportError('no matplotlib here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPOSITORY)]), "JITDTYPES_DISABLE": "1"}
    for module in ("benchmarks.charts", "benchmarks.cpu_eager", "benchmarks.compile"):
        args = [] if module == "benchmarks.charts" else ["--chart"]
        run = subprocess.run([sys.executable, "-m", module, *args], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)
        assert run.returncode != 0, module
        assert run.stderr.strip().splitlines()[-1] == charts.INSTALL_HINT, (module, run.stderr)
