"""`fscontrol doctor` on the real testbed, set up the way each check looks for: slurm.conf lines
changed (reconfigure, or a slurmctld restart where Slurm needs one), sacctmgr changes, the config
naming what is not there. Each test puts the testbed back as it found it (slurm.conf's lines, the
QOS, the shares, d) and checks the doctor finds nothing again.

The tests of each rule on edited recorded text: tests/test_doctor.py. Not set up here (fast tests
only): no user association at all (it would need the testbed's whole tree deleted) and an
untested Slurm version."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from fscontrol.agent import config as agent_config
from fscontrol.agent.diagnose import diagnose

ROOT = Path(__file__).resolve().parent.parent
FSCONTROL = [sys.executable, "-m", "fscontrol"]


def _cfg(tmp_path, **cluster) -> object:
    tmp_path.mkdir(exist_ok=True)
    body = {"target_core_hours": 1, "method": "hybrid", "padding_mode": "steady", **cluster}
    text = "[clusters.tbcluster]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in body.items())
    path = tmp_path / "fscontrol.toml"
    path.write_text(text)
    return agent_config.load(path)


def _checks(slurm, cfg, db=None) -> dict[str, str]:
    """check -> severity, from the library on the live testbed."""
    _, found = diagnose(slurm.source(), cfg, db_path=db)
    return {f.check: f.severity for f in found}


def _conf_lines(slurm, *keys: str) -> dict[str, str]:
    """The slurm.conf values of `keys` as they are now ("" for a line that is not there)."""
    out = {k: "" for k in keys}
    for line in slurm.conf.read_text().splitlines():
        k, sep, v = line.partition("=")
        if sep and k in out:
            out[k] = v
    return out


def _restart(slurm) -> None:
    slurm.stop_controller()
    slurm.start_controller()
    for _ in range(60):
        if slurm.controller_up():
            return
        time.sleep(1)
    raise AssertionError("slurmctld did not answer after its restart")


def _write_conf(slurm, settings: dict[str, str]) -> None:
    """slurm.conf's lines for these keys ("" removes the line), as Testbed.set_conf writes them,
    without its reconfigure (24.11's reconfigure refuses AccountingStorageType=none: a restart)."""
    lines = [ln for ln in slurm.conf.read_text().splitlines() if ln.split("=", 1)[0] not in settings]
    lines += [f"{k}={v}" for k, v in settings.items() if v != ""]
    slurm.conf.write_text("\n".join(lines) + "\n")


@contextmanager
def _conf(slurm, restart: bool = False, **settings: str):
    """slurm.conf with these lines for the block, then as it was (reconfigure, or a restart)."""
    before = _conf_lines(slurm, *settings)
    try:
        if restart:
            _write_conf(slurm, settings)
            _restart(slurm)
        else:
            slurm.set_conf(**settings)
        yield
    finally:
        if restart:
            _write_conf(slurm, before)
            _restart(slurm)
        else:
            slurm.set_conf(**before)


def _show(slurm, key: str) -> str:
    for line in slurm.scontrol("show", "config").splitlines():
        k, sep, v = line.partition(" = ")
        if sep and k.strip().lower() == key.lower():
            return v.strip()
    return ""


def _cli(slurm, *args: str, config=None) -> tuple[int, dict]:
    argv = [*FSCONTROL, "doctor", "--json", *args] + (["--config", str(config)] if config else [])
    p = subprocess.run(argv, env=slurm.env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    return p.returncode, json.loads(p.stdout) if p.stdout.strip() else {"stderr": p.stderr}


def test_the_testbed_as_set_up_has_no_finding(slurm, tmp_path):
    """The testbed (classic fair-share, slurmdbd, weights, the padding setup) is what the doctor
    wants: no finding, exit 0, for each method."""
    for method in ("none", "damping", "padding", "hybrid"):
        assert _checks(slurm, _cfg(tmp_path, method=method)) == {}, method
    code, out = _cli(slurm, config=tmp_path / "fscontrol.toml")
    assert code == 0 and out["findings"] == [] and out["cluster"] == "tbcluster", out


def test_weights(slurm, tmp_path):
    cfg = _cfg(tmp_path)
    with _conf(slurm, PriorityWeightFairshare="0"):
        assert _show(slurm, "PriorityWeightFairShare") == "0"
        assert _checks(slurm, cfg)["weight-fairshare"] == "fatal"
        code, out = _cli(slurm, config=tmp_path / "fscontrol.toml")
        assert code == 9 and out["worst"] == "fatal", out
    with _conf(slurm, PriorityWeightAge="1000000"):
        assert _checks(slurm, cfg) == {"weight-dwarfed": "warning"}
        code, out = _cli(slurm, config=tmp_path / "fscontrol.toml")
        assert code == 8 and "PriorityWeightAge=1000000" in out["findings"][0]["message"], out
    # the QOS weight counts only where the QOS priorities differ
    with _conf(slurm, PriorityWeightQOS="1000000"):
        assert _checks(slurm, cfg) == {}
        slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "priority=10")
        try:
            assert _checks(slurm, cfg) == {"weight-dwarfed": "warning"}
        finally:
            slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "priority=0")
    with _conf(slurm, PriorityFlags="NO_FAIR_TREE,NO_NORMAL_QOS,INCR_ONLY"):
        assert _checks(slurm, cfg) == {"no-normal": "warning", "incr-only": "warning"}
    assert _checks(slurm, cfg) == {}


