"""`fscontrol doctor` without Slurm: every check on recorded text (samples/testbed-basic, a real
22.05 capture) edited the way the check looks for, read through the same reading layer
(fscontrol.slurm.survey over RecordedSlurm); the CLI's output and exit codes; config check; the
first tick. The same checks on a testbed set up each way: tests/test_integration_doctor.py."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.doctor import checks
from fscontrol.doctor.checks import Intent
from fscontrol.slurm import survey
from fscontrol.slurm.source import RecordedSlurm

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "testbed-basic"
DOCS = ROOT / "docs" / "doctor.md"
HYBRID = Intent(method="hybrid", padding_mode="steady")


def _sample(tmp_path, config: dict[str, str | None] | None = None, sshare=None, qos: str | None = None) -> Path:
    """A copy of the recorded sample with `scontrol show config` lines set (None: removed), the
    sshare text passed through `sshare(text)`, and the QOS text replaced."""
    folder = tmp_path / "sample"
    shutil.copytree(SAMPLE, folder)
    if config:
        lines = (folder / "config.txt").read_text().splitlines()
        for key, value in config.items():
            hit = [i for i, ln in enumerate(lines) if ln.split(" = ")[0].strip().lower() == key.lower()]
            for i in reversed(hit):
                del lines[i]
            if value is not None:
                lines.insert(hit[0] if hit else len(lines), f"{key:<23} = {value}")
        (folder / "config.txt").write_text("\n".join(lines) + "\n")
    if sshare is not None:
        (folder / "sshare.txt").write_text(sshare((folder / "sshare.txt").read_text()))
    if qos is not None:
        (folder / "qos.txt").write_text(qos)
    return folder


def _found(tmp_path, intent: Intent = HYBRID, **edits) -> dict[str, str]:
    s = survey.read(RecordedSlurm(_sample(tmp_path, **edits)))
    return {f.check: f.severity for f in checks.check(s, intent)}


def _survey(tmp_path, **edits) -> survey.Survey:
    return survey.read(RecordedSlurm(_sample(tmp_path, **edits)))


def _judge(s: survey.Survey, intent: Intent = HYBRID, **facts) -> dict[str, str]:
    return {f.check: f.severity for f in checks.check(dataclasses.replace(s, **facts), intent)}


# ---------------------------------------------------------------------------- no false alarm
@pytest.mark.parametrize("sample", sorted(p.name for p in (ROOT / "samples").glob("testbed-*") if (p / "meta.json").is_file()))
def test_the_recorded_testbeds_have_no_finding(sample):
    """Every recorded testbed (22.05 and 24.11, classic and Fair Tree) is set up as fair-share needs."""
    s = survey.read(RecordedSlurm(ROOT / "samples" / sample))
    assert checks.check(s, Intent()) == []
    fair_tree = "NO_FAIR_TREE" not in s.config["PriorityFlags"]
    assert {f.check for f in checks.check(s, HYBRID)} == ({"control-fair-tree"} if fair_tree else set())


# ---------------------------------------------------------------------------- fair-share inert
def test_priority_type_basic(tmp_path):
    assert _found(tmp_path, config={"PriorityType": "priority/basic"})["priority-type"] == "fatal"


def test_no_slurmdbd(tmp_path):
    found = _found(tmp_path, config={"AccountingStorageType": "accounting_storage/none"})
    assert found["accounting-storage"] == "fatal"


def test_weight_fairshare_zero_and_unset(tmp_path):
    assert _found(tmp_path, config={"PriorityWeightFairShare": "0"}) == {"weight-fairshare": "fatal"}
    assert _found(tmp_path / "b", config={"PriorityWeightFairShare": None}) == {"weight-fairshare": "fatal"}


def test_weight_dwarfed(tmp_path):
    found = checks.check(_survey(tmp_path, config={"PriorityWeightAge": "1000000", "PriorityWeightJobSize": "200000"}), HYBRID)
    assert [(f.check, f.severity) for f in found] == [("weight-dwarfed", "warning")]
    assert "PriorityWeightAge=1000000 (and JobSize)" in found[0].message
    assert found[0].fix.startswith("slurm.conf: PriorityWeightFairshare=10000000 (ten times PriorityWeightAge)")
    # equal to fair-share's weight is not outweighed; the TRES weights add up
    assert _found(tmp_path / "b", config={"PriorityWeightAge": "100000"}) == {}
    assert _found(tmp_path / "c", config={"PriorityWeightTRES": "CPU=60000,GRES/gpu=60000"}) == {"weight-dwarfed": "warning"}


def test_weight_qos_and_partition_count_only_where_they_differ(tmp_path):
    s = _survey(tmp_path, config={"PriorityWeightQOS": "1000000", "PriorityWeightPartition": "1000000"})
    same_qos = (survey.QosInfo("normal", 1.0, 0), survey.QosInfo("fspad", 1.0, 0))
    same_parts = {"normal": {"PriorityJobFactor": "1"}, "fsadmin": {"PriorityJobFactor": "1"}}
    assert _judge(s, qos=same_qos, partitions=same_parts) == {}
    assert _judge(s, qos=(same_qos[0], dataclasses.replace(same_qos[1], priority=10)), partitions=same_parts) == {
        "weight-dwarfed": "warning"}
    assert _judge(s, qos=same_qos, partitions={**same_parts, "fsadmin": {"PriorityJobFactor": "10"}}) == {
        "weight-dwarfed": "warning"}
    assert _judge(s) == {"weight-dwarfed": "warning"}  # not read (a sample): counted, to be safe


def test_no_normal_and_incr_only(tmp_path):
    found = _found(tmp_path, config={"PriorityFlags": "NO_FAIR_TREE,NO_NORMAL_QOS,INCR_ONLY"})
    assert found == {"no-normal": "warning", "incr-only": "warning"}


def test_decay_off(tmp_path):
    assert _found(tmp_path, Intent(), config={"PriorityDecayHalfLife": "00:00:00"}) == {"decay-off": "fatal"}
    reset = {"PriorityDecayHalfLife": "00:00:00", "PriorityUsageResetPeriod": "WEEKLY"}
    assert _found(tmp_path / "b", HYBRID, config=reset) == {"decay-off-reset": "fatal"}
    assert _found(tmp_path / "c", Intent(), config=reset) == {"decay-off-reset": "warning"}
    assert _found(tmp_path / "d", config={"PriorityUsageResetPeriod": "MONTHLY"}) == {"usage-reset": "warning"}


def test_accounting_enforce(tmp_path):
    assert _found(tmp_path, config={"AccountingStorageEnforce": "none"}) == {
        "enforce-associations": "warning", "enforce-limits": "warning"}
    assert _found(tmp_path / "b", config={"AccountingStorageEnforce": "associations"}) == {"enforce-limits": "warning"}
    assert _found(tmp_path / "c", config={"AccountingStorageEnforce": "safe"}) == {}  # safe implies both


def test_no_user_association_and_zero_shares(tmp_path):
    def only_accounts(text: str) -> str:
        return "\n".join(ln for ln in text.splitlines() if ln.startswith("Account|") or ln.split("|")[1] == "")

    assert _found(tmp_path, Intent(), sshare=only_accounts) == {"no-user-associations": "fatal"}
    zero = lambda t: t.replace(" flat|dave|1|", " flat|dave|0|").replace("   chem|carol|1|", "   chem|carol|0|")  # noqa: E731
    found = checks.check(_survey(tmp_path / "b", sshare=zero), HYBRID)
    assert [(f.check, f.severity) for f in found] == [("zero-shares", "warning")]
    assert "2 user association(s) have FairShare=0 (flat/dave, chem/carol)" in found[0].message


# ---------------------------------------------------------------------------- control cannot work
def test_fair_tree_and_depth_oblivious_stop_control_only(tmp_path):
    assert _found(tmp_path, config={"PriorityFlags": None}) == {"control-fair-tree": "fatal"}
    assert _found(tmp_path / "b", Intent(), config={"PriorityFlags": None}) == {}
    assert _found(tmp_path / "c", config={"PriorityFlags": "DEPTH_OBLIVIOUS"}) == {"control-depth-oblivious": "fatal"}


def test_damping_ignored_under_fair_tree(tmp_path):
    d5 = {"PriorityFlags": None, "FairShareDampeningFactor": "5"}
    assert _found(tmp_path, Intent(), config=d5) == {"damping-ignored": "warning"}
    assert _found(tmp_path / "b", Intent(), config={"FairShareDampeningFactor": "5"}) == {}  # classic reads it


def test_damping_by_hand_reverted_and_preset(tmp_path):
    s = _survey(tmp_path, config={"FairShareDampeningFactor": "7"})
    damping = Intent(method="damping")
    assert _judge(s, damping, conf_damping="1", conf_read=True, conf_path="/etc/slurm/slurm.conf") == {
        "damping-by-hand": "warning"}
    assert _judge(s, damping, conf_damping=None, conf_read=True) == {"damping-by-hand": "warning"}  # no line: 1
    assert _judge(s, damping, conf_damping="7", conf_read=True) == {"damping-preset": "info"}
    assert _judge(s, damping, conf_damping="7", conf_read=True, agent_damping=7) == {}
    reverted = checks.check(dataclasses.replace(_survey(tmp_path / "b"), conf_damping="1", conf_read=True,
                                                agent_damping=40), Intent(method="damping", persist=True))
    assert [(f.check, f.severity) for f in reverted] == [("damping-reverted", "warning")]
    assert "not the 40 the agent last set: slurm.conf says 1, and slurmctld re-reads it" in reverted[0].message
    assert "the file should say 40: something rewrote it, config management or an admin" in reverted[0].message
    assert _judge(s, Intent(method="none"), conf_damping="1", conf_read=True) == {}  # no control: d is the admin's


def test_padding_setup(tmp_path):
    s = _survey(tmp_path)
    assert _judge(s, dataclasses.replace(HYBRID, dummy=("fsadmin", "nobody"))) == {"dummy-missing": "fatal"}
    assert _judge(s, dataclasses.replace(HYBRID, dummy=("chem", "carol"))) == {"dummy-not-top-level": "fatal"}
    assert _judge(s, dataclasses.replace(HYBRID, dummy=("flat", "alice"))) == {"dummy-not-alone": "fatal"}
    assert _judge(s, dataclasses.replace(HYBRID, padding_qos="nope")) == {"padding-qos-missing": "fatal"}
    assert _judge(s, Intent(method="damping", dummy=("fsadmin", "nobody"), padding_qos="nope")) == {}
    normal = survey.QosInfo("normal", 1.0, 0)
    short = (normal, survey.QosInfo("fspad", 1.0, 0, (), 3600))
    assert _judge(s, qos=short) == {"padding-qos-maxwall": "fatal"}  # steady: a one-day job
    assert _judge(s, dataclasses.replace(HYBRID, padding_mode="pulse"), qos=short) == {}  # pulse: one PriorityCalcPeriod
    assert _judge(s, dataclasses.replace(HYBRID, padding_mode="pulse"), qos=(normal, survey.QosInfo("fspad", 1.0, 0, (), 30))) == {
        "padding-qos-maxwall": "fatal"}
    quota = (normal, survey.QosInfo("fspad", 1.0, 0, ("nodecay",), None, "cpu=6000"))
    found = checks.check(dataclasses.replace(s, qos=quota), HYBRID)
    assert [(f.check, f.severity) for f in found] == [("padding-qos-quota", "warning")]
    assert "GrpTRESMins=cpu=6000" in found[0].message and "for good: Flags=NoDecay" in found[0].message
    assert _judge(s, assoc_qos={("fsadmin", "fsdummy"): ("normal",)}) == {"padding-qos-access": "fatal"}
    assert _judge(s, assoc_qos={("fsadmin", "fsdummy"): ("fspad", "normal")}) == {}
    assert _judge(s, partitions={"normal": {}}) == {"padding-partition-missing": "fatal"}


def test_reads_that_failed(tmp_path):
    s = _survey(tmp_path)
    assert _judge(s, errors={"sshare": "`sshare -a -l -P` failed (exit 1): ..."}, shares=None) == {"read-sshare": "fatal"}
    err = {"qos": "`sacctmgr -P show qos ...` failed (exit 1): Problem talking to the database"}
    assert _judge(s, errors=err) == {"read-qos": "fatal"}
    assert _judge(s, Intent(), errors=err) == {"read-qos": "warning"}
    assert _judge(s, Intent(method="damping"), errors={"slurm.conf": "/etc/slurm/slurm.conf: Permission denied"}) == {
        "read-slurm-conf": "info"}


def test_the_padding_job_limit_is_the_agents():
    from fscontrol.act import actions

    assert checks.PADDING_JOB_S == actions.PADDING_LIMIT_S


def test_qos_limits_are_read():
    text = "Name|UsageFactor|Priority|Flags|MaxWall|GrpTRESMins\nnormal|1.000000|0|||\nfspad|2.000000|5|NoDecay,DenyOnLimit|1-00:00:00|cpu=100\n"
    assert survey.parse_qos_full(text) == (survey.QosInfo("normal", 1.0, 0), survey.QosInfo(
        "fspad", 2.0, 5, ("nodecay", "denyonlimit"), 86400, "cpu=100"))
    with pytest.raises(Exception, match="MaxWall is not a duration"):
        survey.parse_qos_full("Name|UsageFactor|MaxWall\nx|1|soon\n")


# ---------------------------------------------------------------------------- notes
def test_notes(tmp_path):
    assert _found(tmp_path, config={"PrivateData": "usage,jobs"}) == {"private-usage": "info"}
    # `all` hides usage too (slurm.privatedata): the doctor read the word USAGE alone and said nothing
    assert _found(tmp_path / "all", config={"PrivateData": "all"}) == {"private-usage": "info"}
    assert _found(tmp_path / "jobs", config={"PrivateData": "jobs"}) == {}
    assert _found(tmp_path / "b", qos="Name|UsageFactor\nnormal|1.000000\nlow|0.500000\n") == {
        "padding-qos-missing": "fatal", "qos-usage-factor": "info"}
    assert _found(tmp_path / "c", config={"SLURM_VERSION": "19.05.8"}) == {"slurm-version": "info"}


def test_partition_tiers(tmp_path):
    s = _survey(tmp_path)
    parts = {"normal": {"PriorityTier": "1"}, "parked": {"PriorityTier": "1"}, "fsadmin": {"PriorityTier": "10"}}
    assert _judge(s, partitions=parts) == {}  # the padding partition's tier is by design
    found = checks.check(dataclasses.replace(s, partitions={**parts, "gpu": {"PriorityTier": "5"}}), HYBRID)
    assert [(f.check, f.severity) for f in found] == [("partition-tiers", "info")]
    assert "(gpu=5, normal=1, parked=1)" in found[0].message and "every pending job of gpu" in found[0].message


def test_case_of_scontrol_keys(tmp_path):
    """scontrol prints PriorityWeightFairShare; slurm.conf(5) writes PriorityWeightFairshare."""
    assert _found(tmp_path, config={"PriorityWeightFairShare": None, "PriorityWeightFairshare": "0"}) == {
        "weight-fairshare": "fatal"}


# ---------------------------------------------------------------------------- the documentation
def test_every_check_is_documented_with_its_severity():
    """docs/doctor.md has one row per check the code can raise, with the severities it raises."""
    src = (ROOT / "fscontrol" / "doctor" / "checks.py").read_text()
    raised = set(re.findall(r'add\(\s*(?:f?)"([a-z-]+)"', src)) | {"read-sshare", "read-qos", "read-assoc"}
    raised.discard("read-")
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| ([^|]+) \|", DOCS.read_text(), re.M))
    assert raised <= set(rows), sorted(raised - set(rows))
    assert set(rows) <= raised, sorted(set(rows) - raised)
    literal = re.findall(r'add\(\s*"([a-z-]+)",\s*"(fatal|warning|info)"', src)
    assert len(literal) > 20
    for check, severity in literal:
        assert rows[check].startswith(severity) or f"/ {severity}" in rows[check], (check, severity, rows[check])


# ---------------------------------------------------------------------------- the CLI
def test_cli_lines_json_and_exit_codes(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["doctor", "--source", str(SAMPLE)])
    assert ok.exit_code == 0 and "nothing stops fair-share" in ok.output
    warn = _sample(tmp_path / "w", config={"AccountingStorageEnforce": "associations"})
    r = runner.invoke(app, ["doctor", "--source", str(warn)])
    assert r.exit_code == 8
    assert r.output.splitlines()[1].startswith("WARNING enforce-limits: AccountingStorageEnforce lacks 'limits'")
    assert " -> fix: slurm.conf: add limits to AccountingStorageEnforce" in r.output.splitlines()[1]
    assert len(r.output.splitlines()) == 2  # the head line and one line for the one finding
    fatal = _sample(tmp_path / "f", config={"PriorityType": "priority/basic", "AccountingStorageEnforce": "associations"})
    r = runner.invoke(app, ["doctor", "--source", str(fatal), "--json"])
    assert r.exit_code == 9
    data = json.loads(r.output)
    assert data["worst"] == "fatal" and data["exit_code"] == 9 and data["cluster"] == "tbcluster"
    assert [f["check"] for f in data["findings"]] == ["priority-type", "enforce-limits"]
    assert set(data["findings"][0]) == {"check", "severity", "scope", "message", "fix"}


def test_cli_bad_input(tmp_path):
    r = CliRunner().invoke(app, ["doctor", "--source", str(tmp_path)])
    assert r.exit_code == 6 and r.output.startswith("fscontrol: error: ") and "Traceback" not in r.output
    (tmp_path / "c.toml").write_text("[clusters.x]\nmethod = \"dampng\"\n")
    r = CliRunner().invoke(app, ["doctor", "--source", str(SAMPLE), "--config", str(tmp_path / "c.toml")])
    assert r.exit_code == 2 and "method" in r.output


def test_config_check_runs_the_doctor(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.tbcluster]\ntarget_core_hours = 10\nmethod = "hybrid"\n')
    fair_tree = ROOT / "samples" / "testbed-fairtree"
    r = CliRunner().invoke(app, ["config", "check", "--config", str(cfg), "--source", str(fair_tree)])
    assert r.exit_code == 9 and "valid." in r.output and "FATAL   control-fair-tree" in r.output
    r = CliRunner().invoke(app, ["config", "check", "--config", str(cfg), "--source", str(fair_tree), "--json"])
    assert r.exit_code == 9 and json.loads(r.output)["doctor"][0]["findings"][0]["check"] == "control-fair-tree"
    r = CliRunner().invoke(app, ["config", "check", "--config", str(cfg), "--source", str(SAMPLE)])
    assert r.exit_code == 0 and "nothing stops fair-share" in r.output
    warn = _sample(tmp_path, config={"AccountingStorageEnforce": "associations"})
    r = CliRunner().invoke(app, ["config", "check", "--config", str(cfg), "--source", str(warn)])
    assert r.exit_code == 0 and "WARNING enforce-limits" in r.output  # a warning is printed, not a failure
    r = CliRunner().invoke(app, ["config", "check", "--config", str(cfg), "--source", str(tmp_path / "none")])
    assert r.exit_code == 0 and "doctor on tbcluster: not run: " in r.output  # no Slurm here: said, not failed
    r = CliRunner().invoke(app, ["config", "check", "--config", str(cfg), "--source", str(fair_tree), "--no-doctor"])
    assert r.exit_code == 0 and "doctor" not in r.output


# ---------------------------------------------------------------------------- the first tick
def test_first_tick_logs_and_a_fatal_stops_control(tmp_path, caplog):
    """The first tick on a cluster logs every finding; a fatal one makes control advise only,
    naming the finding and its fix, on that tick and after it; no traceback."""
    from fscontrol.agent import config, pipeline
    from fscontrol.store import history as store

    folder = _sample(tmp_path, config={"PriorityWeightFairShare": "0", "AccountingStorageEnforce": "associations"})
    cfg_path = tmp_path / "c.toml"
    cfg_path.write_text('[clusters.tbcluster]\ntarget_core_hours = 1\nmethod = "damping"\n')
    cfg = config.load(cfg_path)
    db = store.open_db(tmp_path / "h.db")
    with caplog.at_level(logging.INFO, logger="fscontrol.doctor"):
        res = pipeline.control_tick(RecordedSlurm(folder), db, cfg, apply=False)
    logged = [r.getMessage() for r in caplog.records]
    assert logged == [
        "doctor on tbcluster: FATAL   weight-fairshare: PriorityWeightFairshare is 0 (Slurm's default): the fair-share "
        "factor adds nothing to any job's priority. -> fix: slurm.conf: PriorityWeightFairshare=100000 (larger than every "
        "other PriorityWeight*), then `scontrol reconfigure`.",
        logged[1]]
    assert logged[1].startswith("doctor on tbcluster: WARNING enforce-limits: ")  # the line `fscontrol doctor` prints
    assert res.decision.advise_only
    assert any(n.startswith("advice only: doctor: weight-fairshare: ") for n in res.decision.notes)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fscontrol.doctor"):
        res = pipeline.control_tick(RecordedSlurm(folder), db, cfg, apply=False)
    assert caplog.records == [] and res.decision.advise_only  # logged once; control still stopped
    # the same sample as recorded: control decides (not advice only), nothing logged on a later tick
    res = pipeline.control_tick(RecordedSlurm(SAMPLE), db, cfg, apply=False)
    assert not res.decision.advise_only


def test_tick_cli_says_why_control_stopped(tmp_path):
    folder = _sample(tmp_path, config={"PriorityWeightFairShare": "0"})
    cfg_path = tmp_path / "c.toml"
    cfg_path.write_text('[clusters.tbcluster]\ntarget_core_hours = 1\nmethod = "damping"\n')
    (tmp_path / "st").mkdir(mode=0o700)
    r = CliRunner().invoke(app, ["tick", "--config", str(cfg_path), "--source", str(folder),
                                 "--db", str(tmp_path / "st" / "h.db")])
    assert "Traceback" not in r.output
    assert "doctor: weight-fairshare: PriorityWeightFairshare is 0" in r.output, r.output


def test_first_tick_without_control_logs_too(tmp_path, caplog):
    """`run` with control before each decay pass: its first tick only collects. It logs the findings
    all the same (the control tick after it is no longer the first)."""
    from fscontrol.agent import config, pipeline
    from fscontrol.store import history as store

    folder = _sample(tmp_path, config={"AccountingStorageEnforce": "associations"})
    cfg_path = tmp_path / "c.toml"
    cfg_path.write_text('[clusters.tbcluster]\ntarget_core_hours = 1\nmethod = "damping"\n')
    db = store.open_db(tmp_path / "h.db")
    with caplog.at_level(logging.INFO, logger="fscontrol.doctor"):
        res = pipeline.agent_tick(RecordedSlurm(folder), db, config.load(cfg_path), apply=False, control=False)
    assert res.control is None
    assert [r.getMessage()[:52] for r in caplog.records] == ["doctor on tbcluster: WARNING enforce-limits: Account"]


# ---------------------------------------------------------------------------- issue #33's review
def test_damping_reverted_after_a_plain_reconfigure_names_its_causes(tmp_path):
    """Without persist, a reconfigure alone puts slurm.conf's d back: the finding says so, and
    names config management as the other likely cause; it does not blame it outright."""
    s = dataclasses.replace(_survey(tmp_path), conf_damping="1", conf_read=True, agent_damping=5)
    (f,) = checks.check(s, Intent(method="damping"))
    assert f.check == "damping-reverted"
    assert "slurm.conf says 1, and slurmctld re-reads it at every `scontrol reconfigure` or restart" in f.message
    assert "a plain reconfigure is enough, or config management that reconfigures" in f.message
    assert "rewrote" not in f.message
    assert f.fix.startswith("nothing if it was a one-off reconfigure (the next control tick sets d again)")
    # someone set d by hand (slurm.conf says neither): said so
    (f,) = checks.check(dataclasses.replace(s, conf_damping="5"), Intent(method="damping"))
    assert "someone else set it" in f.message


def test_agent_damping_after_control_off_is_the_original(tmp_path):
    """After `control off` the agent expects the d it found (its originals), not its last d:
    control off with persist restores d by slurm.conf and a reconfigure, which logs no set_damping."""
    import time

    from fscontrol.act import actions
    from fscontrol.agent.diagnose import agent_damping
    from fscontrol.store import history as store
    from fscontrol.store import ledger

    path = tmp_path / "h.db"
    db = store.open_db(path)
    now = time.time()
    with store.transaction(db):
        (aid,) = ledger.write_actions(db, "tbcluster", None, "control", [actions.set_damping(5, "test")], now)
        ledger.update_action(db, aid, "ok", "", None, now)
        ledger.record_original(db, "tbcluster", "damping", 1, now)
    db.close()
    assert agent_damping(path, "tbcluster") == 5
    db = store.open_db(path)
    with store.transaction(db):
        ledger.set_state(db, "tbcluster", "acting_off", {"by": "admin", "at": now}, now)
    db.close()
    assert agent_damping(path, "tbcluster") == 1
    s = dataclasses.replace(_survey(tmp_path / "s"), conf_damping="1", conf_read=True,
                            agent_damping=agent_damping(path, "tbcluster"))
    assert checks.check(s, Intent(method="damping")) == []  # d is back at 1: nothing to say


def test_zero_shares_account(tmp_path):
    """An account (not only a user) with FairShare=0: each user under it gets factor 0."""
    zero = lambda t: t.replace(" chem||1|", " chem||0|")  # noqa: E731
    assert " chem||1|" in (SAMPLE / "sshare.txt").read_text()
    found = checks.check(_survey(tmp_path, sshare=zero), HYBRID)
    assert [(f.check, f.severity) for f in found] == [("zero-shares-account", "warning")]
    assert "1 account(s) have FairShare=0 (chem)" in found[0].message
    assert found[0].fix.startswith("sacctmgr modify account where name=chem set fairshare=1")


def test_cluster_name_not_in_the_config(tmp_path):
    """[clusters.NAME] that is not slurmctld's ClusterName: doctor and config check say so first."""
    from fscontrol.agent import config
    from fscontrol.agent.diagnose import diagnose

    cfg_path = tmp_path / "c.toml"
    cfg_path.write_text('[clusters.tbclustr]\ntarget_core_hours = 10\nmethod = "hybrid"\n')
    _, found = diagnose(RecordedSlurm(SAMPLE), config.load(cfg_path))
    assert found[0].check == "cluster-name" and found[0].severity == "fatal"
    assert "names [clusters.tbclustr], but slurmctld's ClusterName is tbcluster" in found[0].message
    assert found[0].fix == "rename the table to [clusters.tbcluster] in the fscontrol config."
    r = CliRunner().invoke(app, ["config", "check", "--config", str(cfg_path), "--source", str(SAMPLE)])
    assert r.exit_code == 9 and "FATAL   cluster-name: the config names [clusters.tbclustr]" in r.output
    r = CliRunner().invoke(app, ["doctor", "--config", str(cfg_path), "--source", str(SAMPLE)])
    assert r.exit_code == 9 and r.output.splitlines()[1].startswith("FATAL   cluster-name: ")
    cfg_path.write_text('[clusters.tbcluster]\ntarget_core_hours = 10\nmethod = "hybrid"\n')
    assert diagnose(RecordedSlurm(SAMPLE), config.load(cfg_path))[1] == []


