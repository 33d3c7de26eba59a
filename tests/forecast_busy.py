"""The forecast on a shared, busy account (issue #28 item 3), on the real testbed: one run.

Hybrid control holds the halving at u* (as in production). dave@flat runs a large job while the
agent settles, then stops; his account-mates (alice, bob and carol @flat) and the science tree
(alice and bob @physics) keep SUBMITTING NEW jobs at random (a seeded Poisson stream of 1-4 CPU
jobs of 1-3 minutes). carol@chem never runs: her EffectvUsage is the science tree's. Right after
a decay pass p0 the agent's history is published, and dave and carol forecast as themselves
(`fscontrol forecast`, their own sshare and squeue); then sprio is read after each of the next
`watch` passes.

Returns the figures; tests/test_integration_forecast_busy.py asserts them, and
bench/forecast_busy.py prints them for other seeds (docs/forecast-running.md).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
import time
from pathlib import Path

from test_integration_forecast import _forecast_as, _public_dir, _sprio_f, _wait_for_pass_after

from fscontrol.agent import config, pipeline, publishing
from fscontrol.store import history as store

U_STAR_CH = 1.0  # u*: the controller holds it with d near 4 under this load (at 0.25 it sits at d = 1)
PASS_S = 60.0
MATES = [("alice", "flat"), ("bob", "flat"), ("carol", "flat"), ("alice", "physics"), ("bob", "physics")]


def arrivals(slurm, rng: random.Random, stop: threading.Event, mean_gap_s: float, log: list) -> None:
    """New jobs at random: exponential gaps, a random account-mate, 1-4 CPUs, 60-180 s."""
    while not stop.is_set():
        user, account = rng.choice(MATES)
        cpus, secs = rng.randint(1, 4), rng.randint(60, 180)
        try:
            log.append((time.time(), user, account, cpus, secs, slurm.submit(user, account, cpus, secs)))
        except Exception as e:  # noqa: BLE001 - a busy slurmctld: the stream goes on
            log.append((time.time(), user, account, cpus, secs, repr(e)))
        stop.wait(rng.expovariate(1.0 / mean_gap_s))


def run(slurm, tmp_path, *, seed: int, settle_s: float = 240.0, watch: int = 10, mean_gap_s: float = 6.0) -> dict:
    slurm.cancel_all()
    slurm.reset_usage()
    slurm.scontrol("reconfigure")
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
    probes = {("dave", "flat"): slurm.probe("dave", "flat"), ("carol", "chem"): slurm.probe("carol", "chem")}
    heavy = slurm.submit("dave", "flat", 24, int(settle_s + 300))
    # agent.apply: the controller below acts (apply=True), and the published file must say so (its
    # `control.applying`), or the forecast rightly refuses to take the halving as held
    cfg = config.from_dict({"agent": {"apply": True}, "clusters": {"tbcluster": {
        "target_core_hours": U_STAR_CH, "method": "hybrid", "padding_mode": "steady"}}})
    stop = threading.Event()
    errors: list[BaseException] = []
    jobs: list = []
    rng = random.Random(seed)

    def controller() -> None:  # the agent holding H = u*, as in production; its history is what is published
        db = store.open_db(tmp_path / "agent.db")
        while not stop.is_set():
            t = time.time()
            try:
                pipeline.control_tick(slurm.source(), db, cfg, apply=True)
            except Exception as e:  # noqa: BLE001 - the agent's loop logs a failed tick and goes on; reported
                errors.append(e)
            stop.wait(max(0.0, 15.0 - (time.time() - t)))

    threads = [threading.Thread(target=controller, daemon=True),
               threading.Thread(target=arrivals, args=(slurm, rng, stop, mean_gap_s, jobs), daemon=True)]
    t_start = time.time()
    for th in threads:
        th.start()
    out: dict = {"seed": seed, "settle_s": settle_s, "watch_passes": watch}
    try:
        while time.time() < t_start + settle_s - 45:
            time.sleep(1)
        slurm.run("scancel", heavy)  # dave stops; his account-mates go on submitting
        p0 = _wait_for_pass_after(slurm, t_start + settle_s)
        db = store.open_db(tmp_path / "agent.db")
        pipeline.collect(slurm.source(), db)
        published, data = publishing.publish_latest(db, cfg, "tbcluster", out=_public_dir(slurm) / "tbcluster.json")
        out["inflow_published"] = {k: data["inflow"][k] for k in ("snapshots", "span_s", "cluster")}
        out["forecast_time"] = time.time()
        out["probe_jobs"] = {f"{u}@{a}": j for (u, a), j in probes.items()}
        keep = os.environ.get("FSCONTROL_BUSY_KEEP")  # what the forecast read, to replay it (diagnosis)
        if keep:
            kd = Path(keep) / f"seed{seed}"
            shutil.rmtree(kd, ignore_errors=True)
            shutil.copytree(published.parent, kd / "public")
            from fscontrol.slurm import source as slurm_source
            slurm_source.capture(slurm.source(), kd / "sample", window_s=1800.0)
        made: dict = {}
        for (user, account) in probes:
            r = _forecast_as(slurm, user, published, "--account", account, "--plan", f"idle:{watch}m", "--json")
            assert r.returncode == 0, r.stderr
            a = json.loads(r.stdout)["associations"][0]
            f_now = a["fairshare"]
            settles = a["recovery"]["settles_at_fairshare"]
            traj = {round(p["days"] * 86400 / PASS_S): p["fairshare"] for p in a["trajectory"]}
            # a target the projection says comes within the watch, and one it says never comes
            f6 = traj.get(6) if traj.get(6) is not None else a["after_plan"]["fairshare"]
            reach = round(f_now + 0.7 * (f6 - f_now), 4) if f6 > f_now + 0.01 else None
            never = round(min(0.98, settles + 0.5 * (1 - settles)), 4)
            figures = {"f_now": f_now, "settles_at": settles, "assumed": a["assumed"], "forecast": {},
                       "text": json.loads(r.stdout)}
            for m in (5, watch):
                r = _forecast_as(slurm, user, published, "--account", account, "--plan", f"idle:{m}m", "--json")
                figures["forecast"][m] = json.loads(r.stdout)["associations"][0]["after_plan"]["fairshare"]
            for name, target in (("reach", reach), ("never", never)):
                if target is None:
                    continue
                r = _forecast_as(slurm, user, published, "--account", account, "--target", f"{target}", "--json")
                assert r.returncode == 0, r.stderr
                b = json.loads(r.stdout)["associations"][0]
                d = b["idle_days_to_target"]
                figures[name] = {"target": target, "predicted_s": None if d is None else d * 86400,
                                 "text": b["idle_to_target_text"]}
            r = _forecast_as(slurm, user, published, "--account", account, "--target", f"{never}")
            figures["never_text_out"] = r.stdout
            made[(user, account)] = figures
        f_sprio_now = {k: _sprio_f(slurm, j) for k, j in probes.items()}
        seen: dict = {k: {} for k in probes}
        for j in range(1, watch + 1):
            _wait_for_pass_after(slurm, p0 + j * PASS_S - 20)
            time.sleep(2)
            for k, job in probes.items():
                seen[k][j] = _sprio_f(slurm, job)
    finally:
        stop.set()
        for th in threads:
            th.join(timeout=60)
        slurm.cancel_all()
        slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
        slurm.scontrol("reconfigure")
    out["failed_ticks"] = [repr(e) for e in errors]
    out["jobs_submitted"] = len(jobs)
    keep = os.environ.get("FSCONTROL_BUSY_KEEP")  # a folder to keep the agent's history in (diagnosis)
    if keep:
        import sqlite3

        # the history is in WAL mode: a file copy misses what is still in the -wal file (the last
        # minutes of the run); sqlite's backup reads it whole
        src, dst = sqlite3.connect(tmp_path / "agent.db"), sqlite3.connect(Path(keep) / f"agent-seed{seed}.db")
        with dst:
            src.backup(dst)
        src.close()
        dst.close()
        # every job of the run as it really ran (the replay's noise floor: bench/forecast_busy.py)
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t_start - 60))
        (Path(keep) / f"seed{seed}" / "sacct.txt").write_text(slurm.run(
            "env", "SLURM_TIME_FORMAT=%s", "sacct", "-a", "-X", "-n", "-P", "-S", since, "-E", "now",
            "-o", "JobID,User,Account,AllocCPUS,Start,End,State"))
    for k, figures in made.items():
        name = f"{k[0]}@{k[1]}"
        fig = dict(figures)
        fig["sprio_now"] = f_sprio_now[k]
        fig["sprio"] = seen[k]
        fig["error"] = {m: seen[k][m] / figures["forecast"][m] - 1 for m in figures["forecast"]}
        fig["persistence_error"] = {m: seen[k][m] / f_sprio_now[k] - 1 for m in figures["forecast"]}
        for what in ("reach", "never"):
            if what in figures:
                t = figures[what]["target"]
                hit = next((j for j in range(1, watch + 1) if seen[k][j] >= t), None)
                fig[what]["observed_s"] = None if hit is None else hit * PASS_S
        out[name] = fig
    return out