def test_decay(slurm, tmp_path):
    cfg, none = _cfg(tmp_path), _cfg(tmp_path / "none", method="none")
    with _conf(slurm, PriorityDecayHalfLife="0"):
        assert _show(slurm, "PriorityDecayHalfLife") == "00:00:00"
        assert _checks(slurm, none) == {"decay-off": "fatal"}
        with _conf(slurm, PriorityUsageResetPeriod="WEEKLY"):
            assert _checks(slurm, cfg) == {"decay-off-reset": "fatal"}  # control's maths need decay
            assert _checks(slurm, none) == {"decay-off-reset": "warning"}
    with _conf(slurm, PriorityUsageResetPeriod="WEEKLY"):
        assert _checks(slurm, cfg) == {"usage-reset": "warning"}
    assert _checks(slurm, cfg) == {}


def test_max_tres_gres_before_25_05(slurm, tmp_path):
    """PriorityFlags=MAX_TRES_GRES in slurm.conf: 22.05 and 24.11 bill MAX_TRES instead and show MAX_TRES
    (docs/billing.md), so the doctor warns from the file's text; 26.05 has the flag: nothing to say."""
    from fscontrol.model import billing
    from testbed import SLURM_VERSION

    cfg = _cfg(tmp_path)
    has = billing.has_max_tres_gres(SLURM_VERSION)
    with _conf(slurm, PriorityFlags="NO_FAIR_TREE,MAX_TRES_GRES"):
        for _ in range(60):  # (24.11+: the reconfigure restarts slurmctld)
            if slurm.controller_up():
                break
            time.sleep(1)
        assert _show(slurm, "PriorityFlags") == ("NO_FAIR_TREE,MAX_TRES_GRES" if has else "NO_FAIR_TREE,MAX_TRES")
        assert _checks(slurm, cfg) == ({} if has else {"max-tres-gres": "warning"})
        if not has:
            code, out = _cli(slurm, config=tmp_path / "fscontrol.toml")
            assert code == 8 and f"Slurm {SLURM_VERSION}" in out["findings"][0]["message"], out
    for _ in range(60):
        if slurm.controller_up():
            break
        time.sleep(1)
    assert _checks(slurm, cfg) == {}


def test_accounting_enforce(slurm, tmp_path):
    cfg = _cfg(tmp_path)
    with _conf(slurm, restart=True, AccountingStorageEnforce=""):
        assert _show(slurm, "AccountingStorageEnforce") == "none"
        assert _checks(slurm, cfg) == {"enforce-associations": "warning", "enforce-limits": "warning"}
    with _conf(slurm, restart=True, AccountingStorageEnforce="associations"):
        assert _checks(slurm, cfg) == {"enforce-limits": "warning"}
    assert _checks(slurm, cfg) == {}


