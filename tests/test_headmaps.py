"""The inflow's per-account and per-user maps read by need (export/headmaps.py, issue #31 item 5):
a forecast finds its own entries in the map's text instead of parsing ~11,000 lines at 100,000
associations. Checked against the whole file parsed by json.loads: every entry, at every chunk
seam, keys that json.dumps escapes, the forecast's answer, and damaged maps refused in one line."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

import webfixtures as wf
from fscontrol.cli.main import exit_code
from fscontrol.export import headmaps
from fscontrol.export import publish as pub
from fscontrol.export import runsorted
from fscontrol.forecast import charges

ROOT = Path(__file__).resolve().parent.parent
MAPS = ("accounts", "accounts_var", "users", "users_var")
ODD = ['quo"te', "back\\slash", "caf\u00e9", "tab\tkey", "a/b", "", "x" * 300]  # escaped by json.dumps


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """testbed-basic published with an inflow history whose maps hold every running key and odd ones."""
    tmp = tmp_path_factory.mktemp("headmaps")
    f = wf.publish(ROOT / "samples" / "testbed-basic", tmp / "pub") / "tbcluster.json"
    data = pub.read_published(f)[0]
    rnd = random.Random(5)
    keys = sorted({*data["running"]["accounts"], *data["running"]["users"], *ODD})
    maps = {m: {k: rnd.choice([0, 3, rnd.uniform(0, 50), 1e-300, 12345678901234.5]) for k in keys} for m in MAPS}
    data["inflow"] = {**(data.get("inflow") or {}), "snapshots": 12, "span_s": 7200.0, "cluster": 40.0,
                      "left_ratio": 0.6, "left_ratio_jobs": 50, **maps}
    out = tmp / "c.json"
    pub.write_published(data, out)
    return out, maps, data


def _user(data) -> str:
    return next(r["user"] for r in data["associations"] if r["user"] and r["account"] in data["running"]["accounts"])


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 5, 7, 64, 1 << 16])
def test_every_entry_by_need_is_the_whole_file_s_at_every_chunk_seam(published, monkeypatch, chunk):
    path, maps, data = published
    monkeypatch.setattr(headmaps, "_CHUNK", chunk)
    got = pub.read_published(path, users={_user(data)}, ancestors=True)[0]["inflow"]
    whole = json.loads(path.read_text())["inflow"]
    for m in MAPS:
        lazy = got[m]
        assert isinstance(lazy, headmaps.EntryMap)
        for k, v in maps[m].items():
            assert lazy[k] == v == whole[m][k] and type(lazy[k]) is type(whole[m][k]), (m, k)
        assert lazy.get("no such key", 0.0) == 0.0 and "no such key" not in lazy
        assert dict(lazy) == whole[m] and len(lazy) == len(maps[m]) and bool(lazy)
    rest = {k: v for k, v in got.items() if k not in MAPS}
    assert rest == {k: v for k, v in whole.items() if k not in MAPS}


def test_the_forecast_reads_the_same_as_from_maps_parsed_whole(published, monkeypatch, capsys):
    path, _, data = published
    user = _user(data)
    args = ["forecast", "--published", str(path), "--user", user, "--plan", "8cpus:1h,idle:30m", "--stale-ok",
            "--source", "published", "--now", "1764000000"]
    outs = []
    for lazy in (True, False):
        if not lazy:  # read_head with no maps dict: every line parsed, as before
            real = runsorted.read_head
            monkeypatch.setattr(runsorted, "read_head", lambda fh, rl, line, parsed=None, maps=None: real(fh, rl, line, parsed))
        for extra in ([], ["--json"]):
            assert exit_code(args + extra) == 0
            outs.append(capsys.readouterr().out)
    assert outs[:2] == outs[2:] and "their rate over the last 2.0 h" in outs[0]


def _damaged(path: Path, tmp: Path, old: bytes, new: bytes) -> Path:
    text = path.read_bytes()
    assert text.count(old) >= 1
    out = tmp / "d.json"
    out.write_bytes(text.replace(old, new, 1))
    return out


def test_a_damaged_entry_the_forecast_reads_is_refused_in_one_line(published, tmp_path, capsys):
    path, maps, data = published
    user = _user(data)
    account = next(r["account"] for r in data["associations"] if r["user"] == user)
    key = json.dumps(account).encode()
    start = path.read_bytes().index(b'\n  "accounts": {')
    line_at = path.read_bytes().index(b"\n   " + key + b": ", start)
    line = path.read_bytes()[line_at:path.read_bytes().index(b"\n", line_at + 1)]
    for bad in (b"NaN", b"\"3\"", b"[1]", b"1e999", b"tru"):
        p = _damaged(path, tmp_path, line, b"\n   " + key + b": " + bad + (b"," if line.endswith(b",") else b""))
        code = exit_code(["forecast", "--published", str(p), "--user", user, "--plan", "8cpus:1h", "--stale-ok",
                          "--source", "published"])
        err = capsys.readouterr().err
        assert code == 6 and "inflow's accounts entry" in err and "damaged" in err and len(err.strip().splitlines()) == 1, (bad, err)


def test_a_map_that_does_not_close_is_refused_when_read(published, tmp_path):
    path, _, data = published
    text = path.read_bytes()
    start = text.index(b'\n  "users": {\n')
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[:start + 40])  # the file ends inside the map
    with pytest.raises(pub.PublishedError, match="unreadable"):
        pub.read_published(cut, users={_user(data)})
    close = text.index(b"\n  }", start)
    shifted = tmp_path / "shifted.json"  # the close not as publish writes it
    shifted.write_bytes(text[:close] + b"\n  }}" + text[close + 4:])
    with pytest.raises(pub.PublishedError, match="unreadable"):
        pub.read_published(shifted, users={_user(data)})


def test_scaled_columns_are_the_sort_s_even_where_a_product_makes_a_tie():
    rnd = random.Random(11)
    for _ in range(300):
        lefts = sorted(rnd.choice([rnd.uniform(0, 1e6), float(rnd.randrange(5000)) * 0.1]) for _ in range(rnd.randint(0, 40)))
        lefts += [math.nextafter(x, math.inf) for x in rnd.sample(lefts, min(len(lefts), 5))]  # neighbours that q may merge
        entries = [[x, rnd.choice([1.0, 2.0, 0.5]), rnd.choice([None, rnd.randrange(100)])] for x in lefts]
        entries += [[None, 3.0, 7]] * rnd.randint(0, 2)
        s = runsorted.of_entries(entries)
        for q in (0.6, 1 / 3, 0.999999999999, 1.0, 2.5, rnd.uniform(0.01, 1)):
            fast = runsorted.scaled(s, q)
            slow = runsorted.of_entries([[None if e[0] is None else e[0] * q, *e[1:]] for e in entries])
            assert (list(fast.lefts), list(fast.rates), list(fast.ids), fast.untimed, fast.r0) == \
                (list(slow.lefts), list(slow.rates), list(slow.ids), slow.untimed, slow.r0)
            assert list(fast.rates_down_in_ties()) == list(slow.rates_down_in_ties())


def test_the_breaks_floors_are_every_job_s_own():
    rnd = random.Random(3)
    for _ in range(5000):
        P = rnd.choice([300.0, 60.0, 1.0, 0.1, 7.3, 1e-3, rnd.uniform(1e-6, 1e6)])
        xs: list[float] = []
        for _ in range(rnd.randint(0, 60)):
            r = rnd.random()
            if r < 0.3:  # on a pass's boundary, or a float either side of it
                x = rnd.randint(0, 50) * P
                xs.append(max(0.0, math.nextafter(x, rnd.choice([-math.inf, math.inf])) if rnd.random() < 0.5 else x))
            elif r < 0.5 and xs:
                xs.append(rnd.choice(xs))
            else:
                xs.append(rnd.uniform(0, 50 * P))
        xs.sort()
        assert charges._floors(xs, P) == sorted({int(x // P) for x in xs})


def test_a_map_that_runs_into_the_next_or_is_written_otherwise_is_never_misread(published, tmp_path, capsys):
    """An outside tester's cases: a map whose closing line is lost ran on into the next map (its
    variances read as rates); a line cut inside its key, other spacing or an escaped key were read
    as a missing entry (0). Now the first is refused when read, the cut line is refused, and valid
    JSON written otherwise is read as json.loads reads it (the map parsed whole)."""
    path, maps, data = published
    user = _user(data)
    account = next(r["account"] for r in data["associations"] if r["user"] == user)
    text = path.read_bytes()
    start = text.index(b'\n  "accounts": {')
    key = json.dumps(account).encode()
    at = text.index(b"\n   " + key + b": ", start)
    end = text.index(b"\n", at + 1)
    line = text[at:end]
    value = line[len(b"\n   " + key + b": "):].rstrip(b",")
    comma = b"," if line.endswith(b",") else b""
    close = text.index(b"\n  }", start)
    noclose = tmp_path / "noclose.json"
    noclose.write_bytes(text[:close] + text[text.index(b"\n", close + 1):])  # the `  },` line gone
    with pytest.raises(pub.PublishedError, match="unreadable"):
        pub.read_published(noclose, users={user})
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[:at] + b"\n   " + key[:-3] + text[end:])
    got = pub.read_published(cut, users={user}, ancestors=True)[0]["inflow"]["accounts"]
    with pytest.raises(pub.PublishedError, match="damaged"):
        got.get(account)
    for other in (b"\n    " + key + b": " + value + comma, b"\n   " + key + b" : " + value + comma,
                  b"\n   " + key + b":" + value + comma, b"\n\t" + key + b": " + value + comma,
                  b"\n   " + key.replace(b"-", b"\\u002d") + b": " + value + comma,
                  b"\n   " + key + b": " + value + comma + b" "):
        odd = tmp_path / "odd.json"
        odd.write_bytes(text[:at] + other + text[end:])
        got = pub.read_published(odd, users={user}, ancestors=True)[0]["inflow"]["accounts"]
        assert got[account] == maps["accounts"][account] == json.loads(odd.read_text())["inflow"]["accounts"][account], other
