"""How thin the command line is: each command's calls into fscontrol's library, from the code (ast).

    python scripts/cli_calls.py                 # every command: how many library calls, and which
    python scripts/cli_calls.py --root DIR      # another checkout (e.g. an older revision's worktree)

A command reads its options, calls one library function and prints (fscontrol/cli/app.py); this
counts what else it calls. Every call in a command is resolved to one of:

- a library call (counted): a function or class of fscontrol outside fscontrol.cli, however it is
  reached: an import (the ones inside the function too), an alias of one (`LOAD =
  store.load_snapshot` at the top or in the function), `getattr(module, "name")`, or a method
  called on a value a library call returned (`database.execute(...)` after `database =
  store.open_db(...)`); one inside a loop or a comprehension counts twice (it runs more than once),
  and so does a library function passed on as a value (`map(pipeline.collect, clusters)`, a
  callback: it may be called any number of times);
- a helper of the command line (a function or class of fscontrol.cli, its own module's or
  another's, a method of such a class): followed, its calls counted here;
- not counted: fscontrol.errors (what _fail says), ALLOWED (the output, option and process helpers
  named one by one below, each with its reason), Python's builtins, other packages (typer, json,
  the standard library), and methods called on a plain value (an option, a literal, what those
  return);
- unresolved: anything else (a call on a name it cannot trace, `getattr` with a computed name,
  `__import__`, `eval`, importlib): listed, and tests/test_cli_thin.py fails on any.

The command's signature is read too (an option's callback, a default), and so is an option defined
once at the top of a module of the command line (`SourceOpt = Annotated[..., typer.Option(callback=
...)]` in cli/options.py) where a command names it: what building it calls, and its callback's calls
(a callback is code the command runs), are the command's; a callback the counter cannot resolve is
listed like any call. The apps' own callbacks (`@app.callback()`, run before every command) are
counted too, each as "MODULE callback". One run of a command
takes one branch: an `if`, an `x if c else y` and a `try` count their costlier branch.
"""

from __future__ import annotations

import argparse
import ast
import builtins
from dataclasses import dataclass, field
from pathlib import Path

# fscontrol's functions a command may call that are not its one library call, each by its full
# name and why it is no orchestration. Output: turns a result into the printed text (or a table's
# rows and notes, or the --helpformat list); options: an option read or checked; process: a
# setting of the process around the command.
ALLOWED: dict[str, str] = {
    # output
    "fscontrol.report.status.format_fields_help": "output: the --helpformat list of a table's fields",
    "fscontrol.report.status.status_lines": "output: status's text from its data",
    "fscontrol.report.table.table_lines": "output: a table's lines (-P, -n, -o) from rows already made",
    "fscontrol.report.table.json_chunks": "output: status's --json written a chunk at a time",
    "fscontrol.report.ticks.format_history": "output: history's text from its data",
    "fscontrol.report.ticks.format_tick": "output: tick's text from its data",
    "fscontrol.report.decisions.decisions_lines": "output: decisions' table from its data",
    "fscontrol.report.fit.format_fit": "output: fit's text from its data",
    "fscontrol.report.collect.format_collect": "output: collect's line from its data",
    "fscontrol.report.control.format_control": "output: control's text from its data",
    "fscontrol.report.control.control_rows": "output: control's table rows (-P, -n) from its data",
    "fscontrol.report.control.control_notes": "output: control's notes beside its table, from its data",
    "fscontrol.report.control.format_off": "output: control off's text from its data",
    "fscontrol.report.control.format_on": "output: control on's line from its data",
    "fscontrol.report.gate.gate_data": "output: gate's --json from the gate tick's result",
    "fscontrol.report.gate.gate_rows": "output: gate's table rows (-P, -n) from the plan",
    "fscontrol.report.gate.gate_fields": "output: gate's -o fields, headed with the plan's unit",
    "fscontrol.report.gate.gate_table_notes": "output: gate's notes beside its table",
    "fscontrol.report.gate.gate_lines": "output: gate's text from the gate tick's result",
    "fscontrol.report.doctor.report_lines": "output: the doctor's text from its data",
    "fscontrol.forecast.why.format_all": "output: why's text from its data",
    "fscontrol.forecast.startview.render": "output: start's text from its data",
    "fscontrol.forecast.request.format_forecast": "output: forecast's text from its data",
    "fscontrol.sim.command.render": "output: simulate's text (or --json) from its result",
    "fscontrol.sim.sweep.format_sweep": "output: a sweep's comparison table from its results",
    # options
    "fscontrol.report.table.pick_fields": "option: -o checked against the table's fields before any work",
    "fscontrol.report.status.status_fields": "option: status's -o/-l/--tree checked against its fields",
    "fscontrol.report.decisions.fields": "option: decisions' -o checked against its fields",
    "fscontrol.forecast.why.is_job_id": "option: -j checked to be job ids",
    "fscontrol.forecast.request.ForecastRequest": "option: forecast's options gathered as one value",
    "fscontrol.sim.command.SimulateOptions": "option: simulate's options gathered as one value",
    # process
    "fscontrol.slurm.parse.gc_paused": "process: the garbage collector paused around a big report, no work of its own",
}