def test_priority_basic(slurm, tmp_path):
    """PriorityType needs a slurmctld restart to take (and another to put back). slurm.conf put
    back to multifactor with only a reconfigure: on 22.05 `show config` shows the file while
    slurmctld still runs priority/basic (FIFO priorities, sprio lists no job); the doctor asks sprio
    and says so. 24.11's and 26.05's reconfigure restarts slurmctld in place (measured 2026-11-26:
    the job's priority is then multifactor's, sprio lists it): nothing to say there."""
    from testbed import SLURM_VERSION

    cfg = _cfg(tmp_path, method="none")
    before = _conf_lines(slurm, "PriorityType")
    try:
        _write_conf(slurm, {"PriorityType": "priority/basic"})
        _restart(slurm)
        assert _show(slurm, "PriorityType") == "priority/basic"
        assert _checks(slurm, cfg)["priority-type"] == "fatal"
        _write_conf(slurm, before)
        slurm.scontrol("reconfigure")
        assert _show(slurm, "PriorityType") == "priority/multifactor"  # the file, not the plugin loaded
        assert _checks(slurm, cfg) == {}  # no pending job: nothing tells
        job = slurm.probe("alice", "flat")
        time.sleep(1)
        prio = int(slurm.run("squeue", "-h", "-j", job, "-o", "%Q").strip())
        if SLURM_VERSION != "22.05":
            assert prio <= 100000 and slurm.run("sprio", "-h", "-o", "%i").split() == [job], prio
            assert _checks(slurm, cfg) == {}
            return
        assert prio > 1_000_000_000, prio  # FIFO: priority/basic counts down from 0xffff0000, no factor
        assert slurm.run("sprio", "-h", "-o", "%i").strip() == ""
        assert _checks(slurm, cfg) == {"priority-not-loaded": "fatal"}
        code, out = _cli(slurm, config=tmp_path / "fscontrol.toml")
        assert code == 9 and out["findings"][0]["check"] == "priority-not-loaded", out
        assert out["findings"][0]["fix"].startswith("restart slurmctld")
        _restart(slurm)
        for _ in range(30):  # the restarted multifactor plugin lists the job at once, or at its next pass
            if slurm.run("sprio", "-h", "-o", "%i").strip():
                break
            time.sleep(1)
        assert _checks(slurm, cfg) == {}
    finally:
        slurm.cancel_all()
        if _conf_lines(slurm, "PriorityType") != before or _show(slurm, "PriorityType") != "priority/multifactor":
            _write_conf(slurm, before)
            _restart(slurm)
    assert _checks(slurm, cfg) == {}


def test_no_slurmdbd(slurm, tmp_path):
    """AccountingStorageType=accounting_storage/none and a slurmctld restart (measured 2026-11-26 on
    the testbed). 22.05's and 26.05's slurmctld run without slurmdbd and sshare has nothing to show
    (read-sshare); the doctor says so. 24.11's dumps core at start ("Running as primary
    controller", then a core file and `connect failure`): the doctor says in one line that slurmctld
    does not answer, exit 3, at once (`scontrol ping`), where `scontrol show config` spent 9 s in
    retries, twice."""
    from testbed import SCRIPT, SLURM_VERSION

    cfg = _cfg(tmp_path, method="none")
    before = _conf_lines(slurm, "AccountingStorageType", "AccountingStorageTRES")
    core = slurm.dir / "log" / "core"
    had_core = core.exists()
    try:
        # (without AccountingStorageTRES too, as such a site has it: 22.05's slurmctld stops at start with
        # "slurmdbd is required to run with TRES gres/gpu" on the testbed's GPU line)
        _write_conf(slurm, {"AccountingStorageType": "accounting_storage/none", "AccountingStorageTRES": ""})
        slurm.stop_controller()
        # (24.11+: fails after its 60-s wait for `scontrol ping`; what the doctor says is the test)
        subprocess.run([str(SCRIPT), "ctld-start", str(slurm.dir)], capture_output=True, text=True, timeout=180)
        if SLURM_VERSION != "24.11":
            for _ in range(60):  # (a loaded machine: slurmctld without slurmdbd may take a while to answer)
                if slurm.controller_up():
                    break
                time.sleep(1)
            assert slurm.controller_up()
            found = _checks(slurm, cfg)
            assert found["accounting-storage"] == "fatal" and found.get("read-sshare") == "fatal", found
            code, out = _cli(slurm, config=tmp_path / "fscontrol.toml")
            assert code == 9 and out["findings"][0]["check"] == "accounting-storage", out
        else:
            assert not slurm.controller_up()
            t0 = time.monotonic()
            p = subprocess.run([*FSCONTROL, "doctor", "--config", str(tmp_path / "fscontrol.toml")], env=slurm.env,
                               capture_output=True, text=True, timeout=120, cwd=ROOT)
            took = time.monotonic() - t0
            assert p.returncode == 3 and p.stdout == "", (p.returncode, p.stdout, p.stderr)
            (line,) = p.stderr.strip().splitlines()
            assert line.startswith("fscontrol: error: slurmctld does not answer (`scontrol ping`: "), line
            assert took < 10, took
    finally:
        _write_conf(slurm, before)
        subprocess.run([str(SCRIPT), "ctld-stop", str(slurm.dir)], capture_output=True, text=True, timeout=120)
        _restart(slurm) if slurm.controller_up() else slurm.start_controller()
        if core.exists() and not had_core:
            core.unlink()  # (the crashed slurmctld's core dump: 80 MB)
    assert _checks(slurm, cfg) == {}


