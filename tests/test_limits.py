""""How much can I still run?" (issue #32 item 5) without Slurm: the limits read's parsers on the
real text of the 22.05 testbed (tests/data/limits/tb-22.05: physics GrpTRESMins cpu=600000,
GrpTRES cpu=16, GrpJobs=5; bob in physics GrpTRESRunMins cpu=1000, MaxJobs=2, MaxSubmitJobs=4;
chem MaxJobs=1, MaxTRESMins cpu=120; QOS normal GrpTRESMins cpu=99999, MaxJobsPU=10; bob's three
4-CPU jobs, alice's 4-CPU job and carol's run, alice's 8-CPU job pends on AssocGrpCpuLimit), the
used/left figures worked by hand, the privacy of the own files, the history's migration and the
forecast's text and JSON. The same against a live Slurm: tests/test_integration_limits.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fscontrol.errors import ParseError
from fscontrol.model import quota
from fscontrol.slurm import tres

DATA = Path(__file__).resolve().parent / "data" / "limits" / "tb-22.05"
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "testbed-basic"
UPGRADE = Path(__file__).resolve().parent / "data" / "upgrade"


def _read(assoc: str | None = None) -> tres.LimitsRead:
    used, run = tres.parse_tres_usage((DATA / "sshare.txt").read_text())
    return tres.LimitsRead(tres.parse_assoc_limits(assoc or (DATA / "assoc.txt").read_text()),
                           tres.parse_qos_limits((DATA / "qos.txt").read_text()), used, run,
                           tres.parse_queue_counts((DATA / "squeue.txt").read_text()), 1_790_000_000.0)


def _parent(read) -> dict:
    return {a.account: a.parent for a in read.assocs if not a.user}


def _find(entries, **kw) -> dict:
    got = [e for e in entries if all(e.get(k) == v for k, v in kw.items())]
    assert len(got) == 1, (kw, got)
    return got[0]


def test_the_parsers_read_the_testbeds_text():
    read = _read()
    bob = next(a for a in read.assocs if (a.account, a.user) == ("physics", "bob"))
    assert bob.tres == {"GrpTRESRunMins": {"cpu": 1000.0}} and bob.jobs == {"MaxJobs": 2, "MaxSubmitJobs": 4}
    physics = next(a for a in read.assocs if (a.account, a.user) == ("physics", ""))
    assert physics.parent == "science" and physics.tres == {"GrpTRESMins": {"cpu": 600000.0}, "GrpTRES": {"cpu": 16.0}}
    normal = next(q for q in read.qos if q.account == "normal")
    assert normal.tres == {"GrpTRESMins": {"cpu": 99999.0}} and normal.jobs == {"MaxJobsPU": 10}
    assert read.used_mins[("physics", "")]["cpu"] == 1.0 and read.run_mins[("physics", "bob")]["cpu"] == 82.0
    assert ("physics", "alice", "normal", False, 8, "6", "AssocGrpCpuLimit") in read.jobs
    assert tres.parse_tres("cpu=4,mem=2G,gres/gpu=1") == {"cpu": 4.0, "mem": 2048.0, "gres/gpu": 1.0}


@pytest.mark.parametrize("text", ["Account|User\nphysics|bob\n", "",
                                  (DATA / "assoc.txt").read_text().replace("cpu=600000", "cpu=lots")])
def test_bad_sacctmgr_text_is_one_parse_error(text):
    with pytest.raises(ParseError):
        tres.parse_assoc_limits(text)


def test_used_and_left_are_worked_by_hand():
    read = _read()
    entries = quota.entries(read)
    # GrpTRESMins: sshare's GrpTRESRaw of physics, 1 CPU-minute; 600000 - 1 = 599999 left
    e = _find(entries, scope="account", account="physics", limit="GrpTRESMins")
    assert (e["used"], e["left"]) == (1.0, 599999.0)
    assert quota.describe(e) == "account physics: 9,999 of 10,000 CPU-hours left (GrpTRESMins cpu=600000)"
    # GrpTRES cpu: the running jobs under physics, bob's 3 x 4 CPUs and alice's 4 (her 8-CPU job pends)
    e = _find(entries, scope="account", account="physics", limit="GrpTRES")
    assert (e["used"], e["left"]) == (16.0, 0.0)
    assert _find(entries, scope="account", account="physics", limit="GrpJobs")["used"] == 4.0
    # bob's GrpTRESRunMins: sshare's TRESRunMins cpu=82 of 1000
    e = _find(entries, scope="user", account="physics", user="bob", limit="GrpTRESRunMins")
    assert (e["used"], e["left"]) == (82.0, 918.0)
    assert _find(entries, scope="user", user="bob", limit="MaxSubmitJobs")["used"] == 3.0
    assert _find(entries, scope="qos", user="bob", qos="normal", limit="MaxJobsPU")["used"] == 3.0
    # a per-job limit has nothing used; a QOS's Grp usage is not in sshare: said, not guessed
    e = _find(entries, scope="user", account="chem", user="carol", limit="MaxTRESMins")
    assert e["used"] is None and quota.describe(e) == "you in account chem: at most 2 CPU-hours per job (MaxTRESMins cpu=120)"
    assert "usage not known" in quota.describe(_find(entries, scope="qos", user="bob", limit="GrpTRESMins"))


def test_a_user_sees_their_own_and_their_accounts_limits_and_the_job_a_limit_holds():
    read = _read()
    entries, parent = quota.entries(read), _parent(read)
    alice = quota.user_entries(entries, parent, "alice", {"flat", "physics"})
    assert {(e["scope"], e["account"] or e["qos"]) for e in alice} == {("account", "physics"), ("qos", "normal")}
    assert all(e["user"] in ("", "alice") for e in alice)  # nobody else's own limits
    held = _find(alice, limit="GrpTRES")
    assert held["holding"] == ["6"]
    assert quota.describe(held).endswith("it holds your pending job 6 (squeue: AssocGrpCpuLimit)")
    # carol (chem) sees none of physics
    assert not [e for e in quota.user_entries(entries, parent, "carol", {"chem", "flat"}) if e["account"] == "physics"]


def test_an_accounts_max_limit_is_its_users_default_and_privatedata_usage_hides_the_accounts_usage():
    text = (DATA / "assoc.txt").read_text().replace("tbcluster|flat||root||||||||normal",
                                                    "tbcluster|flat||root||||||2|5|normal")
    read = _read(text)
    entries, parent = quota.entries(read), _parent(read)
    mine = quota.user_entries(entries, parent, "bob", {"flat", "physics"}, accounts_usage=False)
    inherited = _find(mine, account="flat", limit="MaxJobs")
    assert inherited["from_account"] == "flat" and inherited["used"] == 0.0  # bob runs nothing in flat
    assert "set on account flat" in quota.describe(inherited)
    acct = _find(mine, scope="account", account="physics", limit="GrpTRESMins")
    assert acct["used"] is None and acct["usage_private"] and "(usage private)" in quota.describe(acct)
    assert _find(mine, scope="user", account="physics", limit="MaxJobs")["used"] == 3.0  # his own: shown


def _history(tmp_path):
    from fscontrol.agent import pipeline
    from fscontrol.store import history as store
    from fscontrol.store import quota as store_quota
    from fscontrol.slurm.source import RecordedSlurm

    db = store.open_db(tmp_path / "h.db")
    res = pipeline.collect(RecordedSlurm(SAMPLE), db)
    assert store_quota.latest_limits(db, res.snapshot.cluster) is None  # a recording holds no limits
    read = _read()
    with store.transaction(db):
        store_quota.write_limits(db, res.snapshot.cluster, res.snapshot_id, read.read_at, quota.entries(read), _parent(read))
    return db, res


def test_own_files_carry_each_users_limits_and_the_published_file_none(tmp_path, monkeypatch):
    import os

    from fscontrol.agent import config, publishing
    from fscontrol.export import privacy

    # the sample's users as the host's (own files go to the names the host knows: on a fresh
    # machine before the testbed has made its users, none of them)
    me = (os.getuid(), os.getgid())
    monkeypatch.setattr(privacy, "known_names", lambda: {u: me for u in ("alice", "bob", "carol", "dave")})
    db, res = _history(tmp_path)
    (tmp_path / "pub").mkdir()
    path, data = publishing.publish_latest(db, config.from_dict({}), None, out=tmp_path / "pub" / "tb.json")
    text = Path(path).read_text()
    assert "tres_limits" not in text and "GrpTRES" not in text
    own = {p.parent.name: json.loads(p.read_text()) for p in (tmp_path / "pub" / "tb.users").glob("*/own.json")}
    bob = own["bob"]["tres_limits"]["entries"]
    assert {e["user"] for e in bob} <= {"", "bob"} and any(e["limit"] == "GrpTRESRunMins" for e in bob)
    assert not [e for e in own["carol"]["tres_limits"]["entries"] if e["account"] == "physics"]
    assert "dave" not in own or "tres_limits" not in own["dave"] or all(
        e["scope"] == "qos" for e in own["dave"]["tres_limits"]["entries"])
    merged = privacy.merge_own(data, own["bob"])
    assert merged["tres_limits"] == own["bob"]["tres_limits"]
    db.close()


def _fscontrol(*args):
    return subprocess.run([sys.executable, "-m", "fscontrol", *args], capture_output=True, text=True, timeout=120)


def test_forecast_prints_the_limits_in_text_and_json(tmp_path):
    db, _ = _history(tmp_path)
    db.close()
    base = ("forecast", "--db", str(tmp_path / "h.db"), "--source", "published", "-u", "alice")
    j = _fscontrol(*base, "--json")
    assert j.returncode == 0, j.stderr
    lim = json.loads(j.stdout)["tres_limits"]
    texts = [e["text"] for e in lim["entries"]]
    assert "account physics: 9,999 of 10,000 CPU-hours left (GrpTRESMins cpu=600000)" in texts
    t = _fscontrol(*base)
    assert t.returncode == 0, t.stderr
    assert "how much you can still run (Slurm's limits):" in t.stdout
    assert all(f"  {x}" in t.stdout.splitlines() for x in texts)
    # -A flat: only the limits that hold a job in flat (none of physics')
    f = json.loads(_fscontrol(*base, "--json", "-A", "flat").stdout)["tres_limits"]["entries"]
    assert not [e for e in f if e["account"] == "physics"]


def test_a_history_from_before_the_limits_reads_without_them_and_upgrades(tmp_path):
    from fscontrol.store import history as store
    from fscontrol.store import quota as store_quota

    path = tmp_path / "h.db"
    shutil.copy(UPGRADE / "history-008.db", path)
    before = path.read_bytes()
    ro = store.open_db(path, create=False, readonly=True)  # a report reads it as it is: no limits
    assert store_quota.latest_limits(ro, "tbcluster") is None
    ro.close()
    assert path.read_bytes() == before
    db = store.open_db(path)  # the agent's next tick upgrades it
    assert db.execute("SELECT count(*) FROM limit_reads").fetchone()[0] == 0
    assert store_quota.latest_limits(db, "tbcluster") is None
    db.close()
    r = _fscontrol("status", "--db", str(path), "--json")
    assert r.returncode == 0, r.stderr


def test_a_failing_limits_read_skips_the_limits_and_not_the_tick():
    from fscontrol.agent import quota as agent_quota
    from fscontrol.slurm.source import LiveSlurm, RecordedSlurm

    assert agent_quota.read_limits(LiveSlurm(env={"PATH": "/nonexistent"}), None) is None  # sacctmgr not found
    assert agent_quota.read_limits(RecordedSlurm(SAMPLE), None) is None


@pytest.mark.parametrize("version", ["24.11", "26.05"])
def test_the_same_reads_on_24_11_and_26_05(version):
    """Their text, recorded with tests/test_integration_limits.py's limits (physics GrpTRES cpu=8,
    GrpJobs=4; bob's two 4-CPU jobs run, alice's 4-CPU job pends on AssocGrpCpuLimit)."""
    d = DATA.parent / f"tb-{version}"
    used, run = tres.parse_tres_usage((d / "sshare.txt").read_text())
    read = tres.LimitsRead(tres.parse_assoc_limits((d / "assoc.txt").read_text()),
                           tres.parse_qos_limits((d / "qos.txt").read_text()), used, run,
                           tres.parse_queue_counts((d / "squeue.txt").read_text()), 0.0)
    entries = quota.entries(read)
    g = _find(entries, scope="account", account="physics", limit="GrpTRES")
    assert (g["used"], g["left"]) == (8.0, 0.0)  # 2 x 4 CPUs
    assert _find(entries, scope="account", account="physics", limit="GrpJobs")["used"] == 2.0
    assert _find(entries, scope="user", user="bob", limit="GrpTRESRunMins")["used"] == 32.0  # sshare's TRESRunMins
    m = _find(entries, scope="account", account="physics", limit="GrpTRESMins")
    assert m["used"] == used[("physics", "")]["cpu"] > 0 and m["left"] == 600000 - m["used"]
    alice = quota.user_entries(entries, _parent(read), "alice", {"flat", "physics"})
    assert _find(alice, limit="GrpTRES")["holding"] == ["6"]


@pytest.mark.parametrize("private", [("usage",), ("all",)], ids=",".join)
def test_an_accounts_usage_stays_out_of_own_files_under_private_data_usage_or_all(tmp_path, private):
    """The review of #29 (item 6): publish._own_limits tested `"usage" not in flags`, so under
    PrivateData=all each member's own file carried their accounts' usage of a Grp limit."""
    from dataclasses import replace

    from fscontrol.export import publish as pub
    from fscontrol.store import history as store
    from fscontrol.store import quota as store_quota

    db, res = _history(tmp_path)
    snap = store.load_snapshot(db, cluster=res.snapshot.cluster)
    snap = replace(snap, config=replace(snap.config, private_data=private))
    out: dict = {}
    pub._own_limits(out, snap, store_quota.latest_limits(db, res.snapshot.cluster))
    accounts = [e for u in out.values() for e in u["tres_limits"]["entries"] if e["scope"] == "account"]
    assert accounts and all(e["used"] is None and e["usage_private"] for e in accounts)
    db.close()
