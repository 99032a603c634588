"""Cache keys follow the code that made the cached thing: a family's kernel key changes with that family's
sources and not with another's; the discovery key changes with any module discovery runs."""

import shutil
from pathlib import Path

import pytest

import jitdtypes
from jitdtypes.discovery import results
from jitdtypes.triton_kernels import engine
from cache_tools import source_digest
from cache_tools.source_digest import SourceTree


@pytest.fixture
def copied_tree(tmp_path, monkeypatch):
    """A copy of the installed sources, made the tree every key reads: edit its files freely."""
    installed = source_digest.installed()
    packages = {}
    for name in ("jitdtypes", "kernels_templates", "cache_tools"):
        packages[name] = tmp_path / name
        shutil.copytree(installed.packages[name], packages[name], ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(source_digest, "installed", lambda: SourceTree(packages))
    source_digest.of.cache_clear()
    yield packages
    source_digest.of.cache_clear()


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text() + line + "\n")


def _family_keys() -> dict[str, str]:
    source_digest.of.cache_clear()
    params = {"op": "exp", "dtype": "complex32", "interpret": True}
    return {family: engine.kernel_key(family, params, "cpu") for family in engine.FAMILIES}


@pytest.mark.parametrize("edited", ["unary", "fft", "matmul"])
def test_editing_one_family_changes_its_kernel_keys_only(copied_tree, edited):
    before = _family_keys()
    _append(copied_tree["kernels_templates"] / f"{edited}.py", "# an edit")
    after = _family_keys()
    assert before[edited] != after[edited]
    assert {f: k for f, k in after.items() if f != edited} == {f: k for f, k in before.items() if f != edited}


# the real modules that hold a family's kernels and launcher (rendered modules import them): an edit reaches the
# keys of the families whose template module imports them (scans.py takes reductions.py's out= checks)
KERNEL_MODULES = {"matmul_kernels": {"matmul"}, "fft_kernels": {"fft"}, "reduction_kernels": {"reductions", "scans"},
                  "scan_kernels": {"scans"}}


@pytest.mark.parametrize("edited", sorted(KERNEL_MODULES))
def test_editing_a_kernel_module_changes_its_family_kernel_keys(copied_tree, edited):
    before = _family_keys()
    _append(copied_tree["kernels_templates"] / f"{edited}.py", "# an edit")
    after = _family_keys()
    assert {family for family in engine.FAMILIES if before[family] != after[family]} == KERNEL_MODULES[edited]


def test_editing_what_every_family_imports_changes_every_kernel_key(copied_tree):
    before = _family_keys()
    _append(copied_tree["kernels_templates"] / "common.py", "# an edit")
    after_common = _family_keys()
    _append(copied_tree["jitdtypes"] / "dtypes.py", "# an edit")  # common.py imports it
    after_dtypes = _family_keys()
    for family in engine.FAMILIES:
        assert len({before[family], after_common[family], after_dtypes[family]}) == 3


def test_elementwise_families_share_their_module_and_not_the_others(copied_tree):
    before = _family_keys()
    _append(copied_tree["kernels_templates"] / "elementwise.py", "# an edit")
    after = _family_keys()
    changed = {family for family in engine.FAMILIES if before[family] != after[family]}
    assert changed == {"unary", "binary", "ternary"}


def test_the_discovery_key_follows_every_module_discovery_runs(copied_tree):
    closure = source_digest.installed().closure([results.__name__])
    # the routed call's modules (probing installs overrides) and the wrapped numbers it calls
    for module in ("jitdtypes.routing.router", "jitdtypes.routing.sources", "jitdtypes.upcast.wrapped_numbers",
                   "jitdtypes.upcast.path", "jitdtypes.discovery.runner"):
        assert module in closure
    assert "jitdtypes.cli.parser" not in closure and "jitdtypes.compile_path.planar" not in closure
    before = results.build_key("cpu")
    _append(copied_tree["jitdtypes"] / "cli" / "parser.py", "# an edit")
    source_digest.of.cache_clear()
    assert results.build_key("cpu") == before
    _append(copied_tree["jitdtypes"] / "routing" / "router.py", "# an edit")
    source_digest.of.cache_clear()
    assert results.build_key("cpu") != before


@pytest.mark.parametrize("edited", ["kernels_templates/complex_math.py", "kernels_templates/reduction_kernels.py",
                                    "jitdtypes/cpu_kernels/table.py"])
def test_the_discovery_key_leaves_out_the_kernels_probing_turns_off(copied_tree, edited):
    before = results.build_key("cpu")
    package, _, rest = edited.partition("/")
    _append(copied_tree[package] / rest, "# an edit")
    source_digest.of.cache_clear()
    assert results.build_key("cpu") == before
    _append(copied_tree["jitdtypes"] / "triton_kernels" / "engine.py", "# an edit")  # the switch children use
    source_digest.of.cache_clear()
    assert results.build_key("cpu") != before


def test_imports_are_read_in_every_spelling(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for name in ("__init__.py", "a.py", "b.py", "c.py", "d.py", "lazy.py", "sub/__init__.py", "sub/x.py",
                 "sub/y.py"):
        (package / name).write_text("")
    (package / "__init__.py").write_text("__version__ = '1'\nVALUE = 1\n")
    (package / "a.py").write_text(
        "from . import __version__, b\n"
        "from .sub import (\n    x,\n    y as why,\n)\n"
        "import pkg.c as see\n"
        "import os, json\n"
        "def later():\n    from pkg import lazy\n"
    )
    (package / "b.py").write_text("from pkg import VALUE\n")
    (package / "sub" / "x.py").write_text("from .. import d\n")
    (package / "sub" / "y.py").write_text("import importlib\nimportlib.import_module(f'pkg.sub.{name}')\n")
    tree = SourceTree({"pkg": package})
    assert tree.imports("pkg.a") == {"pkg.b", "pkg.sub.x", "pkg.sub.y", "pkg.c", "pkg.lazy"}
    assert tree.imports("pkg.b") == {"pkg"}  # a name defined in the package's __init__
    assert tree.imports("pkg.sub.x") == {"pkg.d"}
    assert tree.imports("pkg.sub.y") == {"pkg.sub.x"}  # every module of the package, itself aside
    assert tree.closure(["pkg.a"]) == ["pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.lazy", "pkg.sub.x",
                                       "pkg.sub.y"]
    assert tree.closure(["pkg.a"], leaving_out=("pkg.sub",)) == ["pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.lazy"]
    digest = tree.digest(["pkg.a"])
    left_out = tree.digest(["pkg.a"], leaving_out=("pkg.sub",))
    (package / "d.py").write_text("# reached through sub/x.py\n")
    assert SourceTree({"pkg": package}).digest(["pkg.a"]) != digest
    assert SourceTree({"pkg": package}).digest(["pkg.a"], leaving_out=("pkg.sub",)) == left_out
    assert jitdtypes.__version__  # the version is in every key by itself