def test_slurmdbd_down(slurm, tmp_path):
    """slurmdbd stopped: sacctmgr fails; control (which changes the padding QOS) cannot work."""
    from testbed import ensure_testbed

    pid = int((slurm.dir / "run" / "slurmdbd.pid").read_text().split()[0])
    os.kill(pid, signal.SIGTERM)
    try:
        for _ in range(60):
            try:
                os.kill(pid, 0)
                time.sleep(0.5)
            except ProcessLookupError:
                break
        found = _checks(slurm, _cfg(tmp_path))
        assert found.get("read-qos") == "fatal" and found.get("read-assoc") == "fatal", found
    finally:
        ensure_testbed(slurm.dir)  # testbed.sh start brings back what is not running
    for _ in range(30):
        if _checks(slurm, _cfg(tmp_path)) == {}:
            break
        time.sleep(2)
    assert _checks(slurm, _cfg(tmp_path)) == {}


def test_fair_tree_and_depth_oblivious(slurm, tmp_path):
    cfg, none = _cfg(tmp_path), _cfg(tmp_path / "none", method="none")
    try:
        slurm.set_priority_flags("")
        assert _checks(slurm, cfg) == {"control-fair-tree": "fatal"}
        assert _checks(slurm, none) == {}  # Fair Tree is fair-share: only control cannot act on it
        slurm.scontrol("fsdampeningfactor", "5")
        try:
            assert _checks(slurm, none) == {"damping-ignored": "warning"}
        finally:
            slurm.scontrol("fsdampeningfactor", "1")
        slurm.set_priority_flags("DEPTH_OBLIVIOUS")
        assert _checks(slurm, cfg) == {"control-depth-oblivious": "fatal"}
    finally:
        slurm.set_priority_flags("NO_FAIR_TREE", restart=True)
    assert _checks(slurm, cfg) == {}


def test_damping_by_hand_and_reverted(slurm, tmp_path):
    """d set by hand (scontrol), then d the agent set and a reconfigure put back."""
    from fscontrol.act import actions
    from fscontrol.store import history as store
    from fscontrol.store import ledger

    cfg = _cfg(tmp_path, method="damping")
    assert slurm.damping() == 1
    try:
        slurm.scontrol("fsdampeningfactor", "7")
        assert _checks(slurm, cfg) == {"damping-by-hand": "warning"}
        # the pre-agent copy persist keeps beside slurm.conf: an agent whose history this doctor
        # does not read owns d; it must not advise setting d back (issue 30, an outside tester)
        original = Path(str(slurm.conf.resolve()) + ".fscontrol-original")
        original.write_bytes(slurm.conf.read_bytes() + b"# before the agent's edit\n")
        try:
            _, f = diagnose(slurm.source(), cfg)
            assert [x.check for x in f] == ["damping-agent-unseen"] and "scontrol fsdampeningfactor" not in f[0].fix
        finally:
            original.unlink()
        # the agent's own action (as its executor records it), then a reconfigure, as config
        # management runs one: slurmctld is back at slurm.conf's d
        db_path = tmp_path / "h.db"
        db = store.open_db(db_path)
        act = actions.set_damping(5, "test: the agent's d")
        with store.transaction(db):
            (aid,) = ledger.write_actions(db, "tbcluster", None, "control", [act], time.time())
        slurm.scontrol(*act.argv[1:])
        with store.transaction(db):
            ledger.update_action(db, aid, "ok", "", None, time.time())
        db.close()
        assert slurm.damping() == 5
        assert _checks(slurm, cfg, db=db_path) == {}  # d is the agent's: nothing to say
        slurm.scontrol("reconfigure")
        assert slurm.damping() == 1
        found = _checks(slurm, cfg, db=db_path)
        assert found == {"damping-reverted": "warning"}, found
        _, f = diagnose(slurm.source(), cfg, db_path=db_path)
        assert "not the 5 the agent last set: slurm.conf says 1, and slurmctld re-reads it" in f[0].message
        assert "a plain reconfigure is enough, or config management that reconfigures" in f[0].message
        # `control off` (persist: slurm.conf and a reconfigure put d back, no set_damping logged):
        # the agent now expects the d it found, 1, and the doctor has nothing to say
        db = store.open_db(db_path)
        with store.transaction(db):
            ledger.record_original(db, "tbcluster", "damping", 1, time.time())
            ledger.set_state(db, "tbcluster", "acting_off", {"by": "test", "at": time.time()}, time.time())
        db.close()
        assert _checks(slurm, cfg, db=db_path) == {}
    finally:
        slurm.scontrol("fsdampeningfactor", "1")
    assert _checks(slurm, cfg) == {}


