"""The layout is a picture of the architecture (docs/architecture.md): no import circle, no import
up the layers (scripts/import_graph.py's LAYERS, read from the code's own imports, the ones inside
functions too), every module in a layer, and no module over 600 lines unless the docs say why."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import import_graph  # noqa: E402


def test_no_import_circle():
    assert import_graph.cycles(import_graph.graph(ROOT)) == []


def test_no_import_runs_up_the_layers():
    assert import_graph.upward(import_graph.graph(ROOT)) == []


def test_every_module_sits_in_a_layer():
    g = import_graph.graph(ROOT)
    assert [m for m in g if import_graph.layer_of(m) is None and m != "fscontrol"] == []


def test_the_check_sees_an_upward_import(tmp_path):
    """The checks are not empty: a store module importing the CLI is caught, and so is a circle."""
    pkg = tmp_path / "fscontrol"
    for sub in ("store", "cli"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "store" / "history.py").write_text("def f():\n    from fscontrol.cli import app\n")
    (pkg / "cli" / "app.py").write_text("from fscontrol.store import history\n")
    g = import_graph.graph(tmp_path)
    assert import_graph.upward(g) == [("fscontrol.store.history", "fscontrol.cli.app")]
    assert import_graph.cycles(g) == [["fscontrol.cli.app", "fscontrol.store.history"]]


MIN_REASON_WORDS = 8  # a reason says why the module is one piece: more than a name or a label


def explained_modules(doc: str) -> dict[str, str]:
    """docs/architecture.md's "Modules over 600 lines, and why": each entry a list item
    "- `fscontrol/....py`: the reason" (its lines up to the next item), as {path: reason}. A
    module named only inside another's reason is not explained."""
    section = doc.split("## Modules over 600 lines, and why", 1)[1].split("\n## ", 1)[0]
    entries: dict[str, str] = {}
    for item in re.split(r"\n(?=- )", section):
        m = re.match(r"- `(fscontrol/[\w/]+\.py)`:?(.*)", item, re.S)
        if m:
            entries[m.group(1)] = " ".join(m.group(2).split())
    return entries


def reason_words(reason: str) -> int:
    """The words of a reason, the names in backticks left out (a list of modules is no reason)."""
    return len(re.findall(r"[A-Za-z]+", re.sub(r"`[^`]*`", " ", reason)))


def test_modules_over_600_lines_are_explained():
    """Every module over 600 lines has an entry with a reason of its own (not only its name)."""
    explained = explained_modules((ROOT / "docs" / "architecture.md").read_text())
    long = {str(p.relative_to(ROOT)) for p in (ROOT / "fscontrol").rglob("*.py")
            if len(p.read_text().splitlines()) > 600}
    assert long <= set(explained), f"over 600 lines, not explained in docs/architecture.md: {sorted(long - set(explained))}"
    thin = {m: explained[m] for m in long if reason_words(explained[m]) < MIN_REASON_WORDS}
    assert not thin, f"over 600 lines, named without a reason in docs/architecture.md: {thin}"


def test_the_600_line_check_wants_a_reason():
    """The check is not a name-check: a module named with no reason, or only inside another's
    reason, is not explained."""
    doc = ("## Modules over 600 lines, and why\n\nintro\n\n- `fscontrol/a.py`: one event loop, written as "
           "closures over its local state so mypyc compiles it\n  to C, said over two lines.\n"
           "- `fscontrol/b.py`\n- `fscontrol/c.py`: short.\n- `fscontrol/d.py`: the steps shared with "
           "`fscontrol/e.py`, written once.\n\n## Next\n- `fscontrol/f.py`: not in the section at all, whatever it says.\n")
    got = explained_modules(doc)
    assert set(got) == {"fscontrol/a.py", "fscontrol/b.py", "fscontrol/c.py", "fscontrol/d.py"}
    assert got["fscontrol/a.py"].endswith("to C, said over two lines.") and got["fscontrol/b.py"] == ""
    assert [m for m, r in got.items() if reason_words(r) < MIN_REASON_WORDS] == ["fscontrol/b.py", "fscontrol/c.py", "fscontrol/d.py"]


def test_the_picture_of_the_imports_is_current():
    """docs/imports-after.png draws the package graph the code has now: the edges written into it
    when it was drawn (scripts/import_graph.py --png) are the code's (issue #29 item 9: the picture
    had gone stale, forecast -> sim, web -> slurm, doctor -> model and doctor -> errors missing).
    Redraw: python scripts/import_graph.py --png docs/imports-after.png"""
    drawn = import_graph.png_edges(ROOT / "docs" / "imports-after.png")
    assert drawn is not None, "docs/imports-after.png carries no edge list: redraw it with scripts/import_graph.py --png"
    now = import_graph.package_edges(import_graph.graph(ROOT))
    assert {"missing from the picture": sorted(set(now) - set(drawn)),
            "drawn, gone from the code": sorted(set(drawn) - set(now))} == \
        {"missing from the picture": [], "drawn, gone from the code": []}


