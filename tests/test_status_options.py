"""`fscontrol status` with Slurm's conventions: -P, -n, -o/--format, -l, --helpformat, --tree, on the
recorded samples (regenerate the golden files: FSCONTROL_REGEN_GOLDEN=1). Beside each golden file,
a check that does not go through fscontrol's table code: the real sshare capture's own rows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.report import status as rstatus
from fscontrol.report import table as rtable
from fscontrol.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"
BASIC = ROOT / "samples" / "testbed-basic"
AGAVE = ROOT / "samples" / "synthetic-agave"


def _check(name: str, got: str) -> None:
    path = GOLDEN / name
    if os.environ.get("FSCONTROL_REGEN_GOLDEN") == "1":
        path.write_text(got)
    assert got == path.read_text()


def _history(tmp_path: Path, sample: Path) -> Path:
    db = tmp_path / f"{sample.name}.db"
    r = CliRunner().invoke(app, ["collect", "--source", str(sample), "--db", str(db)])
    assert r.exit_code == 0, r.output
    return db


@pytest.fixture()
def basic(tmp_path):
    return _history(tmp_path, BASIC)


def _status(db: Path, *args: str):
    return CliRunner().invoke(app, ["status", "--db", str(db), *args])


def _sshare_rows(sample: Path) -> list[list[str]]:
    """The capture's `sshare -a -l -P` rows, split, header left out."""
    return [ln.split("|") for ln in (sample / "sshare.txt").read_text().splitlines()[1:] if ln]


# ---------------------------------------------------------------------------- -P and -l
def test_parsable_long_golden(basic):
    r = _status(basic, "-P", "-l")
    assert r.exit_code == 0, r.output
    _check("status_testbed_basic_long.psv", r.output)
    lines = r.output.splitlines()
    assert lines[0] == "|".join(rstatus.LONG_FIELDS)
    # beside the golden file: every row's sshare figures are the capture's own, field for field
    # (sshare's RawShares, RawUsage, NormUsage, EffectvUsage, FairShare), no padding anywhere
    sshare = {(row[0].strip(), row[1]): row for row in _sshare_rows(BASIC)}
    cols = lines[0].split("|")
    for line in lines[1:]:
        got = dict(zip(cols, line.split("|")))
        assert len(line.split("|")) == len(cols) and line == line.strip()
        acct, user, raw_shares, _, raw_usage, norm_usage, eff, fs = sshare[(got["Account"], got["User"])][:8]
        assert (got["RawShares"], got["RawUsage"], got["NormUsage"], got["EffectvUsage"], got["FairShare"]) == \
            (raw_shares, raw_usage, norm_usage, eff, fs)
        assert float(got["Usage"]) == pytest.approx(int(raw_usage) / 3600, abs=5e-4)  # no thousands separator with -P
    # carol@chem by hand: d = 1, NormShares 0.2 (1 of 1 share under chem, 1 of 2 under science,
    # 2 of 5 under root), F = 2^(-0.329286 / 0.2)
    carol = dict(zip(cols, next(ln for ln in lines if ln.startswith("carol|chem|")).split("|")))
    assert carol["NormShares"] == "0.200000" and float(carol["F"]) == pytest.approx(2 ** (-0.329286 / 0.2), abs=1e-6)
    assert carol["ImpliedHalving"] == ""  # undefined: -P leaves the field empty, the table prints "-"


def test_noheader_is_the_table_without_its_two_header_lines(basic):
    full = _status(basic).output.splitlines()
    start = next(i for i, ln in enumerate(full) if ln.startswith("user "))
    rows = full[start + 2: full.index("", start)]
    r = _status(basic, "-n")
    assert r.exit_code == 0 and r.output.splitlines() == rows
    p = _status(basic, "-P", "-n").output.splitlines()
    assert p == _status(basic, "-P").output.splitlines()[1:] and len(p) == len(rows) == 8


def test_format_picks_fields_in_any_case_and_wins_over_long(basic):
    r = _status(basic, "-P", "-o", "user,ACCOUNT,f,RawUsage", "-l")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "User|Account|F|RawUsage"
    assert lines[1] == "alice|flat|0.030367|1673"
    plain = _status(basic, "--format", "User,F").output
    assert re.search(r"^user +F$", plain, re.M) and "cluster:" in plain  # plain -o keeps the report around the table


def test_unknown_field_is_one_clear_error_listing_the_valid_ones(basic):
    r = _status(basic, "-o", "user,Fairshare,bogus")
    assert r.exit_code == 2
    assert r.output.count("\n") == 1
    assert r.output.startswith("fscontrol: error: --format: unknown field 'bogus'; valid fields: User, Account,")
    assert all(f.name in r.output for f in rstatus.STATUS_FIELDS)


def test_helpformat_lists_every_field():
    r = CliRunner().invoke(app, ["status", "--helpformat"])
    assert r.exit_code == 0
    assert [ln.split()[0] for ln in r.output.splitlines()] == [f.name for f in rstatus.STATUS_FIELDS]


def test_json_ignores_the_table_options(basic):
    a = json.loads(_status(basic, "--json").output)
    b = json.loads(_status(basic, "--json", "-P", "-n", "-o", "user", "-l").output)
    assert a == b and not a["tree"] and all(row["user"] for row in a["table"])


# ---------------------------------------------------------------------------- --tree
def test_tree_golden(basic):
    r = _status(basic, "--tree", "-l")
    assert r.exit_code == 0, r.output
    _check("status_tree_testbed_basic.txt", r.output)