UNSAFE = {"__import__", "eval", "exec", "compile", "importlib.import_module",
          "importlib.__import__"}  # a call whose target is computed at run time: never resolved
BUILTINS = set(dir(builtins)) - UNSAFE - {"getattr"}


class Unresolved(Exception):
    pass


@dataclass
class Module:
    name: str
    tree: ast.Module
    functions: dict[str, ast.FunctionDef]  # "f" and "Class.method"
    classes: set[str]
    imports: dict[str, str]  # a name bound at the top -> the dotted name it stands for (imports, aliases)
    other: set[str]  # other names bound at the top (values, not callables the counter can follow)
    made: dict[str, str] = field(default_factory=dict)  # a name bound at the top to a call's value -> what it called
    values: dict[str, str] = field(default_factory=dict)  # a name bound at the top to a value -> its key in functions


VALUE = "<value>"  # functions[VALUE + name]: a name's value at the top of a module, read as a function


def _value_function(name: str, value: ast.expr) -> ast.FunctionDef:
    """`name = value` at the top of a module as a function whose body is the value: what building
    it calls (an option's `typer.Option(callback=...)` in cli/options.py) is read as a function's."""
    fn = ast.FunctionDef(name=VALUE + name, args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                              kw_defaults=[], kwarg=None, defaults=[]),
                         body=[ast.Expr(value)], decorator_list=[], returns=None, type_params=[])
    return ast.fix_missing_locations(ast.copy_location(fn, value))


@dataclass
class Command:
    name: str
    module: str
    function: str
    calls: list[str] = field(default_factory=list)  # the library calls counted, dotted
    unresolved: list[str] = field(default_factory=list)  # calls it could not resolve (line: source)


