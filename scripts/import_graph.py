"""fscontrol's import graph, from the code's own imports (the standard library's ast).

    python scripts/import_graph.py                  # the layers, one line each, and any upward import
    python scripts/import_graph.py --png FILE       # the package graph as a picture (matplotlib), its
                                                    # edges written into the PNG (EDGES_KEY)
    python scripts/import_graph.py --root DIR       # another checkout (e.g. an older revision's worktree)

Every import counts, the ones inside functions too (a lazy import is still a dependency). The
layers, lowest first, are LAYERS below: a module may import its own layer and the ones beneath it,
never one above (tests/test_architecture.py holds the code to that, and to no import cycle).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

# lowest first; a module may import from its own layer and the layers before it
LAYERS: tuple[tuple[str, ...], ...] = (
    ("fscontrol.errors", "fscontrol.records", "fscontrol.snaprecords", "fscontrol.atomic", "fscontrol.plotting",
     "fscontrol.jsontext"),
    ("fscontrol.slurm",),
    ("fscontrol.model",),
    ("fscontrol.doctor",),  # the doctor's rules: pure functions over what slurm.survey read
    ("fscontrol.store",),
    ("fscontrol.act",),
    ("fscontrol.export",),
    ("fscontrol.report",),
    ("fscontrol.agent", "fscontrol.sim"),
    ("fscontrol.forecast",),  # the user's side: reads what the agent publishes, or collects a sample as it does
    ("fscontrol.web",),
    ("fscontrol.cli", "fscontrol.__main__"),
)


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(root: Path, path: Path) -> set[str]:
    """The fscontrol modules `path` imports (absolute names; `from pkg import mod` names pkg.mod)."""
    me = module_name(root, path)
    pkg = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "fscontrol")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "fscontrol":
                continue
            for a in node.names:  # `from fscontrol.x import y`: y may be a module
                sub = f"{mod}.{a.name}"
                if (root / Path(*sub.split("."))).with_suffix(".py").exists() or (root / Path(*sub.split("."))).is_dir():
                    out.add(sub)
                else:
                    out.add(mod)
    out.discard(me)
    return out


def graph(root: Path) -> dict[str, set[str]]:
    """module -> the fscontrol modules it imports, for every module under root/fscontrol."""
    g: dict[str, set[str]] = {}
    for path in sorted((root / "fscontrol").rglob("*.py")):
        g[module_name(root, path)] = imports_of(root, path)
    return g


def layer_of(mod: str) -> int | None:
    for i, names in enumerate(LAYERS):
        if any(mod == n or mod.startswith(n + ".") for n in names):
            return i
    return None


def upward(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) pairs where the imported module sits in a higher layer."""
    bad = []
    for m, deps in g.items():
        lm = layer_of(m)
        for d in deps:
            ld = layer_of(d)
            if lm is not None and ld is not None and ld > lm:
                bad.append((m, d))
    return sorted(bad)


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in g:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in g:
        if v not in index:
            visit(v)
    return out


def package_of(mod: str) -> str:
    parts = mod.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else mod


def package_graph(g: dict[str, set[str]]) -> dict[str, dict[str, int]]:
    """package -> {imported package: how many module imports}."""
    pg: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for m, deps in g.items():
        pm = package_of(m)
        pg[pm]  # noqa: B018 - every package a node, importing or not
        for d in deps:
            pd = package_of(d)
            if pd != pm:
                pg[pm][pd] += 1
    return pg


EDGES_KEY = "fscontrol-package-edges"  # the PNG text chunk holding the edges a picture draws


def package_edges(g: dict[str, set[str]]) -> list[str]:
    """The package graph's edges, "importer -> imported" (without the "fscontrol." prefix), sorted:
    what the picture draws, one arrow each."""
    return sorted(f"{a.removeprefix('fscontrol.')} -> {b.removeprefix('fscontrol.')}"
                  for a, deps in package_graph(g).items() for b in deps)


