"""The command line is thin (issue #29): each command reads its options, calls one library function,
prints (fscontrol/cli/app.py). scripts/cli_calls.py counts, from the code, the calls each command
makes into fscontrol's library (through the command line's own helpers too; one branch of each
choice, as one run takes it, twice what a loop runs; its ALLOWED output, option and process helpers
and the errors left out; any call it cannot resolve is a failure: its docstring).

BOUND is 2: a command may ask the library for what its options name (the agent's setup from
--config/--db/--source/-M: agent.loop.setup; or the config: agent.config.load) and then call its
one function. Orchestration is more: before issue #29's change `status` made 7 such calls (config,
collect, snapshot, status data, decision history, last decision, holds), `history` 9 and `control`
6; test_the_count_sees_orchestration holds the counter to a copy of that shape."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import cli_calls  # noqa: E402

BOUND = 2

# command -> (its count, why it may make more than BOUND calls). The count is pinned: a command
# allowed here that grows fails too.
ALLOWED = {
    # `run`: agent.loop.setup, model.allocations.parse_period (--for) and agent.loop.run_loop. --for
    # is read before the service starts so a mistyped duration fails before any signal handler or
    # scheduler is in place; the service's stop (SIGTERM/SIGINT handlers, the --for timer) belongs
    # to the process, which the command owns, and run_loop takes the stop event it sets.
    "run": 3,
}


def _counted() -> dict[str, list[str]]:
    counter = cli_calls.Counter(ROOT)
    return {c.name: counter.count(c).calls for c in cli_calls.commands(ROOT)}


def _counted(root: Path = ROOT) -> dict[str, cli_calls.Command]:
    counter = cli_calls.Counter(root)
    return {c.name: counter.count(c) for c in cli_calls.commands(root)}


def _not_thin(root: Path = ROOT) -> dict[str, list[str]]:
    """The commands that fail the check: over BOUND (not in ALLOWED, or not at its pinned count),
    or with a call the counter cannot resolve."""
    out = {}
    for name, c in _counted(root).items():
        if c.unresolved or (len(c.calls) > BOUND if name not in ALLOWED else len(c.calls) != ALLOWED[name]):
            out[name] = c.calls + [f"unresolved: {u}" for u in c.unresolved]
    return out


def test_every_command_calls_at_most_two_library_functions():
    assert _not_thin() == {}, f"commands that orchestrate (more than {BOUND} library calls), or that the counter " \
        "cannot read (update ALLOWED and its reason only for a real exception)"


def test_the_commands_make_one_call_each():
    counted = {name: c.calls for name, c in _counted().items()}
    one = {"status": "agent.commands.status", "history": "agent.commands.history", "collect": "agent.commands.collect",
           "fit": "agent.commands.fit", "decisions": "agent.commands.decisions", "metrics": "agent.commands.metrics",
           "publish": "agent.commands.publish", "capture": "agent.commands.capture", "control": "agent.commands.control",
           "tick": "agent.commands.tick", "gate": "agent.commands.gate", "doctor": "agent.commands.doctor",
           "config check": "agent.commands.config_check", "forecast": "forecast.request.forecast",
           "simulate": "sim.command.simulate"}
    assert {name: counted[name] for name in one} == {name: ["fscontrol." + f] for name, f in one.items()}


def test_every_allowed_helper_exists_and_says_why():
    """ALLOWED names real functions (a renamed one would let its new name count), each with a reason."""
    import importlib

    for name, why in cli_calls.ALLOWED.items():
        mod, _, attr = name.rpartition(".")
        assert hasattr(importlib.import_module(mod), attr), name
        assert why.split(":")[0] in ("output", "option", "process") and len(why.split()) >= 5, (name, why)


def test_the_counter_finds_every_command():
    """The commands the counter reads from cli/app.py are the ones the app registers."""
    from fscontrol.cli.app import app

    def name(c) -> str:
        return c.name or c.callback.__name__.lower().replace("_", "-")

    registered = {name(c) for c in app.registered_commands}
    registered |= {f"{g.name} {name(c)}" for g in app.registered_groups for c in g.typer_instance.registered_commands}
    assert {c.name for c in cli_calls.commands(ROOT)} == registered
    assert set(ALLOWED) <= registered


def _tree(tmp_path: Path, app_py: str) -> Path:
    """A checkout holding the command line `app_py` beside the real cli/common.py and the real
    library (linked)."""
    cli = tmp_path / "fscontrol" / "cli"
    cli.mkdir(parents=True)
    for p in (ROOT / "fscontrol").iterdir():
        if p.name not in ("cli", "__pycache__"):
            (tmp_path / "fscontrol" / p.name).symlink_to(p)
    (cli / "app.py").write_text(textwrap.dedent(app_py))
    (cli / "common.py").write_text((ROOT / "fscontrol" / "cli" / "common.py").read_text())
    return tmp_path


def _status(tmp_path: Path, body: str, top: str = "") -> cli_calls.Command:
    """`status` with `body` (and `top` above it), counted."""
    root = _tree(tmp_path, top + "\n@app.command()\ndef status(db=None, clusters=()):\n" + textwrap.indent(textwrap.dedent(body), "    "))
    return _counted(root)["status"]


def test_the_count_sees_orchestration(tmp_path):
    """The counter is not empty: the old `status` shape (config, history, collect, snapshot, data,
    the decisions, the holds, chained in the command) counts 8, through a helper of the command line
    and in the costlier branch of an `if`; its output, its -o check and its errors count nothing."""
    root = _tree(tmp_path, '''
        from fscontrol.cli.common import _fail
        from fscontrol.errors import ConfigError, FscontrolError

        @app.command()
        def status(source=None, db=None, cluster=None, json_out=False):
            from fscontrol.agent import config
            from fscontrol.report import status as rstatus
            from fscontrol.report import table as rtable
            from fscontrol.store import history as store
            from fscontrol.store import ledger as store_ledger

            try:
                columns = rstatus.status_fields(None)
                cfg = config.load(None)
                database = store.open_db(db)
                if source is not None:
                    _collect(source, database)
                else:
                    pass
                snap = store.load_snapshot(database, cluster=cluster)
                data = rstatus.status_data(snap, control_history=store_ledger.decision_history(database, snap.cluster, 60),
                                           total_held=rstatus.holds_total(store_ledger.last_decision(database, snap.cluster)))
            except FscontrolError as e:
                raise _fail(ConfigError(str(e)))
            print(rstatus.status_lines(data, columns) if json_out else rtable.json_chunks(data))

        def _collect(source, database):
            from fscontrol.agent import pipeline
            pipeline.collect(source, database)
    ''')
    found = cli_calls.commands(root)
    assert [(c.name, c.function) for c in found] == [("status", "status")]
    c = cli_calls.Counter(root).count(found[0])
    assert c.unresolved == []
    assert [x.removeprefix("fscontrol.") for x in c.calls] == [
        "agent.config.load", "store.history.open_db", "agent.pipeline.collect", "store.history.load_snapshot",
        "report.status.status_data", "store.ledger.decision_history", "report.status.holds_total",
        "store.ledger.last_decision"]


# the ways the outside review of #29 (tests/data/cli_fool/app.py) hid a command's library calls from
# the old counter: each one seen now
def test_a_module_level_alias_counts(tmp_path):
    c = _status(tmp_path, "LOAD(db)\nSNAP(db)\nCALL(db)\n", "from fscontrol.store import history as store\n"
                "LOAD = store.load_snapshot\nSNAP = LOAD\nCALL: object = store.open_db\n")
    assert c.calls == ["fscontrol.store.history.load_snapshot"] * 2 + ["fscontrol.store.history.open_db"]


def test_a_local_alias_counts(tmp_path):
    c = _status(tmp_path, "from fscontrol.agent import pipeline\ncollect = pipeline.collect\ncollect(db)\n")
    assert c.calls == ["fscontrol.agent.pipeline.collect"]


def test_a_call_in_a_loop_counts_more_than_once(tmp_path):
    c = _status(tmp_path, "from fscontrol.agent import pipeline\nfor x in clusters:\n    pipeline.collect(x, db)\n"
                "[pipeline.collect(x, db) for x in clusters]\n")
    assert c.calls == ["fscontrol.agent.pipeline.collect"] * 4 and len(c.calls) > BOUND


def test_a_library_function_passed_on_counts_more_than_once(tmp_path):
    """map(f, ...), a callback: called any number of times; a class only tested against is not."""
    c = _status(tmp_path, "from fscontrol.agent import pipeline\nfrom fscontrol.store import history as store\n"
                "list(map(pipeline.collect, clusters))\nrun(callback=store.open_db)\n"
                "isinstance(db, store.Snapshot)\n", "def run(callback):\n    pass\n")
    assert c.calls == ["fscontrol.agent.pipeline.collect"] * 2 + ["fscontrol.store.history.open_db"] * 2


def test_a_library_function_as_an_options_callback_counts(tmp_path):
    root = _tree(tmp_path, """
        from typing import Annotated
        import typer
        from fscontrol.agent import pipeline

        @app.command()
        def status(db: Annotated[str, typer.Option(callback=pipeline.collect)] = None):
            pass

        @app.command()
        def history(db: Annotated[str, typer.Option(callback=_check)] = None):
            pass

        def _check(value):
            pipeline.collect(value)
    """)
    assert _counted(root)["status"].calls == ["fscontrol.agent.pipeline.collect"] * 2
    assert _counted(root)["history"].calls == ["fscontrol.agent.pipeline.collect"] * 2


def test_a_helper_class_of_the_command_line_is_followed(tmp_path):
    c = _status(tmp_path, "h = _H(db)\nh.go()\n_H(db).go()\n", '''
from fscontrol.store import ledger
class _H:
    def __init__(self, db):
        self.db = db
        ledger.last_decision(db, "c")
    def go(self):
        return ledger.decision_history(self.db, "c", 60)
''')
    assert c.unresolved == []
    assert sorted(x.removeprefix("fscontrol.store.ledger.") for x in c.calls) == ["decision_history"] * 2 + ["last_decision"] * 2


def test_getattr_on_a_module_counts(tmp_path):
    c = _status(tmp_path, "from fscontrol.report import status as rstatus\ngetattr(rstatus, \"holds_total\")(db)\n")
    assert c.calls == ["fscontrol.report.status.holds_total"]


def test_a_library_function_named_like_output_counts(tmp_path):
    """Only the functions ALLOWED names (in full) are output: a library function named like one is not."""
    c = _status(tmp_path, "from fscontrol.report import status as rstatus\nfrom fscontrol.agent import config\n"
                "rstatus.status_report_rows(db)\nrstatus.report(db)\nconfig.effective(db)\n")
    assert len(c.calls) == 3


def test_a_method_on_what_a_library_call_returned_counts(tmp_path):
    c = _status(tmp_path, "from fscontrol.store import history as store\ndatabase = store.open_db(db)\n"
                "database.execute(\"delete from holds\")\nstore.open_db(db).execute(\"x\")\n"
                "rows = database.execute(\"x\").fetchall()\n")
    assert c.calls == ["fscontrol.store.history.open_db", "fscontrol.store.history.open_db().execute",
                       "fscontrol.store.history.open_db().execute", "fscontrol.store.history.open_db",
                       "fscontrol.store.history.open_db().execute().fetchall", "fscontrol.store.history.open_db().execute"]


def test_a_method_on_a_library_value_made_at_import_counts(tmp_path):
    c = _status(tmp_path, "DB.execute(\"delete from holds\")\n", "from fscontrol.store import history as store\n"
                "DB = store.open_db(\"/tmp/h.db\")\n")
    assert c.calls == ["fscontrol.store.history.open_db().execute"]


def test_a_call_it_cannot_resolve_fails(tmp_path):
    for body in ("import importlib\nimportlib.import_module(\"fscontrol.store.history\").open_db(db)\n",
                 "__import__(\"fscontrol.store.history\")\n",
                 "from fscontrol.store import history as store\nname = \"open_db\"\ngetattr(store, name)(db)\n",
                 "mystery(db)\n",
                 "from fscontrol.cli.common import _nothing\n_nothing(db)\n",
                 "globals()[\"run\"](db)\n"):
        c = _status(tmp_path / str(abs(hash(body))), body)
        assert c.unresolved, body


def test_the_reviewers_fooling_command_fails(tmp_path):
    """The outside review's `status` (aliases, a helper class, getattr, an output-like name, a
    method on the history, a loop) fails the check it passed."""
    root = _tree(tmp_path, (ROOT / "tests" / "data" / "cli_fool" / "app.py").read_text())
    bad = _not_thin(root)
    assert "status" in bad
    c = _counted(root)["status"]
    assert len(c.calls) > BOUND
    for seen in ("store.history.load_snapshot", "store.ledger.decision_history", "store.ledger.last_decision",
                 "report.status.holds_total", "report.status.status_report_rows"):
        assert "fscontrol." + seen in c.calls, seen
    assert c.calls.count("fscontrol.agent.pipeline.collect") == 2  # in a loop
    assert c.unresolved  # _db: no such helper of the command line (and the method on what it returns)


def test_an_options_callback_defined_in_cli_options_counts(tmp_path):
    """The second fooling command line (tests/data/cli_fool/options.py): the library calls of a
    typer option's callback defined once in cli/options.py, named as a type alias or as
    `options.X`, are the command's (a callback is code the command runs: a library function as
    the callback counts twice, as a callback passed on does), and a callback it cannot resolve fails."""
    root = _tree(tmp_path, (ROOT / "tests" / "data" / "cli_fool" / "options_app.py").read_text())
    (root / "fscontrol" / "cli" / "options.py").write_text((ROOT / "tests" / "data" / "cli_fool" / "options.py").read_text())
    c = _counted(root)
    collect, open_db = "fscontrol.agent.pipeline.collect", "fscontrol.store.history.open_db"
    assert sorted(c["status"].calls) == sorted([collect, open_db] * 2 + [open_db] * 2) and not c["status"].unresolved
    assert sorted(c["history"].calls) == sorted([collect, open_db] * 2) and not c["history"].unresolved
    assert c["fit"].unresolved and "getattr with a computed name" in c["fit"].unresolved[0]
    assert set(_not_thin(root)) == {"status", "history", "fit"}


def test_the_real_options_are_read(tmp_path):
    """The real cli/options.py's options are followed where a command names them (they call no
    library function: validation and conversion only), and so is the app's own callback
    (--version, run before every command): it calls nothing of the library."""
    counter = cli_calls.Counter(ROOT)
    opts = counter.module("fscontrol.cli.options")
    assert {"SourceOpt", "DbOpt", "ConfigOpt", "ClusterOpt", "JsonOpt", "PublishedOpt"} <= set(opts.values)
    assert all(counter.calls("fscontrol.cli.options", f) == [] for f in opts.values.values())
    found = [counter.count(c) for c in cli_calls.app_callbacks(ROOT)]
    assert [(c.name, c.function, c.calls, c.unresolved) for c in found] == [("app callback", "_main", [], [])]


def _error_writers(paths) -> set[tuple[str, str]]:
    """(file, function) of each piece of code that writes an error's wording ("error:" in a string
    it writes) to stderr: typer.echo/click.echo(..., err=True), print(..., file=sys.stderr),
    sys.stderr.write(...)."""
    import ast

    def to_stderr(call: ast.Call) -> bool:
        f = call.func
        kw = {k.arg: k.value for k in call.keywords}
        if isinstance(f, ast.Attribute) and f.attr in ("echo", "secho") and isinstance(kw.get("err"), ast.Constant):
            return bool(kw["err"].value)
        if isinstance(f, ast.Name) and f.id == "print" and "file" in kw:
            return "stderr" in ast.unparse(kw["file"])
        return isinstance(f, ast.Attribute) and f.attr in ("write", "writelines") and "stderr" in ast.unparse(f.value)

    def says_error(call: ast.Call) -> bool:
        return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and "error:" in n.value
                   for a in [*call.args, *(k.value for k in call.keywords)] for n in ast.walk(a))

    out = set()
    for path in paths:
        tree = ast.parse(path.read_text())
        for top in tree.body:
            fns = [top] if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)) else \
                [m for m in getattr(top, "body", []) if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for fn in fns:
                if any(isinstance(n, ast.Call) and to_stderr(n) and says_error(n) for n in ast.walk(fn)):
                    out.add((path.name, fn.name))
    return out


def test_errors_become_messages_only_through_fail():
    """An error's line (`fscontrol: error: ...`) is written in one place, cli.common._fail (the
    tick's several errors, one line each, go through it too: _finish). The others in the package
    are the simulator's `python -m` tools, not fscontrol commands (docs/architecture.md says why):
    the research runners' typer usage errors (sim/cmdline.py `run`), the engine's build tool
    (sim/accel.py) and the moldable experiment's own argparse runner."""
    assert _error_writers(sorted((ROOT / "fscontrol" / "cli").glob("*.py"))) == {("common.py", "_fail")}
    assert _error_writers(sorted((ROOT / "fscontrol").rglob("*.py"))) == {
        ("common.py", "_fail"), ("cmdline.py", "run"), ("accel.py", "main"),
        ("moldable_experiment.py", "moldable"), ("moldable_experiment.py", "_redraw")}


