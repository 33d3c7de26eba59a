"""`fscontrol publish` writes its file in pieces (publish.published_chunks, atomic.write_chunks;
issue #31: at 1M jobs the whole ~70 MB text and its pieces took ~250 MiB more than the data): the
same bytes as the former whole-text writer (kept here as the reference), and the writer's memory
bounded by far less than the file's size."""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

import pytest

import webfixtures as wf
from fscontrol.export import publish as pub
from fscontrol.export import public_page, runsorted
from fscontrol.export.rowindex import END, INDEX_KEY, INDEX_LINE

ROOT = Path(__file__).resolve().parent.parent


def reference_text(data: dict, sorted_running: bool = True) -> str:
    """publish.published_text as it was before the file was written in pieces (main 7af1158):
    every row's text, the running block's and the whole file held at once."""
    head = {k: v for k, v in data.items() if k not in ("associations", INDEX_KEY, "row_index", runsorted.KEY)}
    if "associations" not in data:
        return json.dumps(head, indent=1, sort_keys=False, allow_nan=False) + "\n"
    run, where, block = head.get("running"), None, ""
    if sorted_running and data["associations"] and isinstance(run, dict) and isinstance(run.get("cluster"), list):
        head[runsorted.KEY], block, where = runsorted.layout(head.pop("running"))
    rows = [json.dumps(runsorted.row(r, where), separators=(",", ":"), allow_nan=False) for r in data["associations"]]
    if not rows:
        text = json.dumps(head, indent=1, sort_keys=False, allow_nan=False)
        return text[:-2] + ",\n" + pub.ROWS_LINE + "]\n}\n"
    entries = []
    at = len(pub.ROWS_LINE) + 1
    for r, row in zip(data["associations"], rows):
        entries.append((r.get("user") or "", str(r.get("account") or ""), at, len(row)))
        at += len(row) + 2
    count: dict[str, int] = {}
    for e in entries:
        count[e[0]] = count.get(e[0], 0) + 1
    entries = sorted(e + (count[e[0]],) for e in entries)
    index = INDEX_LINE + "\n" + ",\n".join(json.dumps(list(e), separators=(",", ":")) for e in entries) + END.decode()
    head[INDEX_KEY] = len(index)
    text = json.dumps(head, indent=1, sort_keys=False, allow_nan=False)[:-2] + (",\n" + block if block else "")
    return text + ",\n" + pub.ROWS_LINE + "\n" + ",\n".join(rows) + "\n ],\n" + index


def generated(accounts: int, users_per: int, jobs: int, seed: int = 31) -> dict:
    """A published dict in build_published's shape: `accounts` accounts under root, `users_per`
    users in each (some users in two accounts), `jobs` running jobs listed for the cluster, each
    account and each account/user, as running_aggregates lists them."""
    rnd = random.Random(seed)
    def row(account: str, user: str, parent: str, depth: int) -> dict:
        usage = rnd.randrange(10**9)
        return {"account": account, "user": user, "parent": parent, "depth": depth, "raw_shares": 1 + rnd.randrange(7),
                "norm_shares": rnd.random(), "raw_usage": usage, "usage_core_hours": usage / 3600,
                "effective_usage": rnd.random() * 1e-4, "fairshare": rnd.random(),
                "halving_core_hours": None if rnd.random() < 0.1 else rnd.random() * 1e4, "dummy": False}

    rows = [row("root", "", "", 0)]
    pairs = []
    for a in range(accounts):
        acct = f"acct{a:04d}"
        rows.append(row(acct, "", "root", 1))
        for u in range(users_per):
            user = f"u{(a * users_per + u) % (accounts * users_per - 3):05d}"  # a few users in two accounts
            pairs.append((acct, user))
            rows.append(row(acct, user, acct, 2))
    cluster, by_acct, by_user = [], {}, {}
    for j in range(jobs):
        acct, user = rnd.choice(pairs)
        e = [None if rnd.random() < 0.03 else rnd.randrange(86400) + rnd.random(), rnd.choice([1.0, 2.0, 28.0]), 1000 + j]
        cluster.append(e)
        for k in ("root", acct):
            by_acct.setdefault(k, []).append(e)
        by_user.setdefault(f"{acct}/{user}", []).append(e)
    return {"format": pub.FORMAT, "version": pub.VERSION, "cluster": "gen", "snapshot_id": 1, "taken_at": 1.8e9,
            "config": {"priority_mode": "classic", "damping_factor": 1, "half_life_s": 604800.0, "private_data": []},
            "total_usage_core_hours": 1e6, "halving_core_hours": 2e4, "reference_share": 0.001, "reference_share_rule": "median",
            "target_core_hours": None, "control_method": "damping", "per_association": True, "taken_at_iso": "2027-01-15T08:00:00Z", "published_at": 1.8e9,
            "running": {"as_of": 1.8e9, "order": "job_id", "cluster": sorted(cluster, key=lambda e: (e[0] is None, e[0] or 0)),
                        "cluster_grouped": False, "cluster_withheld": 0,
                        "accounts": dict(sorted(by_acct.items())), "users": dict(sorted(by_user.items())), "users_published": True},
            "own_files": True, "associations": rows}


