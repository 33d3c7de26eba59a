"""pyproject.toml declares what the code imports, and the code imports what pyproject declares.

Every third-party module that fscontrol, the tests or the benchmarks import comes from a
distribution pyproject.toml lists (the core dependencies, or an extra); one fscontrol imports at
module level (paid by every command that loads the module) is a core dependency; every core
dependency is imported by fscontrol itself (none is installed for nothing). Read from the source
(ast), so an import inside a function counts as much as one at the top."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(spec: str) -> str:
    return _norm(re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0])


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_requirement_name(s) for s in project["dependencies"]}
    extras = {k: {_requirement_name(s) for s in v} for k, v in project.get("optional-dependencies", {}).items()}
    return core, extras


def _imports(folder: Path) -> dict[str, list[tuple[str, bool]]]:
    """Top-level module name -> [(file:line, at module level)], third-party modules only."""
    out: dict[str, list[tuple[str, bool]]] = {}
    local = {p.stem for folder_ in ("tests", "bench", "scripts") for p in (ROOT / folder_).glob("*.py")}

    def visit(node: ast.AST, path: Path, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, path, False)
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # for type checkers only
            names = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                names = [child.module]
            for name in names:
                root = name.split(".")[0]
                if root in sys.stdlib_module_names or root in ("fscontrol", "__future__", "tests", "bench") or root in local:
                    continue
                out.setdefault(root, []).append((f"{path.relative_to(ROOT)}:{child.lineno}", top))
            visit(child, path, top)

    for path in sorted(folder.rglob("*.py")):
        visit(ast.parse(path.read_text(), str(path)), path, True)
    return out


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distribution(module: str) -> set[str]:
    return {_norm(d) for d in _distributions().get(module, [module])}


def test_every_import_of_fscontrol_is_declared_and_module_level_ones_are_core():
    core, extras = _declared()
    every = core.union(*extras.values())
    for module, where in _imports(ROOT / "fscontrol").items():
        dists = _distribution(module)
        assert dists & every, f"fscontrol imports {module} ({where[0][0]}) but pyproject.toml declares none of {dists}"
        at_top = [w for w, top in where if top]
        assert not at_top or dists & core, f"{module} is imported at module level ({at_top[0]}): a core dependency"


def test_every_core_dependency_is_imported_by_fscontrol():
    core, _ = _declared()
    used = set().union(*(_distribution(m) for m in _imports(ROOT / "fscontrol")))
    assert core - used == set(), f"declared but never imported by fscontrol: {sorted(core - used)}"


def test_the_tests_and_benchmarks_import_only_declared_packages():
    core, extras = _declared()
    every = core.union(*extras.values())
    for folder in (ROOT / "tests", ROOT / "bench"):
        for module, where in _imports(folder).items():
            dists = _distribution(module)
            assert dists & every, f"{where[0][0]} imports {module}: add it to pyproject.toml (the test extra)"
