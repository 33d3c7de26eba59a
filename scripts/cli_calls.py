"""How thin the command line is: each command's calls into fscontrol's library, from the code (ast).

    python scripts/cli_calls.py                 # every command: how many library calls, and which
    python scripts/cli_calls.py --root DIR      # another checkout (e.g. an older revision's worktree)

A command reads its options, calls one library function and prints (fscontrol/cli/app.py); this
counts what else it calls. Counted: a call of a function or class that an import binds to a module
of fscontrol outside fscontrol.cli (the imports inside the function too), and, through a helper of
fscontrol.cli (its own module's or another's), that helper's calls. Not counted: the errors
(fscontrol.errors: raised for _fail), cli.common's own (_fail, the printing, and _source/_db: one
option each as a source or a history), OUTPUT (what turns a result into the printed text or the
--helpformat list), OPTIONS (an option read or checked) and PROCESS (a setting of the process
around the command). One run of a command takes one branch: an `if`, an `x if c else y` and a
`try` count their costlier branch, a loop its body once.
"""

from __future__ import annotations

import argparse
import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

CLI_OWN = {"_fail", "_print_lines", "_table_alone", "_source", "_db"}
# what turns a result into the printed text (or a table's rows and notes, or the --helpformat
# list, or the exit code a report's findings give)
OUTPUT = re.compile(r"^(format_\w+|render\w*|\w+_lines|\w+_rows|\w+_notes|json_chunks|text_block|tick_data|control_data"
                    r"|off_data|gate_fields|effective|report|exit_for)$")
OPTIONS = {"pick_fields", "status_fields", "fields"}  # -o: the fields asked for, checked against the table's
PROCESS = {"gc_paused"}  # the garbage collector paused around a big report: no work of its own


@dataclass
class Module:
    name: str
    tree: ast.Module
    functions: dict[str, ast.FunctionDef]
    imports: dict[str, str]  # a name bound at the top -> the dotted name it stands for


@dataclass
class Command:
    name: str
    module: str
    function: str
    calls: list[str] = field(default_factory=list)  # the library calls counted, dotted


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


def load(root: Path, name: str) -> Module:
    path = root / Path(*name.split(".")).with_suffix(".py")
    tree = ast.parse(path.read_text(), str(path))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    return Module(name, tree, functions, _bindings(tree.body, name.rpartition(".")[0]))


def commands(root: Path) -> list[Command]:
    """The commands fscontrol/cli/app.py registers: `@app.command()` on a function there, or
    `app.command(...)(module.function)` / `config_app.command(...)(...)` for one elsewhere in cli."""
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
    return out


class Counter:
    def __init__(self, root: Path):
        self.root = root
        self.modules: dict[str, Module] = {}

    def module(self, name: str) -> Module:
        if name not in self.modules:
            self.modules[name] = load(self.root, name)
        return self.modules[name]

    def calls(self, module: str, function: str, seen: frozenset = frozenset()) -> list[str]:
        """The library calls of one run of `module.function` (the costlier branch of each choice)."""
        mod = self.module(module)
        fn = mod.functions[function]
        names = {**mod.imports, **_bindings(ast.walk(fn), module.rpartition(".")[0])}
        seen = seen | {(module, function)}

        def target(func: ast.expr) -> str | None:
            parts = []
            while isinstance(func, ast.Attribute):
                parts.append(func.attr)
                func = func.value
            if not isinstance(func, ast.Name):
                return None
            if func.id in names:
                return ".".join([names[func.id], *reversed(parts)])
            if func.id in mod.functions and not parts:
                return f"{module}.{func.id}"
            return None

        def own(node: ast.Call) -> list[str]:
            t = target(node.func)
            if t is None or not t.startswith("fscontrol."):
                return []
            last = t.rpartition(".")[2]
            if t.startswith("fscontrol.errors.") or last in CLI_OWN or last in OPTIONS or last in PROCESS or OUTPUT.match(last):
                return []
            if t.startswith("fscontrol.cli."):  # a helper of the command line: what it calls, counted here
                helper_mod, _, helper = t.rpartition(".")
                if (helper_mod, helper) in seen or helper not in self.module(helper_mod).functions:
                    return []
                return self.calls(helper_mod, helper, seen)
            return [t]

        def cost(node: ast.AST) -> list[str]:
            if isinstance(node, (ast.If, ast.IfExp)):
                body = seq(node.body) if isinstance(node.body, list) else cost(node.body)
                orelse = seq(node.orelse) if isinstance(node.orelse, list) else cost(node.orelse)
                return cost(node.test) + max(body, orelse, key=len)
            if isinstance(node, ast.Try):
                handlers = [seq(h.body) for h in node.handlers]
                return max([seq(node.body) + seq(node.orelse), *handlers], key=len) + seq(node.finalbody)
            out = own(node) if isinstance(node, ast.Call) else []
            for child in ast.iter_child_nodes(node):
                out += cost(child)
            return out

        def seq(nodes) -> list[str]:
            out: list[str] = []
            for n in nodes:
                out += cost(n)
            return out

        return seq(fn.body)

    def count(self, cmd: Command) -> Command:
        cmd.calls = self.calls(cmd.module, cmd.function)
        return cmd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help="the checkout to read")
    args = ap.parse_args()
    counter = Counter(args.root)
    for cmd in commands(args.root):
        counter.count(cmd)
        print(f"{len(cmd.calls):3}  {cmd.name:<16} {', '.join(c.removeprefix('fscontrol.') for c in cmd.calls)}")


if __name__ == "__main__":
    main()
