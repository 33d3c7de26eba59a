"""`control` and `gate` take the table conventions `status` has (issue #14), as sshare and sacct
do: -P parsable (every field delimited by '|', no padding), -n no header, -o the fields (any case;
an unknown one is one error line listing the valid ones, exit 2), --helpformat. -P and -n print
the table alone; the report's other lines go to stderr. Each table is checked against --json."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.report import control as rcontrol
from fscontrol.report import gate as rgate
from fscontrol.report import table as rtable
from fscontrol.cli.app import app
from fscontrol.act.gate import GateOptions, plan_gate

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "testbed-basic"
CONFIG = """[clusters.tbcluster]
target_core_hours = 2
method = "hybrid"
padding_mode = "steady"
[clusters.tbcluster.gate]
enabled = true
""" + "".join(f'[clusters.tbcluster.allocations.{a}]\naward = {w}\nperiod = "30d"\n'
              for a, w in (("physics", 2000), ("flat", 20000), ("chem", 10000)))


@pytest.fixture()
def run(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG)

    def invoke(command: str, *args: str):
        return CliRunner().invoke(app, [command, "--config", str(cfg), "--source", str(SAMPLE), "--db", str(tmp_path / "h.db"),
                                        *args])
    return invoke


def _ok(r):
    assert r.exit_code == 0, r.output
    return r


def one_line_error(r, code: int, text: str) -> None:
    assert r.exit_code == code and r.stdout == "" and text in r.stderr, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output


# ---------------------------------------------------------------------------- control
def test_control_parsable_is_the_plans_commands(run):
    plan = json.loads(_ok(run("control", "--json")).stdout)
    assert len(plan["actions"]) == 3
    r = _ok(run("control", "-P"))
    lines = r.stdout.splitlines()
    assert lines[0] == "Status|Command|Reason"
    assert [ln.split("|") for ln in lines[1:]] == [[a["status"], shlex.join(a["command"]), a["reason"]] for a in plan["actions"]]
    assert all(n in r.stderr for n in plan["notes"])  # the decision's notes: stderr, not the table
    assert "dry run: nothing was changed" in r.stderr
    # -o in any case, and every field
    r = _ok(run("control", "-P", "-o", "kind,STATUS,Output"))
    assert r.stdout.splitlines() == ["Kind|Status|Output"] + [f"{a['kind']}|{a['status']}|{a['output'] or ''}" for a in plan["actions"]]


def test_control_noheader_is_the_rows_alone_and_format_picks_the_plain_tables_columns(run):
    rows = _ok(run("control", "-n", "-o", "kind,status")).stdout.splitlines()
    plan = json.loads(_ok(run("control", "--json")).stdout)
    assert [ln.split() for ln in rows] == [[a["kind"], a["status"]] for a in plan["actions"]]
    plain = _ok(run("control")).stdout
    picked = _ok(run("control", "-o", "Kind,Command")).stdout
    assert "status    command" in plain and "kind              command" in picked and "reason" not in picked.split("\n\n")[1]
    assert plain.split("\n\n")[0] == picked.split("\n\n")[0]  # the decision above the table is the same


def test_control_bad_fields_and_off_are_one_clear_line(run):
    one_line_error(run("control", "-o", "status,bogus"), 2, "--format: unknown field 'bogus'; valid fields: Status, Kind, Command")
    one_line_error(run("control", "off", "-P"), 2, "`control off` has none")
    help_ = _ok(CliRunner().invoke(app, ["control", "--helpformat"])).stdout
    assert [ln.split()[0] for ln in help_.splitlines()] == [f.name for f in rcontrol.CONTROL_FIELDS]


# ---------------------------------------------------------------------------- gate
def test_gate_parsable_is_the_accounts_table(run):
    data = json.loads(_ok(run("gate", "--json")).stdout)
    r = _ok(run("gate", "-P", "-o", "account,state,occupancy,target,overby,running,agentheld"))
    lines = r.stdout.splitlines()
    assert lines[0] == "Account|State|Occupancy|Target|OverBy|Running|AgentHeld"

    def num(x):  # the plain report's way with sizes: whole numbers bare, others to a tenth
        return "" if x is None else (f"{x:g}" if x == int(x) else f"{x:.1f}")

    assert [ln.split("|") for ln in lines[1:]] == [
        [a["account"], a["state"], num(a["occupancy"]), num(a["target"]), num(a["over_by"]), str(a["running_jobs"]),
         str(a["agent_held"])] for a in data["accounts"]]
    assert "0 action(s) planned" in r.stderr
    # the default fields are the plain report's columns; -n drops the header lines
    default = _ok(run("gate", "-P")).stdout.splitlines()
    assert default[0] == "|".join(rgate.GATE_DEFAULT_FIELDS)
    noheader = _ok(run("gate", "-n")).stdout.splitlines()
    assert [ln.split() for ln in noheader] == [row.split("|") for row in default[1:]]
    assert _ok(run("gate")).stdout == _ok(run("gate", "-o", ",".join(rgate.GATE_DEFAULT_FIELDS))).stdout  # the same report


def test_gate_bad_options_are_one_clear_line(run):
    one_line_error(run("gate", "-o", "bogus"), 2, "--format: unknown field 'bogus'; valid fields: Account, State")
    one_line_error(run("gate", "--actions"), 2, "--actions picks the table -P, -n or -o print")
    one_line_error(run("gate", "-P", "--actions", "-o", "kind,occupancy"), 2, "valid fields: Kind, JobId, Account, Nice, Reason")
    assert _ok(run("gate", "-P", "--actions")).stdout == "Kind|JobId|Account|Reason\n"  # no action on the sample: the header
    help_ = _ok(CliRunner().invoke(app, ["gate", "--helpformat"])).stdout
    assert all(f.name in help_ for f in rgate.GATE_FIELDS + rgate.GATE_ACTION_FIELDS)


def test_gate_actions_table_is_the_plans_actions():
    """Steffen's section 5: alice runs over her target while bob waits: alice's jobs are held."""
    from tests.test_gate import ALLOCS, NOW, base_queue

    plan = plan_gate(base_queue(), ALLOCS, {"9"}, GateOptions(max_actions=2), now=NOW)
    assert plan.actions
    fields = rgate.gate_fields(plan, "kind,jobid,account,reason", actions=True)
    lines = list(rtable.table_lines(rgate.gate_rows(plan, actions=True), fields, parsable=True))
    assert lines == ["Kind|JobId|Account|Reason"] + [f"{a.kind}|{a.job_id}|{a.account}|{a.reason}" for a in plan.actions]
    heads = [f.header for f in rgate.gate_fields(plan, None)]
    assert "occupancy (nodes)" in heads and "agent held" in heads  # the plan's unit and action, as the plain report


def test_control_off_is_a_plan_unless_apply_is_on_its_command_line(tmp_path):
    """`control off` undoes what the agent did: the config's agent.apply (for the agent's ticks)
    does not make it act; only --apply does (issue #30 item 4). On a recorded source an acting
    `control off` is refused (only a live cluster can be changed): the old code did that here."""
    cfg = tmp_path / "c.toml"
    cfg.write_text("[agent]\napply = true\n" + CONFIG)
    r = _ok(CliRunner().invoke(app, ["control", "off", "--config", str(cfg), "--source", str(SAMPLE),
                                     "--db", str(tmp_path / "h.db"), "--json"]))
    data = json.loads(r.stdout)
    assert data["mode"] == "dry-run", data
    assert all(a["status"] == "planned" for a in data["actions"]), data["actions"]
    r = CliRunner().invoke(app, ["control", "off", "--config", str(cfg), "--source", str(SAMPLE),
                                 "--db", str(tmp_path / "h.db"), "--apply"])
    one_line_error(r, r.exit_code, "only a live cluster can be changed")
    assert r.exit_code != 0
