""""How much can I still run?" on the real testbed (issue #32 item 5): limits set with sacctmgr,
real jobs, the agent's collect reads the limits, and every used/left figure is checked against
Slurm's own (slurmctld's `scontrol show assoc_mgr`, the limit and its use in brackets, and sshare)
and a value worked by hand; a job the limit holds is explained in the user's own forecast, run
as that user from their own file. About 2 minutes (one decay pass is waited for)."""

from __future__ import annotations

import re
import time

import pytest
from test_integration_forecast import _forecast_as, _public_dir

from fscontrol.agent import config, pipeline, publishing
from fscontrol.model import quota
from fscontrol.store import history as store
from fscontrol.store import quota as store_quota

pytestmark = pytest.mark.slurm

SET = [("account", "name=physics", ("GrpTRES=cpu=8", "GrpJobs=4", "GrpTRESMins=cpu=600000")),
       ("user", "name=bob account=physics", ("GrpTRESRunMins=cpu=100000", "MaxSubmitJobs=10")),
       ("qos", "name=normal", ("MaxJobsPU=10",))]
CLEAR = [("account", "name=physics", ("GrpTRES=cpu=-1", "GrpJobs=-1", "GrpTRESMins=cpu=-1")),
         ("user", "name=bob account=physics", ("GrpTRESRunMins=cpu=-1", "MaxSubmitJobs=-1")),
         ("qos", "name=normal", ("MaxJobsPU=-1",))]


def _sacctmgr(slurm, plan) -> None:
    for kind, where, sets in plan:
        slurm.run("sacctmgr", "-i", "modify", kind, "where", *where.split(), "set", *sets)


def _assoc_mgr(slurm, account: str, user: str = "") -> dict[str, tuple[str, str]]:
    """slurmctld's own view of one association: 'GrpTRES cpu' -> (limit, used) as it prints
    `GrpTRES=cpu=8(8)`, 'GrpJobs jobs' -> ('4', '2')."""
    text = slurm.run("scontrol", "show", "assoc_mgr", "flags=assoc", f"accounts={account}",
                     *((f"users={user}",) if user else ()))
    blocks = re.split(r"\n(?=ClusterName=)", text)
    block = next(b for b in blocks if re.search(rf"Account={account} UserName={re.escape(user)}(\(\d+\))? ", b))
    out = {}
    for m in re.finditer(r"\b(Grp\w+|Max\w+)=(\S*)", block):
        name, value = m.groups()
        for part in value.split(","):
            t = re.fullmatch(r"([\w/]+)=(\w+)\(([\d.]+)\)", part)
            if t:
                out[f"{name} {t.group(1)}"] = (t.group(2), t.group(3))
            elif (j := re.fullmatch(r"(\w+)\(([\d.]+)\)", part)):
                out[f"{name} jobs"] = (j.group(1), j.group(2))
    return out


def _run_mins_by_hand(slurm, user: str, account: str) -> float:
    """Σ over the user's running jobs of CPUs x minutes left to their time limits (squeue)."""
    total = 0.0
    for line in slurm.run("squeue", "-h", "-t", "R", "-u", user, "-A", account, "-o", "%C|%l|%M").split():
        cpus, limit, elapsed = line.split("|")
        total += int(cpus) * (_minutes(limit) - _minutes(elapsed))
    return total