def _uint32_ok(text: str) -> bool:
    return all(int(n) <= 0xFFFFFFFF for n in re.findall(r"=(\d+)", text))


def test_weight_fixes_fit_slurms_uint32(tmp_path):
    """A fix never names a weight Slurm refuses (its PriorityWeight* are uint32): where ten times
    the other weight does not fit, the fair-share weight goes to the largest and the other down."""
    (f,) = checks.check(_survey(tmp_path, config={"PriorityWeightAge": "1000000000"}), HYBRID)
    assert f.check == "weight-dwarfed" and _uint32_ok(f.fix), f.fix
    assert "PriorityWeightFairshare=10000000000" not in f.fix
    assert f.fix.startswith("slurm.conf: PriorityWeightFairshare=4294967294 and PriorityWeightAge=429496729 ")
    assert "past Slurm's uint32 weights" in f.fix
    # (independently: the suggestion makes fair-share ten times the other factor)
    assert 4294967294 >= 10 * 429496729 and 4294967294 <= 2**32 - 1
    (f,) = checks.check(_survey(tmp_path / "b", config={"PriorityWeightAge": "400000000"}), HYBRID)
    assert f.fix.startswith("slurm.conf: PriorityWeightFairshare=4000000000 (ten times PriorityWeightAge)")
    assert _uint32_ok(f.fix)
    (f,) = checks.check(_survey(tmp_path / "c", config={"PriorityWeightFairShare": "0",
                                                      "PriorityWeightAge": "4000000000"}), HYBRID)
    assert f.check == "weight-fairshare" and _uint32_ok(f.fix), f.fix
    assert "PriorityWeightAge=429496729" in f.fix
    (f,) = checks.check(_survey(tmp_path / "d", config={"PriorityWeightFairShare": "0"}), HYBRID)
    assert f.fix.startswith("slurm.conf: PriorityWeightFairshare=100000 (larger than every other")
    (f,) = checks.check(_survey(tmp_path / "e", config={"PriorityWeightTRES": "CPU=1000000000,GRES/gpu=3000000000"}),
                        HYBRID)
    assert _uint32_ok(f.fix) and "the PriorityWeightTRES weights scaled to sum to at most 429496729" in f.fix, f.fix