def test_tree_is_sshares_own_tree_on_the_real_capture(basic):
    """Beside the golden file: the Account and User columns of `--tree -P` are, row for row, those
    of the recorded `sshare -a -l -P` (same order, same indentation), its root user left out as
    in the flat table; the numbers sshare printed are passed through."""
    lines = _status(basic, "--tree", "-P", "-o", "Account,User,RawShares,RawUsage,EffectvUsage,FairShare").output.splitlines()
    assert lines[0] == "Account|User|RawShares|RawUsage|EffectvUsage|FairShare"
    want = [[row[0], row[1], row[2], row[4], row[6], row[7]] for row in _sshare_rows(BASIC) if row[1] != "root"]
    assert [ln.split("|") for ln in lines[1:]] == want


def test_tree_on_the_large_sample_keeps_sshares_order(tmp_path):
    db = _history(tmp_path, AGAVE)
    lines = _status(db, "--tree", "-P", "-n", "-o", "Account,User").output.splitlines()
    want = ["|".join(row[:2]) for row in _sshare_rows(AGAVE) if row[1] != "root"]
    assert lines == want and len(lines) == 2670


def test_tree_with_filters(basic):
    sub = _status(basic, "--tree", "-P", "-n", "-A", "science", "-o", "Account,User").output.splitlines()
    assert sub == [" science|", "  chem|", "   chem|carol", "  physics|", "   physics|alice", "   physics|bob"]
    carol = _status(basic, "--tree", "-P", "-n", "-u", "carol", "-o", "Account,User").output.splitlines()
    assert carol == ["root|", " flat|", "  flat|carol", " science|", "  chem|", "   chem|carol"]
    data = json.loads(_status(basic, "--tree", "--json", "-u", "carol").output)
    assert data["tree"] and [(r["account"], r["user"], r["depth"]) for r in data["table"]][:3] == \
        [("root", "", 0), ("flat", "", 1), ("flat", "carol", 2)]


# ---------------------------------------------------------------------------- the table's layout
def test_plain_table_is_tabulates_simple_layout(tmp_path):
    """The table is no longer built by tabulate (too slow at 100,000 rows); on 2,500 users, with
    the default and the long fields, it is still exactly tabulate's output."""
    from tabulate import tabulate

    from fscontrol.store import history as store

    db = _history(tmp_path, AGAVE)
    data = rstatus.status_data(store.load_snapshot(store.open_db(db, readonly=True)))
    for fields in (rstatus.status_fields(), rstatus.status_fields(long=True)):
        cells = [[("-" if r[f.key] is None else (format(r[f.key], f.spec) if f.spec else r[f.key])) for f in fields]
                 for r in data["table"]]
        want = tabulate(cells, headers=[f.header for f in fields], disable_numparse=True,
                        colalign=["right" if f.right else "left" for f in fields])
        assert "\n".join(rtable.table_lines(data["table"], fields)) == want


def test_a_reader_that_stops_early_ends_the_output_quietly(tmp_path):
    db = _history(tmp_path, AGAVE)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run(f"{sys.executable} -m fscontrol status -P --db {db} | head -n 2", shell=True, cwd=ROOT,
                       capture_output=True, text=True, env=env)
    assert p.stdout.splitlines()[0].startswith("User|Account|") and len(p.stdout.splitlines()) == 2
    assert p.stderr == ""


# ---------------------------------------------------------------------------- options elsewhere
def test_metrics_and_publish_write_files_with_out_only(basic, tmp_path):
    assert CliRunner().invoke(app, ["metrics", "--db", str(basic), "-o", str(tmp_path / "m.prom")]).exit_code == 2
    r = CliRunner().invoke(app, ["metrics", "--db", str(basic), "--out", str(tmp_path / "m.prom")])
    assert r.exit_code == 0 and (tmp_path / "m.prom").is_file()
    assert CliRunner().invoke(app, ["publish", "--db", str(basic), "-o", str(tmp_path / "p.json")]).exit_code == 2


def test_a_number_option_that_is_not_a_number(basic):
    r = _status(basic, "--target", "abc")
    assert r.exit_code == 2 and "Invalid value for '--target': 'abc' is not a valid float." in r.output


# ---------------------------------------------------------------------------- start-up
HEAVY = {"numpy", "scipy", "sqlite_utils", "pydantic", "tabulate", "apscheduler", "matplotlib", "pandas"}


def _imported(args: list[str]) -> set[str]:
    code = ("import sys, runpy; sys.argv = ['fscontrol'] + sys.argv[1:]\n"
            "try:\n    runpy.run_module('fscontrol', run_name='__main__')\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "sys.stderr.write(repr(sorted({m.split('.')[0] for m in sys.modules})))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return set(eval(p.stderr.strip().splitlines()[-1]))  # noqa: S307 - our own repr of a list of names


def test_status_collect_and_tick_import_only_what_they_use(tmp_path):
    db = tmp_path / "h.db"
    assert not _imported(["collect", "--source", str(BASIC), "--db", str(db)]) & HEAVY - {"sqlite_utils", "numpy"}  # a new history: migrations
    assert not _imported(["collect", "--source", str(BASIC), "--db", str(db)]) & HEAVY
    assert not _imported(["status", "--db", str(db)]) & HEAVY
    assert not _imported(["status", "--db", str(db), "--tree", "-P"]) & HEAVY
    for _ in range(2):  # the first tick tries the fit (too little history: before numpy), the next is not due
        assert not _imported(["tick", "--defaults", "--source", str(BASIC), "--db", str(db)]) & HEAVY
