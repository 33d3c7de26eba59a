"""Names that no longer exist, mentioned in fscontrol's comments and docstrings and in docs/*.md.

    python scripts/stale_names.py                 # every stale mention: where, the mention, what it looked in
    python scripts/stale_names.py --root DIR      # another checkout

A mention is a dotted name (`pipeline.gate_table`, `store.loaders.window_inflow`,
`fscontrol.export.privacy.run_key`) whose head names a module of fscontrol: its full name, its
name without `fscontrol.`, its last parts (`decide`, `agent.decide`) or an alias the code imports
it as (`from fscontrol.store import history as store`). The next part must then be a name defined
at the top of one of those modules (a function, a class, an assignment, an import) or a module
under it; a `Class.member` is checked one level further. A path `pkg/module.py` must exist.
Mentions whose head is the config's section (`agent.apply`: `[agent] apply`) and a file suffix
(`slurm.conf`, `history.db`) are not names. KNOWN lists what is not a Python name though it looks
like one, each with its reason (tests/test_architecture.py fails on any other stale mention).
Found by it in the review of #29: `pipeline.gate_table` (agent.decide's), `report.history_data`,
`forecast_cmd._forecast`, `forecast.parse_args`, `fit.Fit`, `gate.MARK`, `web/public.py`.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import tokenize
from pathlib import Path

# mention -> why it names no Python object of fscontrol (and is no stale name)
KNOWN: dict[str, str] = {
    "source.run": "a source object's method (LiveSlurm.run), called on the variable `source`",
    "html.escape": "the standard library's html module, not fscontrol.export.html",
    "html.entities": "the standard library's html module, not fscontrol.export.html",
    "slurm.h": "Slurm's C header, slurm/slurm.h",
    "start.X": "a placeholder: any name start re-exports",
    "allocations.defaults": "a TOML table of the config ([allocations.defaults])",
    "allocations.chem": "a TOML table of the config ([allocations.chem])",
    "allocations.astro": "a TOML table of the config ([allocations.astro])",
    "allocations.alice": "a TOML table of the config ([allocations.alice])",
    "workload.jobs": "an attribute of a Workload value (Workload.jobs), on the variable `workload`",
    "sweep.sbatch": "a file a sweep writes",
    "fscontrol.cron": "a file of cron/",
    "decisions.h_slurm": "a column of the history's decisions table",
    "decisions.h_measured": "a column of the history's decisions table",
    "control.applying": "a key of the published snapshot's control object",
    # docs/benchmarks.md is a dated log: these entries name the code they measured then
    "records.record": "docs/benchmarks.md, dated entries: the records' class factory of that time",
    "records.replace": "docs/benchmarks.md, a dated entry: the records' replace of that time",
    "cmdline.HelpFormatter": "docs/benchmarks.md, a dated entry: argparse's HelpFormatter, as cmdline used it",
    "fairshare.factor": "docs/benchmarks.md, a dated entry: the classic model's function of that time",
    "fairshare.level": "docs/benchmarks.md, a dated entry: the classic model's function of that time",
    "fscontrol/cli/_typer_fast.py": "docs/benchmarks.md, a dated entry: the module of that time",
}

SUFFIXES = {"conf", "db", "json", "toml", "txt", "py", "md", "png", "html", "sh", "log", "so", "gz", "csv", "lock",
            "service", "timer", "prom", "svg", "cfg", "d", "x", "e", "g", "i"}
CONFIG_SECTIONS = ("agent", "schedule", "control", "gate", "forecast", "web", "clusters")
PACKAGES = "slurm|model|act|store|agent|export|forecast|report|web|cli|sim|doctor"
_MENTION = re.compile(r"(?<![\w./-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/-])")
_PATH = re.compile(rf"(?<![\w/.])((?:fscontrol/)?(?:{PACKAGES})/[\w/]+\.py)")


def _defined(tree: ast.Module) -> tuple[set[str], dict[str, set[str]]]:
    """The names a module defines at its top (in `if`/`try` blocks too) and each class's members."""
    names: set[str] = set()
    members: dict[str, set[str]] = {}

    def bind(n: ast.AST) -> None:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(n.name)
        elif isinstance(n, ast.ClassDef):
            names.add(n.name)
            own = members.setdefault(n.name, set())
            for m in ast.walk(n):
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    own.add(m.name)
                elif isinstance(m, (ast.Assign, ast.AnnAssign)):
                    for t in m.targets if isinstance(m, ast.Assign) else [m.target]:
                        if isinstance(t, ast.Name):
                            own.add(t.id)
        elif isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                names.update(x.id for x in ast.walk(t) if isinstance(x, ast.Name))
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, (ast.If, ast.Try, ast.With)):
            for child in ast.iter_child_nodes(n):
                bind(child)
            for h in getattr(n, "handlers", []):
                for child in h.body:
                    bind(child)

    for n in tree.body:
        bind(n)
    return names, members