def test_priority_plugin_not_loaded(tmp_path):
    """show config says multifactor, but sprio lists no pending job: slurmctld runs what it started
    with (priority/basic until a restart). Not said where no job is pending, or sprio lists them."""
    s = _survey(tmp_path)
    # the recorded sample: sprio lists its pending jobs, so the queue is not read at all (at 370,000
    # queued jobs it cost 2 s of the doctor's 2.4 s CPU and 215 MiB, docs/doctor.md)
    assert s.sprio_ids and s.pending == ()
    found = checks.check(dataclasses.replace(s, sprio_ids=frozenset(), pending=("7", "8")), Intent())
    assert [(f.check, f.severity) for f in found] == [("priority-not-loaded", "fatal")]
    assert "restart slurmctld" in found[0].fix
    assert checks.check(dataclasses.replace(s, sprio_ids=frozenset(), pending=()), Intent()) == []
    # from the text: sprio's output with no row
    folder = _sample(tmp_path / "b")
    (folder / "sprio.txt").write_text("JOBID|USER|PARTITION|PRIORITY|FAIRSHARE\n")
    assert {f.check for f in checks.check(survey.read(RecordedSlurm(folder)), Intent())} == {"priority-not-loaded"}
    # only jobs sprio would list count: held, waiting for a begin time or a dependency do not
    held = (folder / "squeue.txt").read_text().replace("|Resources|", "|BeginTime|").replace("|PartitionDown|", "|JobHeldUser|")
    (folder / "squeue.txt").write_text(held)
    assert checks.check(survey.read(RecordedSlurm(folder)), Intent()) == []