def test_padding_setup(slurm, tmp_path):
    """The config names a padding association, QOS or partition that is missing or unfit."""
    assert _checks(slurm, _cfg(tmp_path, dummy="fsadmin/nobody")) == {"dummy-missing": "fatal"}
    # (and neither of these users may run in the padding QOS)
    assert _checks(slurm, _cfg(tmp_path, dummy="chem/carol")) == {"dummy-not-top-level": "fatal",
                                                                 "padding-qos-access": "fatal"}
    assert _checks(slurm, _cfg(tmp_path, dummy="flat/alice")) == {"dummy-not-alone": "fatal",
                                                                 "padding-qos-access": "fatal"}
    assert _checks(slurm, _cfg(tmp_path, padding_qos="nosuchqos")) == {"padding-qos-missing": "fatal"}
    # (fsadmin, no longer the padding partition, is then one of higher PriorityTier: a note)
    assert _checks(slurm, _cfg(tmp_path, dummy_partition="nosuchpart")) == {"padding-partition-missing": "fatal",
                                                                            "partition-tiers": "info"}
    assert _checks(slurm, _cfg(tmp_path, method="damping", dummy="fsadmin/nobody")) == {}  # damping needs no dummy
    slurm.run("sacctmgr", "-i", "add", "qos", "fsdoctor")
    try:
        assert _checks(slurm, _cfg(tmp_path, padding_qos="fsdoctor")) == {"padding-qos-access": "fatal"}
    finally:
        slurm.run("sacctmgr", "-i", "delete", "qos", "where", "name=fsdoctor")
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "maxwall=01:00:00")
    try:
        assert _checks(slurm, _cfg(tmp_path)) == {"padding-qos-maxwall": "fatal"}  # steady: a one-day job
        assert _checks(slurm, _cfg(tmp_path, padding_mode="pulse")) == {}  # pulse: one PriorityCalcPeriod
    finally:
        slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "maxwall=-1")
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "grptresmins=cpu=6000")
    try:
        assert _checks(slurm, _cfg(tmp_path)) == {"padding-qos-quota": "warning"}
    finally:
        slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "grptresmins=cpu=-1")
    assert _checks(slurm, _cfg(tmp_path)) == {}


def test_shares_and_notes(slurm, tmp_path):
    """A user with FairShare=0; the notes (info: exit 0) for PrivateData=usage, partition tiers and a
    UsageFactor."""
    cfg = _cfg(tmp_path)
    slurm.run("sacctmgr", "-i", "modify", "user", "where", "name=dave", "account=flat", "set", "fairshare=0")
    try:
        assert _checks(slurm, cfg) == {"zero-shares": "warning"}
    finally:
        slurm.run("sacctmgr", "-i", "modify", "user", "where", "name=dave", "account=flat", "set", "fairshare=1")
    slurm.run("sacctmgr", "-i", "modify", "account", "where", "name=chem", "set", "fairshare=0")
    try:
        found = _checks(slurm, cfg)
        assert found == {"zero-shares-account": "warning"}, found
        _, f = diagnose(slurm.source(), cfg)
        assert "1 account(s) have FairShare=0 (chem)" in f[0].message
    finally:
        slurm.run("sacctmgr", "-i", "modify", "account", "where", "name=chem", "set", "fairshare=1")
    with _conf(slurm, PrivateData="usage"):
        assert _checks(slurm, cfg) == {"private-usage": "info"}
        code, out = _cli(slurm, config=tmp_path / "fscontrol.toml")
        assert code == 0 and out["worst"] == "info", out
    slurm.scontrol("update", "PartitionName=normal", "PriorityTier=5")
    try:
        assert _checks(slurm, cfg) == {"partition-tiers": "info"}
    finally:
        slurm.scontrol("update", "PartitionName=normal", "PriorityTier=1")
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=2")
    try:
        assert _checks(slurm, cfg) == {"qos-usage-factor": "info"}
    finally:
        slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
    assert _checks(slurm, cfg) == {}


