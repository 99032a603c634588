"""The `jitdtypes` command itself: help without torch, help text for every option, examples that parse, one-line
errors with exit status 2 (bad command line) or 1 (the operation failed), and warm's progress report."""

import argparse
import io
import json
import math
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import jitdtypes
from jitdtypes import dtype_table, dtypes
from jitdtypes.cli import warm
from jitdtypes.cli import parser
from tests.conftest import CLI, seed_cache

HELP_COMMANDS = [["--help"], ["--version"], ["ops", "--help"], ["warm", "--help"], ["cache", "--help"],
                 *(["cache", name, "--help"] for name in ("info", "list", "show", "clean", "verify", "export",
                                                          "import")),
                 ["demo", "--help"]]


def _run(*args, cache: Path | None = None, **env) -> subprocess.CompletedProcess:
    environment = {**os.environ, **env}
    if cache is not None:
        environment["JITDTYPES_CACHE_DIR"] = str(cache)
    return subprocess.run([CLI, *args], env=environment, capture_output=True, text=True, timeout=600)


def _imported(import_times: str) -> set[str]:
    """The modules `python -X importtime` (PYTHONPROFILEIMPORTTIME) reports, from lines such as
    `import time:       412 |       1290 |   jitdtypes.cli.parser`."""
    fields = [line.removeprefix("import time:").split("|") for line in import_times.splitlines()
              if line.startswith("import time:")]
    return {f[2].strip() for f in fields if len(f) == 3 and f[0].strip().isdigit()}


@pytest.mark.parametrize("args", HELP_COMMANDS, ids=" ".join)
def test_help_and_version_do_not_import_torch(args):
    run = _run(*args, PYTHONPROFILEIMPORTTIME="1")
    assert run.returncode == 0, run.stderr[-2000:]
    if args == ["--version"]:
        assert run.stdout == f"jitdtypes {jitdtypes.__version__}\n"
    else:
        assert run.stdout.startswith(f"usage: jitdtypes {' '.join(args[:-1])}".rstrip())
    modules = _imported(run.stderr)
    assert "argparse" in modules and "jitdtypes.cli.parser" in modules  # the report did cover this run
    heavy = {m for m in modules if m.split(".")[0] in ("torch", "triton", "numpy")}
    assert heavy == set()


