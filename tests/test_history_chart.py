"""`fscontrol history --png / --html`: the record drawn over time (fscontrol/report/historychart.py).

A history built by real control ticks on the recorded series, plus the gate's holds and a failed
tick written as the agent writes them; the files are written, of a bounded size, the HTML
self-contained and showing the same values as `history --json`."""

from __future__ import annotations

import json
import re
import struct
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.agent import config
from fscontrol.report import historychart
from fscontrol.agent import pipeline
from fscontrol.store import history as store
from fscontrol.cli.app import app
from fscontrol.slurm.source import RecordedSlurm

SERIES = Path(__file__).resolve().parent.parent / "samples" / "testbed-series"


@pytest.fixture(scope="module")
def history_db(tmp_path_factory) -> tuple[Path, str]:
    db_path = tmp_path_factory.mktemp("hc") / "h.db"
    db = store.open_db(db_path)
    cfg = config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 2, "method": "hybrid", "padding_mode": "steady"}}})
    for f in sorted(p for p in SERIES.iterdir() if p.is_dir()):
        pipeline.control_tick(RecordedSlurm(f), db, cfg, apply=False)
    first = min(r[0] for r in db.execute("SELECT decided_at FROM decisions").fetchall())
    now = time.time()
    with store.transaction(db):  # the gate's record, as its ticks write it: 3 holds, 1 release, one failed tick
        for i, (kind, status) in enumerate([("hold", "ok"), ("hold", "ok"), ("nice", "ok"), ("release", "ok"), ("hold", "failed")]):
            db.execute("INSERT INTO actions (cluster, stage, kind, argv, reason, job_id, status, planned_at) "
                       "VALUES ('tbcluster', 'gate', ?, '[]', 'r', ?, ?, ?)", [kind, str(100 + i), status, now - 600 + i])
        db.execute("INSERT INTO ticks (cluster, started_at, finished_at, status, error, stage) "
                   "VALUES ('tbcluster', ?, ?, 'failed', 'sshare timed out', 'gate')", [now - 300, now - 299])
    db.close()
    return db_path, str(int(first - 3600))


def _run(*args: str):
    return CliRunner().invoke(app, ["history", *args])


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


