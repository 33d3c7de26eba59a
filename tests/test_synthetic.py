"""scripts/gen_synthetic.py: deterministic, parseable, round-trips through collect, and its
FairShare column agrees with fscontrol's own classic computation."""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
from pathlib import Path

import pytest

from fscontrol.model import fairshare
from fscontrol.slurm import parse
from fscontrol.agent import pipeline
from fscontrol.store import history as store
from fscontrol.slurm.source import RecordedSlurm

ROOT = Path(__file__).resolve().parent.parent


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_synthetic", ROOT / "scripts" / "gen_synthetic.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_synthetic", mod)
    spec.loader.exec_module(mod)
    return mod


gen = _load_generator()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "sample"
    sample = gen.generate(users=400, jobs=600, seed=7, out=str(out))
    gen.write_sample(sample, out)
    return sample, out


def test_same_seed_same_bytes_other_seed_differs():
    a = gen.generate(users=200, jobs=300, seed=3)
    b = gen.generate(users=200, jobs=300, seed=3)
    c = gen.generate(users=200, jobs=300, seed=4)
    assert a.texts == b.texts and a.meta == b.meta
    assert a.texts["sshare"] != c.texts["sshare"] and a.texts["sacct"] != c.texts["sacct"]


def test_marked_synthetic(small):
    _, out = small
    meta = json.loads((out / "meta.json").read_text())
    assert meta["synthetic"] is True
    assert meta["generated_by"].startswith("scripts/gen_synthetic.py --users 400 ")
    assert "--seed 7" in meta["generated_by"] and "NOT recorded" in meta["note"]
    readme = (out / "README.md").read_text()
    assert "SYNTHETIC" in readme and "NOT** recorded" in readme and meta["generated_by"] in readme
    assert {p.name for p in out.iterdir()} == {
        "config.txt", "sshare.txt", "squeue.txt", "sprio.txt", "qos.txt", "sacct.txt", "meta.json", "README.md"
    }


def test_config_is_the_real_one_with_the_cluster_settings_changed(small):
    _, out = small
    cfg = parse.parse_config((out / "config.txt").read_text())
    assert (cfg.cluster, cfg.mode, cfg.damping_factor) == ("agave-synth", "classic", 1)
    assert (cfg.half_life_s, cfg.calc_period_s) == (7 * 86400, 300)
    real = parse.parse_config((ROOT / "samples" / "testbed-basic" / "config.txt").read_text())
    changed = {k for k in real.raw if real.raw[k] != cfg.raw.get(k)}
    assert changed == {"ClusterName", "PriorityDecayHalfLife", "PriorityCalcPeriod"}


def test_round_trip_through_collect(small, tmp_path):
    sample, out = small
    n_assoc = sample.meta["stats"]["associations"]
    db = store.open_db(tmp_path / "h.db")
    res = pipeline.collect(RecordedSlurm(out), db)
    snap = res.snapshot
    assert len(snap.shares) == n_assoc == 1 + 1 + sample.meta["stats"]["accounts"] + 400
    assert len(snap.users) == 401  # 400 users and root's own user association
    assert len(snap.jobs) == 600
    assert snap.window == tuple(sample.meta["sacct_window"])
    n_queue = sum(1 for s in sample.jobs.state if s in ("RUNNING", "PENDING"))
    assert len(snap.queue) == n_queue and 0 < len(snap.prio) < n_queue
    stored = store.load_snapshot(db, res.snapshot_id)
    assert len(stored.shares) == n_assoc
    assert {r.key: r for r in stored.shares} == {r.key: r for r in snap.shares}
    # every job's association exists; pending jobs ran 0 s; running/finished jobs lie in the window
    keys = {r.key for r in snap.shares}
    w0, w1 = snap.window
    for j in snap.jobs:
        assert (j.account, j.user) in keys
        if j.state == "PENDING":
            assert j.elapsed_s == 0 and j.billing == 0
        else:
            assert w0 <= j.start <= j.end <= w1 and j.billing == j.alloc_cpus


def test_fairshare_column_agrees_with_fscontrol(small):
    """F recomputed by fscontrol from RawShares and RawUsage (the raw columns) equals the
    generator's printed FairShare to sshare's print precision; so do S, UN and UE."""
    _, out = small
    rows = parse.parse_sshare((out / "sshare.txt").read_text())
    d = parse.parse_config((out / "config.txt").read_text()).damping_factor
    by_key = {r.key: r for r in rows}
    ours = fairshare.compute_fairshare(rows, d)
    assert len(ours) == len(rows)
    half_ulp = 5e-7 + 1e-12  # a 6-decimal print is within half a unit of the last place
    for a in ours:
        r = by_key[a.key]
        assert abs(a.fairshare - r.fairshare) <= half_ulp, (a.key, a.fairshare, r.fairshare)
        assert abs(a.norm_shares - r.norm_shares) <= half_ulp, a.key
        assert abs(a.effective_usage - r.effective_usage) <= half_ulp, a.key
        if r.norm_usage is not None:  # root prints no NormUsage
            assert abs(a.norm_usage - r.norm_usage) <= half_ulp, a.key
    users = [a for a in ours if a.is_user and a.user != "root"]
    assert sum(1 for a in users if a.raw_usage == 0) > len(users) / 3  # many idle users
    assert any(r.fairshare == 0.0 for r in rows if r.is_user)  # and some underflow at d=1


def test_committed_sample_is_what_the_generator_writes(tmp_path):
    """samples/synthetic-agave is reproducible from the command in its meta.json."""
    folder = ROOT / "samples" / "synthetic-agave"
    meta = json.loads((folder / "meta.json").read_text())
    argv = shlex.split(meta["generated_by"])[1:]
    out_ix = argv.index("--out") + 1
    assert argv[out_ix] == "samples/synthetic-agave"
    argv[out_ix] = str(tmp_path / "regen")
    opts = dict(zip(argv[::2], argv[1::2]))
    sample = gen.generate(
        int(opts["--users"]), int(opts["--accounts"]), int(opts["--jobs"]), int(opts["--seed"]),
        damping=int(opts.get("--damping", 1)), out="samples/synthetic-agave",
    )
    for name, text in sample.texts.items():
        assert (folder / f"{name}.txt").read_text() == text, name
    assert json.loads((folder / "meta.json").read_text()) == sample.meta
