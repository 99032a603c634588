"""The wheel: built from this checkout, installed into a fresh virtual environment outside it, it adds the three
top-level import names of the checkout's package directories and works (a complex32 op on the upcast path,
the command line)."""

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from .conftest import seed_cache

REPOSITORY = Path(__file__).resolve().parent.parent
# What a checkout holds besides the sources the wheel is built from.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", "results")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    sources = work / "sources"
    shutil.copytree(REPOSITORY, sources, ignore=NOT_SOURCES)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(work),
                    str(sources)], check=True, capture_output=True, timeout=600)
    (built,) = work.glob("jitdtypes-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment holding the wheel; torch and the other dependencies are borrowed from the
    test environment's site-packages (a path entry, so its .pth files, the editable install among them, are
    not run)."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
                   check=True, timeout=300)
    site_packages = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   check=True, capture_output=True, text=True).stdout.strip()
    Path(site_packages, "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


PACKAGES = ("jitdtypes", "kernels_templates", "cache_tools")


def test_wheel_has_the_package_directories_as_top_level_names(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    distribution, version = wheel.name.split("-")[:2]
    assert {name.split("/")[0] for name in names} == {*PACKAGES, f"{distribution}-{version}.dist-info"}
    for shipped in ("kernels_templates/unary.py", "cache_tools/store.py",
                    "jitdtypes/native_guard/guard.cpp", "jitdtypes/native_guard/typed_signatures.h",
                    "jitdtypes/compile_path/decompositions.py"):
        assert shipped in names
    top_level = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
    assert sorted(zipfile.ZipFile(wheel).read(top_level).decode().split()) == sorted(PACKAGES)


def test_wheel_holds_every_module_and_the_shipped_discovery_results(wheel):
    """Every source file of the three packages is in the wheel (a package directory without an __init__.py, or
    data outside package-data, would be missing), and so are the shipped discovery results."""
    names = set(zipfile.ZipFile(wheel).namelist())
    checkout = {str(p.relative_to(REPOSITORY)) for package in PACKAGES for p in (REPOSITORY / package).rglob("*")
                if p.suffix in (".py", ".json", ".cpp", ".h") and "__pycache__" not in p.parts}
    assert checkout - names == set()
    assert any(name.startswith("jitdtypes/discovery/shipped/cpu-torch") for name in names)


def test_triton_is_not_a_requirement_of_its_own(wheel):
    """CUDA builds of torch require the triton they were built with; a requirement of ours made pip fetch the
    newest triton first, to discard it for torch's pin."""
    archive = zipfile.ZipFile(wheel)
    metadata = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    requirements = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    triton = [r for r in requirements if r.startswith("triton")]
    assert triton and all('extra == "test"' in r for r in triton), triton
    assert any(r.startswith("torch") and "extra" not in r for r in requirements)


def test_installed_wheel_works_outside_the_checkout(installed, tmp_path):
    smoke = textwrap.dedent("""
        import importlib.util, json, sys
        import torch
        import jitdtypes
        assert jitdtypes.__file__.startswith(sys.prefix), jitdtypes.__file__
        for package in ("kernels_templates", "cache_tools"):  # the distribution's other top-level packages
            assert importlib.util.find_spec(package).origin.startswith(sys.prefix), package
        z = torch.tensor([0.5 + 1j, -1 - 0.25j, 2j], dtype=torch.complex64)
        got = torch.cumsum(z.to(torch.complex32), 0)
        expected = torch.cumsum(z.to(torch.complex32).to(torch.complex64), 0)
        assert got.dtype == torch.complex32
        assert torch.allclose(got.to(torch.complex64), expected, rtol=1e-2, atol=1e-2), got
        row = next(r for r in jitdtypes.stats()
                   if r["op"] == "aten::cumsum" and r["dtype"] == "complex32" and r["calls"])
        print(json.dumps({"path": row["path"], "package": jitdtypes.__file__}))
    """)
    environment = {**os.environ, "JITDTYPES_CACHE_DIR": str(seed_cache(tmp_path / "cache"))}
    environment.pop("PYTHONPATH", None)
    ran = subprocess.run([installed / "bin" / "python", "-c", smoke], cwd=tmp_path, env=environment,
                         capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert '"path": "upcast"' in ran.stdout
    version = subprocess.run([installed / "bin" / "jitdtypes", "--version"], cwd=tmp_path, env=environment,
                             capture_output=True, text=True, timeout=300)
    assert version.returncode == 0, version.stderr
    import jitdtypes

    assert version.stdout.strip() == f"jitdtypes {jitdtypes.__version__}"
