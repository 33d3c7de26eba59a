"""Against the real testbed: collect + status reproduce what Slurm's own sshare prints."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from fscontrol.agent import pipeline
from fscontrol.report import status as rstatus
from fscontrol.store import history as store

pytestmark = pytest.mark.slurm


def _f_bound(ue: float, s: float, d: int, f: float) -> float:
    # sshare prints EffectvUsage with 6 decimals (error <= 5e-7) but computes its own F from the
    # full-precision value: that printing alone allows |dF| <= F ln2 / (S d) * 5e-7, and its F
    # column is itself rounded to 6 decimals (another 5e-7)
    return max(1e-6, f * math.log(2) / (s * d) * 5e-7 + 5e-7 + 1e-9)


def test_collect_and_status_match_sshare(slurm, tmp_path):
    slurm.cancel_all()
    slurm.reset_usage()
    slurm.scontrol("reconfigure")  # slurmctld's d back to slurm.conf's (a runtime change may linger)
    for user, account, cpus in [("alice", "flat", 16), ("bob", "physics", 32), ("carol", "chem", 8), ("dave", "flat", 4)]:
        slurm.submit(user, account, cpus, 150)
        slurm.probe(user, account)
    slurm.wait_for_pass()  # usage charged
    db = store.open_db(tmp_path / "h.db")
    for _ in range(5):
        before = slurm.sshare()
        res = pipeline.collect(slurm.source(), db)
        after = slurm.sshare()
        if before == after:  # no decay pass in between: the snapshot must equal sshare exactly
            break
    else:
        pytest.fail("a decay pass fell between every sshare and collect")
    snap = store.load_snapshot(db, res.snapshot_id)
    got = {r.key: r for r in snap.shares}
    assert got.keys() == after.keys()
    for key, want in after.items():
        have = got[key]
        assert (have.raw_usage, have.norm_shares, have.effective_usage, have.norm_usage) == (
            want.raw_usage, want.norm_shares, want.effective_usage, want.norm_usage
        ), key
    assert sum(1 for r in after.values() if r.is_user and r.raw_usage > 0) >= 4

    data = rstatus.status_data(snap)
    d = snap.config.damping_factor
    assert d == 1  # slurm.conf's d is the one in force
    checked = 0
    for row in data["table"]:
        want = after[(row["account"], row["user"])]
        bound = _f_bound(want.effective_usage, want.norm_shares, d, want.fairshare)
        assert abs(row["fairshare"] - want.fairshare) <= bound, (row, want.fairshare, bound)
        checked += 1
    assert checked == len([r for r in after.values() if r.is_user and r.user != "root"])


def test_cli_collect_then_status_json(slurm, tmp_path):
    db = tmp_path / "cli.db"
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "fscontrol", *a], capture_output=True, text=True, timeout=120, env=slurm.env
    )
    p = run("collect", "--db", str(db))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("snapshot 1 of tbcluster:")
    p = run("status", "--db", str(db), "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["cluster"] == "tbcluster" and data["priority_mode"] == "classic"
    assert {r["user"] for r in data["table"]} >= {"alice", "bob", "carol", "dave"}
    # `publish` after a collect from the live cluster carries its partitions' billing rules, as a
    # tick's publish does (an outside tester: a plain publish wrote none, and users' GPU plans failed)
    (tmp_path / "pub").mkdir()
    out = tmp_path / "pub" / "tbcluster.json"
    p = run("publish", "--db", str(db), "--out", str(out))
    assert p.returncode == 0, p.stderr
    billing = json.loads(out.read_text())["billing"]
    assert billing["default_partition"] == "normal" and billing["partitions"]["normal"]["gpus"] == 4, billing


def test_failed_slurm_command_writes_nothing(slurm, tmp_path):
    db_path = tmp_path / "f.db"
    # a slurm.conf the clients refuse at once (a missing file would make 22.05 clients try a
    # configless DNS lookup first, which takes as long as the resolver does)
    bad = tmp_path / "slurm.conf"
    bad.write_text(slurm.conf.read_text().replace("FairShareDampeningFactor=1", "FairShareDampeningFactor=1.5"))
    env = dict(slurm.env, SLURM_CONF=str(bad))
    p = subprocess.run(
        [sys.executable, "-m", "fscontrol", "collect", "--db", str(db_path)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert p.returncode == 3
    assert p.stderr.startswith("fscontrol: error: `scontrol show config` failed")
    assert len(p.stderr.strip().splitlines()) == 1
    db = store.open_db(db_path)
    assert db.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 0
    assert db.execute("SELECT status FROM ticks").fetchall() == [("failed",)]


def test_live_squeue_and_sprio_streamed_are_the_texts(slurm):
    """Issue #31 item 4: collect reads squeue and sprio through a file a block at a time
    (LiveSlurm.squeue_jobs/sprio_rows); the records are the whole text's, on the real Slurm."""
    from fscontrol.slurm import parse

    slurm.cancel_all()
    for user, account, cpus in [("alice", "flat", 16), ("bob", "physics", 32), ("carol", "chem", 64), ("dave", "flat", 64)]:
        slurm.submit(user, account, cpus, 300)
    live = slurm.source()
    for _ in range(5):  # the queue may move between two reads: until two agree
        text_q, text_p = live.squeue().stdout, live.sprio().stdout
        queue, prio = tuple(live.squeue_jobs()), tuple(live.sprio_rows())
        if queue == parse.parse_squeue(text_q) and prio == parse.parse_sprio(text_p):
            break
    else:
        pytest.fail("the streamed squeue/sprio never matched the texts read beside them")
    assert len(queue) >= 4 and {q.user for q in queue} >= {"alice", "bob", "carol", "dave"}
    slurm.cancel_all()


def test_config_read_as_json_where_the_slurm_has_it(slurm):
    """source.LiveSlurm.config asks `scontrol --json show config` first: 26.05 answers JSON, 24.11 the
    text, 22.05 refuses (--json unknown) and the text is asked for; every Slurm gives the same config
    as its own text (the mode above all: 26.05's JSON lists no NO_FAIR_TREE, slurm/configjson.py)."""
    from fscontrol.slurm import configjson, parse
    from fscontrol.slurm import versions as slurm_versions

    src = slurm.source()
    out = src.config()
    text = slurm.scontrol("show", "config")
    a, b = parse.parse_config(out.stdout), parse.parse_config(text)
    rel = slurm_versions.release(b.slurm_version)
    assert rel is not None, b.slurm_version
    assert configjson.looks_like_json(out.stdout) == (rel.show_config_json == "json")
    assert out.argv == (parse.CONFIG_ARGS if rel.show_config_json == "refused" else parse.CONFIG_JSON_ARGS)
    assert a == b and a.mode == b.mode == "classic"
    assert a.raw["StateSaveLocation"] == b.raw["StateSaveLocation"] == str(slurm.dir / "spool" / "ctld")
    # the next read asks for the JSON only where the JSON came back (24.11: the text, asked directly)
    again = src.config()
    assert again.argv == (parse.CONFIG_JSON_ARGS if rel.show_config_json == "json" else parse.CONFIG_ARGS)
    assert parse.parse_config(again.stdout) == a