def test_first_tick_logs_and_a_fatal_stops_control(slurm, tmp_path, caplog):
    """The agent's first tick on a cluster logs the doctor's findings; a fatal one makes control
    advise only, with the finding and its fix as the reason (no traceback, nothing applied)."""
    import logging

    from fscontrol.agent import pipeline
    from fscontrol.store import history as store

    (tmp_path / "st").mkdir(mode=0o700)
    cfg = _cfg(tmp_path, method="damping")
    db = store.open_db(tmp_path / "st" / "h.db")
    with _conf(slurm, PriorityWeightFairshare="0"), caplog.at_level(logging.INFO, logger="fscontrol.doctor"):
        res = pipeline.control_tick(slurm.source(), db, cfg, apply=True)
        assert res.decision.advise_only and res.actions == ()
        assert any("doctor: weight-fairshare" in n and "PriorityWeightFairshare=100000" in n for n in res.decision.notes)
        assert [r.getMessage() for r in caplog.records if "weight-fairshare" in r.getMessage()]
        caplog.clear()
        res = pipeline.control_tick(slurm.source(), db, cfg, apply=False)  # not the first: not logged again
        assert res.decision.advise_only and not caplog.records
    assert slurm.damping() == 1


def test_cluster_name_not_in_the_config(slurm, tmp_path):
    """[clusters.NAME] that is not slurmctld's ClusterName: doctor and config check say so first,
    in one line, and exit 9 (tick would refuse it)."""
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "fscontrol.toml"
    path.write_text('[clusters.tbclustr]\ntarget_core_hours = 1\nmethod = "hybrid"\n')
    code, out = _cli(slurm, config=path)
    assert code == 9 and out["findings"][0]["check"] == "cluster-name", out
    assert "[clusters.tbclustr], but slurmctld's ClusterName is tbcluster" in out["findings"][0]["message"]
    p = subprocess.run([*FSCONTROL, "config", "check", "--config", str(path)], env=slurm.env, capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 9 and "FATAL   cluster-name: the config names [clusters.tbclustr]" in p.stdout, p.stdout
    path.write_text('[clusters.tbcluster]\ntarget_core_hours = 1\nmethod = "hybrid"\n')
    code, out = _cli(slurm, config=path)
    assert code == 0 and out["findings"] == [], out


def test_damping_preset_and_a_slurm_conf_it_cannot_read(slurm, tmp_path):
    """d preset by the admin in slurm.conf (3, not Slurm's 1) with no action of the agent: an info
    line (the agent will move it; `control off` puts 3 back). A config naming a slurm.conf that is
    not there: with persist, a warning that the file cannot be persisted to; without, the info that
    the d-by-hand check was skipped."""
    missing = str(tmp_path / "no-such" / "slurm.conf")
    with _conf(slurm, FairShareDampeningFactor="3"):
        assert slurm.damping() == 3
        assert _checks(slurm, _cfg(tmp_path / "a", method="damping")) == {"damping-preset": "info"}
    assert slurm.damping() == 1
    found = _checks(slurm, _cfg(tmp_path / "b", method="damping", persist=True, slurm_conf=missing))
    assert found == {"persist-slurm-conf": "warning"}, found
    # without persist the doctor reads the SLURM_CONF slurmctld names, or the file given (--slurm-conf)
    assert _checks(slurm, _cfg(tmp_path / "c", method="damping", slurm_conf=missing)) == {}
    _, f = diagnose(slurm.source(), _cfg(tmp_path / "c", method="damping"), slurm_conf=missing)
    assert {x.check: x.severity for x in f} == {"read-slurm-conf": "info"}, f
    assert _checks(slurm, _cfg(tmp_path / "d", method="damping")) == {}
