"""collect at a large site's size in compact form (issue #31 item 4): sshare read from disk a block
at a time and made into its records as it is read, write_snapshot keyed by row index (no per-row
dicts of the history's strings), the running jobs' billing and sprio's accounts in one map each.

The outputs must not change: the stored tables are compared with a plain reference written here
(the obvious dict-per-association way, as write_snapshot did before) on a SYNTHETIC sample
(scripts/gen_synthetic.py), for a first snapshot and for a second one where associations changed,
vanished, appeared and moved. The streamed sshare parse is compared with the whole text's, errors
included."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fscontrol.agent import pipeline
from fscontrol.errors import ParseError, SlurmCommandError, StoreError
from fscontrol.slurm import parse
from fscontrol.slurm.source import RecordedSlurm
from fscontrol.store import history as store

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "testbed-basic"
COLS = ("present", "raw_shares", "shares_parent", "norm_shares", "raw_usage", "norm_usage", "effective_usage",
        "fairshare", "billing_run_mins", "level_fs")


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("compact") / "syn"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_synthetic.py"), "--users", "1500", "--jobs", "6000",
                    "--seed", "7", "--out", str(out)], check=True, capture_output=True)
    return out


def _vals(r) -> tuple:
    return (1, r.raw_shares, int(r.shares_parent), r.norm_shares, r.raw_usage, r.norm_usage, r.effective_usage,
            r.fairshare, r.billing_run_mins, r.level_fs)


def _path(rows, r) -> str:
    parent = {x.account: x.parent for x in rows if not x.user}
    parts = [r.user] if r.user else []
    a = r.account
    while a:
        parts.append(a)
        a = parent.get(a, "")
    return "/".join(reversed(parts))


def _reference(snap, prior: dict, sid: int) -> dict:
    """What the history holds after `snap` (the state `prior` of the same cluster before it), the
    obvious way: a dict per association of the history and of the snapshot."""
    assocs = dict(prior["assocs"])  # (account, user) -> (id, parent, depth, path)
    current = dict(prior["current"])  # id -> values
    next_id = max([v[0] for v in assocs.values()], default=0) + 1
    for r in snap.shares:
        k = (r.account, r.user)
        if k not in assocs:
            assocs[k] = (next_id, r.parent, r.depth, _path(snap.shares, r))
            next_id += 1
        elif assocs[k][1:3] != (r.parent, r.depth):
            assocs[k] = (assocs[k][0], r.parent, r.depth, _path(snap.shares, r))
    samples = []
    keys = {(r.account, r.user) for r in snap.shares}
    for r in snap.shares:
        i = assocs[(r.account, r.user)][0]
        if current.get(i) != _vals(r):
            samples.append((i, sid, *_vals(r)))
            current[i] = _vals(r)
    for k, v in prior["assocs"].items():
        if k not in keys and prior["current"].get(v[0], (0,))[0] == 1:
            samples.append((v[0], sid, 0, *([None] * 9)))
            current[v[0]] = (0, *([None] * 9))
    running = [q for q in snap.queue if q.state == "RUNNING"]
    billing = {}
    for j in snap.jobs:
        billing[j.job_id] = j.billing
    factor = {q.name: q.usage_factor for q in snap.qos}
    acct = {q.job_id: q.account for q in snap.queue}
    return {
        "assocs": assocs, "current": current, "samples": sorted(samples, key=repr),
        "jobs": sorted(((sid, j.job_id, assocs.get((j.account, j.user), (None,))[0], j.user, j.account) for j in snap.jobs),
                       key=repr),
        "running": sorted(((sid, q.job_id, q.account, q.user, float(billing.get(q.job_id) or q.cpus) * factor.get(q.qos, 1.0),
                            None if q.start is None or q.time_limit_s is None else q.start + q.time_limit_s)
                           for q in running), key=repr),
        "prio": sorted(((sid, p.job_id, p.user, acct.get(p.job_id), p.partition, p.priority_norm, p.fairshare_norm)
                        for p in snap.prio), key=repr),
    }


def _stored(db, sid: int) -> dict:
    c = db.conn
    return {
        "assocs": {(a, u): (i, p, d, path) for i, a, u, p, d, path in
                   c.execute("SELECT id, account, user, parent, depth, path FROM assocs")},
        "current": {r[0]: tuple(r[1:]) for r in c.execute(f"SELECT assoc_id, {', '.join(COLS)} FROM assoc_current")},
        "samples": sorted((tuple(r) for r in c.execute("SELECT * FROM assoc_samples WHERE snapshot_id = ?", [sid])), key=repr),
        "jobs": sorted((tuple(r) for r in c.execute(
            "SELECT snapshot_id, job_id, assoc_id, user, account FROM job_usage WHERE snapshot_id = ?", [sid])), key=repr),
        "running": sorted((tuple(r) for r in c.execute("SELECT * FROM running_jobs WHERE snapshot_id = ?", [sid])), key=repr),
        "prio": sorted((tuple(r) for r in c.execute("SELECT * FROM prio WHERE snapshot_id = ?", [sid])), key=repr),
    }


def _write(db, snap) -> int:
    with db.conn:
        return store.write_snapshot(db, snap)


def test_stored_tables_equal_the_plain_reference(synth, tmp_path):
    snap = pipeline.read_snapshot(RecordedSlurm(synth))
    assert len(snap.shares) > 1500 and len(snap.jobs) == 6000 and any(q.state == "RUNNING" for q in snap.queue)
    assert any(p.job_id for p in snap.prio)
    db = store.open_db(tmp_path / "h.db")
    empty = {"assocs": {}, "current": {}}
    sid = _write(db, snap)
    got = _stored(db, sid)
    assert got == _reference(snap, empty, sid)
    assert all(v[0] > 0 for v in got["assocs"].values()) and len(got["samples"]) == len(snap.shares)

    # a second snapshot: a tenth of the users' usage changes, one user vanishes, one appears, and an
    # account (with its users) moves under another top-level account (parent and depth change)
    prior = {"assocs": got["assocs"], "current": got["current"]}
    rows = list(snap.shares)
    users = [i for i, r in enumerate(rows) if r.user]
    for i in users[::10]:
        rows[i] = rows[i]._replace(raw_usage=rows[i].raw_usage + 1000)
    gone = rows.pop(users[5])
    acc = next(r for r in rows if r.user == "" and r.depth == 1)
    rows.insert(rows.index(acc) + 1, rows[users[3]]._replace(account=acc.account, user="newcomer",
                                                         parent=acc.account, depth=2))
    sub = next((r for r in rows if r.user == "" and r.depth == 2), None)
    if sub is not None:  # a second-level account: give it a new parent (same depth: a move all the same)
        other = next(r.account for r in rows if r.user == "" and r.depth == 1 and r.account != sub.parent)
        rows = [r._replace(parent=other) if r is sub else r for r in rows]
    snap2 = dataclasses.replace(snap, shares=tuple(rows), taken_at=snap.taken_at + 300)
    sid2 = _write(db, snap2)
    got2 = _stored(db, sid2)
    want2 = _reference(snap2, prior, sid2)
    assert got2 == want2
    assert any(s[2] == 0 for s in got2["samples"])  # the vanished one's tombstone
    assert (gone.account, gone.user) in got2["assocs"]
    if sub is not None:
        assert got2["assocs"][(sub.account, "")][1] == other


def test_an_association_twice_is_refused_before_its_rows(tmp_path):
    snap = pipeline.read_snapshot(RecordedSlurm(SAMPLE))
    twice = dataclasses.replace(snap, shares=snap.shares + snap.shares[-1:])
    db = store.open_db(tmp_path / "h.db")
    with pytest.raises(StoreError, match="twice"):
        _write(db, twice)
    assert db.conn.execute("SELECT count(*) FROM assocs").fetchone()[0] == 0


def test_streamed_sshare_is_the_whole_text(synth):
    src = RecordedSlurm(synth)
    with src.sshare_spooled() as out:
        streamed = out.shares()
        assert (out.started_at, out.finished_at) == (src.sshare().started_at, src.sshare().finished_at)
    text = (synth / "sshare.txt").read_text()
    assert streamed == parse.parse_sshare(text) and len(streamed) > 1500
    # one string an account name: the rows of one account share it
    by = {}
    for r in streamed:
        assert by.setdefault(r.account, r.account) is r.account


def _damaged(tmp_path: Path, damage) -> Path:
    src = tmp_path / "sample"
    shutil.copytree(SAMPLE, src)
    p = src / "sshare.txt"
    p.write_bytes(damage(p.read_bytes()))
    return src


@pytest.mark.parametrize("damage,error,match", [
    (lambda b: b.rstrip(b"\n"), ParseError, "cut short"),
    (lambda b: b + b"x\xff|y\n", SlurmCommandError, "not UTF-8"),
    # a bad value on one line, a line with too few fields after it: the field count wins (as _table)
    (lambda b: b.replace(b"|1|", b"|zz|", 1) + b"a|b\n", ParseError, "expected"),
    (lambda b: b.split(b"\n", 1)[0] + b"\n", ParseError, "no root row"),
])
def test_a_damaged_sshare_fails_collect_alike_and_writes_nothing(tmp_path, damage, error, match):
    src = _damaged(tmp_path, damage)
    text = (src / "sshare.txt").read_bytes()
    if b"\xff" not in text and text.endswith(b"\n"):  # the whole text's parse gives the same error
        with pytest.raises(error, match=match):
            parse.parse_sshare(text.decode())
    db = store.open_db(tmp_path / "h.db")
    with pytest.raises(error, match=match):
        pipeline.collect(RecordedSlurm(src), db)
    assert db.conn.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 0


def test_status_loads_no_running_jobs_and_prints_the_same(synth, tmp_path, capsys):
    """`status` reads its snapshot without the running jobs (it uses none; issue #31): the same
    rows, and the same --json as the status data of the whole snapshot."""
    import json

    from fscontrol.cli.main import main
    from fscontrol.report import status as rstatus
    from fscontrol.report import table as rtable

    db = store.open_db(tmp_path / "h.db")
    pipeline.collect(RecordedSlurm(synth), db)
    whole, lean = store.load_snapshot(db), store.load_snapshot(db, running=False)
    assert len(whole.running) > 0 and lean.running == ()
    assert lean.shares == whole.shares and lean.prio_fairshare == whole.prio_fairshare
    sys.argv = ["fscontrol", "status", "--db", str(tmp_path / "h.db"), "--json"]
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code in (0, None)
    got = json.loads(capsys.readouterr().out)
    want = json.loads("".join(rtable.json_chunks(rstatus.status_data(whole, columns=True, control_history=[]))))
    assert got["table"] == want["table"] and len(got["table"]) == 1500  # the 1,500 users
