"""The running jobs sorted once a snapshot (export/runsorted.py, issue #31 item 2): the charges
from the sorted columns are the list's (the same floats), a file in the new layout answers as
one in the old layout does (page and forecast, byte for byte), an old file is still read, and
the new parts hold nothing the file did not already publish."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import webfixtures as wf
from fscontrol.export import publish as pub
from fscontrol.export import runsorted
from fscontrol.export.published_index import PublishedIndex
from fscontrol.forecast import projection as pj

ROOT = Path(__file__).resolve().parent.parent
P, HALF = 300.0, 7 * 86400.0


def _entries(n: int, seed: int) -> list[list]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):  # many ties: times left on a coarse grid, rates from a few values
        left = None if rnd.random() < 0.03 else rnd.choice([0.0, 5.5, 299.99, 300.0, 300.01, 600.0]) + rnd.randrange(40) * 150.0
        out.append([left, rnd.choice([0.5, 1.0, 2.0, 8.0, 28.0]), None if rnd.random() < 0.02 else 1000 + rnd.randrange(n)])
    return out


def _fp() -> float:
    from fscontrol.model.decay import decay_factor_per_second

    return decay_factor_per_second(HALF) ** P


def _same_charges(a: pj._Jobs, b: pj._Jobs) -> None:
    assert a.breaks() == b.breaks() and a.total == b.total and a.inf_amount == b.inf_amount
    for k in [*range(0, 60), *a.breaks(), 10**6]:
        assert a.value(k) == b.value(k), k  # the same floats, not close ones


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_sorted_columns_charge_what_the_list_does(seed):
    entries = _entries(3000, seed)
    s = runsorted.of_entries(entries)
    assert s == entries and len(s) == len(entries)  # the same entries (sorted)
    assert runsorted.from_meta(json.loads(json.dumps(runsorted.meta(entries, True)))) == s  # through the file
    fp = _fp()
    listed = pj._Jobs(tuple((e[0], e[1]) for e in entries), P, fp)
    _same_charges(pj.sorted_jobs(s.lefts, s.rates, s.untimed_rates(), period_s=P, half_life_s=HALF), listed)
    for t_in, r0 in ((3.7, s.r0), (0.0, s.r0), (-1.5, s.r0)):  # the inflow that replaces the jobs (forecast.loaded)
        old = pj._Jobs(tuple((e[0], -e[1] * t_in / r0) for e in entries), P, fp, future=True)
        rates = s.rates_down_in_ties() if t_in > 0 else s.rates
        new = pj.sorted_jobs(s.lefts, [-a * t_in / r0 for a in rates], [-a * t_in / r0 for a in s.untimed_rates()],
                             period_s=P, half_life_s=HALF, future=True)
        _same_charges(new, old)
    q = 0.37  # each time left cut to its typical end
    cut = [[None if e[0] is None else e[0] * q, *e[1:]] for e in entries]
    _same_charges(pj.sorted_jobs(*(lambda c: (c.lefts, c.rates, c.untimed_rates()))(runsorted.scaled(s, q)), period_s=P, half_life_s=HALF),
                  pj._Jobs(tuple((e[0], e[1]) for e in cut), P, fp))


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    """testbed-basic published (the new layout), the same data in the layout before it, and the
    same again with an inflow that cuts the running jobs to their typical end."""
    tmp = tmp_path_factory.mktemp("runsorted")
    f = wf.publish(ROOT / "samples" / "testbed-basic", tmp / "pub") / "tbcluster.json"
    data = pub.read_published(f)[0]
    assert len(data["running"]["cluster"]) >= 3 and data["running"]["users"]
    out = {}
    for name, d in (("plain", data), ("inflow", {**data, "inflow": {**(data.get("inflow") or {}), "snapshots": 8, "span_s": 86400.0,
                                                                     "left_ratio": 0.6, "left_ratio_jobs": 40, "cluster": 30.0}})):
        for layout in (True, False):
            p = tmp / f"{name}-{layout}" / "tbcluster.json"
            p.parent.mkdir()
            p.write_text(pub.published_text(d, sorted_running=layout))
            out[name, layout] = p
    return data, out


def test_the_new_layout_is_one_json_document_with_the_old_data(layouts):
    """An older reader (json.loads, or the line-by-line scan) finds every key it knew, as before."""
    data, files = layouts
    new, old = (json.loads(files["plain", x].read_text()) for x in (True, False))
    assert runsorted.KEY in new and runsorted.KEY not in old
    assert new["running"] == old["running"] == data["running"]
    assert [{k: v for k, v in r.items() if k != "run_at"} for r in new["associations"]] == old["associations"]
    assert any("run_at" in r for r in new["associations"]) and not any("run_at" in r for r in old["associations"])
    # privacy: the sorted copy is the published cluster list, no more; a row's run_at is its own published list
    assert runsorted.from_meta(new[runsorted.KEY]) == data["running"]["cluster"]
    text = files["plain", True].read_bytes()
    start = text.index(runsorted.BLOCK)
    for r in new["associations"]:
        if "run_at" in r:
            got = json.loads(text[start + r["run_at"][0]:start + sum(r["run_at"])])
            key = f"{r['account']}/{r['user']}" if r["user"] else r["account"]
            assert got == data["running"]["users" if r["user"] else "accounts"][key]


@pytest.mark.parametrize("name", ["plain", "inflow"])
def test_page_and_forecast_are_the_same_from_either_layout(layouts, name):
    """Byte for byte: the forecast's JSON (the command line's reader) and the page (the web's
    per-snapshot index), from the new layout and from the old one (which this version still reads)."""
    from fscontrol.forecast.request import ForecastRequest, forecast
    from fscontrol.web.app import make_app

    data, files = layouts
    users = sorted({r["user"] for r in data["associations"] if r["user"]})
    now = float(data["taken_at"]) + 600
    got = {}
    for layout in (True, False):
        f = files[name, layout]
        app = make_app(published=str(f), source="published", now=now)
        out = []
        for u in users:
            for q in (f"user={u}", f"user={u}&cpus=4&length=2&unit=d&runs=2&gap=1"):
                st: list = []
                out.append(b"".join(app({"REQUEST_METHOD": "GET", "PATH_INFO": "/", "QUERY_STRING": q}, lambda s, h: st.append(s))))
                assert st[0].startswith("200"), out[-1][-400:]
            d = forecast(ForecastRequest(published=f, source="published", user=u, now=now, plan="8cpus:1d,idle:1d"))
            out.append(json.dumps(d, sort_keys=True).encode())
        got[layout] = out
    assert got[True] == got[False]
    if name == "inflow":
        assert b"typical end" in got[True][-1]


def test_a_pending_job_s_early_jobs_from_the_columns(layouts):
    """forecast.loaded's jobs listed before a pending job: the columns' subset charges as the list's."""
    from fscontrol.forecast import loaded
    from fscontrol.forecast import service as uf

    data, files = layouts
    head, _ = pub.read_published(files["plain", True], users=set(r["user"] for r in data["associations"] if r["user"]), ancestors=True)
    assert isinstance(head["running"]["cluster"], runsorted.SortedRunning)
    ids = sorted(e[2] for e in data["running"]["cluster"] if e[2] is not None)
    rows = uf.rows_from_published(data, next(r["user"] for r in data["associations"] if r["user"]))
    r = next(x for x in rows if x.user)
    total = float(data["total_usage"])
    for job in (None, ids[0], ids[-1] + 1, ids[len(ids) // 2]):
        a = loaded.build(r, rows, data, (), 1.0, total, job)
        b = loaded.build(r, rows, head, (), 1.0, total, job)
        if isinstance(a, str):
            assert a == b
            continue
        for k in (0, 1, 2, 5, 50, 500):
            assert a.proj.at(k) == b.proj.at(k) and a.share(k) == b.share(k)


def test_the_web_index_reads_the_old_layout_and_the_new(layouts):
    data, files = layouts
    u = next(iter(data["running"]["users"])).split("/", 1)[1]  # a user with running jobs
    got = [PublishedIndex().read(files["plain", x], users={u})[0] for x in (True, False)]
    assert {k: v for k, v in got[0].items() if k not in ("running", "associations")} == \
        {k: v for k, v in got[1].items() if k not in ("running", "associations")}
    strip = [[{k: v for k, v in r.items() if k != "run_at"} for r in g["associations"]] for g in got]
    assert strip[0] == strip[1]
    new, old = got[0]["running"], got[1]["running"]
    assert isinstance(new["cluster"], runsorted.SortedRunning) and isinstance(old["cluster"], list)
    assert new["cluster"] == old["cluster"]  # (compared as entries)
    assert new["users"] and all(old[p][k] == v for p in ("accounts", "users") for k, v in new[p].items())
    assert runsorted.KEY not in got[0]


def test_short_running_lines_are_skipped_whole(tmp_path):
    """No job runs: the running block's lines are short ('  "cluster": [],'), skipped all the same."""
    data = {"format": pub.FORMAT, "version": pub.VERSION, "cluster": "c", "taken_at": 1.0,
            "running": {"as_of": 1.0, "order": "job_id", "cluster": [], "cluster_grouped": False, "cluster_withheld": 0,
                        "accounts": {}, "users": {}, "users_published": True},
            "associations": [{"account": "root", "user": "", "parent": "", "depth": 0},
                             {"account": "a", "user": "", "parent": "root", "depth": 1},
                             {"account": "a", "user": "ann", "parent": "a", "depth": 2}]}
    f = tmp_path / "c.json"
    pub.write_published(data, f)
    for got in (pub.read_published(f, users={"ann"}, ancestors=True)[0], PublishedIndex().read(f, users={"ann"})[0]):
        assert got["running"]["cluster"] == [] and got["running"]["users"] == {} and got["running"]["accounts"] == {}
        assert [r["user"] for r in got["associations"]] == ["", "", "ann"]


def _damaged(src: Path, dst: Path, edit) -> Path:
    """A copy of the published file `src` with `edit(text) -> text` applied (the same length or not)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(edit(src.read_text()))
    return dst


def _run_at_edits(text: str) -> dict[str, str]:
    """A row's run_at moved by one byte, pointed at another association's list, made huge, negative,
    a float, null; one base64 character of the rates changed; r0 doubled; the count; a column gone."""
    import re

    rows = [json.loads(ln.strip().rstrip(",")) for ln in text.splitlines() if '"run_at"' in ln and ln.strip().startswith("{")]
    mine, other = rows[0], next(r for r in rows[1:] if r["run_at"] != rows[0]["run_at"])
    old = json.dumps(mine["run_at"], separators=(",", ":"))
    at = text.index(f'"run_at":{old}') if f'"run_at":{old}' in text else text.index(f'"run_at": {json.dumps(mine["run_at"])}')
    seg = text[at:text.index("]", at) + 1]

    def put(v) -> str:
        return text[:at] + seg.split(":", 1)[0] + ":" + json.dumps(v, separators=(",", ":")) + text[at + len(seg):]

    rates = re.search(r'"rates": "([^"]+)"', text).group(1)
    r0 = re.search(r'"r0": ([^,\n]+)', text).group(1)
    n = int(re.search(r'"running_sorted": \{\s*"format": 1,\s*"n": (\d+)', text).group(1))
    bad = rates[:4] + ("A" if rates[4] != "A" else "B") + rates[5:]
    return {
        "shifted": put([mine["run_at"][0] + 1, mine["run_at"][1]]),
        "shorter": put([mine["run_at"][0], mine["run_at"][1] - 1]),
        "another's": put(other["run_at"]),
        "huge": put([mine["run_at"][0], 999999999999]),
        "negative": put([-5, mine["run_at"][1]]),
        "float": put([1.5e300, mine["run_at"][1]]),
        "null": put([None, mine["run_at"][1]]),
        "rates": text.replace(rates, bad, 1),
        "r0": text.replace(f'"r0": {r0}', f'"r0": {json.dumps(float(r0) * 2)}', 1),
        "n": text.replace(f'"n": {n},', f'"n": {n + 1},', 1),
        "no r0": re.sub(r'\s*"r0": [^,\n]+,', "", text, count=1),
    }


def test_a_damaged_file_is_refused_in_one_line_never_read_as_another_users(layouts, tmp_path):
    """An outside review (2026-11-28): a run_at off by a byte, pointing at another association's
    list, or absurd, and a damaged running_sorted column crashed the web page (500) or gave a
    wrong forecast without a word. Each is now PublishedError (the command's one line, exit 6;
    the page's error), by either reader."""
    from fscontrol.export.publish import PublishedError
    from fscontrol.forecast.request import ForecastRequest, forecast
    from fscontrol.web.app import make_app

    data, files = layouts
    src = files["plain", True]
    users = {r["user"] for r in data["associations"] if r["user"]}
    now = float(data["taken_at"]) + 600
    edits = _run_at_edits(src.read_text())
    assert len(edits) == 11
    first = next(json.loads(ln.strip().rstrip(",")) for ln in src.read_text().splitlines()
                 if '"run_at"' in ln and ln.strip().startswith("{"))  # the row whose run_at is damaged
    under = {r["user"] for r in data["associations"] if r["user"] and r["account"] == first["account"]}
    assert under
    for name, text in edits.items():
        assert text != src.read_text(), name
        f = _damaged(src, tmp_path / name.replace(" ", "_").replace("'", "") / "tbcluster.json", lambda _t, text=text: text)
        for read in (lambda: pub.read_published(f, users=users, ancestors=True),
                     lambda: PublishedIndex().read(f, users=users)):
            with pytest.raises(PublishedError):
                read()
        for u in sorted(under):  # a user whose path reads that list (a column: every user)
            with pytest.raises(PublishedError):
                forecast(ForecastRequest(published=f, source="published", user=u, now=now))
        app = make_app(published=str(f), source="published", now=now)
        st: list = []
        body = b"".join(app({"REQUEST_METHOD": "GET", "PATH_INFO": "/", "QUERY_STRING": f"user={min(under)}"},
                            lambda s, h: st.append(s)))
        assert not st[0].startswith(("200", "500")) and b"unreadable" in body, (name, st, body[-300:])


def test_a_column_whose_times_left_sum_past_a_float_is_refused():
    """An outside review (issue #31 item 5): times left sorted, >= 0 and each finite can still sum
    to inf (1e308 twice); 4dd212b refused such a file, 5bff763 forecast from it. Refused again."""
    import base64
    from array import array

    m = json.loads(json.dumps(runsorted.meta(_entries(200, 4), True)))
    runsorted.from_meta(m)  # as publish wrote it: read
    lefts = array("d", base64.b64decode(m["lefts"]))
    lefts[-2:] = array("d", [1e308, 1e308])
    m["lefts"] = base64.b64encode(lefts.tobytes()).decode("ascii")
    with pytest.raises(ValueError, match="not what publish writes"):
        runsorted.from_meta(m)


@pytest.mark.parametrize("column", ["AAAA\u00e9AAA", 123, None, [1, 2], True])
def test_a_column_that_is_not_base64_text_says_what_base64_says(column):
    """The column read without the base64 module says what base64.b64decode(validate=True) says
    (the command's one line is the same as 4dd212b's)."""
    import base64

    try:
        base64.b64decode(column, validate=True)
    except (TypeError, ValueError) as e:
        want = f"running_sorted: damaged ({type(e).__name__}: {e})"
    m = json.loads(json.dumps(runsorted.meta(_entries(50, 5), True)))
    m["lefts"] = column
    with pytest.raises(ValueError) as got:
        runsorted.from_meta(m)
    assert str(got.value) == want
