"""`fscontrol capture` never takes over a folder it did not make, refuses a --history period that
reaches before 1970 in one line, and a failed capture leaves nothing behind (written beside the
folder, renamed at the end). The Slurm side is a recorded sample (RecordedSlurm) with `run`."""

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.errors import ConfigError, SlurmCommandError
from fscontrol.slurm import source
from fscontrol.slurm.source import RecordedSlurm

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "testbed-basic"


class _Recorded(RecordedSlurm):
    """The recorded sample as a capture's source; `run` (jobs/nodes for --history) replays the
    sample's sacct output, or fails like a Slurm command that could not run."""

    def __init__(self, folder, fail_run=False):
        super().__init__(folder)
        self.fail_run = fail_run

    def run(self, argv):
        if self.fail_run:
            raise SlurmCommandError(f"{argv[0]} failed: slurm_load_jobs error: Unable to contact slurm controller")
        return self._get("sacct")


def _tree(d: Path) -> dict:
    return {str(p.relative_to(d)): (p.stat().st_mode & 0o777, p.read_bytes() if p.is_file() else None)
            for p in sorted(d.rglob("*"))} | {".": (d.stat().st_mode & 0o777, None)}


def test_a_non_empty_folder_that_is_not_a_capture_is_refused_and_untouched(tmp_path):
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    os.chmod(d, 0o755)
    (d / "data.txt").write_text("mine\n")
    (d / "sshare.txt").write_text("also mine\n")
    before = _tree(d)
    r = CliRunner().invoke(app, ["capture", str(d), "--history", "1h"])
    assert r.exit_code == 2, r.output
    assert "not an earlier capture" in r.output and len(r.output.strip().splitlines()) == 1
    assert _tree(d) == before
    assert sorted(os.listdir(tmp_path)) == ["d"]  # no temporary folder left beside it


def test_an_earlier_capture_is_refused_without_force_and_replaced_with_it(tmp_path):
    d = tmp_path / "cap"
    source.capture(_Recorded(SAMPLE), d, history_s=3600)
    first = json.loads((d / "meta.json").read_text())
    before = _tree(d)
    with pytest.raises(ConfigError, match="already holds a capture"):
        source.capture(_Recorded(SAMPLE), d, history_s=3600, note="second")
    assert _tree(d) == before
    r = CliRunner().invoke(app, ["capture", str(d)])
    assert r.exit_code == 2 and "--force" in r.output
    source.capture(_Recorded(SAMPLE), d, note="second", force=True)
    meta = json.loads((d / "meta.json").read_text())
    assert meta["note"] == "second" and "history_window" in first and "history_window" not in meta
    assert not (d / "jobs.txt").exists()  # replaced whole: the first capture's extra files are gone
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert sorted(os.listdir(tmp_path)) == ["cap"]
    # an earlier capture holding someone's other files is not replaced even with --force
    (d / "notes.md").write_text("mine\n")
    with pytest.raises(ConfigError, match="other files"):
        source.capture(_Recorded(SAMPLE), d, force=True)
    assert (d / "notes.md").read_text() == "mine\n"


def test_an_empty_folder_is_used(tmp_path):
    d = tmp_path / "e"
    d.mkdir()
    meta = source.capture(_Recorded(SAMPLE), d)
    assert (d / "meta.json").is_file() and meta["commands"].keys() >= {"sshare", "sacct"}
    assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_a_history_reaching_before_1970_is_one_line_and_leaves_no_folder(tmp_path):
    d = tmp_path / "far"
    r = CliRunner().invoke(app, ["capture", str(d), "--history", "1000000d"])
    assert r.exit_code == 2, r.output
    assert "before 1970" in r.output and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert not d.exists() and os.listdir(tmp_path) == []


def test_a_failed_capture_leaves_no_folder(tmp_path):
    d = tmp_path / "new" / "cap"
    with pytest.raises(SlurmCommandError):
        source.capture(_Recorded(SAMPLE, fail_run=True), d, history_s=3600)
    assert not d.exists() and os.listdir(tmp_path / "new") == []
    # and an earlier capture is kept as it was when the new one fails
    good = tmp_path / "good"
    source.capture(_Recorded(SAMPLE), good)
    before = _tree(good)
    with pytest.raises(SlurmCommandError):
        source.capture(_Recorded(SAMPLE, fail_run=True), good, history_s=3600, force=True)
    assert _tree(good) == before and sorted(os.listdir(tmp_path)) == ["good", "new"]
