"""A type checker follows the package mapping in a checkout.

pyproject's package-dir installs kernels_templates/ and cache_tools/ as jitdtypes.kernels_templates and
jitdtypes.cache_tools; a checkout holds them beside jitdtypes/, and type checkers map a directory to a module
of its own name. typings/ holds one stub per module saying where jitdtypes.<package>.<module> lives (mypy:
[tool.mypy] mypy_path; pyright: stubPath). mypy, run as a developer runs it (`mypy`, configured by
pyproject.toml), must resolve every import across the mapping: not one import-not-found, and a wrong import
still reported, so that resolution is real rather than silenced. The code need not be type-clean: other
errors are not counted here.

mypy comes with the `test` extra. In CI (CI set, as .ci/run does) a missing mypy fails these tests;
elsewhere they are skipped, saying how to install it."""

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent
MAPPED = ("kernels_templates", "cache_tools")  # installed as jitdtypes.<name> (pyproject's package-dir)
STUBS = REPOSITORY / "typings" / "jitdtypes"
CHECKED = ("jitdtypes", *MAPPED)  # pyproject's [tool.mypy] files
# mypy's line for one message: path:line: severity: message  [code]
MESSAGE = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+): (?P<severity>error|note): (?P<message>.*?)"
                     r"(?:  \[(?P<code>[a-z-]+)\])?$")
SUMMARY = re.compile(r"^(?:Found \d+ errors? in \d+ files? \(checked (?P<found>\d+) source files?\)"
                     r"|Success: no issues found in (?P<success>\d+) source files?)$", re.MULTILINE)
# attr-defined on a mapped module: its stub does not re-export the name asked for.
NOT_IN_STUB = re.compile(r'^Module "jitdtypes\.(?:' + "|".join(MAPPED) + r')(?:\.\w+)*" has no attribute ')


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def stub_text(package: str, source: Path) -> str:
    """The one line of typings/jitdtypes/<package>/...pyi for the module in `source`."""
    parts = source.relative_to(REPOSITORY).with_suffix("").parts
    module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return f"from {module} import *\n"


def test_stubs_match_the_modules():
    """Each module of a mapped package has its stub, and no stub outlives its module (no mypy needed)."""
    assert sorted(p.name for p in STUBS.iterdir()) == sorted(MAPPED), (
        "typings/jitdtypes must hold only the mapped packages: a typings/jitdtypes/__init__.pyi would hide "
        "jitdtypes/ itself from the type checkers")
    for package in MAPPED:
        sources = {s.relative_to(REPOSITORY / package).with_suffix(".pyi"): s
                   for s in (REPOSITORY / package).rglob("*.py")}
        stubs = {s.relative_to(STUBS / package) for s in (STUBS / package).rglob("*.pyi")}
        assert stubs == set(sources), (
            f"typings/jitdtypes/{package} must hold one .pyi per module of {package}/: missing "
            f"{sorted(map(str, set(sources) - stubs))}, stale {sorted(map(str, stubs - set(sources)))}")
        for stub, source in sources.items():
            first = (STUBS / package / stub).read_text().splitlines(keepends=True)[:1]
            # Further lines may re-export private names: `from kernels_templates.x import _y as _y`.
            assert first == [stub_text(package, source)], f"typings/jitdtypes/{package}/{stub}"


def run_mypy(cache: Path, *files: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "MYPY_FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "--cache-dir", str(cache),
         "--show-error-codes", "--no-pretty", "--no-color-output", *files],
        cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=600)


def messages(ran: subprocess.CompletedProcess) -> list[dict]:
    assert ran.returncode in (0, 1), f"mypy did not check (exit {ran.returncode}):\n{ran.stdout}\n{ran.stderr}"
    return [m.groupdict() for m in map(MESSAGE.match, ran.stdout.splitlines()) if m]


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory) -> Path:
    if importlib.util.find_spec("mypy") is None:
        reason = 'mypy is not installed: it comes with the test extra (pip install -e ".[test]")'
        if in_ci():
            pytest.fail(reason + ", which CI installs")
        pytest.skip(reason)
    return tmp_path_factory.mktemp("mypy-cache")


@pytest.fixture(scope="module")
def package_check(mypy_cache) -> subprocess.CompletedProcess:
    """`mypy` in the checkout: the files and search path of pyproject's [tool.mypy]."""
    return run_mypy(mypy_cache)


def test_every_mapped_import_resolves(package_check):
    found = messages(package_check)
    checked = SUMMARY.search(package_check.stdout)
    assert checked, package_check.stdout[-2000:]
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: mypy's own dependency
        import tomli as tomllib
    assert tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"]["mypy"]["files"] == list(CHECKED)
    python_files = sum(1 for name in CHECKED for _ in (REPOSITORY / name).rglob("*.py"))
    assert int(checked["found"] or checked["success"]) == python_files, "mypy checked a part of the package only"
    unresolved = [m for m in found if m["code"] == "import-not-found"
                  or (m["code"] == "import-untyped" and "jitdtypes" in m["message"])
                  or (m["code"] == "attr-defined" and NOT_IN_STUB.match(m["message"]))]
    assert not unresolved, "\n".join(f"{m['path']}:{m['line']}: {m['message']}  [{m['code']}]" for m in unresolved)


def first_function(module: Path) -> str:
    return next(node.name for node in ast.parse(module.read_text()).body
                if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"))


def test_a_wrong_import_is_reported(package_check, mypy_cache, tmp_path):
    """The same configuration on a file outside the package: right imports resolve to the real definitions,
    wrong ones are errors (ignore_missing_imports or a disabled error code would make them pass silently)."""
    del package_check  # run first: its cache makes this check quick
    common, store = first_function(REPOSITORY / "kernels_templates/common.py"), first_function(
        REPOSITORY / "cache_tools/store.py")
    probe = tmp_path / "probe_mapping.py"
    lines = {
        "module": "import jitdtypes.kernels_templates.common as common",
        "name": f"from jitdtypes.kernels_templates.common import {common}",
        "other": f"from jitdtypes.cache_tools.store import {store}",
        "missing name": "from jitdtypes.kernels_templates import not_there",
        "missing module": "import jitdtypes.cache_tools.no_such_module",
        "reveal module": "reveal_type(common)",
        "reveal name": f"reveal_type({common})",
        "reveal other": f"reveal_type({store})",
    }
    probe.write_text("\n".join(lines.values()) + "\n")
    line = {key: str(number) for number, key in enumerate(lines, 1)}
    found = {(m["line"], m["severity"], m["code"]): m["message"]
             for m in messages(run_mypy(mypy_cache, str(probe))) if Path(m["path"]).name == probe.name}
    assert NOT_IN_STUB.match(found.get((line["missing name"], "error", "attr-defined"), "")), found
    assert (line["missing module"], "error", "import-not-found") in found, found
    assert found[(line["reveal module"], "note", None)] == 'Revealed type is "types.ModuleType"', found
    for key in ("reveal name", "reveal other"):
        assert found[(line[key], "note", None)].startswith('Revealed type is "def ('), found
    errors = {k: v for k, v in found.items() if k[1] == "error"}
    assert len(errors) == 2, errors  # the two wrong imports, nothing from the right ones