def test_missing_slurm_conf_is_one_line_fast(tmp_path):
    """No slurm.conf where the commands read it: doctor says so in one line (exit 3) without
    running a command; config check shows that line, not a timeout."""
    import os
    import subprocess
    import sys
    import time

    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.tbcluster]\ntarget_core_hours = 10\nmethod = "hybrid"\n')
    env = {**os.environ, "SLURM_CONF": str(tmp_path / "nowhere" / "slurm.conf")}
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "fscontrol", "doctor", "--config", str(cfg)], env=env,
                       capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert p.stderr.strip().splitlines() == [
        f"fscontrol: error: slurm.conf not found: {tmp_path}/nowhere/slurm.conf (SLURM_CONF names it): Slurm's "
        "commands cannot reach slurmctld; set SLURM_CONF to the cluster's slurm.conf"], p.stderr
    assert took < 15, took  # Slurm's own retries took 59 s a command
    p = subprocess.run([sys.executable, "-m", "fscontrol", "config", "check", "--config", str(cfg)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert "doctor on tbcluster: not run: slurm.conf not found: " in p.stdout and "timed out" not in p.stdout, p.stdout
    assert survey.conf_file_problem({"SLURM_CONF": str(cfg)}) is None  # a file that is there


def test_persist_without_a_slurm_conf_to_write(tmp_path):
    """persist = true with a slurm.conf the doctor could not read, or none at all on a live cluster:
    a warning naming what to set (the runtime d still follows every pass); without persist the
    unreadable file is only the info that the d-by-hand check was skipped."""
    s = _survey(tmp_path)
    persist = Intent(method="damping", persist=True)
    err = {"slurm.conf": "/etc/slurm/slurm.conf: Permission denied"}
    assert _judge(s, persist, errors=err) == {"persist-slurm-conf": "warning"}
    assert _judge(s, Intent(method="hybrid", padding_mode="steady", persist=True), errors=err)["persist-slurm-conf"] == "warning"
    assert _judge(s, Intent(method="damping"), errors=err) == {"read-slurm-conf": "info"}
    live = _judge(s, persist, conf_path=None, source="live")
    assert live.get("persist-slurm-conf") == "warning", live
    assert "persist-slurm-conf" not in _judge(s, persist, conf_path="/etc/slurm/slurm.conf", source="live")
    assert "persist-slurm-conf" not in _judge(s, Intent(method="damping"), conf_path=None, source="live")
    line = next(f for f in checks.check(dataclasses.replace(s, conf_path=None, source="live"), persist)
                if f.check == "persist-slurm-conf")
    assert "set slurm_conf" in line.fix and "persist = false" in line.fix

# ---------------------------------------------------------------------------- MAX_TRES_GRES before 25.05
def test_conf_line_value_reads_the_last_line_case_and_comments():
    text = "PriorityFlags=NO_FAIR_TREE\n# PriorityFlags=MAX_TRES\nprioritYflags = NO_FAIR_TREE,MAX_TRES_GRES # new\n"
    assert survey.conf_line_value(text, "PriorityFlags") == "NO_FAIR_TREE,MAX_TRES_GRES"
    assert survey.conf_line_value("PriorityType=priority/multifactor\n", "PriorityFlags") is None


@pytest.mark.parametrize("version,file_flags,shown,warned", [
    ("22.05.8", "NO_FAIR_TREE,MAX_TRES_GRES", "NO_FAIR_TREE,MAX_TRES", True),  # what 22.05 does (docs/billing.md)
    ("24.11.5", "MAX_TRES_GRES", "MAX_TRES", True),
    ("25.05.0", "NO_FAIR_TREE,MAX_TRES_GRES", "NO_FAIR_TREE,MAX_TRES_GRES", False),  # it has the flag
    ("26.05.5", "NO_FAIR_TREE,MAX_TRES_GRES", "NO_FAIR_TREE,MAX_TRES_GRES", False),
    ("22.05.8", "NO_FAIR_TREE,MAX_TRES", "NO_FAIR_TREE,MAX_TRES", False),  # MAX_TRES asked, MAX_TRES got
    ("22.05.8", None, "NO_FAIR_TREE,MAX_TRES", False),  # no file read: show config cannot tell
])
def test_max_tres_gres_before_25_05(tmp_path, version, file_flags, shown, warned):
    s = _survey(tmp_path, config={"SLURM_VERSION": version, "PriorityFlags": shown})
    s = dataclasses.replace(s, conf_priority_flags=file_flags)
    found = [f for f in checks.check(s, Intent()) if f.check == "max-tres-gres"]
    assert bool(found) == warned, found
    if warned:
        assert found[0].severity == "warning"
        line = found[0].line()
        assert line.startswith("WARNING max-tres-gres: ") and f"Slurm {version}" in line and "-> fix: " in line
        assert "\n" not in line


def test_damping_set_by_an_agent_whose_history_is_not_read_is_not_undone(tmp_path):
    """Issue 30 (an outside tester): `doctor` with a fresh config, during a running agent's run,
    advised the `scontrol fsdampeningfactor` that would undo the agent's d. With the trace persist
    leaves (slurm.conf.fscontrol-original) it names the agent and advises no change of d; without
    it, the fix puts "run the doctor with the agent's config" first and says where it looked."""
    s = _survey(tmp_path, config={"FairShareDampeningFactor": "23"})
    damping = Intent(method="hybrid")
    signed = dict(conf_damping="37", conf_read=True, conf_path="/etc/slurm/slurm.conf",
                  agent_history="/var/lib/fscontrol/history.db",
                  agent_sign="/etc/slurm/slurm.conf.fscontrol-original exists")
    found = checks.check(dataclasses.replace(s, **signed), damping)
    assert [(f.check, f.severity) for f in found] == [("damping-agent-unseen", "warning")]
    assert "scontrol fsdampeningfactor" not in found[0].fix
    assert "looked in /var/lib/fscontrol/history.db" in found[0].message
    plain = checks.check(dataclasses.replace(s, **dict(signed, agent_sign=None)), damping)
    assert [f.check for f in plain] == ["damping-by-hand"]
    assert plain[0].fix.startswith("if an fscontrol agent with another history controls d, run the doctor with its config")
    assert "looked in /var/lib/fscontrol/history.db" in plain[0].message


def test_diagnose_finds_the_persisted_original_beside_slurm_conf(tmp_path):
    """diagnose() reads the trace itself: the pre-agent copy beside the slurm.conf it read; the
    check then names the agent and advises no `scontrol fsdampeningfactor`."""
    from fscontrol.agent import diagnose as dg

    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=c1\nFairShareDampeningFactor=37\n")
    from fscontrol.agent import config

    source = RecordedSlurm(_sample(tmp_path, config={"FairShareDampeningFactor": "23"}))
    cfg_path = tmp_path / "c.toml"
    cfg_path.write_text('[clusters.tbcluster]\ntarget_core_hours = 10\nmethod = "hybrid"\npadding_mode = "steady"\n')
    cfg = config.load(cfg_path)

    s, found = dg.diagnose(source, cfg, db_path=tmp_path / "none.db", slurm_conf=str(conf))
    assert s.agent_sign is None and s.agent_history == str(tmp_path / "none.db")
    (tmp_path / "slurm.conf.fscontrol-original").write_text(conf.read_text())
    s, found = dg.diagnose(source, cfg, db_path=tmp_path / "none.db", slurm_conf=str(conf))
    assert s.agent_sign is None  # the file is the pre-agent one again (control off put it back): no agent's edit
    (tmp_path / "slurm.conf.fscontrol-original").write_text("ClusterName=c1\n")
    s, found = dg.diagnose(source, cfg, db_path=tmp_path / "none.db", slurm_conf=str(conf))
    assert s.agent_sign and "slurm.conf.fscontrol-original exists" in s.agent_sign
    # slurmctld and slurm.conf agree on the agent's d (just after persist wrote it): still the agent's,
    # not "the site's own setting" (damping-preset)
    same = checks.check(dataclasses.replace(s, conf_damping="23", conf_read=True), Intent(method="hybrid"))
    assert [f.check for f in same if f.check.startswith("damping-")] == ["damping-agent-unseen"]
    # the slurm.conf named is read, even beside a recorded source (an outside tester: --slurm-conf
    # was ignored with --source): its d 37 against slurmctld's 23
    assert s.conf_read and s.conf_damping == "37"
    hit = [f for f in found if f.check.startswith("damping-")]
    assert [f.check for f in hit] == ["damping-agent-unseen"] and "scontrol fsdampeningfactor" not in hit[0].fix