@pytest.fixture(scope="module")
def basic(tmp_path_factory) -> dict:
    f = wf.publish(ROOT / "samples" / "testbed-basic", tmp_path_factory.mktemp("stream") / "pub") / "tbcluster.json"
    return pub.read_published(f)[0]


def test_the_pieces_are_the_former_whole_text(basic, tmp_path):
    """Byte for byte the former writer's file: a real publish (testbed-basic), a generated cluster,
    each in both running layouts, with no rows (PrivateData=usage) and with an empty row list."""
    gen = generated(40, 25, 3000)
    cases = {"basic": basic, "generated": gen, "no rows": {k: v for k, v in gen.items() if k != "associations"},
             "empty rows": {**gen, "associations": []}}
    for name, data in cases.items():
        for layout in (True, False):
            want = reference_text(data, layout)
            assert "".join(pub.published_chunks(data, layout)) == want, (name, layout)
            assert pub.published_text(data, layout) == want
        p = pub.write_published(data, tmp_path / f"{name.replace(' ', '_')}.json")
        assert p.read_text() == reference_text(data)
        assert p.stat().st_mode & 0o777 == 0o644
    assert len(list(pub.published_chunks(gen))) > 3  # (in pieces, not one text)


def test_the_public_page_in_pieces_is_the_whole_page(basic):
    gen = generated(40, 25, 300)
    for data in (basic, gen, {**gen, "per_association": False}):
        chunks = list(public_page.public_chunks(data))
        assert public_page.render_public(data) == "".join(chunks)
        assert "".join(chunks).startswith("<!doctype html>") and "\x00" not in "".join(chunks)
    assert len(list(public_page.public_chunks(gen))) > 3


def test_the_writer_holds_far_less_than_the_file(tmp_path):
    """On a generated cluster (10,400 associations, 20,000 running jobs: a ~6 MB file) writing the
    file takes about the file's size beyond the data (what is still held at once is the running
    block's text, in its pieces, ~3/4 of this file, and the rows' index: export/runsorted.py), a
    third of what the whole-text writer took or less (the rows' texts, the text, its pieces)."""
    data = generated(400, 25, 20_000)
    path = tmp_path / "gen.json"
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        pub.write_published(data, path)
        peak = tracemalloc.get_traced_memory()[1] - before
        tracemalloc.reset_peak()
        reference_text(data)
        ref_peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    size = path.stat().st_size
    assert size > 4_000_000
    assert path.read_text() == reference_text(data)
    assert peak < 1.5 * size and 3 * peak < ref_peak, (peak, size, ref_peak)