def _bindings(nodes, pkg: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    out[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([mod] if mod else []))
            for a in node.names:
                out[a.asname or a.name] = f"{mod}.{a.name}"
    return out


def _dotted(node: ast.expr) -> tuple[str, list[str]] | None:
    """`a.b.c` as ("a", ["b", "c"])."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id, list(reversed(parts))) if isinstance(node, ast.Name) else None


def load(root: Path, name: str) -> Module:
    path = root / Path(*name.split(".")).with_suffix(".py")
    tree = ast.parse(path.read_text(), str(path))
    functions: dict[str, ast.FunctionDef] = {}
    classes: set[str] = set()
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[n.name] = n
        elif isinstance(n, ast.ClassDef):
            classes.add(n.name)
            for m in n.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    functions[f"{n.name}.{m.name}"] = m
    imports = _bindings(tree.body, name.rpartition(".")[0])
    other: set[str] = set()
    made: dict[str, str] = {}
    values: dict[str, str] = {}
    for n in tree.body:  # module-level aliases: LOAD = store.load_snapshot
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            d = _dotted(n.value) if n.value is not None else None
            for t in targets:
                if not isinstance(t, ast.Name):
                    continue
                c = _dotted(n.value.func) if isinstance(n.value, ast.Call) else None
                if d and (d[0] in imports or d[0] in functions or d[0] in classes):
                    head = imports.get(d[0], f"{name}.{d[0]}")
                    imports[t.id] = ".".join([head, *d[1]])
                elif c and c[0] in imports:  # DB = store.open_db(...): what it returned, kept
                    made[t.id] = ".".join([imports[c[0]], *c[1]])
                    other.add(t.id)
                else:
                    other.add(t.id)
                    if n.value is not None:  # SourceOpt = Annotated[str, typer.Option(callback=...)]: followed where named
                        functions[VALUE + t.id] = _value_function(t.id, n.value)
                        values[t.id] = VALUE + t.id
    return Module(name, tree, functions, classes, imports, other, made, values)


def commands(root: Path) -> list[Command]:
    """The commands fscontrol/cli/app.py registers: `@app.command()` on a function there,
    `app.command(...)(module.function)` / `config_app.command(...)(...)` for one elsewhere in cli,
    or `_lazy(app, "name", "module"[, "function"])` (registered by name, imported when built: the
    function is the name's with - as _ unless given)."""
    app = load(root, "fscontrol.cli.app")
    out = []

    def named(call: ast.Call, function: str) -> str:
        if call.args and isinstance(call.args[0], ast.Constant):
            return str(call.args[0].value)
        return function.lower().replace("_", "-")

    for node in app.tree.body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "command":
                    out.append(Command(named(d, node.name), app.name, node.name))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            reg, args = node.value.func, node.value.args
            if (isinstance(reg, ast.Call) and isinstance(reg.func, ast.Attribute) and reg.func.attr == "command"
                    and args and isinstance(args[0], ast.Attribute) and isinstance(args[0].value, ast.Name)):
                prefix = "config " if isinstance(reg.func.value, ast.Name) and reg.func.value.id == "config_app" else ""
                out.append(Command(prefix + named(reg, args[0].attr), app.imports[args[0].value.id], args[0].attr))
            elif isinstance(reg, ast.Name) and reg.id == "_lazy" and len(args) >= 3 \
                    and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args[1:]):
                group, name, module = args[0], args[1].value, args[2].value
                function = args[3].value if len(args) > 3 else name.replace("-", "_")
                prefix = "config " if isinstance(group, ast.Name) and group.id == "config_app" else ""
                out.append(Command(prefix + name, f"fscontrol.cli.{module}", function))
    return out


def app_callbacks(root: Path) -> list[Command]:
    """The functions a typer app runs before any of its commands (`@app.callback()` in a module of
    fscontrol/cli: the --version option's callback), each as a Command named "MODULE callback": what
    they call is added to every command's run."""
    out = []
    for path in sorted((root / "fscontrol" / "cli").glob("*.py")):
        mod = load(root, f"fscontrol.cli.{path.stem}")
        for node in mod.tree.body:
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "callback"
                    for d in node.decorator_list):
                out.append(Command(f"{path.stem} callback", mod.name, node.name))
    return out


# a value's origin: ("alias", dotted) a name for a module or function; ("lib", label) what a library
# call returned (a method called on it is a library call); ("cli", module, class) an instance of a
# command-line class; ("plain",) anything else (an option, a literal, what typer or json returned)
PLAIN = ("plain",)


