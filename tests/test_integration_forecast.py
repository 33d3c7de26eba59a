"""`fscontrol forecast` against the real testbed (5-minute half-life, 1-minute decay passes).

1. The forecast a user makes now, then staying idle, against the F that sprio reports 5 and 10
   minutes later, while the agent (hybrid control, applied every 15 s) holds the halving usage
   at u*. The user is carol@chem, alone in her account and, with nobody in the science tree
   but her using the cluster, her EffectvUsage is all her own (the forecast's exact case).
   Timing: the forecast is made right after a decay pass p0; Slurm's F after pass p0 + k
   minutes is computed from the usage the pass before left, exactly as the F the forecast
   starts from, so "k minutes later" is "after k more passes".
   The same run is CI's test of the hybrid controller: every user's implied halving, measured
   from sprio as in tests/test_integration_control.py, stays within 1% of u* for the 2
   half-lives after it settles.
2. A normal Unix user on a cluster with PrivateData=usage forecasts their own fair-share and
   sees nobody else's; asking for another user's is refused.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_integration_control import PROBES, _measure

from fscontrol.agent import config
from fscontrol.slurm import parse
from fscontrol.agent import pipeline, publishing
from fscontrol.store import history as store

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parent.parent
U_STAR_CH = 0.25  # core-hours at S_ref; carol (5x S_ref) then halves every ~1.25 core-hours
SETTLE_S = 270.0  # the controller's settling time on this testbed (docs/control.md)
PASS_S = 60.0


def _user_python(slurm, user: str) -> str:
    """A Python >= 3.11 the user can run: the venv's may live under /root (pyenv)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        p = subprocess.run(["runuser", "-u", user, "--", exe, "-c", "import sys; sys.exit(sys.version_info < (3, 11))"],
                           capture_output=True, timeout=30, check=False)
        if p.returncode == 0:
            return exe
    pytest.fail(f"no Python >= 3.11 that {user} may run (install Debian's python3: scripts/install-slurm.sh)")


