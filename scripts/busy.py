#!/usr/bin/env python3
"""The busy cluster (issue: shared accounts, constant load with bursts, reconfigure, restart):
hybrid control on the project's real testbed, every halving figure from sprio and sshare alone.
Opt-in experiment, not in CI; its last figures are in docs/control.md.

    sudo .venv/bin/python scripts/busy.py [--minutes 25] [--warmup 15] [--u-star 24] [--persist] [--out busy.json]
        [--method hybrid|damping] [--seed 12]

Issue 30's figures (docs/control.md): each pass's error in d's steps (|H/u* - 1| x d_ideal; d's
rounding alone leaves 0.25 on average), d's rounding alone on the real usage the pass read, and
the agent's record of the halving Slurm used (`decisions.h_slurm`) against the sampler's.
The same --seed gives the same jobs at the same times, so hybrid and damping compare pass by pass.

Seven associations of six users in three accounts (flat shared by four users, physics by two,
chem alone); random jobs all through the run (1-8 CPUs, 60-300 s, about 40 CPUs busy); two
bursts that fill the machine (four 32-CPU jobs of 90 s) at 8 and 16 minutes; `scontrol
reconfigure` at 11 minutes; a slurmctld restart at 19 minutes (after --warmup minutes of the same
load). The agent is the real loop (`agent.run_loop`, as `fscontrol run` starts it): control just
before each decay pass (agent.pass_lead), a full tick every minute, and without --persist the
reconfigure watch every 5 s. u* = 24 core-hours puts the ideal d near 100 on the steady load and
above 40 in a burst (S_ref = 0.05).

Measured outside fscontrol: a sampler runs `sshare -a -l -P` and `sprio` every second. A decay
pass shows as users' EffectvUsage moving between two samples; for every user with a pending
probe job, H = EffectvUsage x U_pre / -log2 F_sprio x S_ref / S_user, with U_pre root's RawUsage in
the sample just before the pass and F from sprio two samples after it. Beside it, from the
agent's history, what the agent read before that pass (root's RawUsage, the d it chose): the
usage charged between its read and the pass (jobs that ended in those seconds charge their
last stretch then) is the part of the error no agent can see before the pass.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from testbed import ensure_testbed  # noqa: E402

from fscontrol.agent import loop as agent  # noqa: E402
from fscontrol.agent import config  # noqa: E402
from fscontrol.slurm import parse  # noqa: E402
from fscontrol.store import history as store  # noqa: E402

DUMMY = ("fsadmin", "fsdummy")  # the agent's dummy association (the config's default)
ASSOCS = [("alice", "flat"), ("bob", "flat"), ("carol", "flat"), ("dave", "flat"), ("alice", "physics"), ("bob", "physics"),
          ("carol", "chem")]


def sampler(tb, probes: dict[str, tuple[str, str]], stop: threading.Event, out: list) -> None:
    """Every second: (time, {assoc: (EffectvUsage, NormShares)}, root RawUsage, {assoc: F}, the dummy's RawUsage,
    {top-level account: (RawUsage, EffectvUsage)})."""
    while not stop.is_set():
        t = time.time()
        try:
            rows = parse.parse_sshare(tb.run(*parse.SSHARE_ARGS, timeout=10))
            prio = parse.parse_sprio(tb.run(*parse.SPRIO_ARGS, timeout=10))
        except Exception:  # noqa: BLE001 - slurmctld restarting
            stop.wait(1)
            continue
        root = next(r.raw_usage for r in rows if r.depth == 0)
        ue = {r.key: (r.effective_usage, r.norm_shares) for r in rows if r.user}
        f = {probes[p.job_id][::-1]: p.fairshare_norm for p in prio if p.job_id in probes}  # (account, user)
        dummy = next((r.raw_usage for r in rows if r.key == DUMMY), 0.0)
        top = {r.account: (r.raw_usage, r.effective_usage) for r in rows
               if r.depth == 1 and not r.user and not r.shares_parent}
        out.append((t, ue, root, f, dummy, top))
        stop.wait(max(0.0, 1.0 - (time.time() - t)))


def passes(samples: list, s_ref: float, u_star: float, f_pass: float | None = None) -> list[dict]:
    """`f_pass`: one pass's decay (f^period), for padding_mode = "trim": the padding the trim
    charged after the sampler's last read before the pass (its cancel lands in the last second)
    is the dummy's RawUsage after the pass undone by that decay, less its RawUsage before (no
    padding job runs at a pass then: the next starts after it, at UsageFactor 0)."""
    out = []
    for i in range(1, len(samples) - 2):
        ue0, ue1 = samples[i - 1][1], samples[i][1]
        if {k: v[0] for k, v in ue0.items()} == {k: v[0] for k, v in ue1.items()}:
            continue
        if {k: v[0] for k, v in samples[i + 2][1].items()} != {k: v[0] for k, v in ue1.items()}:
            continue  # another pass already: not a clean read
        u_pre = samples[i - 1][2]
        w_pre = samples[i - 1][4] if len(samples[i - 1]) > 4 else 0.0
        pad_late = 0.0
        if f_pass and len(samples[i]) > 4:
            late = samples[i][4] / f_pass - w_pre
            pad_late = late if late > 2.0 else 0.0  # (sshare's RawUsage is whole: below 2, rounding)
        u_pre += pad_late
        # a job that ended after the sampler's read, in the last second before the pass, is in what
        # the pass read too: a pass sets a top-level account's EffectvUsage to its RawUsage over
        # root's as they stand when it starts, so an account no such job touched gives root's
        # usage then exactly (its RawUsage before over its EffectvUsage after), one it touched less
        if len(samples[i]) > 5:
            ratios = [raw / samples[i][5][a][1] for a, (raw, _) in samples[i - 1][5].items()
                      if a in samples[i][5] and (samples[i][5][a][1] or 0) >= 0.01]
            u_pre = max([u_pre, *ratios])
        f_after = samples[i + 2][3]
        errs, ds = [], []
        for key, (eu, s_user) in ue1.items():
            f = f_after.get(key)
            if f is None or not 0 < f < 1 or not eu or not s_user:
                continue
            errs.append(eu * u_pre / -math.log2(f) * (s_ref / s_user) / u_star - 1)
            ds.append(eu / (s_user * -math.log2(f)))
        if errs:
            out.append({"t": samples[i][0], "t_before": samples[i - 1][0], "worst": max(errs, key=abs),
                        "mean": sum(errs) / len(errs),
                        "spread": max(errs) - min(errs), "d": round(sum(ds) / len(ds)), "u_pre": u_pre,
                        "w_read": w_pre + pad_late, "pad_late": pad_late})
    return out


def padding_before(db, t: float) -> float:
    """The dummy's RawUsage at the agent's last decision before `t` (0 without one)."""
    row = db.execute("SELECT w_now FROM decisions WHERE decided_at < ? ORDER BY decided_at DESC LIMIT 1", [t]).fetchone()
    return float(row[0] or 0.0) if row else 0.0


def recount(path: Path, db_file: Path, u_star: float) -> dict:
    """`--recount OUT.json --db DB`: the padding columns for a run written before they existed
    (2026-11-26 15:18): each pass's time from t0 (the run's database is named for it, within a
    second) and its minute, U_pre from its ideal d (u* / (S_ref U_pre), two decimals: 0.02% at
    d 50), the padding from the agent's decision before it."""
    rep = json.loads(path.read_text())
    db = store.open_db(db_file, readonly=True)
    t0 = rep.get("t0") or float(db_file.stem.split("-")[-1])
    s_ref = rep.get("s_ref") or next(r[0] for r in db.execute("SELECT s_ref FROM decisions WHERE s_ref IS NOT NULL "
                                                               "ORDER BY id DESC LIMIT 1"))
    rows = rep["all"]
    for r in rows:
        t = r.get("t") or t0 + r["min"] * 60
        u_pre = r.get("u_pre") or u_star * 3600 / (s_ref * r["d_ideal"])
        pad = padding_before(db, t)
        x_real = u_star * 3600 / (s_ref * max(1.0, u_pre - pad))
        r.update(padding=pad, rounding_alone=round(x_real) / x_real - 1, error_in_steps=abs(r["error"]) * r["d_ideal"])
    return rep


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=25.0)
    ap.add_argument("--u-star", type=float, default=24.0, help="core-hours")
    ap.add_argument("--persist", action="store_true", help="persist d in slurm.conf (else the 5 s watch)")
    ap.add_argument("--lead", default="3s", help="agent.pass_lead: control this long before each decay pass")
    ap.add_argument("--trim", default="0.5s", help="agent.pass_trim: d trimmed on root's usage this long before it")
    ap.add_argument("--warmup", type=float, default=0.0,
                    help="minutes of load (and control) before the events and the settled count start: real usage "
                         "ramps from zero over about three half-lives (15 min here)")
    ap.add_argument("--method", default="hybrid", choices=("hybrid", "damping"),
                    help="the control method (the same seed gives the same jobs at the same times)")
    ap.add_argument("--seed", type=int, default=12, help="the random load's seed")
    ap.add_argument("--padding-mode", default="steady", choices=("steady", "pulse", "trim"),
                    help="hybrid's padding_mode (trim: the padding lands in the pass's own read)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--recount", type=Path, help="a run's JSON: add the padding columns from --db, print it, stop")
    ap.add_argument("--db", type=Path, help="with --recount: that run's database (/tmp/fscontrol-busy/busy-*.db)")
    args = ap.parse_args()
    if args.recount:
        print(json.dumps(recount(args.recount, args.db, args.u_star), indent=2))
        return 0
    import signal

    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))  # run the finally below
    tb = ensure_testbed()
    tb.cancel_all()
    tb.reset_usage()
    tb.scontrol("reconfigure")
    tb.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
    original = tb.conf.read_text()
    probes = {tb.probe(*a): a for a in ASSOCS}
    cc = {"target_core_hours": args.u_star, "method": args.method, "padding_mode": args.padding_mode}
    conf0 = parse.parse_config(tb.source().config().stdout)
    f_pass = (1 - 0.693 / conf0.half_life_s) ** conf0.calc_period_s if args.padding_mode == "trim" else None
    if args.persist:
        cc.update(persist=True, slurm_conf=str(tb.conf))
    work = Path("/tmp/fscontrol-busy")
    work.mkdir(exist_ok=True)
    db_path = work / f"busy-{int(time.time())}.db"
    cfg = config.from_dict({
        "agent": {"apply": True, "pass_lead": args.lead, "pass_trim": args.trim, "db": str(db_path)},
        "schedule": {"collect": "60s", "control": "60s", "fit": "1h", "watch": "5s"},
        "clusters": {"tbcluster": cc},
    })
    stop = threading.Event()
    events: list[tuple[str, float]] = []
    samples: list = []
    rng = random.Random(args.seed)
    t0 = time.time()

    def load() -> None:
        while not stop.is_set():
            user, account = rng.choice(ASSOCS)
            try:
                tb.submit(user, account, rng.choice([1, 2, 4, 8]), rng.randint(60, 300))
            except Exception:  # noqa: BLE001 - slurmctld restarting
                pass
            stop.wait(rng.uniform(5, 15))

    counts: dict = {}
    threads = [
        threading.Thread(target=lambda: counts.update(agent.run_loop(cfg, lambda name: tb.source(), db_path, [None], apply=True,
                                                                     stop=stop)), daemon=True),
        threading.Thread(target=load, daemon=True),
        threading.Thread(target=sampler, args=(tb, probes, stop, samples), daemon=True),
    ]
    for t in threads:
        t.start()
    plan = [(args.warmup + m, what) for m, what in [(8, "burst"), (11, "reconfigure"), (16, "burst"), (19, "restart")]]
    try:
        for minute, what in plan:
            if minute >= args.warmup + args.minutes:
                break
            while time.time() - t0 < minute * 60:
                time.sleep(1)
            events.append((what, time.time()))
            if what == "burst":
                for user, account in [("alice", "flat"), ("bob", "physics"), ("carol", "chem"), ("dave", "flat")]:
                    tb.submit(user, account, 32, 90)
            elif what == "reconfigure":
                tb.scontrol("reconfigure")
            else:
                tb.stop_controller()
                tb.start_controller()
        while time.time() - t0 < (args.warmup + args.minutes) * 60:
            time.sleep(1)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=120)
        tb.cancel_all()
        tb.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
        tb.conf.write_text(original)
        tb.scontrol("reconfigure")
    db = store.open_db(db_path)
    decisions = list(db.query(
        "SELECT s.taken_at, s.id AS snapshot_id, d.d_target, d.s_ref, d.d_ideal FROM decisions d "
        "JOIN snapshots s ON s.id = d.snapshot_id ORDER BY s.taken_at"))
    s_ref = next(d["s_ref"] for d in reversed(decisions) if d["s_ref"])
    ps = passes(samples, s_ref, args.u_star * 3600, f_pass)
    print(f"{len(samples)} samples, {len(ps)} passes, {len(decisions)} decisions", file=sys.stderr)
    if os.environ.get("BUSY_DUMP"):
        Path(os.environ["BUSY_DUMP"]).write_text(json.dumps([(t, {"/".join(k): v for k, v in ue.items()}, r, {"/".join(k): x for k, x in f.items()}) for t, ue, r, f, *_ in samples]))
    for p in ps:  # what the agent read last before the pass, and the d it chose for it
        before = [d for d in decisions if d["taken_at"] < p["t_before"] + 1.0]
        if before:
            snap = store.load_snapshot(db, before[-1]["snapshot_id"])
            u_agent = next(r.raw_usage for r in snap.shares if r.depth == 0)
            p["read_s_before"] = round(p["t"] - snap.taken_at, 1)
            p["charged_after_read"] = p["u_pre"] / u_agent - 1 if u_agent else None
            p["error_on_read"] = s_ref * p["d"] * u_agent / (args.u_star * 3600) - 1
            p["d_ideal"] = before[-1]["d_ideal"]
    # the agent's record (issue 30 item 2): the halving Slurm used at each pass, as `decisions`,
    # `history` and `status` report it, against the sampler's (sprio and sshare alone)
    recorded = list(db.query("SELECT decided_at, pass_seen_at, h_slurm FROM decisions WHERE h_slurm IS NOT NULL ORDER BY id"))
    for p in ps:
        rec = next((r for r in recorded if r["decided_at"] < p["t"] <= r["pass_seen_at"]), None)
        if rec is not None:
            p["record"] = rec["h_slurm"] / (args.u_star * 3600) - 1
            p["record_vs_sprio"] = p["record"] - p["mean"]
        # the error in units of d's step (1/d): d's rounding alone leaves it uniform on [0, 0.5]
        # (mean 0.25, the "no correction at all"); and d's rounding alone on the real usage
        # this pass read (damping at its best, d chosen on that very read, no padding): the padding
        # is the dummy's RawUsage at the agent's read before the pass (it moves only at passes)
        x = args.u_star * 3600 / (s_ref * p["u_pre"])
        p["d_ideal_pre"] = x
        p["error_in_steps"] = abs(p["mean"]) * x
        p["padding"] = padding_before(db, p["t"])
        # the real usage the pass read: the sampler's dummy RawUsage where it has it (the trim's
        # padding of that very pass included), else the agent's decision before it
        w_read = p["w_read"] if args.padding_mode == "trim" else p["padding"]
        x_real = args.u_star * 3600 / (s_ref * max(1.0, p["u_pre"] - w_read))
        p["rounding_alone"] = round(x_real) / x_real - 1
    marks = [(w, t) for w, t in events if w in ("burst", "reconfigure", "restart")]

    def after(t: float) -> list[dict]:
        return [p for p in ps if p["t"] > t]

    def row(p: dict) -> dict:
        return {"min": round((p["t"] - t0) / 60, 2), "error": round(p["worst"], 5), "d": p["d"],
                "d_ideal": round(p["d_ideal_pre"], 2), "rounding_alone": round(p["rounding_alone"], 5),
                "t": p["t"], "u_pre": p["u_pre"], "padding": p["padding"], "error_mean": round(p["mean"], 6),
                "w_read": p.get("w_read"), "pad_late": p.get("pad_late"),
                "record": None if p.get("record") is None else round(p["record"], 5),
                "record_vs_sprio": None if p.get("record_vs_sprio") is None else round(p["record_vs_sprio"], 5),
                "charged_after_read": None if p.get("charged_after_read") is None else round(p["charged_after_read"], 5),
                "error_on_read": None if p.get("error_on_read") is None else round(p["error_on_read"], 5)}

    quiet = [p for p in ps if p["t"] - t0 >= (args.warmup + 5) * 60 and not any(0 < p["t"] - t < 4 * 60 + 5 for _, t in marks)]
    report = {
        "u_star_core_hours": args.u_star, "persist": args.persist, "lead": args.lead, "trim": args.trim, "passes": len(ps),
        "d_range": [min(p["d"] for p in ps), max(p["d"] for p in ps)] if ps else None,
        "d_ideal_min_after_warmup": min((p["d_ideal"] for p in ps if p.get("d_ideal") and p["t"] - t0 >= args.warmup * 60),
                                        default=None),
        "settled_worst": max((abs(p["worst"]) for p in quiet), default=None),
        "settled_mean": sum(p["worst"] for p in quiet) / len(quiet) if quiet else None,
        "settled_worst_on_read": max((abs(p["error_on_read"]) for p in quiet if p.get("error_on_read") is not None), default=None),
        "settled_passes": len(quiet),
        "settled": [row(p) for p in quiet],
        "all": [row(p) for p in ps],
        "events": [],
        "loop": counts,
        "trims": db.execute("SELECT count(*) FROM actions WHERE stage = 'trim' AND status = 'ok'").fetchone()[0],
        "spread_between_users_max": max((p["spread"] for p in ps), default=None),
        "method": args.method, "padding_mode": args.padding_mode, "seed": args.seed, "t0": t0, "s_ref": s_ref, "db": str(db_path),
    }
    measured = [p for p in ps if p["t"] - t0 >= args.warmup * 60]
    with_rec = [p for p in measured if p.get("record_vs_sprio") is not None]
    report.update({
        "measured_passes": len(measured),
        "within_1pct": sum(1 for p in measured if abs(p["mean"]) <= 0.01),
        "beyond_2pct": [row(p) for p in measured if abs(p["mean"]) > 0.02],
        "mean_abs_error": sum(abs(p["mean"]) for p in measured) / len(measured) if measured else None,
        "mean_abs_rounding_alone": sum(abs(p["rounding_alone"]) for p in measured) / len(measured) if measured else None,
        "mean_error_in_steps": sum(p["error_in_steps"] for p in measured) / len(measured) if measured else None,
        "passes_better_than_rounding_alone": sum(1 for p in measured if abs(p["mean"]) < abs(p["rounding_alone"])),
        "record_passes": len(with_rec), "record_passes_measured": len(measured),
        "record_vs_sprio_worst": max((abs(p["record_vs_sprio"]) for p in with_rec), default=None),
        "record_vs_sprio_over_0.2pt": [row(p) for p in with_rec if abs(p["record_vs_sprio"]) > 0.002],
    })
    for what, t in marks:
        report["events"].append({"what": what, "at_min": round((t - t0) / 60, 1), "passes": [row(p) for p in after(t)[:4]]})
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
