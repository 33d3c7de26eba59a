"""`fscontrol forecast` with nothing published (issue #14): straight from a recorded sample
(`--source FOLDER`) or from the history $FSCONTROL_DB names, as a user following the README
tries it, with no `publish --out` step first. The check is the two-step way: collect, publish,
then forecast from the published file: the same forecast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.main import exit_code
from fscontrol.store import history as store
from fscontrol.export import publish as pub
from fscontrol.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
SERIES = ROOT / "samples" / "testbed-series"


@pytest.fixture(autouse=True)
def nothing_published(tmp_path, monkeypatch):
    """No site file: the default folder is an empty one, and no variable points elsewhere."""
    empty = tmp_path / "public-default"
    empty.mkdir()
    monkeypatch.setattr(pub, "DEFAULT_DIR", str(empty))
    for var in ("FSCONTROL_PUBLISHED", "FSCONTROL_DB", "FSCONTROL_CONFIG"):
        monkeypatch.delenv(var, raising=False)


def _forecast(capsys, *args: str) -> tuple[int, str, str]:
    code = exit_code(["forecast", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _two_steps(tmp_path: Path, samples: list[Path], *args: str, capsys) -> dict:
    tmp_path.mkdir(exist_ok=True)
    db = tmp_path / "h.db"
    for s in samples:
        assert CliRunner().invoke(app, ["collect", "--source", str(s), "--db", str(db)]).exit_code == 0
    out = tmp_path / "public"
    out.mkdir()
    r = CliRunner().invoke(app, ["publish", "--db", str(db), "--out", str(out / "c.json")])
    assert r.exit_code == 0, r.output
    code, stdout, err = _forecast(capsys, "--published", str(out), *args, "--json")
    assert code == 0, err
    return json.loads(stdout)


@pytest.mark.parametrize("sample,args", [
    ("testbed-series/09", ["-u", "carol", "-A", "chem", "--plan", "8cpus:10m"]),
    ("testbed-basic", ["-u", "alice"]),
    ("testbed-fairtree", ["-u", "dave"]),  # Fair Tree: the rank forecast
])
def test_forecast_straight_from_a_sample(sample, args, tmp_path, capsys):
    folder = ROOT / "samples" / sample
    code, stdout, err = _forecast(capsys, "--source", str(folder), *args, "--json")
    assert code == 0, err
    got = json.loads(stdout)
    want = _two_steps(tmp_path, [folder], "--source", str(folder), *args, capsys=capsys)
    assert got == want and got["associations"]
    code, text, err = _forecast(capsys, "--source", str(folder), *args)  # and the text a user reads
    assert code == 0 and text.startswith(("fair-share forecast for", "dave@flat on")) and "Traceback" not in err


def test_forecast_from_the_history_fscontrol_db_names(tmp_path, capsys, monkeypatch):
    """After the demo (its history in $FSCONTROL_DB): `--source published` takes the rows of the
    history's latest snapshot, as of when that recording was made."""
    samples = sorted(p for p in SERIES.iterdir() if p.is_dir())
    db = tmp_path / "demo.db"
    for s in samples:
        assert CliRunner().invoke(app, ["collect", "--source", str(s), "--db", str(db)]).exit_code == 0
    monkeypatch.setenv("FSCONTROL_DB", str(db))
    args = ["-u", "carol", "-A", "chem", "--plan", "8cpus:10m", "--source", "published"]
    code, stdout, err = _forecast(capsys, *args, "--json")
    assert code == 0, err
    got = json.loads(stdout)
    monkeypatch.delenv("FSCONTROL_DB")
    latest = store.load_snapshot(store.open_db(db, readonly=True))
    assert latest.source.startswith("recorded sample")
    want = _two_steps(tmp_path / "two", samples, *args, "--now", repr(latest.taken_at), capsys=capsys)
    assert got == want  # as of the recording: the same `now`


def test_what_is_published_still_wins_and_errors_stay_one_line(tmp_path, capsys, monkeypatch):
    folder = SERIES / "09"
    # an explicit --published that is missing: its error, not a forecast from the sample
    code, out, err = _forecast(capsys, "--published", str(tmp_path / "none.json"), "--source", str(folder), "-u", "carol")
    assert code == 6 and out == "" and err.startswith("fscontrol: error: no published snapshot yet") and len(err.splitlines()) == 1
    # a folder that is not a sample; a user the sample does not have
    code, out, err = _forecast(capsys, "--source", str(tmp_path), "-u", "carol")
    assert code == 6 and err.strip() == f"fscontrol: error: {tmp_path} is not a recorded sample (no meta.json)"
    code, out, err = _forecast(capsys, "--source", str(folder), "-u", "nobody")
    assert code == 6 and "unknown user 'nobody'" in err and len(err.splitlines()) == 1
    # nothing published, no sample, no history: the missing published file, as before
    code, out, err = _forecast(capsys, "-u", "carol", "--source", "published")
    assert code == 6 and "no published snapshot yet" in err
    # $FSCONTROL_DB that is not a history: one line, exit 4
    junk = tmp_path / "junk.db"
    junk.write_text("not a database\n")
    monkeypatch.setenv("FSCONTROL_DB", str(junk))
    code, out, err = _forecast(capsys, "-u", "carol", "--source", "published")
    assert code == 4 and err.startswith("fscontrol: error: history database") and len(err.splitlines()) == 1


def test_forecast_from_a_sample_and_status_agree_on_whether_the_total_is_held(tmp_path, capsys):
    """An outside tester (issue 30): at d=57 with a hybrid config that does not apply, status said
    alice@flat's F cannot halve (the agent does not hold the total) while `forecast --source`
    said "core-hours until F halves 12.1" and "the agent holds the halving": a recording has no
    agent's record, and the forecast took "unknown" for "held". Both now judge from the config."""
    import shutil

    folder = tmp_path / "s57"
    shutil.copytree(SERIES / "09", folder)
    conf = folder / "config.txt"
    conf.write_text("\n".join(f"{'FairShareDampeningFactor':<23} = 57" if ln.startswith("FairShareDampeningFactor") else ln
                              for ln in conf.read_text().splitlines()) + "\n")
    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.tbcluster]\ntarget_core_hours = 1\nmethod = "hybrid"\npadding_mode = "steady"\n')
    db = tmp_path / "h.db"
    r = CliRunner().invoke(app, ["tick", "--config", str(cfg), "--source", str(folder), "--db", str(db)])
    assert r.exit_code == 0, r.output
    st = json.loads(CliRunner().invoke(app, ["status", "--db", str(db), "--config", str(cfg), "--json"]).output)
    row = next(x for x in st["table"] if (x["user"], x["account"]) == ("alice", "flat"))
    code, stdout, err = _forecast(capsys, "--source", str(folder), "-u", "alice", "-A", "flat", "--config", str(cfg), "--json")
    assert code == 0, err
    got = next(a for a in json.loads(stdout)["associations"] if a["account"] == "flat")
    assert st["total_held"] is False
    if row["usage_to_halve_core_hours"] is None:
        assert got["core_hours_to_halve"] is None
    else:
        assert got["core_hours_to_halve"] == pytest.approx(row["usage_to_halve_core_hours"], rel=1e-6)