def _minutes(text: str) -> float:
    parts = [int(x) for x in text.replace("-", ":").split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    d = parts[0] if len(parts) == 4 else 0
    h, m, s = parts[-3:]
    return d * 1440 + h * 60 + m + s / 60


def test_used_and_left_match_slurm_and_a_held_job_is_explained(slurm, tmp_path):
    slurm.cancel_all()
    slurm.reset_usage()
    _sacctmgr(slurm, SET)
    try:
        bob = [slurm.submit("bob", "physics", 4, 240) for _ in range(2)]
        deadline = time.monotonic() + 90
        while set(slurm.run("squeue", "-h", "-t", "R", "-o", "%i").split()) < set(bob) and time.monotonic() < deadline:
            time.sleep(1)
        started = time.time()
        alice = slurm.submit("alice", "physics", 4, 240)
        reason = ""
        while time.monotonic() < deadline + 60 and reason != "AssocGrpCpuLimit":
            time.sleep(1)
            reason = slurm.run("squeue", "-h", "-j", alice, "-o", "%r").strip()
        assert reason == "AssocGrpCpuLimit", reason  # slurmctld holds alice's job on physics' GrpTRES cpu=8
        slurm.wait_for_pass()  # the jobs' usage charged: GrpTRESRaw moves
        before = _assoc_mgr(slurm, "physics")
        db = store.open_db(tmp_path / "h.db")
        res = pipeline.collect(slurm.source(), db)
        after = _assoc_mgr(slurm, "physics")
        bob_mgr = _assoc_mgr(slurm, "physics", "bob")
        run_by_hand = _run_mins_by_hand(slurm, "bob", "physics")
        lim = store_quota.latest_limits(db, res.snapshot.cluster)
        assert lim is not None and lim["snapshot_id"] == res.snapshot_id
        e = {(x["scope"], x["account"], x["user"], x["qos"], x["limit"], x["tres"]): x
             for x in lim["entries"] if x["scope"] != "user_jobs" and x["scope"] != "held"}

        # GrpTRES cpu: bob's 2 x 4 CPUs (by hand), slurmctld's own count, 0 left
        g = e[("account", "physics", "", "", "GrpTRES", "cpu")]
        assert (g["max"], g["used"], g["left"]) == (8.0, 8.0, 0.0)
        assert before["GrpTRES cpu"] == ("8", "8") == after["GrpTRES cpu"]
        # GrpJobs: 2 running (alice's pends)
        j = e[("account", "physics", "", "", "GrpJobs", "jobs")]
        assert (j["used"], before["GrpJobs jobs"]) == (2.0, ("4", "2"))
        # GrpTRESMins: the decayed CPU-minutes, as slurmctld holds them (sshare's GrpTRESRaw), and by
        # hand at most 8 CPUs x the minutes since they started (decay only lowers it)
        m = e[("account", "physics", "", "", "GrpTRESMins", "cpu")]
        lo, hi = sorted(float(x["GrpTRESMins cpu"][1]) for x in (before, after))
        assert lo - 1 <= m["used"] <= hi + 1, (m, before, after)
        assert 0 < m["used"] <= 8 * (time.time() - started + 60) / 60
        assert m["left"] == 600000 - m["used"]
        share = slurm.run("sshare", "-a", "-P", "-n", "-A", "physics", "-o", "Account,User,GrpTRESRaw")
        acct = next(ln for ln in share.splitlines() if ln.split("|")[:2] == ["physics", ""])
        assert abs(float(re.search(r"cpu=(\d+)", acct).group(1)) - m["used"]) <= 1
        # bob's GrpTRESRunMins: sshare's TRESRunMins, slurmctld's, and by hand Σ CPUs x minutes to the limit
        r = e[("user", "physics", "bob", "", "GrpTRESRunMins", "cpu")]
        assert abs(r["used"] - float(bob_mgr["GrpTRESRunMins cpu"][1])) <= 8 * 1.5, (r, bob_mgr)
        assert abs(r["used"] - run_by_hand) <= 8 * 1.5, (r, run_by_hand)
        assert e[("user", "physics", "bob", "", "MaxSubmitJobs", "jobs")]["used"] == 2.0
        assert e[("qos", "", "alice", "normal", "MaxJobsPU", "jobs")]["used"] == 0.0

        # the job the limit holds, explained in alice's own forecast (her own file, run as alice)
        mine = quota.user_entries(lim["entries"], lim["parent"], "alice", {"flat", "physics"})
        held = next(x for x in mine if x["limit"] == "GrpTRES")
        assert held["holding"] == [alice]
        pub = _public_dir(slurm)
        publishing.publish_latest(db, config.from_dict({}), None, out=pub / "tbcluster.json")
        db.close()
        out = _forecast_as(slurm, "alice", pub / "tbcluster.json")
        assert out.returncode == 0, out.stderr
        want = (f"  account physics: 8 of 8 CPUs in use at once, 0 more (GrpTRES cpu=8); it holds your pending job "
                f"{alice} (squeue: AssocGrpCpuLimit)")
        assert want in out.stdout.splitlines(), out.stdout
        assert "you in account physics" not in out.stdout  # bob's own limits are his alone
        out = _forecast_as(slurm, "bob", pub / "tbcluster.json")
        assert out.returncode == 0, out.stderr
        assert "you in account physics: " in out.stdout and "GrpTRESRunMins cpu=100000" in out.stdout
    finally:
        slurm.cancel_all()
        _sacctmgr(slurm, CLEAR)
