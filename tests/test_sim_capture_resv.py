"""A capture's advance reservations (issue #32 item 2): `capture --history` records `scontrol -o
show reservation` (reservations.txt); the replay reads those that reach into its window and says
it does not model them, naming them (tests/test_integration_sim_fidelity.py records one from the
real slurmctld)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.sim.history import read_history

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "fidelity" / "seed23-classic"


def _with_reservations(tmp_path: Path, lines: list[str]) -> Path:
    cap = tmp_path / "cap"
    shutil.copytree(SAMPLE, cap)
    meta = json.loads((cap / "meta.json").read_text())
    meta["commands"]["reservations"] = {"argv": ["scontrol", "-o", "show", "reservation"],
                                        "started_at": meta["history_window"][1], "finished_at": meta["history_window"][1]}
    (cap / "meta.json").write_text(json.dumps(meta))
    (cap / "reservations.txt").write_text("\n".join(lines) + "\n")
    return cap


def _line(name: str, start: float, end: float, cpus: int = 32) -> str:
    return (f"ReservationName={name} StartTime={int(start)} EndTime={int(end)} Duration=00:10:00 Nodes=tbnode1 "
            f"NodeCnt=1 CoreCnt={cpus} Features=(null) PartitionName=normal Flags= TRES=cpu={cpus} Users=alice "
            "Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a")


def test_the_replay_names_the_reservations_it_does_not_model(tmp_path):
    window = json.loads((SAMPLE / "meta.json").read_text())["history_window"]
    cap = _with_reservations(tmp_path, [
        _line("before", window[0] - 7200, window[0] - 3600),  # ended before the window: not the replay's
        _line("during", window[0] + 60, window[0] + 660),
        _line("after", window[1] + 600, window[1] + 1200, cpus=128),
    ])
    w = read_history(cap)
    assert [(r["name"], r["cpus"]) for r in w.meta["reservations"]] == [("during", 32), ("after", 128)]
    assert w.meta["reservations"][0]["start"] == float(int(window[0] + 60))  # epoch seconds, as captured
    r = CliRunner().invoke(app, ["simulate", str(cap), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert ("note: the capture holds 2 advance reservation(s) (during, after): the replay does not model them"
            in r.output), r.output


def test_no_reservation_no_note(tmp_path):
    cap = _with_reservations(tmp_path, ["No reservations in the system"])
    assert read_history(cap).meta["reservations"] == []
    r = CliRunner().invoke(app, ["simulate", str(cap), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "advance reservation" not in r.output
    r = CliRunner().invoke(app, ["simulate", str(SAMPLE), "--no-progress"])  # a capture from before: no file
    assert r.exit_code == 0 and "advance reservation" not in r.output, r.output