def test_the_errors_check_sees_error_wording(tmp_path):
    """However the line is written (an f-string, a word before "error:", print to stderr, a write)."""
    src = tmp_path / "x.py"
    src.write_text(textwrap.dedent('''
        import sys, typer
        def a(e):
            typer.echo(f"{e}: error: {e}", err=True)
        def b(e):
            print("tick error: " + str(e), file=sys.stderr)
        def c(e):
            sys.stderr.write(f"fscontrol: error: {e}\\n")
        def d(e):
            typer.echo(f"error: {e}")  # stdout: not an error line
    '''))
    assert _error_writers([src]) == {("x.py", "a"), ("x.py", "b"), ("x.py", "c")}


def test_the_command_line_translates_no_other_exception():
    """A command turns only fscontrol's named errors into messages (through _fail): no `except
    OSError` or `except ValueError` making an error of its own (the library names its errors). The
    exceptions: the interrupt (Group.invoke, and the console script's main around the imports: exit
    130, its line written even when stderr is gone), the exit typer raises (main.py: an interrupt
    it turned into exit 130 said once; exit_code returns it), and a closed pipe while printing.
    (`simulate` turned the simulator's ValueError/OSError into a ConfigError here; sim.command
    does it now.)"""
    import ast

    handlers = set()
    for path in sorted((ROOT / "fscontrol" / "cli").glob("*.py")):
        tree = ast.parse(path.read_text())
        for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            for h in [n for n in ast.walk(fn) if isinstance(n, ast.ExceptHandler)]:
                names = {x.id if isinstance(x, ast.Name) else ast.unparse(x)
                         for x in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])}
                other = names - {"FscontrolError"}
                if other:
                    handlers.add((path.name, fn.name, tuple(sorted(other))))
    assert handlers == {("app.py", "invoke", ("KeyboardInterrupt",)),
                        ("main.py", "main", ("KeyboardInterrupt",)), ("main.py", "main", ("ValueError",)),
                        ("main.py", "main", ("OSError", "ValueError")), ("main.py", "_run", ("SystemExit",)),
                        ("main.py", "exit_code", ("SystemExit",)),
                        ("common.py", "_print_lines", ("BrokenPipeError",)),
                        ("common.py", "_print_lines", ("OSError", "ValueError"))}