@pytest.mark.plot
def test_the_picture_check_sees_a_changed_edge(tmp_path):
    """The edge list round-trips through a drawn PNG, and one new import changes it."""
    g = {"fscontrol.store.history": {"fscontrol.errors"}, "fscontrol.errors": set()}
    import_graph.draw(g, tmp_path / "g.png", "t")
    assert import_graph.png_edges(tmp_path / "g.png") == ["store -> errors"] == import_graph.package_edges(g)
    g["fscontrol.store.history"].add("fscontrol.slurm.parse")
    assert import_graph.png_edges(tmp_path / "g.png") != import_graph.package_edges(g)


def unnamed_modules(doc: str, root: Path) -> list[str]:
    """The modules under `root`/fscontrol that docs/architecture.md does not name in backticks
    (`name`, `name.py` or `fscontrol/pkg/name.py`) in their package's paragraph (the one opening
    "**`fscontrol/PKG/`", up to the next bold paragraph or heading); a module at the top of the
    package (errors.py, __main__.py) anywhere in those paragraphs or the one "At the bottom"."""
    paragraphs: dict[str, str] = {}
    for m in re.finditer(r"^\*\*`fscontrol/(\w+)/`", doc, re.M):
        rest = doc[m.end():]
        end = re.search(r"\n\*\*|\n## ", rest)
        paragraphs[m.group(1)] = doc[m.start():m.end() + (end.start() if end else len(rest))]
    bottom = re.search(r"^\*\*At the bottom:\*\*.*?(?=\n\n|\Z)", doc, re.M | re.S)
    everywhere = "\n".join([*paragraphs.values(), bottom.group(0) if bottom else ""])
    missing = []
    for path in sorted((root / "fscontrol").rglob("*.py")):
        rel = path.relative_to(root / "fscontrol")
        if path.name == "__init__.py":
            continue
        if len(rel.parts) == 1:
            text, named = everywhere, rf"`(?:fscontrol/)?{re.escape(path.stem)}(?:\.py)?`"
        else:
            pkg = re.escape(rel.parts[0])
            text, named = paragraphs.get(rel.parts[0], ""), \
                rf"`(?:(?:fscontrol/)?{pkg}/)?{re.escape(path.stem)}(?:\.py)?`"
        if not re.search(named, text):
            missing.append(str(rel))
    return missing


def test_the_doc_names_every_module():
    """docs/architecture.md names every module of fscontrol/ in its package's paragraph, sim/'s
    included (review of #29: nodeplace, progress, passfidelity, profile and eight more were not)."""
    assert unnamed_modules((ROOT / "docs" / "architecture.md").read_text(), ROOT) == []


def test_the_module_check_reads_each_packages_own_paragraph(tmp_path):
    """A module named only in another package's paragraph, or not at all, is unnamed."""
    for rel in ("errors.py", "sim/__init__.py", "sim/engine.py", "sim/profile.py", "sim/progress.py", "slurm/survey.py"):
        (tmp_path / "fscontrol" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "fscontrol" / rel).write_text("")
    doc = ("**`fscontrol/slurm/`: Slurm.** nothing here.\n\n**`fscontrol/sim/`: the simulator.** `engine` "
           "loops; `progress.py` a bar.\n\n**`fscontrol/doctor/`:** reads `slurm/survey.py` and `profile`.\n\n"
           "**At the bottom:** `errors.py`.\n\n## Next\n")
    assert unnamed_modules(doc, tmp_path) == ["sim/profile.py", "slurm/survey.py"]


def test_no_comment_or_doc_names_what_no_longer_exists():
    """Every `module.name` in fscontrol's comments and docstrings and in docs/*.md names something
    that exists (scripts/stale_names.py; review of #29: publish.py's `pipeline.gate_table` and
    twenty more had gone stale)."""
    import stale_names

    assert stale_names.stale(ROOT) == []


def test_the_stale_name_check_sees_a_renamed_function(tmp_path):
    import stale_names

    (tmp_path / "fscontrol" / "agent").mkdir(parents=True)
    (tmp_path / "fscontrol" / "agent" / "decide.py").write_text("def gate_table():\n    pass\n")
    (tmp_path / "fscontrol" / "agent" / "pipeline.py").write_text(
        '"""Composes decide.gate_table and agent.decide.gate_table; slurm.conf and history.db are files."""\n'
        "# the table (pipeline.gate_plan; decide.gate_tabel; see agent/gone.py)\n")
    assert [(w, m) for w, m, _ in stale_names.stale(tmp_path)] == [
        ("fscontrol/agent/pipeline.py:2", "pipeline.gate_plan"), ("fscontrol/agent/pipeline.py:2", "decide.gate_tabel"),
        ("fscontrol/agent/pipeline.py:2", "agent/gone.py")]
