"""Against the real testbed: `fscontrol why JOBID` for every reason a job waits.

- its priority term by term, and the figures are sprio's: each term is its factor x its weight,
  the terms add up to the priority, the dominant term is the largest, and the count of jobs ahead
  is squeue's (the weights are set for the test and put back after);
- a job the SFS gate held, asked as its owner (a plain user, reading the published snapshot): the
  hold is fscontrol's, its account, occupancy and target; the gate then lifts it when the account
  comes down, as said; an admin's hold and a user's hold are told apart;
- a tie: three jobs of one association with the same priority, and the order Slurm then really
  starts them in; the agent's padding job in the higher-tier partition going first on the node,
  and in the admin's padding reservation;
- other Slurm reasons (Dependency, BeginTime, AssocGrpCpuLimit, PartitionDown) in plain words."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = {"PriorityWeightAge": "1000", "PriorityWeightJobSize": "20000", "PriorityWeightPartition": "500",
           "PriorityMaxAge": "1:00:00"}


def _user_tree(slurm) -> Path:
    """fscontrol and the packages its CLI imports (typer's), where the testbed's users can read them:
    the checkout and the venv may sit under /root."""
    dest = slurm.dir / "why-userpkg"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(ROOT / "fscontrol", dest / "fscontrol", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("typer", "annotated_doc", "shellingham", "click", "typing_extensions"):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        src = Path(spec.origin)
        if src.name == "__init__.py":
            shutil.copytree(src.parent, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, dest / src.name)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def _user_python(user: str) -> str:
    for exe in (sys.executable, "/usr/bin/python3"):
        p = subprocess.run(["runuser", "-u", user, "--", exe, "-c", "import sys; sys.exit(sys.version_info < (3, 11))"],
                           capture_output=True, timeout=30, check=False)
        if p.returncode == 0:
            return exe
    pytest.fail(f"no Python >= 3.11 that {user} may run")


def _why_as(slurm, user: str, job: str, *args: str) -> subprocess.CompletedProcess:
    """`fscontrol why JOB` run as the plain user `user` (runuser), as a site's users run it."""
    tree = slurm.dir / "why-userpkg"
    argv = ["runuser", "-u", user, "--", "env", f"PYTHONPATH={tree}", f"SLURM_CONF={slurm.conf}", f"PATH={slurm.env['PATH']}",
            _user_python(user), "-m", "fscontrol", "why", job, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def _states(slurm) -> dict[str, tuple[str, str]]:
    out = slurm.run("squeue", "-h", "-o", "%A|%T|%r")
    return {i: (st, r) for i, st, r in (ln.split("|", 2) for ln in out.splitlines() if ln)}


def _wait(slurm, job: str, state: str, timeout: float = 60) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if _states(slurm).get(job, ("", ""))[0] == state:
            return
        time.sleep(0.3)
    raise TimeoutError(f"job {job} not {state} in {timeout:.0f} s: {_states(slurm).get(job)}")


def _why(slurm, job: str, *args: str) -> subprocess.CompletedProcess:
    """As root; --json unless other arguments are given ("--" alone: the text)."""
    return subprocess.run([sys.executable, "-m", "fscontrol", "why", job, *(args or ("--json",))], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env=slurm.env)


def test_why_is_my_job_waiting(slurm):
    slurm.cancel_all()
    try:
        slurm.set_conf(**WEIGHTS)
        small = slurm.probe("dave", "flat")
        big = slurm.submit("carol", "chem", 96, 60, partition="parked")
        slurm.wait_for_pass()  # the pass recomputes every pending job's priority with the new weights
        for job in (small, big):
            p = _why(slurm, job)
            assert p.returncode == 0, p.stderr
            d = json.loads(p.stdout)
            terms = {t["factor"]: t for t in d["terms"]}
            assert terms["job size"]["weight"] == 20000 and terms["age"]["weight"] == 1000
            for t in d["terms"]:
                if t["weight"]:
                    assert abs(t["points"] - t["normalized"] * t["weight"]) <= 1.0, t
            assert abs(sum(t["points"] for t in d["terms"]) - d["priority"]) <= len(d["terms"]), d
            assert d["dominant"] == max(d["terms"], key=lambda t: t["points"])["factor"]
            rows = [ln.split("|") for ln in slurm.run("squeue", "-h", "-t", "PD", "-p", "parked", "-o", "%i|%Q|%r").splitlines()]
            prio = {j: float(q) for j, q, _ in rows}
            # parked is DOWN: no job of it may start, so none is ahead; they are all set aside
            assert {r for _, _, r in rows} == {"PartitionDown"}
            assert d["ahead_in_partition"] == 0 and d["order"]["ineligible"] == len(prio) - 1
            assert any(x.startswith("age: +") for x in d["levers"])  # age grows towards its cap
        text = subprocess.run([sys.executable, "-m", "fscontrol", "why", big], capture_output=True, text=True,
                              timeout=120, cwd=ROOT, env=slurm.env).stdout
        assert "job size" in text and "what would change it" in text and "larger jobs score higher" in text
        # a running job and a gone one: one clear line, exit 6
        run = slurm.submit("bob", "flat", 1, 120)
        for _ in range(20):
            if "RUNNING" in slurm.run("squeue", "-h", "-j", run, "-o", "%T"):
                break
            time.sleep(0.5)
        r = subprocess.run([sys.executable, "-m", "fscontrol", "why", run], capture_output=True, text=True, timeout=120,
                           cwd=ROOT, env=slurm.env)
        assert r.returncode == 6 and "RUNNING" in r.stderr and "Traceback" not in r.stderr
        g = subprocess.run([sys.executable, "-m", "fscontrol", "why", "999999"], capture_output=True, text=True,
                           timeout=120, cwd=ROOT, env=slurm.env)
        assert g.returncode == 6 and "not in the queue" in g.stderr
    finally:
        slurm.cancel_all()
        slurm.set_conf(PriorityWeightAge="0", PriorityWeightJobSize="0", PriorityWeightPartition="0", PriorityMaxAge="")


GATE_CFG = {"clusters": {"tbcluster": {
    "gate": {"enabled": True, "action": "hold"},
    "allocations": {"flat": {"award": 20, "period": "1h"}, "chem": {"award": 20, "period": "1h"}},
}}}


def test_why_a_job_the_gate_holds_and_others_hold(slurm, tmp_path):
    """alice (flat) runs 128 CPUs against flat's target of 2 x 20 = 40; her next job waits beside
    carol's (chem, under target): the gate holds alice's. alice asks why as herself."""
    from fscontrol.agent import config, pipeline, publishing
    from fscontrol.store import history as store

    slurm.cancel_all()
    _user_tree(slurm)
    public = slurm.dir / "why-public"
    shutil.rmtree(public, ignore_errors=True)
    public.mkdir(mode=0o755)
    public.chmod(0o755)
    cfg = config.from_dict(GATE_CFG)
    db = store.open_db(tmp_path / "gate.db")
    try:
        big = slurm.submit("alice", "flat", 128, 120)
        _wait(slurm, big, "RUNNING")
        held = slurm.submit("alice", "flat", 2, 60)
        carol = slurm.submit("carol", "chem", 2, 60)
        admin_held = slurm.submit("dave", "flat", 2, 60)
        slurm.scontrol("hold", admin_held)
        user_held = slurm.submit("bob", "flat", 2, 60)
        slurm.run("scontrol", "hold", user_held, user="bob")
        res = pipeline.gate_tick(slurm.source(), db, cfg, apply=True)
        assert [a.job_id for a in res.plan.holds] == [held], res.plan.actions
        path, _ = publishing.publish_latest(db, cfg, "tbcluster", out=public / "tbcluster.json")
        assert _states(slurm)[held] == ("PENDING", "JobHeldAdmin")

        p = _why_as(slurm, "alice", held, "--json", "--published", str(path))
        assert p.returncode == 0, p.stderr
        d = json.loads(p.stdout)
        # what Slurm itself shows of the job and its account (independent of the gate's table)
        mark = slurm.run("squeue", "-h", "-j", held, "-O", "admin_comment").strip()
        running_flat = sum(int(c) for c in slurm.run("squeue", "-h", "-t", "R", "-A", "flat", "-o", "%C").split())
        assert d["category"] == "fscontrol_hold" and d["hold"]["by"] == "fscontrol" and d["hold"]["mark"] == mark == "fscontrol:hold"
        g = d["hold"]["gate"]
        assert g["account"] == "flat" and g["unit"] == "cpus"
        assert g["occupancy"] == running_flat == 128 and g["target"] == 2 * 20 and g["over_by"] == 128 - 40
        decided = db.execute("SELECT max(started_at) FROM ticks WHERE stage = 'gate'").fetchone()[0]
        assert abs(g["next_at"] - (g["decided_at"] + cfg.schedule["gate"])) < 1e-6 and abs(g["decided_at"] - decided) < 5
        assert g["waiting_at_or_under"] == 1  # carol's chem
        text = _why_as(slurm, "alice", held, "--published", str(path)).stdout
        assert "fscontrol's fair-share gate" in text and "account flat: 128 cpus running against a target of 40" in text
        assert "when it is lifted" in text and "no account at or under its target has jobs waiting" in text

        # the holds that are not fscontrol's: told apart, with who can release them
        d = json.loads(_why_as(slurm, "dave", admin_held, "--json", "--published", str(path)).stdout)
        assert (d["category"], d["hold"]["by"], d["hold"]["gate"]) == ("admin_hold", "admin", None)
        d = json.loads(_why_as(slurm, "bob", user_held, "--json", "--published", str(path)).stdout)
        assert (d["category"], d["hold"]["by"]) == ("user_hold", "user") and f"scontrol release {user_held}" in d["hold"]["how"]

        # as said: once flat's running jobs are back under its target, the next gate tick lifts the hold
        slurm.run("scancel", big)
        for _ in range(100):
            if big not in _states(slurm):
                break
            time.sleep(0.3)
        res = pipeline.gate_tick(slurm.source(), db, cfg, apply=True)
        assert held in [a.job_id for a in res.plan.releases]
        assert _states(slurm).get(held, ("", ""))[1] != "JobHeldAdmin"
    finally:
        slurm.cancel_all()


def test_why_a_tie_and_the_padding_job_ahead(slurm, tmp_path):
    """dave submits three 128-CPU jobs with the same priority while alice fills the node; the
    agent's padding job (fsdummy in fsadmin, PriorityTier 10, as actions.submit_dummy submits it)
    waits too. `why` says the tie, who wins it, and that the padding job goes first; then Slurm
    does exactly that: the padding job starts when alice's job is cancelled, and dave's jobs start
    in the order `why` gave once it is gone."""
    from fscontrol.act import actions as act

    slurm.cancel_all()
    try:
        blocker = slurm.submit("alice", "flat", 128, 300)
        _wait(slurm, blocker, "RUNNING")
        pad_argv = act.submit_dummy("fsdummy", "fsadmin", "fsadmin", "fspad", 3600, act.DUMMY_JOB_NAME, "test").argv
        pad_argv = tuple(a.replace("--chdir=/tmp", f"--chdir={slurm.dir / 'jobs'}") for a in pad_argv)
        padding = slurm.run(*pad_argv).strip().split(";")[0]
        jobs = [slurm.submit("dave", "flat", 128, 3) for _ in range(3)]
        prio = {ln.split("|")[0]: int(ln.split("|")[1]) for ln in slurm.run("squeue", "-h", "-t", "PD", "-o", "%i|%Q").split()}
        assert len({prio[j] for j in jobs}) == 1, prio  # one association, age weight 0: a real tie
        d = json.loads(_why(slurm, jobs[1]).stdout)
        o = d["order"]
        assert (o["tied"], o["tied_ahead"], o["tied_behind"], o["tied_ahead_ids"]) == (2, 1, 1, [jobs[0]])
        assert o["higher_priority"] == 0 and o["place"] == 2 and o["higher_tier_ahead"] == 1
        assert "submit time" in o["tie_rule"] and "PriorityTier" in o["tie_rule"]
        pad = d["higher_tier"]["padding"]
        assert (pad["job_id"], pad["state"], pad["partition"], pad["reservation"]) == (padding, "PENDING", "fsadmin", None)
        assert "padding_reservation" in pad["advice"]
        text = _why(slurm, jobs[1], "--").stdout
        assert "a tie, which Slurm breaks by submit time, then job id: 1 of them go first" in text
        assert f"the agent's padding job {padding}" in text
        # Slurm: the padding job takes the first core that frees, ahead of dave's jobs
        slurm.run("scancel", blocker)
        _wait(slurm, padding, "RUNNING", timeout=90)
        assert all(_states(slurm)[j][0] == "PENDING" for j in jobs)
        d = json.loads(_why(slurm, jobs[0]).stdout)
        assert d["higher_tier"]["padding"]["state"] == "RUNNING" and "outside any reservation" in d["higher_tier"]["padding"]["advice"]
        slurm.run("scancel", padding)
        started: list[str] = []
        end = time.time() + 120
        while len(started) < 3 and time.time() < end:
            st = _states(slurm)
            started += [j for j in jobs if j not in started and (j not in st or st[j][0] == "RUNNING")]
            time.sleep(0.2)
        assert started == jobs  # the tie broken as `why` said: earlier submit, then lower job id
    finally:
        slurm.cancel_all()


def test_why_other_reasons_in_plain_words(slurm):
    slurm.cancel_all()
    try:
        blocker = slurm.submit("bob", "flat", 1, 600)  # outlives the wait below (cancelled at the end)
        dep = slurm.submit("bob", "flat", 1, 10, dependency=f"afterok:{blocker}")
        begin = slurm.submit("bob", "flat", 1, 10, begin="now+1hour")
        parked = slurm.probe("bob", "flat")
        slurm.run("sacctmgr", "-i", "modify", "user", "where", "name=carol", "account=chem", "set", "GrpTRES=cpu=1")
        limited = slurm.submit("carol", "chem", 2, 10)
        # the tester's carol/flat with MaxJobs=0 and no job of hers there: it never starts
        slurm.run("sacctmgr", "-i", "modify", "user", "where", "name=carol", "account=flat", "set", "MaxJobs=0")
        zero = slurm.submit("carol", "flat", 1, 10)
        # issue #28: a QOS's per-user cap, and the limits' values (scontrol show assoc_mgr), not only their names
        slurm.run("sacctmgr", "-i", "modify", "qos", "normal", "set", "MaxTRESPerUser=cpu=2")
        capped = slurm.submit("dave", "flat", 4, 10)
        want = {dep: ("Dependency", "dependency", "depends on"), begin: ("BeginTime", "begin_time", "--begin"),
                parked: ("PartitionDown", "partition", "DOWN"), limited: ("AssocGrpCpuLimit", "limit", "CPUs in use"),
                zero: ("AssocMaxJobsLimit", "never", "the limit is 0"),
                capped: ("QOSMaxCpuPerUserLimit", "never", "for one user")}
        values = {limited: [{"on": "carol in account chem", "field": "GrpTRES cpu", "limit": "1", "in_use": "0"}],
                  zero: [{"on": "carol in account flat", "field": "MaxJobs", "limit": "0", "in_use": "0"}],
                  capped: [{"on": "QOS normal, for dave", "field": "MaxTRESPU cpu", "limit": "2", "in_use": "0"}]}
        end = time.time() + 90
        while time.time() < end and any(_states(slurm).get(j, ("", ""))[1] != r for j, (r, _, _) in want.items()):
            time.sleep(1)
        for job, (reason, category, words) in want.items():
            p = _why(slurm, job)
            assert p.returncode == 0, p.stderr
            d = json.loads(p.stdout)
            assert (d["reason"], d["category"]) == (reason, category), d
            assert words in d["reason_text"]
            assert d.get("limit_values") == values.get(job), d  # a limit's value where the job waits on one
        # as its owner, a plain user: the same value, in the text
        _user_tree(slurm)
        for job, user, line in ((limited, "carol", "the limit: GrpTRES cpu=1 on carol in account chem (in use: 0)"),
                                (capped, "dave", "the limit: MaxTRESPU cpu=2 on QOS normal, for dave (in use: 0)")):
            p = _why_as(slurm, user, job)
            assert p.returncode == 0 and line in p.stdout, p.stdout + p.stderr
    finally:
        slurm.run("sacctmgr", "-i", "modify", "qos", "normal", "set", "MaxTRESPerUser=cpu=-1", check=False)
        slurm.run("sacctmgr", "-i", "modify", "user", "where", "name=carol", "account=chem", "set", "GrpTRES=cpu=-1", check=False)
        slurm.run("sacctmgr", "-i", "modify", "user", "where", "name=carol", "account=flat", "set", "MaxJobs=-1", check=False)
        slurm.cancel_all()


def test_why_with_the_admin_s_padding_reservation(slurm):
    """The padding job in the core the admin keeps for it (docs/control.md): `why` reads its
    reservation from squeue and says it takes nothing the waiting job could get."""
    from fscontrol.act import actions as act

    slurm.cancel_all()
    slurm.run("scontrol", "delete", "reservation=fspad_why", check=False)
    argv = ("scontrol", "create", "reservation", "ReservationName=fspad_why", "Users=fsdummy", "CoreCnt=1",
            "Nodes=tbnode1", "PartitionName=fsadmin", "StartTime=now", "Duration=UNLIMITED")
    deadline = time.time() + 90
    while True:  # the jobs just cancelled may still be completing ("Requested nodes are busy")
        try:
            slurm.run(*argv)
            break
        except RuntimeError as e:
            if "busy" not in str(e) or time.time() > deadline:
                raise
        time.sleep(1)
    try:
        padding = slurm.run(*act.submit_dummy("fsdummy", "fsadmin", "fsadmin", "fspad", 3600, act.DUMMY_JOB_NAME, "test",
                                              reservation="fspad_why").argv).strip().split(";")[0]
        _wait(slurm, padding, "RUNNING")
        waiting = slurm.submit("dave", "flat", 128, 3)  # 127 cores are left outside the reservation
        time.sleep(1)
        assert _states(slurm)[waiting][0] == "PENDING"
        pad = json.loads(_why(slurm, waiting).stdout)["higher_tier"]["padding"]
        assert (pad["job_id"], pad["state"], pad["reservation"]) == (padding, "RUNNING", "fspad_why")
        assert "takes nothing this job could get" in pad["advice"]
    finally:
        slurm.cancel_all()
        slurm.run("scontrol", "delete", "reservation=fspad_why", check=False)


def test_why_a_job_waiting_for_gpus(slurm):
    """Issue #33 item 5: `why` under GPUs. alice's job holds all 4 of the node's GPUs on 2 of its 128
    CPUs; bob's 2-GPU job waits for Resources with CPUs free. Asked as bob, `why` names the GPUs it
    waits for, and its start estimate is alice's job's end (the CPUs alone would say "now")."""
    slurm.cancel_all()
    try:
        assert "gres/gpu=4" in slurm.scontrol("show", "node"), "the testbed's node has no GPUs"
        hog = slurm.submit("alice", "physics", 2, 240, gres="gpu:4")
        _wait(slurm, hog, "RUNNING")
        waiting = slurm.submit("bob", "physics", 2, 60, gres="gpu:2")
        end = time.time() + 60
        while time.time() < end and _states(slurm).get(waiting, ("", ""))[1] != "Resources":
            time.sleep(0.5)
        assert _states(slurm)[waiting] == ("PENDING", "Resources")
        p = _why(slurm, waiting)
        assert p.returncode == 0, p.stderr
        d = json.loads(p.stdout)
        assert d["category"] == "resources" and "GPUs it asks for" in d["reason_text"] and "gpu:2" in d["reason_text"], d
        # alice's job: started + its limit (240 s + 2 min -> 6 min: testbed.submit); no history -> to its limit
        from fscontrol.slurm.parse import parse_time

        started = parse_time(slurm.run("squeue", "-h", "-j", hog, "-O", "StartTime:0").strip())
        est = d["start_estimate"]
        assert est and est.get("start") is not None, est
        # with limits as run times (the range's end) bob's job starts when alice's reaches its limit;
        # the estimate itself runs her job for her typical fraction of it (her sacct history): later than now
        assert abs(est["late"] - (started + 6 * 60)) <= 60, (est, started)
        assert est["start"] >= d["now"] + 30 and est["early"] <= est["start"] <= est["late"], est
        _user_tree(slurm)
        p = _why_as(slurm, "bob", waiting)
        assert p.returncode == 0 and "GPUs it asks for" in p.stdout and "estimated start: now" not in p.stdout, p.stdout + p.stderr
    finally:
        slurm.cancel_all()


def test_why_an_array_task_and_a_heterogeneous_component(slurm):
    """`why 123_4` and `why 123+1`, as --help says: squeue -O lists them under their own job ids, so
    why finds them through `squeue -j` (an outside tester: both said "PENDING ...: it is not
    waiting"); a component that does not exist is "not in the queue"."""
    slurm.cancel_all()
    try:
        blocker = slurm.submit("alice", "flat", 128, 120)
        _wait(slurm, blocker, "RUNNING")
        array = slurm.submit("bob", "flat", 2, 30, array="0-2")
        het = slurm.run("sbatch", "--parsable", f"--chdir={slurm.dir / 'jobs'}", "-o", "/dev/null", "-A", "flat",
                        "-p", "normal", "-t", "3", "-n", "1", ":", "-n", "2", "--wrap", "sleep 30", user="bob").strip().split(";")[0]
        time.sleep(2)
        for asked in (f"{array}_1", f"{het}+1", f"{het}+0"):
            p = _why(slurm, asked)
            assert p.returncode == 0, (asked, p.stderr)
            d = json.loads(p.stdout)
            assert d["job_id"] == asked and d["user"] == "bob" and d["state"] in ("PENDING", "PD"), d
        g = _why(slurm, f"{het}+7", "--")
        assert g.returncode == 6 and "not in the queue" in g.stderr, g.stderr
    finally:
        slurm.cancel_all()
