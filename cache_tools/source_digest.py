"""What a piece of jitdtypes depends on, as one hash: the files of a module and of every module of this
distribution it imports, directly or not, read from their source. It is the content half of a cache key (the
environment half, torch and triton builds and the device, is the caller's).

Cached results (discovery's verdicts, rendered kernels) hold while the code that made them is unchanged. A
hand-kept list of that code goes stale the day someone adds an import; hashing everything makes one edited
adapter invalidate every kernel of every family. The import statements themselves say what depends on what:
module level or inside a function (a lazy import is still a dependency), absolute or relative. An import whose
name is computed (`importlib.import_module(f"kernels_templates.{family}")`) depends on every module
of that package. Names imported from a package that are not its modules depend on its `__init__`, except
`__version__`, which every key holds anyway.

The statements are found by a regular expression, not by parsing: parsing the modules discovery depends on
costs far more than the scan, and every import would pay it for the discovery key. What it reads beyond
real statements (an import line inside a string, such as a rendered kernel's) only adds dependencies.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import re
from pathlib import Path

_STATEMENT = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<base>\.*[\w.]*)[ \t]+import[ \t]+(?P<names>\([^)]*\)|[^\n#]+)"
    r"|import[ \t]+(?P<modules>[^\n#]+))", re.MULTILINE)
_COMPUTED = re.compile(r"import_module\(f[\"'](?P<package>[\w.]+)\.\{")


class SourceTree:
    """The modules of this distribution: top-level package name -> its directory."""

    def __init__(self, packages: dict[str, Path]) -> None:
        # longest names first, should a package ever sit inside another
        self.packages = dict(sorted(packages.items(), key=lambda item: -len(item[0])))
        self._files: dict[str, Path | None] = {}
        self._texts: dict[str, bytes] = {}

    def file(self, module: str) -> Path | None:
        """The file of `module`, None when it is not one of this distribution's."""
        if module not in self._files:
            self._files[module] = self._find(module)
        return self._files[module]

    def _find(self, module: str) -> Path | None:
        for package, directory in self.packages.items():
            if module == package:
                return directory / "__init__.py"
            if module.startswith(package + "."):
                relative = module[len(package) + 1:].split(".")
                as_module = directory.joinpath(*relative).with_suffix(".py")
                if as_module.is_file():
                    return as_module
                as_package = directory.joinpath(*relative, "__init__.py")
                return as_package if as_package.is_file() else None
        return None

    def text(self, module: str) -> bytes:
        if module not in self._texts:
            self._texts[module] = self.file(module).read_bytes()
        return self._texts[module]

    def package_modules(self, package: str) -> list[str]:
        init = self.file(package)
        if init is None or init.name != "__init__.py":
            return []
        directory = init.parent
        return [f"{package}.{path.stem}" for path in sorted(directory.glob("*.py")) if path.stem != "__init__"]

    def imports(self, module: str) -> set[str]:
        """The modules of this distribution that `module`'s source imports."""
        path = self.file(module)
        is_package = path is not None and path.name == "__init__.py"
        text = self.text(module).decode()
        found: set[str] = set()
        for match in _STATEMENT.finditer(text):
            if match["modules"]:
                found.update(_names(match["modules"]))
                continue
            level = len(match["base"]) - len(match["base"].lstrip("."))
            base = _absolute(module, is_package, match["base"][level:] or None, level)
            for name in _names(match["names"]):
                submodule = f"{base}.{name}"
                if self.file(submodule) is not None:
                    found.add(submodule)
                elif name != "__version__":
                    found.add(base)
        for match in _COMPUTED.finditer(text):
            found.update(self.package_modules(match["package"]))
        return {name for name in found if self.file(name) is not None and name != module}

    def closure(self, roots, leaving_out=()) -> list[str]:
        """`roots` and every module of this distribution they import, directly or not, sorted; modules in the
        packages named in `leaving_out` (and what only they import) are not followed."""
        seen, pending = set(), list(roots)
        while pending:
            module = pending.pop()
            left_out = any(module == package or module.startswith(package + ".") for package in leaving_out)
            if module not in seen and self.file(module) is not None and not left_out:
                seen.add(module)
                pending.extend(self.imports(module))
        return sorted(seen)

    def digest(self, roots, leaving_out=()) -> str:
        """sha256 over the names and contents of closure(roots, leaving_out)."""
        digest = hashlib.sha256()
        for module in self.closure(roots, leaving_out):
            digest.update(module.encode() + b"\0" + self.text(module) + b"\0")
        return digest.hexdigest()


def _absolute(module: str, is_package: bool, name: str | None, level: int) -> str:
    if not level:
        return name or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _names(listed: str) -> list[str]:
    """The names of an import list: `a, b as c` or `(a,\n b)` -> ["a", "b"] (for `import x.y as z`: "x.y")."""
    return [part.split()[0] for part in listed.strip("() \n").replace("\n", " ").split(",") if part.split()]


# the distribution's top-level packages (pyproject.toml's packages.find)
PACKAGES = ("jitdtypes", "kernels_templates", "cache_tools")


@functools.lru_cache(maxsize=None)
def installed() -> SourceTree:
    """The tree this process imports jitdtypes from (a checkout or site-packages), found without importing it."""
    packages = {}
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"{name} is not installed beside cache_tools: reinstall jitdtypes")
        packages[name] = Path(list(spec.submodule_search_locations)[0])
    return SourceTree(packages)


@functools.lru_cache(maxsize=None)
def of(*roots: str, leaving_out: tuple[str, ...] = ()) -> str:
    """The digest of `roots` in the installed tree, once per process; `leaving_out`: packages whose code the
    caller turns off while it makes what the key stands for (closure)."""
    return installed().digest(roots, leaving_out)