def _index(root: Path) -> tuple[dict[str, tuple[set[str], dict[str, set[str]]]], dict[str, set[str]], set[str]]:
    modules: dict[str, tuple[set[str], dict[str, set[str]]]] = {}
    trees = {}
    for p in sorted((root / "fscontrol").rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        full = ".".join(parts)
        trees[full] = ast.parse(p.read_text())
        modules[full] = _defined(trees[full])
    heads: dict[str, set[str]] = {}
    for full in modules:
        parts = full.split(".")
        for i in range(len(parts)):
            heads.setdefault(".".join(parts[i:]), set()).add(full)
    for tree in trees.values():  # the aliases the code imports modules as
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("fscontrol"):
                for a in n.names:
                    if a.asname and f"{n.module}.{a.name}" in modules:
                        heads.setdefault(a.asname, set()).add(f"{n.module}.{a.name}")
    config_keys = set()
    config = root / "fscontrol" / "agent" / "config.py"
    if config.exists():
        for n in ast.walk(ast.parse(config.read_text())):
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                config_keys.add(n.target.id)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
                config_keys.add(n.value)
    return modules, heads, config_keys


def stale(root: Path) -> list[tuple[str, str, str]]:
    """(where, mention, what it looked in) for each stale mention not in KNOWN."""
    modules, heads, config_keys = _index(root)
    out: list[tuple[str, str, str]] = []

    def check(text: str, where: str) -> None:
        for m in _MENTION.finditer(text):
            parts = m.group(1).split(".")
            for i in range(len(parts) - 1, 0, -1):
                head = ".".join(parts[:i])
                if head not in heads:
                    continue
                rest = parts[i:]
                if rest[0] in SUFFIXES or rest[0].startswith("__") or m.group(1) in KNOWN:
                    break
                if head in CONFIG_SECTIONS and rest[0] in config_keys:
                    break
                found = False
                for full in heads[head]:
                    names, members = modules[full]
                    if f"{full}.{rest[0]}" in modules:
                        found = True
                    elif rest[0] in names:
                        found = found or not (len(rest) > 1 and rest[0] in members and rest[1] not in members[rest[0]]
                                              and not rest[1][0].isupper() and rest[1] not in SUFFIXES)
                if not found:
                    out.append((where, m.group(1), ", ".join(sorted(heads[head]))))
                break
        for m in _PATH.finditer(text):
            f = m.group(1)
            if f not in KNOWN and not (root / f).exists() and not (root / "fscontrol" / f).exists():
                out.append((where, f, "no such file"))

    for p in sorted((root / "fscontrol").rglob("*.py")):
        src = p.read_text()
        rel = p.relative_to(root)
        for n in ast.walk(ast.parse(src)):
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(n, clean=False)
                if doc:
                    check(doc, f"{rel}:{getattr(n, 'lineno', 1)}")
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.COMMENT:
                check(tok.string, f"{rel}:{tok.start[0]}")
    for p in sorted((root / "docs").glob("*.md")) if (root / "docs").is_dir() else []:
        for i, line in enumerate(p.read_text().splitlines(), 1):
            check(line, f"{p.relative_to(root)}:{i}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help="the checkout to read")
    found = stale(ap.parse_args().root)
    for where, mention, looked in found:
        print(f"{where}: {mention}  ({looked})")
    raise SystemExit(1 if found else 0)


if __name__ == "__main__":
    main()