def png_edges(path: Path) -> list[str] | None:
    """The edges a picture draw() made says it draws (its EDGES_KEY text chunk), or None (a picture
    drawn before the chunk was written, or by something else). Standard library only."""
    import zlib

    data = Path(path).read_bytes()
    pos = 8  # after the PNG signature: chunks of length, type, data, CRC
    while pos + 8 <= len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        key, _, rest = body.partition(b"\0")
        if key.decode("latin-1") != EDGES_KEY:
            continue
        if kind == b"tEXt":
            text = rest.decode("latin-1")
        elif kind == b"zTXt":
            text = zlib.decompress(rest[1:]).decode("latin-1")
        elif kind == b"iTXt":  # compression flag, method, language\0, translated keyword\0, text
            flag, body2 = rest[0], rest[2:]
            body2 = body2.split(b"\0", 2)[2]
            text = (zlib.decompress(body2) if flag else body2).decode("utf-8")
        else:
            continue
        return [line for line in text.split("\n") if line]
    return None


def floor_depths(pg: dict[str, dict[str, int]]) -> dict[str, int]:
    """Each package's floor: the longest chain of imports below it (0: imports no other package);
    a package in an import cycle sits on its cycle's highest floor."""
    memo: dict[str, int] = {}
    onstack: set[str] = set()

    def depth(p: str) -> int:
        if p in memo:
            return memo[p]
        if p in onstack:
            return 0
        onstack.add(p)
        d = 1 + max((depth(q) for q in pg.get(p, {}) if q in pg), default=-1)
        onstack.discard(p)
        memo[p] = d
        return d

    return {p: depth(p) for p in pg}


def draw(g: dict[str, set[str]], path: Path, title: str) -> None:
    """The package graph (a flat package: its modules): one box each, on the floor of its longest
    chain of imports (0 at the bottom), an arrow per import between boxes; an arrow to a higher
    layer (LAYERS) is red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pg = package_graph(g)
    root = path  # (unused name kept short)
    del root
    floors: dict[int, list[str]] = defaultdict(list)
    depth = floor_depths(pg)
    for p in sorted(pg):
        floors[depth[p]].append(p)
    pos: dict[str, tuple[float, float]] = {}
    for lay, names in floors.items():
        for i, n in enumerate(names):
            pos[n] = ((i + 1) / (len(names) + 1), lay + (0.18 if i % 2 and len(names) > 5 else 0.0))
    fig, ax = plt.subplots(figsize=(11, 1.0 + 0.62 * (max(floors) + 1)))
    for a, deps in pg.items():
        for b in deps:
            (x1, y1), (x2, y2) = pos[a], pos[b]
            la, lb = layer_of(a), layer_of(b)
            up = la is not None and lb is not None and lb > la
            ax.annotate("", xy=(x2, y2), xytext=(x1, y1),
                        arrowprops=dict(arrowstyle="->", color="red" if up else "0.55", lw=0.8,
                                        shrinkA=14, shrinkB=14, connectionstyle="arc3,rad=0.08"))
    for n, (x, y) in pos.items():
        ax.text(x, y, n.replace("fscontrol.", "") if n != "fscontrol" else "fscontrol",
                ha="center", va="center", fontsize=8, bbox=dict(boxstyle="round", fc="#eef3fb", ec="#4a6fa5"))
    ax.set_ylim(-0.7, max(floors) + 0.7)
    ax.set_xlim(0, 1)
    ax.axis("off")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90, metadata={EDGES_KEY: "\n".join(package_edges(g))})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--png", type=Path)
    ap.add_argument("--title", default="fscontrol: imports between packages (lowest layer at the bottom)")
    a = ap.parse_args(argv)
    g = graph(a.root)
    print(f"{len(g)} modules, {sum(len(v) for v in g.values())} imports")
    for lay, names in enumerate(LAYERS):
        mods = sorted(m for m in g if layer_of(m) == lay)
        print(f"layer {lay}: {', '.join(names)} ({len(mods)} modules)")
    unplaced = sorted(m for m in g if layer_of(m) is None)
    if unplaced:
        print("modules in no layer:", ", ".join(unplaced))
    up = upward(g)
    for m, d in up:
        print(f"upward import: {m} -> {d}")
    cyc = cycles(g)
    for c in cyc:
        print("cycle:", " -> ".join(c))
    if a.png:
        draw(g, a.png, a.title)
        print(f"wrote {a.png}")
    return 1 if up or cyc else 0


if __name__ == "__main__":
    sys.exit(main())