class _Tables(HTMLParser):
    """Every <td data-key data-value> by table id; every src/href attribute; tags seen."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[dict]] = {}
        self.table = None
        self.urls: list[str] = []
        self.tags: set[str] = set()
        self.body = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        self.urls += [v for k, v in attrs if k in ("src", "href", "xlink:href", "action") and v]
        if tag == "table":
            self.table = self.tables.setdefault(a.get("id", ""), [])
        elif tag == "tbody":
            self.body = True
        elif tag == "tr" and self.table is not None and self.body:
            self.table.append({})
        elif tag == "td" and self.table is not None:
            self.table[-1][a["data-key"]] = a["data-value"]

    def handle_endtag(self, tag):
        if tag == "table":
            self.table = None
        elif tag == "tbody":
            self.body = False


def test_html_matches_the_json(history_db, tmp_path):
    db_path, since = history_db
    r = _run("--db", str(db_path), "--since", since, "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    tl = data["timeline"]
    assert sum(b["holds"] for b in tl["buckets"]) == 3 and sum(b["releases"] for b in tl["buckets"]) == 1  # the failed hold is not
    assert sum(b["ticks_failed"] for b in tl["buckets"]) == 1
    assert sum(b["ticks_ok"] for b in tl["buckets"]) == len(data["decisions"]) == 10
    assert len(tl["buckets"]) <= historychart.BUCKETS + 1

    # the page and the JSON from one run (one "now": the same time buckets)
    page = tmp_path / "h.html"
    r = _run("--db", str(db_path), "--since", since, "--json", "--html", str(page))
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    tl = data["timeline"]
    text = page.read_text()
    assert 5_000 < len(text) < 300_000
    # self-contained: no URL at all (no CDN, fonts, images), no script
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", text, re.I)
    p = _Tables()
    p.feed(text)
    assert p.urls == [] and "script" not in p.tags and "link" not in p.tags and "img" not in p.tags
    assert text.count("<svg") == 5
    # the decisions table: the JSON's decisions, value for value
    rows = p.tables["decisions"]
    assert len(rows) == len(data["decisions"])
    for row, d in zip(rows, data["decisions"]):
        assert row["time"] == d["time"]
        for k in ("target_core_hours", "halving_slurm_core_hours", "halving_core_hours", "damping_now", "damping_target",
                  "padding_core_hours"):
            assert (row[k] == "" and d[k] is None) or float(row[k]) == d[k], (k, row[k], d[k])
    buckets = p.tables["buckets"]
    assert [{k: (v if k == "start" else int(v)) for k, v in b.items()} for b in buckets] == [
        b for b in tl["buckets"]]
    # the summary shows the failed tick and its error
    assert "sshare timed out" in text and "<dt>failed ticks</dt><dd>1</dd>" in text


@pytest.mark.plot
def test_png_with_the_json_and_the_text(history_db, tmp_path):
    db_path, since = history_db
    png, page = tmp_path / "h.png", tmp_path / "h.html"
    r = _run("--db", str(db_path), "--since", since, "--json", "--png", str(png), "--html", str(page))
    assert r.exit_code == 0 and json.loads(r.output)["decisions"] and page.stat().st_size > 5_000
    r = _run("--db", str(db_path), "--since", since, "--png", str(png))
    assert r.exit_code == 0 and "10 decisions" in r.output  # the text report still prints
    assert _png_size(png) == (1000, 1100)  # fixed: 10 x 11 inches at 100 dpi
    assert 20_000 < png.stat().st_size < 1_000_000


def test_missing_output_folder_is_one_error_line(history_db, tmp_path):
    db_path, since = history_db
    for opt in ("--png", "--html"):
        out = tmp_path / "no-such-folder" / "h.out"
        r = CliRunner().invoke(app, ["history", "--db", str(db_path), "--since", since, opt, str(out)])
        assert r.exit_code == 1
        lines = r.output.strip().splitlines()
        assert lines == [f"fscontrol: error: cannot write the {opt} file {out}: folder {out.parent} does not exist"]
        assert not out.parent.exists()
    # a bad --html fails before the --png is drawn
    good = tmp_path / "h.png"
    r = _run("--db", str(db_path), "--since", since, "--png", str(good), "--html", str(tmp_path / "nope" / "h.html"))
    assert r.exit_code == 1 and not good.exists()


def _long_history(tmp_path):
    """A week at one decision a minute: (database, number of decisions)."""
    db_path = tmp_path / "big.db"
    db = store.open_db(db_path)
    now = time.time()
    n = 7 * 1440
    t0 = now - n * 60 + 30  # all inside the last 7 days
    with store.transaction(db):
        db.conn.executemany(
            "INSERT INTO decisions (cluster, snapshot_id, decided_at, method, apply, advise_only, u_star, d_now, d_target, w_now, "
            "h_now, h_slurm) VALUES ('big', 1, ?, 'hybrid', 1, 0, 360000.0, ?, ?, ?, ?, ?)",
            [(t0 + i * 60, 100 + i % 7, 100 + i % 5, 3600.0 * (i % 50), 360000.0 * (1 + (i % 13) / 1000), 360000.0 * (1 - (i % 11) / 1000))
             for i in range(n)])
        db.conn.executemany("INSERT INTO ticks (cluster, started_at, finished_at, status, error, stage) VALUES ('big', ?, ?, ?, ?, 'control')",
                            [(t0 + i * 60, t0 + i * 60 + 1, "failed" if i % 1000 == 0 else "ok", "x" if i % 1000 == 0 else None)
                             for i in range(n)])
    db.close()
    return db_path, n


def test_a_long_history_is_thinned_in_the_html(tmp_path):
    """A week at one decision a minute: the HTML draws at most HTML_POINTS decisions a line, every
    one of them the JSON's, and stays small."""
    db_path, n = _long_history(tmp_path)
    page = tmp_path / "big.html"
    r = _run("--db", str(db_path), "-M", "big", "--since", "7d", "--json", "--html", str(page))
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert len(data["decisions"]) == n
    p = _Tables()
    p.feed(page.read_text())
    rows = p.tables["decisions"]
    assert len(rows) == historychart.HTML_POINTS
    by_time = {d["time"]: d for d in data["decisions"]}
    for row in rows:
        d = by_time[row["time"]]
        assert float(row["halving_slurm_core_hours"]) == d["halving_slurm_core_hours"] and int(row["damping_now"]) == d["damping_now"]
    assert rows[-1]["time"] == data["decisions"][-1]["time"]
    assert page.stat().st_size < 400_000
    assert sum(b["ticks_failed"] for b in data["timeline"]["buckets"]) == sum(1 for i in range(n) if i % 1000 == 0)


@pytest.mark.plot
def test_a_long_history_keeps_the_png_size(tmp_path):
    db_path, _ = _long_history(tmp_path)
    png = tmp_path / "big.png"
    r = _run("--db", str(db_path), "-M", "big", "--since", "7d", "--png", str(png))
    assert r.exit_code == 0, r.output
    assert _png_size(png) == (1000, 1100) and png.stat().st_size < 1_000_000


def test_lines_break_across_a_hole_in_the_record():
    times = [0.0, 60.0, 120.0, 180.0, 3000.0, 3060.0]
    assert historychart.gaps(times) == [(180.0, 3000.0)]
    pts = historychart._broken([(t, 1.0) for t in times], historychart.gaps(times))
    assert pts[4] == (181.0, None) and len(pts) == len(times) + 1
    html = historychart._panel("x", 0, 3060, [{"label": "l", "cls": "pad", "points": pts}])
    assert html.count("<polyline") == 2


@pytest.mark.plot
def test_a_history_of_collects_only_draws_without_warnings(tmp_path):
    """After the demo (collects, no control decision yet) the README's `history --png` draws the
    empty panels without matplotlib's "No artists with labels found to put in legend" warnings."""
    import warnings

    db_path = tmp_path / "h.db"
    for f in sorted(p for p in SERIES.iterdir() if p.is_dir()):
        assert CliRunner().invoke(app, ["collect", "--source", str(f), "--db", str(db_path)]).exit_code == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = _run("--db", str(db_path), "--since", "3650d", "--png", str(tmp_path / "h.png"))
    assert r.exit_code == 0, r.output
    assert (tmp_path / "h.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
