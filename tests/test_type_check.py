"""Import names are directory names, and a type checker resolves every import from the tree itself.

The distribution installs three top-level packages, jitdtypes/, kernels_templates/ and cache_tools/, each
under its own directory's name (pyproject's packages.find, no package-dir mapping, no stubs of our own). mypy,
run as a developer runs it (`mypy`, configured by pyproject.toml), must resolve every import: not one
import-not-found, and a wrong import still reported, so that resolution is real rather than silenced. The code
need not be type-clean: other errors are not counted here.

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

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: mypy's own dependency
    import tomli as tomllib

REPOSITORY = Path(__file__).resolve().parent.parent
PACKAGES = ("jitdtypes", "kernels_templates", "cache_tools")
# mypy's line for one message: path:line: severity: message  [code]
MESSAGE = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+): (?P<severity>error|note): (?P<message>.*?)"
                     r"(?:  \[(?P<code>[a-z-]+)\])?$")
SUMMARY = re.compile(r"^(?:Found \d+ errors? in \d+ files? \(checked (?P<found>\d+) source files?\)"
                     r"|Success: no issues found in (?P<success>\d+) source files?)$", re.MULTILINE)
OWN_MODULE = re.compile(r'^Module "(?:' + "|".join(PACKAGES) + r')(?:\.\w+)*" has no attribute ')


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def test_import_names_are_the_directory_names():
    """pyproject installs exactly the three package directories, under their own names, without a mapping;
    their modules import each other by those names (no `jitdtypes.kernels_templates` left anywhere)."""
    config = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())
    setuptools = config["tool"]["setuptools"]
    assert "package-dir" not in setuptools and list(setuptools["packages"]) == ["find"]
    assert setuptools["packages"]["find"]["include"] == [f"{name}*" for name in PACKAGES]
    assert config["tool"]["mypy"]["files"] == list(PACKAGES) and "mypy_path" not in config["tool"]["mypy"]
    assert not (REPOSITORY / "typings").exists()
    on_disk = sorted(p.parent.name for p in REPOSITORY.glob("*/__init__.py") if p.parent.name not in ("tests",
                                                                                                     "benchmarks"))
    assert on_disk == sorted(PACKAGES)
    for name in PACKAGES:
        for path in (REPOSITORY / name).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    assert not node.module.startswith(("jitdtypes.kernels_templates", "jitdtypes.cache_tools")), path


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
    """`mypy` in the checkout: the files of pyproject's [tool.mypy], no search path of our own."""
    return run_mypy(mypy_cache)


def test_every_import_resolves(package_check):
    found = messages(package_check)
    checked = SUMMARY.search(package_check.stdout)
    assert checked, package_check.stdout[-2000:]
    python_files = sum(1 for name in PACKAGES for _ in (REPOSITORY / name).rglob("*.py"))
    assert int(checked["found"] or checked["success"]) == python_files, "mypy checked a part of the package only"
    unresolved = [m for m in found if m["code"] == "import-not-found"
                  or (m["code"] == "import-untyped" and any(name in m["message"] for name in PACKAGES))
                  or (m["code"] == "attr-defined" and OWN_MODULE.match(m["message"]))]
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
    probe = tmp_path / "probe_imports.py"
    lines = {
        "module": "import kernels_templates.common as common",
        "name": f"from kernels_templates.common import {common}",
        "other": f"from cache_tools.store import {store}",
        "missing name": "from kernels_templates import not_there",
        "missing module": "import cache_tools.no_such_module",
        "reveal module": "reveal_type(common)",
        "reveal name": f"reveal_type({common})",
        "reveal other": f"reveal_type({store})",
    }
    probe.write_text("\n".join(lines.values()) + "\n")
    line = {key: str(number) for number, key in enumerate(lines, 1)}
    found = {(m["line"], m["severity"], m["code"]): m["message"]
             for m in messages(run_mypy(mypy_cache, str(probe))) if Path(m["path"]).name == probe.name}
    assert OWN_MODULE.match(found.get((line["missing name"], "error", "attr-defined"), "")), found
    assert (line["missing module"], "error", "import-not-found") in found, found
    assert found[(line["reveal module"], "note", None)] == 'Revealed type is "types.ModuleType"', found
    for key in ("reveal name", "reveal other"):
        assert found[(line[key], "note", None)].startswith('Revealed type is "def ('), found
    errors = {k: v for k, v in found.items() if k[1] == "error"}
    assert len(errors) == 2, errors  # the two wrong imports, nothing from the right ones