class Counter:
    def __init__(self, root: Path):
        self.root = root
        self.modules: dict[str, Module] = {}

    def module(self, name: str) -> Module:
        if name not in self.modules:
            self.modules[name] = load(self.root, name)
        return self.modules[name]

    def _is_function(self, dotted: str) -> bool:
        """Whether fscontrol's `dotted` names a function or class defined at the top of its module."""
        split = self._split(dotted)
        if split is None or "." in split[1]:
            return False
        try:
            mod = self.module(split[0])
        except (OSError, SyntaxError):
            return False
        return split[1] in mod.functions or split[1] in mod.classes

    def _split(self, dotted: str) -> tuple[str, str] | None:
        """fscontrol.cli.x.f -> ("fscontrol.cli.x", "f") when fscontrol/cli/x.py exists."""
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            if (self.root / Path(*parts[:i])).with_suffix(".py").exists():
                return ".".join(parts[:i]), ".".join(parts[i:])
        return None

    def calls(self, module: str, function: str, seen: frozenset = frozenset(),
              unresolved: list[str] | None = None) -> list[str]:
        """The library calls of one run of `module.function` (the costlier branch of each choice;
        twice what a loop runs); what it cannot resolve goes to `unresolved`."""
        unresolved = [] if unresolved is None else unresolved
        mod = self.module(module)
        fn = mod.functions[function]
        cls = function.split(".")[0] if "." in function else None
        names = {**mod.imports, **_bindings(ast.walk(fn), module.rpartition(".")[0])}
        seen = seen | {(module, function)}
        params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
        params |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
        for lam in ast.walk(fn):
            if isinstance(lam, ast.Lambda):
                params |= {a.arg for a in lam.args.args}
        assigned: dict[str, list[ast.expr]] = {}  # local name -> the values bound to it

        def bind(target: ast.expr, value: ast.expr) -> None:
            if isinstance(target, ast.Name):
                assigned.setdefault(target.id, []).append(value)
            elif isinstance(target, (ast.Tuple, ast.List)):
                for t in target.elts:
                    bind(t.value if isinstance(t, ast.Starred) else t, value)

        for n in ast.walk(fn):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    bind(t, n.value)
            elif isinstance(n, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and n.value is not None:
                bind(n.target, n.value)
            elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
                bind(n.target, n.iter)
            elif isinstance(n, (ast.With, ast.AsyncWith)):
                for item in n.items:
                    if item.optional_vars is not None:
                        bind(item.optional_vars, item.context_expr)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                assigned.setdefault(n.name, []).append(ast.Constant(None))
        resolving: set[str] = set()
        callees = {id(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)}
        # a class named to test an exception or a value's type (isinstance, except) is not called
        for n in ast.walk(fn):
            tested = None
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("isinstance", "issubclass") \
                    and len(n.args) == 2:
                tested = n.args[1]
            elif isinstance(n, ast.ExceptHandler):
                tested = n.type
            if tested is not None:
                callees |= {id(x) for x in (tested.elts if isinstance(tested, ast.Tuple) else [tested])}
            elif isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, (ast.Name, ast.Attribute)):
                callees.add(id(n.value))  # an alias: its calls are counted where it is called

        def worst(origins) -> tuple:
            origins = list(origins)
            for kind in ("lib", "cli", "alias"):
                for o in origins:
                    if o[0] == kind:
                        return o
            return PLAIN

        def name_origin(name: str, line: int) -> tuple:
            if name == "self" and cls is not None:
                return ("cli", module, cls)
            if name in assigned:
                if name in resolving:
                    return PLAIN
                resolving.add(name)
                try:
                    return worst(origin(v) for v in assigned[name])
                finally:
                    resolving.discard(name)
            if name in params:
                return PLAIN
            if name in names:
                return ("alias", names[name])
            if name in mod.functions or name in mod.classes:
                return ("alias", f"{module}.{name}")
            made = mod.made.get(name)
            if made is not None and made.startswith("fscontrol.") and not made.startswith(("fscontrol.errors.", "fscontrol.cli.")):
                return ("lib", made)  # a library call's value made at import: a method on it is a library call
            if name in BUILTINS or name in mod.other:
                return PLAIN
            raise Unresolved(f"line {line}: the name {name!r}")

        def origin(e: ast.expr) -> tuple:
            if isinstance(e, ast.Name):
                return name_origin(e.id, e.lineno)
            if isinstance(e, ast.Attribute):
                base = origin(e.value)
                if base[0] == "alias":
                    return ("alias", f"{base[1]}.{e.attr}")
                return base if base[0] == "lib" else PLAIN
            if isinstance(e, ast.Subscript):
                return origin(e.value)
            if isinstance(e, ast.Call):
                kind, label = classify(e, count=False)
                if kind == "lib":
                    return ("lib", label)
                if kind == "cli-class":
                    return ("cli", *label)
                if kind == "cli":
                    return ("lib", label) if self.calls(*label, seen=seen, unresolved=[]) else PLAIN
                return PLAIN
            if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
                return worst(origin(x) for x in e.elts)
            if isinstance(e, ast.Dict):
                return worst(origin(x) for x in e.values)
            if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
                return origin(e.elt)
            if isinstance(e, ast.DictComp):
                return origin(e.value)
            if isinstance(e, (ast.BoolOp,)):
                return worst(origin(x) for x in e.values)
            if isinstance(e, ast.IfExp):
                return worst([origin(e.body), origin(e.orelse)])
            if isinstance(e, (ast.Await, ast.Starred)):
                return origin(e.value)
            return PLAIN

        def path_kind(path: str) -> tuple[str, object]:
            """What calling `path` (a dotted name) is."""
            if path in UNSAFE or path.rpartition(".")[2] in ("__import__", "import_module"):
                raise Unresolved(f"a call of {path}")
            if not path.startswith("fscontrol."):
                return "other", path
            if path.startswith("fscontrol.errors."):
                return "error", path
            if path in ALLOWED:
                return "allowed", path
            if path.startswith("fscontrol.cli."):
                split = self._split(path)
                if split is None:
                    raise Unresolved(f"{path}: no such module")
                hmod, hname = split
                helper = self.module(hmod)
                if hname in helper.functions:
                    return "cli", (hmod, hname)
                if hname in helper.classes:
                    return "cli-class", (hmod, hname)
                if hname in helper.values:  # an option (or any value) defined at the top of a cli module
                    return "cli-value", (hmod, helper.values[hname])
                if hname in helper.imports and helper.imports[hname] != path:
                    return path_kind(helper.imports[hname])
                raise Unresolved(f"{path}: not a function or class of {hmod}")
            return "lib", path

        def classify(node: ast.Call, count: bool = True) -> tuple[str, object]:
            """("lib", label), ("cli", (module, function)), ("cli-class", (module, class)) or a kind not counted."""
            func = node.func
            if isinstance(func, ast.Name) and func.id == "getattr":
                if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                    return "other", "getattr"  # the attribute read; its call resolves below
                raise Unresolved(f"line {node.lineno}: getattr with a computed name")
            if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr":
                if not (len(func.args) >= 2 and isinstance(func.args[1], ast.Constant)):
                    raise Unresolved(f"line {node.lineno}: getattr with a computed name")
                base = origin(func.args[0])
                if base[0] == "alias":
                    return path_kind(f"{base[1]}.{func.args[1].value}")
                return ("lib", f"{base[1]}().{func.args[1].value}") if base[0] == "lib" else ("other", "getattr")
            if isinstance(func, ast.Name):
                if func.id in BUILTINS and func.id not in assigned and func.id not in names and func.id not in params:
                    return "builtin", func.id
                o = name_origin(func.id, node.lineno)
            elif isinstance(func, ast.Attribute):
                base = origin(func.value)
                if base[0] == "alias":
                    kind, label = path_kind(f"{base[1]}.{func.attr}")
                    if kind == "cli-value":
                        raise Unresolved(f"line {node.lineno}: a call of the value {ast.unparse(func)}")
                    return kind, label
                if base[0] == "lib":
                    return "lib", f"{base[1]}().{func.attr}"
                if base[0] == "cli":
                    _, cmod, cname = base
                    if f"{cname}.{func.attr}" in self.module(cmod).functions:
                        return "cli", (cmod, f"{cname}.{func.attr}")
                    raise Unresolved(f"line {node.lineno}: {cname}.{func.attr}")
                return "method", func.attr  # a method of a plain value: str.split, a timer's start
            else:
                o = origin(func)
            if o[0] == "alias":
                kind, label = path_kind(o[1])
                if kind == "cli-value":  # a value of the command line called: what it runs is not known here
                    raise Unresolved(f"line {node.lineno}: a call of the value {ast.unparse(func)}")
                return kind, label
            if o[0] == "lib":
                return "lib", f"{o[1]}()"
            raise Unresolved(f"line {node.lineno}: a call of {ast.unparse(func)}")

        def own(node: ast.Call) -> list[str]:
            try:
                kind, label = classify(node)
            except Unresolved as e:
                unresolved.append(f"{module}.{function}: {e}: {ast.unparse(node)[:80]}")
                return []
            if kind == "lib":
                return [str(label)]
            if kind in ("cli", "cli-class"):
                hmod, hname = label
                if kind == "cli-class":
                    hname = f"{hname}.__init__"
                    if hname not in self.module(hmod).functions:
                        return []
                if (hmod, hname) in seen:
                    return []
                return self.calls(hmod, hname, seen, unresolved)
            return []

        def passed_on(node: ast.expr) -> tuple[list[str], int]:
            """A library function or class named as a value (not called here): its name, twice
            (it may be called any number of times); a function of the command line: what it calls,
            twice; a value at the top of a module of the command line (an option in cli/options.py,
            its callback too): what building it calls, once."""
            if isinstance(node, ast.Name) and node.id in mod.values and node.id not in assigned \
                    and node.id not in params and node.id not in names and module.startswith("fscontrol.cli."):
                o = ("alias", f"{module}.{node.id}")
            else:
                try:
                    o = origin(node)
                except Unresolved:
                    return [], 0
            if o[0] != "alias" or not o[1].startswith("fscontrol."):
                return [], 0
            try:
                kind, label = path_kind(o[1])
            except Unresolved:
                return [], 0
            if kind == "cli-value":
                return ([] if label in seen else self.calls(*label, seen=seen, unresolved=unresolved)), 1
            if kind == "cli" and label not in seen:
                return self.calls(*label, seen=seen, unresolved=unresolved), 2
            return ([str(label)], 2) if kind == "lib" and self._is_function(o[1]) else ([], 0)

        def cost(node: ast.AST) -> list[str]:
            if isinstance(node, (ast.If, ast.IfExp)):
                body = seq(node.body) if isinstance(node.body, list) else cost(node.body)
                orelse = seq(node.orelse) if isinstance(node.orelse, list) else cost(node.orelse)
                return cost(node.test) + max(body, orelse, key=len)
            if isinstance(node, ast.Try):
                handlers = [seq(h.body) for h in node.handlers]
                return max([seq(node.body) + seq(node.orelse), *handlers], key=len) + seq(node.finalbody)
            if isinstance(node, (ast.For, ast.AsyncFor)):  # the body runs more than once
                return cost(node.iter) + 2 * seq(node.body) + seq(node.orelse)
            if isinstance(node, ast.While):
                return 2 * (cost(node.test) + seq(node.body)) + seq(node.orelse)
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                first, *rest = node.generators
                inner = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
                inner += [*first.ifs, *(x for g in rest for x in (g.iter, *g.ifs))]
                return cost(first.iter) + 2 * seq(inner)
            if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load) and id(node) not in callees:
                passed, times = passed_on(node)
                if passed:
                    return times * passed
            out = own(node) if isinstance(node, ast.Call) else []
            for child in ast.iter_child_nodes(node):
                out += cost(child)
            return out

        def seq(nodes) -> list[str]:
            out: list[str] = []
            for n in nodes:
                out += cost(n)
            return out

        args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
        signature = [a.annotation for a in args if a.annotation is not None]
        signature += [d for d in [*fn.args.defaults, *fn.args.kw_defaults] if d is not None]
        return seq(signature) + seq(fn.body)  # an option's callback runs too

    def count(self, cmd: Command) -> Command:
        cmd.unresolved = []
        cmd.calls = self.calls(cmd.module, cmd.function, unresolved=cmd.unresolved)
        return cmd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help="the checkout to read")
    args = ap.parse_args()
    counter = Counter(args.root)
    for cmd in [*commands(args.root), *app_callbacks(args.root)]:
        counter.count(cmd)
        print(f"{len(cmd.calls):3}  {cmd.name:<16} {', '.join(c.removeprefix('fscontrol.') for c in cmd.calls)}")
        for u in cmd.unresolved:
            print(f"     unresolved: {u}")


if __name__ == "__main__":
    main()