def test_python_m_runs_the_command():
    run = subprocess.run([sys.executable, "-m", "jitdtypes.cli", "--version"], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and run.stdout == f"jitdtypes {jitdtypes.__version__}\n", run.stderr


def _parsers(top: argparse.ArgumentParser):
    """(parser, its subcommands action or None) for the top parser and every subcommand, depth first."""
    yield top
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_command_option_and_positional_has_help():
    top = parser.build()
    undocumented = []
    for each in _parsers(top):
        for action in each._actions:
            if isinstance(action, argparse._SubParsersAction):
                undocumented += [f"{each.prog} {c.dest}" for c in action._choices_actions if not c.help]
            elif not action.help:
                undocumented.append(f"{each.prog} {'/'.join(action.option_strings) or action.dest}")
        assert each.description, each.prog
    assert undocumented == []


def _examples(epilog: str) -> list[str]:
    return [re.split(r"\s{2,}", line.strip())[0] for line in epilog.splitlines() if line.startswith("  jitdtypes ")]


def test_examples_are_command_lines_the_parser_takes():
    top = parser.build()
    by_prog = {each.prog: each for each in _parsers(top)}
    with_examples = {prog: _examples(by_prog[prog].epilog or "") for prog in
                     ("jitdtypes", "jitdtypes ops", "jitdtypes warm", "jitdtypes cache", "jitdtypes demo")}
    assert all(len(examples) >= 2 for examples in with_examples.values()), with_examples
    for examples in with_examples.values():
        for example in examples:
            words = shlex.split(example.split(">")[0])
            args = top.parse_args(words[1:])  # exits (a SystemExit failing the test) when it does not parse
            assert args.command == words[1]
    assert top.parse_args(["demo", "--device", "cpu", "--size", "1024"]).size == 1024
    assert top.parse_args(["cache", "clean", "--older-than", "12h"]).older_than == 12 * 3600
    assert top.parse_args(["warm", "--dtype", "all", "--ops", " exp, mul,"]).ops == ["exp", "mul"]


def test_static_dtype_names_are_this_torch_builds():
    # a build without a complex dtype lacks its name, not its part's (torch.bfloat16 predates torch.bcomplex32)
    present = [row for row in dtype_table.SIXTEEN_BIT if row.name not in dtypes.ABSENT]
    assert set(dtypes.BY_NAME) == {name for row in present for name in (row.name, row.part)}
    assert set(dtypes.BY_NAME) | set(dtypes.ABSENT) >= set(dtype_table.COMPLEX)
    assert set(dtypes.ABSENT) <= set(dtype_table.FIRST_RELEASE)
    assert [dtypes.NAMES[d] for d in dtypes.COMPLEX_TARGETS] == [n for n in dtype_table.COMPLEX
                                                                 if n not in dtypes.ABSENT]


# (command line, exit status, what the one line on stderr says). A missing path or an unknown value is a bad
# command line (2); a file system that refuses, or an archive that is not one, is a failed operation (1).
BAD_COMMAND_LINES = [
    (["nonsense"], 2, "jitdtypes: argument COMMAND: invalid choice: 'nonsense'"),
    ([], 2, "jitdtypes: the following arguments are required: COMMAND"),
    (["cache"], 2, "jitdtypes cache: the following arguments are required: CACHE_COMMAND"),
    (["warm", "--dtype", "all", "--jobs", "0"], 2, "jitdtypes warm: argument --jobs: not a positive integer: '0'"),
    (["warm", "--dtype", "all", "--jobs=-3"], 2, "jitdtypes warm: argument --jobs: not a positive integer: '-3'"),
    (["warm", "--dtype", "all", "--jobs", "many"], 2,
     "jitdtypes warm: argument --jobs: not a positive integer: 'many'"),
    (["warm", "--dtype", "float16"], 2, "jitdtypes warm: argument --dtype: invalid choice: 'float16'"),
    (["warm"], 2, "jitdtypes warm: the following arguments are required: --dtype"),
    (["warm", "--dtype", "all", "--ops", ","], 2, "jitdtypes warm: argument --ops: no names in ','"),
    (["warm", "--dtype", "all", "--ops", "exp,nonsense"], 2, "jitdtypes warm: --ops: unknown ops ['nonsense']; "
                                                             "template ops are: abs,"),
    (["warm", "--dtype", "all", "--arch", "ampere"], 2, "jitdtypes warm: --arch: not an arch like sm_80 or sm_90"),
    (["warm", "--dtype", "all", "--device", "cpu", "--arch", "sm_90"], 2,
     "jitdtypes warm: --arch compiles for GPUs: use it with --device cuda"),
    (["ops", "--path", "fast"], 2, "jitdtypes ops: argument --path: invalid choice: 'fast'"),
    (["ops", "--dtype", "complex64"], 2, "jitdtypes ops: argument --dtype: invalid choice: 'complex64'"),
    (["demo", "--size", "0"], 2, "jitdtypes demo: argument --size: not a positive integer: '0'"),
    (["demo", "--device", "tpu"], 2, "jitdtypes demo: argument --device: invalid choice: 'tpu'"),
    (["cache", "list", "--dtype", "half"], 2, "jitdtypes cache list: argument --dtype: invalid choice: 'half'"),
    (["cache", "clean"], 2, "jitdtypes cache clean: say what to remove: --all, --older-than AGE, --dtype D or --stale"),
    (["cache", "clean", "--older-than", "soon"], 2,
     "jitdtypes cache clean: argument --older-than: not an age like 30d, 12h, 45m or 90s: 'soon'"),
    (["cache", "clean", "--older-than=-3d"], 2,
     "jitdtypes cache clean: argument --older-than: not an age like 30d, 12h, 45m or 90s: '-3d'"),
    (["cache", "show", "xyz"], 2, "jitdtypes cache show: not a key: 'xyz'"),
    (["cache", "show", "ffffffff"], 2, "jitdtypes cache show: no entry's key starts with 'ffffffff'"),
    (["cache", "export", "{tmp}/missing/out.tar.gz"], 2, "jitdtypes cache export: {tmp}/missing: no such directory"),
    (["cache", "export", "{tmp}/file.txt/out.tar.gz"], 2, "jitdtypes cache export: {tmp}/file.txt: not a directory"),
    (["cache", "export", "{tmp}"], 2, "jitdtypes cache export: {tmp}: a directory; name the archive to write"),
    (["cache", "export", "{tmp}/out.tar.gz", "--arch", "sm9"], 2,
     "jitdtypes cache export: --arch: not an arch like sm_80 or sm_90: 'sm9'"),
    (["cache", "import", "{tmp}/missing.tar.gz"], 2, "jitdtypes cache import: {tmp}/missing.tar.gz: no such file"),
    (["cache", "import", "{tmp}"], 2, "jitdtypes cache import: {tmp}: a directory, not an archive"),
    (["cache", "import", "{tmp}/file.txt"], 1, "jitdtypes cache import: refused, nothing installed: "
                                               "{tmp}/file.txt: not a gzip-compressed tar archive"),
]
if sys.platform.startswith("linux"):  # a directory no one may create files in, root included
    BAD_COMMAND_LINES.append((["cache", "export", "/proc/out.tar.gz"], 1,
                              "jitdtypes cache export: cannot write /proc/out.tar.gz: "))
if not torch.cuda.is_available():
    BAD_COMMAND_LINES += [
        (["ops", "--device", "cuda"], 2, "jitdtypes ops: --device cuda: no CUDA device here"),
        (["demo", "--device", "cuda"], 2, "jitdtypes demo: --device cuda: no CUDA device here"),
        (["warm", "--dtype", "all", "--device", "cuda"], 2, "jitdtypes warm: no CUDA device here: name the GPU "
                                                            "arches to compile for"),
    ]
for absent in dtypes.ABSENT:
    BAD_COMMAND_LINES.append((["warm", "--dtype", absent], 2, f"jitdtypes warm: --dtype {absent}: torch.{absent} "
                                                              "exists from PyTorch"))


@pytest.mark.parametrize("args, status, message", BAD_COMMAND_LINES,
                         ids=[" ".join(args) or "(nothing)" for args, _, _ in BAD_COMMAND_LINES])
def test_bad_command_line_is_one_line_and_a_status(tmp_path, args, status, message):
    (tmp_path / "file.txt").write_text("not an archive")
    run = _run(*(a.replace("{tmp}", str(tmp_path)) for a in args), cache=tmp_path / "cache")
    assert (run.returncode, run.stdout) == (status, ""), run.stderr[-3000:]
    (line,) = run.stderr.splitlines()
    assert line.startswith(message.replace("{tmp}", str(tmp_path))), line


def test_show_refuses_an_ambiguous_prefix_and_shows_a_damaged_entry(tmp_path):
    kernels = tmp_path / "cache" / "kernels" / "ab"
    for key in ("ab" + "0" * 62, "ab" + "1" * 62):
        (kernels / key).mkdir(parents=True)
        (kernels / key / "meta.json").write_text("{ damaged")
    ambiguous = _run("cache", "show", "AB", cache=tmp_path / "cache")
    assert ambiguous.returncode == 2 and ambiguous.stderr == (
        f"jitdtypes cache show: 2 entries' keys start with 'ab' ({'ab' + '0' * 14}, {'ab' + '1' * 14}): "
        "give more digits\n")
    damaged = _run("cache", "show", "ab0", cache=tmp_path / "cache")
    assert damaged.returncode == 1, damaged.stderr
    shown = json.loads(damaged.stdout.split("\n\n", 1)[0])
    assert shown["path"] == str(kernels / ("ab" + "0" * 62)) and shown["problem"].startswith("metadata unreadable")


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_when_piped_is_a_line_every_fifteenth_of_a_phase():
    out, clock = io.StringIO(), _Clock()
    report = warm.ProgressReport(out, terminal=False, clock=clock)
    report.phase("cpu", 272)
    for done in range(272):
        report.step(done, f"unary/exp kernel {done}")
        clock.now += 0.5
    report.phase("sm_90", 3)
    report.note("compiling 40 launches, 2 at once")
    report.close()
    lines = out.getvalue().splitlines()
    every = math.ceil(272 / 15)
    assert every == 19 and len(lines) == 14 + 1
    assert lines[0] == "warm cpu: 19/272 kernels, 9.5s elapsed, ETA 2m06s"  # 0.5 s per kernel, 253 to go
    assert lines[13] == "warm cpu: 266/272 kernels, 2m13s elapsed, ETA 3.0s"
    assert lines[-1] == "warm sm_90: compiling 40 launches, 2 at once"


def test_progress_on_a_terminal_rewrites_one_line_with_the_eta():
    out, clock = io.StringIO(), _Clock()
    report = warm.ProgressReport(out, terminal=True, clock=clock)
    report.phase("cpu", 4)
    report.step(0, "unary/exp complex32")
    clock.now += 2.0
    report.step(1, "unary/log complex32")
    report.close()
    assert out.getvalue() == ("\r\033[K[1/4 ETA -] unary/exp complex32"
                              "\r\033[K[2/4 ETA 6.0s] unary/log complex32"
                              "\r\033[K")


def test_duration_reads_at_a_glance():
    assert [warm.duration(s) for s in (0.04, 59.94, 61, 3599, 3725)] == ["0.0s", "59.9s", "1m01s", "59m59s", "1h02m"]


def test_warm_without_triton_makes_the_cpu_kernels_and_says_why_not_the_triton_ones(tmp_path):
    """A CPU-only environment without triton: `warm --device cpu` does everything else and says once why the
    Triton kernels were skipped; `--device cuda` is refused with the reason."""
    program = textwrap.dedent("""
        import sys
        sys.modules["triton"] = None  # as if it were not installed: importing it fails, find_spec finds nothing
        sys.argv[0] = "jitdtypes"
        from jitdtypes.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
    environment = dict(os.environ, JITDTYPES_CACHE_DIR=str(seed_cache(tmp_path / "cache")), JITDTYPES_CPU_KERNELS="off")
    run = subprocess.run([sys.executable, "-c", program, "warm", "--dtype", "complex32", "--device", "cpu", "--ops",
                          "exp"], env=environment, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert [line for line in lines if line.startswith("Triton kernels skipped: triton is not installed")]
    assert "failed 0" in lines[-1] and "ModuleNotFoundError" not in run.stdout + run.stderr
    refused = subprocess.run([sys.executable, "-c", program, "warm", "--dtype", "complex32", "--arch", "sm_90"],
                             env=environment, capture_output=True, text=True, timeout=600)
    assert refused.returncode == 2 and "triton is not installed" in refused.stderr, refused.stderr[-2000:]
