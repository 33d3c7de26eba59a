"""slurm/privatedata.py is the one reading of PrivateData (issue #29): what each flag hides, for
the parser, the doctor, the privacy policy of the published files and the user's commands."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fscontrol.slurm import privatedata
from fscontrol.slurm.parse import parse_config

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("raw,want", [
    ("jobs,usage", ("jobs", "usage")), ("JOBS, Usage", ("jobs", "usage")), ("(null)", ()), ("none", ()),
    ("N/A", ()), ("", ()), (None, ()), (("all",), ("all",)), (["Reservations", ""], ("reservations",)),
])
def test_the_flags_read_from_either_form(raw, want):
    assert privatedata.flag_list(raw) == want and privatedata.flags(raw) == frozenset(want)


def test_all_hides_everything_and_nothing_hides_nothing():
    every = [privatedata.usage_hidden, privatedata.jobs_hidden, privatedata.reservations_hidden]
    public = [privatedata.usage_public, privatedata.partitions_public, privatedata.names_public,
              privatedata.associations_public, privatedata.jobs_public, privatedata.account_jobs_to_members]
    for pd in ("all", ("ALL",), "jobs,all"):
        assert all(f(pd) for f in every) and not any(f(pd) for f in public), pd
    for pd in ("", "(null)", (), "none"):
        assert not any(f(pd) for f in every) and all(f(pd) for f in public), pd
    # one flag hides its own view alone
    assert privatedata.usage_hidden("usage") and not privatedata.jobs_hidden("usage")
    assert privatedata.jobs_hidden("jobs") and privatedata.names_public("jobs") and not privatedata.jobs_public("jobs")
    assert not privatedata.account_jobs_to_members("accounts") and privatedata.usage_public("accounts")


def test_the_parser_keeps_the_flags_as_written():
    text = ("ClusterName = c\nPriorityType = priority/multifactor\nFairShareDampeningFactor = 1\n"
            "PriorityDecayHalfLife = 7-00:00:00\nPriorityCalcPeriod = 00:05:00\nPrivateData = usage,JOBS\n")
    assert parse_config(text).private_data == ("usage", "jobs")
    assert parse_config(text.replace("usage,JOBS", "none")).private_data == ()


_PASS_THROUGH = {"set", "frozenset", "tuple", "list", "sorted", "get", "lower", "upper", "strip", "split", "join"}


def _reads_private_data(node: ast.AST) -> bool:
    """The PrivateData value itself (`cfg.private_data`, `c.get("PrivateData")`), or it passed
    through a copy, a case change or a function named for flags (the doctor's `_flags`): not the
    answer of some other function given it (`running_order(...) == ORDER_RANK`)."""
    if isinstance(node, ast.Constant):
        return node.value == "PrivateData"
    if isinstance(node, ast.Attribute) and node.attr == "private_data":
        return True
    if isinstance(node, ast.Name):
        return node.id == "private_data"
    if isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if isinstance(f, ast.Attribute) and ast.unparse(f.value).endswith("privatedata"):
            return False
        if name not in _PASS_THROUGH and "flag" not in name.lower():
            return False
        return any(_reads_private_data(a) for a in [*node.args, *(k.value for k in node.keywords)]) or (
            isinstance(f, ast.Attribute) and _reads_private_data(f.value))
    return any(_reads_private_data(c) for c in ast.iter_child_nodes(node))


def flag_tests_outside(root: Path) -> list[str]:
    """Places outside slurm/privatedata.py that test PrivateData's flags themselves: an `in`, `==`
    or set `&` with the value on one side, or a split of it."""
    bad = []
    for path in sorted((root / "fscontrol").rglob("*.py")):
        if path.name == "privatedata.py" and path.parent.name == "slurm":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn, ast.Eq, ast.NotEq)) for o in node.ops):
                sides = [node.left, *node.comparators]
            elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.Sub)):
                sides = [node.left, node.right]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split":
                sides = [node.func.value]
            else:
                continue
            if any(_reads_private_data(s) for s in sides):
                bad.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return bad


def test_every_reader_of_private_data_goes_through_privatedata():
    """The doctor tested the word USAGE in PrivateData itself (and missed `all`); no module but
    slurm/privatedata.py tests a flag."""
    assert flag_tests_outside(ROOT) == []


def test_the_check_sees_a_flag_tested_elsewhere(tmp_path):
    (tmp_path / "fscontrol" / "doctor").mkdir(parents=True)
    (tmp_path / "fscontrol" / "doctor" / "checks.py").write_text(
        'def f(c, cfg):\n    a = "USAGE" in _flags(c.get("PrivateData"))\n    b = set(cfg.private_data) & {"jobs"}\n'
        '    return privatedata.usage_hidden(c.get("PrivateData")), a, b\n')
    assert [b.split(": ", 1)[0] for b in flag_tests_outside(tmp_path)] == [
        "fscontrol/doctor/checks.py:2", "fscontrol/doctor/checks.py:3"]