def _user_package(slurm) -> Path:
    """fscontrol's package where the testbed's users can read it (the checkout may be under /root),
    with what the forecast path imports beyond the standard library: typer (the command line) and
    the two packages `import typer` loads (annotated_doc, shellingham), copied from this venv."""
    import importlib.util

    dest = slurm.dir / "userpkg"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(ROOT / "fscontrol", dest / "fscontrol", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("typer", "annotated_doc", "shellingham"):
        spec = importlib.util.find_spec(name)
        src = Path(spec.origin).parent if spec.submodule_search_locations else Path(spec.origin)
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / src.name)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def _forecast_as(slurm, user: str, published: Path, *args: str) -> subprocess.CompletedProcess:
    py, pkg = _user_python(slurm, user), _user_package(slurm)
    # PATH as the testbed's clients need it (a 24.11 testbed's clients are wrappers in DIR/bin)
    argv = ["runuser", "-u", user, "--", "env", f"PYTHONPATH={pkg}", f"SLURM_CONF={slurm.conf}", f"PATH={slurm.env['PATH']}",
            py, "-m", "fscontrol", "forecast", "--published", str(published), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def _public_dir(slurm) -> Path:
    d = slurm.dir / "public"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(mode=0o755)
    d.chmod(0o755)
    return d


def _sprio_f(slurm, job_id: str) -> float:
    rows = parse.parse_sprio(slurm.run(*parse.SPRIO_ARGS))
    return next(r.fairshare_norm for r in rows if r.job_id == job_id)


def _wait_for_pass_after(slurm, t: float) -> float:
    """The first decay pass after time t (seen as root's RawUsage moving); returns when seen."""
    while time.time() < t:
        time.sleep(1)
    slurm.wait_for_pass()
    return time.time()


# carol@chem's campaign, then idle; a burst and a steady load in the flat account only
WORKLOAD = [("carol", "chem", 64, 120), ("alice", "flat", 64, 60), ("bob", "flat", 8, 1800), ("dave", "flat", 2, 1800),
            ("carol", "flat", 2, 1800), ("alice", "flat", 4, 1800)]


def test_forecast_matches_sprio_5_and_10_minutes_later_under_hybrid_control(slurm, tmp_path):
    slurm.cancel_all()
    slurm.reset_usage()
    slurm.scontrol("reconfigure")
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
    for user, account, cpus, secs in WORKLOAD:
        slurm.submit(user, account, cpus, secs)
    probes = {(u, a): slurm.probe(u, a) for u, a in PROBES}
    cfg = config.from_dict({"clusters": {"tbcluster": {
        "target_core_hours": U_STAR_CH, "method": "hybrid", "padding_mode": "steady"}}})
    stop = threading.Event()
    errors: list[BaseException] = []
    ticks: list = []

    def controller() -> None:  # the agent holding H = u*, as in production
        db = store.open_db(tmp_path / "agent.db")
        while not stop.is_set():
            t = time.time()
            try:
                ticks.append((t - t_start, pipeline.control_tick(slurm.source(), db, cfg, apply=True)))
            except BaseException as e:  # noqa: BLE001 - reported by the test
                errors.append(e)
                return
            stop.wait(max(0.0, 15.0 - (time.time() - t)))

    thread = threading.Thread(target=controller, daemon=True)
    t_start = time.time()
    thread.start()
    try:
        p0 = _wait_for_pass_after(slurm, t_start + SETTLE_S)
        db = store.open_db(tmp_path / "publish.db")
        pipeline.collect(slurm.source(), db)
        published, _ = publishing.publish_latest(db, cfg, "tbcluster", out=_public_dir(slurm) / "tbcluster.json")
        made, shared = {}, {}
        for minutes in (5, 10):
            r = _forecast_as(slurm, "carol", published, "--account", "chem", "--plan", f"idle:{minutes}m", "--json")
            assert r.returncode == 0, r.stderr
            made[minutes] = json.loads(r.stdout)["associations"][0]
            # dave@flat shares his account with bob, carol and alice, whose jobs keep running
            r = _forecast_as(slurm, "dave", published, "--account", "flat", "--plan", f"idle:{minutes}m", "--json")
            assert r.returncode == 0, r.stderr
            shared[minutes] = json.loads(r.stdout)["associations"][0]
        f_now = made[5]["fairshare"]
        f_sprio_now = _sprio_f(slurm, probes[("carol", "chem")])
        seen, seen_dave = {}, {}
        for minutes in (5, 10):
            _wait_for_pass_after(slurm, p0 + minutes * PASS_S - 20)
            seen[minutes] = _sprio_f(slurm, probes[("carol", "chem")])
            seen_dave[minutes] = _sprio_f(slurm, probes[("dave", "flat")])
        time.sleep(20)  # the controller's snapshot of that last pass
    finally:
        stop.set()
        thread.join(timeout=60)
        slurm.cancel_all()
        slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
        slurm.scontrol("reconfigure")
    assert not errors, errors
    print(f"\ncarol@chem: F now {f_now:.4f} (sprio {f_sprio_now:.4f})")
    assert abs(f_sprio_now - f_now) <= 0.01 * f_now  # the forecast starts where sprio is
    assert 0.1 < f_now < 0.7, f"carol's F = {f_now}: the test needs a fair-share well below 1"
    for minutes in (5, 10):
        want = made[minutes]["after_plan"]["fairshare"]
        print(f"forecast after {minutes} min idle {want:.4f}, sprio then {seen[minutes]:.4f} ({seen[minutes] / want - 1:+.3%})")
        assert abs(seen[minutes] - want) <= 0.01 * want
    assert seen[10] > seen[5] > f_now  # she recovered, as forecast
    print(f"dave@flat: F now {shared[5]['fairshare']:.4f}; {shared[5].get('assumed')}")
    for minutes in (5, 10):
        want, naive = shared[minutes]["after_plan"]["fairshare"], shared[minutes]["after_plan"]["fairshare_if_everyone_stopped"]
        print(f"  after {minutes} min: forecast {want:.4f} (if everyone stopped: {naive:.4f}), sprio then {seen_dave[minutes]:.4f} "
              f"({seen_dave[minutes] / want - 1:+.3%}; everyone-stopped model {seen_dave[minutes] / naive - 1:+.3%})")
        # the issue asks 2% (aim 1%). Measured 2026-11-23: +0.000% at +5 and +10 min, once the
        # forecast reads a pass as slurmctld does, job by job (before: -2.09%, -3.12%;
        # docs/forecast-running.md); the everyone-stopped model: -58%, -73%
        assert abs(seen_dave[minutes] - want) <= 0.01 * want
        assert abs(seen_dave[minutes] - want) < abs(seen_dave[minutes] - naive)  # far closer than "everyone stopped"

    # the hybrid controller held every user's halving at u* meanwhile
    db = store.open_db(tmp_path / "agent.db")
    settled = [store.load_snapshot(db, r.snapshot_id) for t, r in ticks if t >= SETTLE_S]
    control_errors = _measure(settled, ticks[-1][1].decision.s_ref, U_STAR_CH * 3600)
    failed = [a for _, r in ticks for a in r.actions if a.status != "ok"]
    worst = max(abs(e) for e in control_errors)
    print(f"hybrid: {len(control_errors)} measurements over {ticks[-1][0] - SETTLE_S:.0f} s, worst |H/u* - 1| = {worst:.3%}")
    assert not failed, failed
    assert len(control_errors) >= 40 and worst <= 0.01


def test_private_data_user_forecasts_own_fairshare_only(slurm, tmp_path):
    """As carol, a normal Unix user, while root's agent keeps its history: she cannot read the
    history; under each PrivateData flag that hides people (usage, users, accounts, all) the
    published file names nobody and her forecast shows no name but her own (or fails in one
    line where Slurm itself hides her own numbers from her)."""
    conf = slurm.conf
    original = conf.read_text()
    slurm.cancel_all()
    slurm.submit("carol", "chem", 16, 60)
    slurm.submit("alice", "flat", 16, 60)
    slurm.wait_for_pass()
    state = slurm.dir / "state"  # as /var/lib/fscontrol: a folder users may traverse (public files beside it)
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    others = ("alice", "bob", "dave")
    try:
        for flag in ("usage", "users", "accounts", "all"):
            conf.write_text(original + f"PrivateData={flag}\n")
            slurm.scontrol("reconfigure")
            db = store.open_db(state / "history.db")
            pipeline.collect(slurm.source(), db)
            cfg = config.from_dict({"agent": {"admins": ["alice"]}, "clusters": {"tbcluster": {"target_core_hours": 10}}})
            published, data = publishing.publish_latest(db, cfg, "tbcluster", out=_public_dir(slurm) / "tbcluster.json")
            assert data["per_association"] is False
            text = Path(published).read_text()
            assert not any(name in text for name in (*others, "carol"))
            peek = subprocess.run(["runuser", "-u", "carol", "--", "cat", str(state / "history.db")], capture_output=True,
                                  timeout=30, check=False)
            assert peek.returncode != 0 and b"Permission denied" in peek.stderr
            own = _forecast_as(slurm, "carol", published, "--json")
            print(f"\nPrivateData={flag}: carol's forecast exit {own.returncode} {own.stderr.strip()}")
            assert not any(name in own.stdout + own.stderr for name in others)
            if own.returncode == 0:
                got = json.loads(own.stdout)
                assert got["user"] == "carol" and {a["account"] for a in got["associations"]} <= {"flat", "chem"}
            else:
                assert len(own.stderr.strip().splitlines()) == 1 and "Traceback" not in own.stderr
            if flag == "usage":  # Slurm itself hides other users' usage from carol; her own forecast works
                assert "alice" not in slurm.run("sshare", "-a", "-l", "-P", user="carol")
                assert own.returncode == 0
                other = _forecast_as(slurm, "carol", published, "--user", "alice")
                print(f"carol asking for alice: exit {other.returncode}: {other.stderr.strip()}")
                assert other.returncode == 7 and other.stdout == ""
                assert other.stderr == ("fscontrol: error: refused: you (carol) may only ask for your own forecast; "
                                        "--user alice needs root or an fscontrol admin\n")
                # root may ask for anyone
                r = subprocess.run([sys.executable, "-m", "fscontrol", "forecast", "--published", str(published), "--user",
                                    "alice", "--json"], env=slurm.env, capture_output=True, text=True, timeout=120, check=False)
                assert r.returncode == 0, r.stderr
                assert json.loads(r.stdout)["user"] == "alice"
            db.close()
    finally:
        conf.write_text(original)
        slurm.scontrol("reconfigure")
        slurm.cancel_all()
