"""fscontrol/slurm/versions.py: each release's entry, checked against the output recorded from that
release on the project's testbed (tests/data/captures/tb: 22.05.8, tb-24.11: 24.11.5, tb-26.05: 26.05.5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.slurm import parse
from fscontrol.slurm import versions as slurm_versions
from fscontrol.cli.app import app

DATA = Path(__file__).parent / "data" / "captures"
ROOT = Path(__file__).resolve().parent.parent
CAPTURES = {"22.05": DATA / "tb", "24.11": DATA / "tb-24.11", "26.05": DATA / "tb-26.05"}
by_release = pytest.mark.parametrize("name", sorted(CAPTURES))


def test_every_release_in_the_table_has_recordings():
    assert set(slurm_versions.RELEASES) == set(CAPTURES) == set(slurm_versions.TESTED)


@by_release
def test_the_recordings_are_of_that_release(name):
    rel = slurm_versions.RELEASES[name]
    cfg = parse.parse_config((CAPTURES[name] / "show_config.txt").read_text())
    assert cfg.slurm_version == rel.tested
    assert slurm_versions.release(cfg.slurm_version) is rel
    # the recordings made for this table name the version that printed them
    for f in ("sprio_long", "sacct_planned", "sacct_reserved"):
        assert f"from slurm-wlm {rel.tested}," in (CAPTURES[name] / f"{f}.cmd").read_text()


@by_release
def test_sprio_long_columns(name):
    header = (CAPTURES[name] / "sprio_long.txt").read_text().splitlines()[0].split()
    assert tuple(header) == slurm_versions.RELEASES[name].sprio_long_columns
    # fscontrol's own -o prints the same header on both
    assert (CAPTURES[name] / "sprio_fmt.txt").read_text().splitlines()[0] == "JOBID|USER|PARTITION|PRIORITY|FAIRSHARE"


@by_release
def test_sacct_planned_field(name):
    rel = slurm_versions.RELEASES[name]
    other = {"Reserved": "Planned", "Planned": "Reserved"}[rel.sacct_planned_field]
    assert (CAPTURES[name] / f"sacct_{rel.sacct_planned_field.lower()}.txt").read_text().startswith(
        f"JobID|{rel.sacct_planned_field}\n")
    assert (CAPTURES[name] / f"sacct_{other.lower()}.txt").read_text().strip() == \
        f'sacct: error: Invalid field requested: "{other}"'
    assert rel.sacct_planned_field not in parse.SACCT_FIELDS.split(",") and other not in parse.SACCT_FIELDS.split(",")


@by_release
def test_jobs_that_never_started(name):
    rel = slurm_versions.RELEASES[name]
    text = (CAPTURES[name] / "sacct_fmt.txt").read_text()
    raw = [line.split("|") for line in text.splitlines()[1:] if line]
    pending = [f for f in raw if f[5] == "PENDING"]
    assert pending and all(f[7] == "" for f in pending)  # no AllocTRES
    if rel.pending_alloc_cpus == "zero":
        assert all(f[6] == "0" for f in pending)
    else:
        assert all(int(f[6]) >= 1 for f in pending)
    refused = [f for f in raw if f[5] == "FAILED" and f[6] == "0" and f[7] == "" and f[10] == f[11] == f[12]]
    assert bool(refused) == rel.refused_submission_in_sacct
    # charged nothing either way
    jobs = {j.job_id: j for j in parse.parse_sacct(text)}
    for f in pending + refused:
        assert jobs[f[0]].billing == 0 and jobs[f[0]].elapsed_s == 0


@by_release
def test_reconfigure(name):
    """scripts/record-reconfigure.py: a decay pass at +0, `scontrol reconfigure` at +20 s."""
    rel = slurm_versions.RELEASES[name]
    lines = (CAPTURES[name] / "reconfigure.txt").read_text().splitlines()
    assert lines[1].startswith(f"SLURM_VERSION {rel.tested}, PriorityCalcPeriod 00:01:00")
    before = dict(kv.rsplit(" ", 1) for kv in lines[2].split("; ")[1:])
    after = dict(kv.rsplit(" ", 1) for kv in lines[4].removeprefix("after it: ").split("; "))
    assert lines[3] == "scontrol reconfigure at +20 s"
    restarted = before["BOOT_TIME"] != after["BOOT_TIME"]
    assert restarted == (before["slurmctld pid"] != after["slurmctld pid"]) == rel.reconfigure_restarts_slurmctld
    # a restart runs a pass at once and the passes keep its phase; otherwise they keep their own
    assert lines[5] == ("next decay passes at +20 s and +80 s" if restarted else "next decay passes at +60 s and +120 s")


@by_release
def test_show_config_json(name):
    """`scontrol --json show config`: JSON on 26.05, the text on 24.11, refused by 22.05."""
    rel = slurm_versions.RELEASES[name]
    out = (CAPTURES[name] / "show_config_json.txt").read_text()
    cmd = (CAPTURES[name] / "show_config_json.cmd").read_text()
    assert f"from slurm-wlm {rel.tested}," in cmd
    kind = "refused" if "(exit 1)" in cmd else "json" if out.lstrip().startswith("{") else "text"
    assert kind == rel.show_config_json
    if kind != "refused":
        assert parse.parse_config(out).slurm_version == rel.tested


def test_sshare_fairshare_column_after_a_runtime_d_26_05():
    """26.05's sshare prints slurmctld's F, with the d set at run time, from the next decay pass on
    (before it, the last pass's F); 22.05/24.11 compute it in the client with slurm.conf's d
    (tests/test_integration_fairshare.py shows both on the testbed)."""
    from fscontrol.model import fairshare

    assert [r for r in slurm_versions.RELEASES.values() if r.sshare_fairshare_runtime_d] == [slurm_versions.RELEASES["26.05"]]
    d = CAPTURES["26.05"]
    assert "fsdampeningfactor 3" in (d / "sshare_d3.cmd").read_text()
    rows = [r for r in parse.parse_sshare((d / "sshare_d3.txt").read_text()) if r.is_user and r.effective_usage > 0.01]
    # the probe jobs' accounts, from the same testbed's queue (the same jobs, recorded minutes before)
    account = {j.job_id: j.account for j in parse.parse_squeue((d / "squeue_long.txt").read_text())}
    prio = {(account[p.job_id], p.user): p.fairshare_norm for p in parse.parse_sprio((d / "sprio_d3.txt").read_text())}
    assert len(prio) >= 7
    assert len(rows) >= 5
    # before the next pass, the last pass's F (computed with d=1)
    before = {r.key: r for r in parse.parse_sshare((d / "sshare_d3_before_pass.txt").read_text())}
    b = before[("flat", "alice")]
    assert abs(b.fairshare - fairshare.fairshare_factor(b.effective_usage, b.norm_shares, 1)) < 5e-6
    for r in rows:
        f3 = fairshare.fairshare_factor(r.effective_usage, r.norm_shares, 3)
        assert abs(r.fairshare - f3) < 5e-6, r
        assert abs(r.fairshare - fairshare.fairshare_factor(r.effective_usage, r.norm_shares, 1)) > 1e-3
        assert abs(prio[r.key] - f3) < 1e-5  # what schedules


def test_release_of():
    assert slurm_versions.release_of("24.11.5") == "24.11"
    assert slurm_versions.release_of("slurm-wlm 24.11.5") == "24.11"  # sinfo --version
    assert slurm_versions.release_of("slurm 22.05.8") == "22.05"
    assert slurm_versions.release_of("25.05") == "25.05"
    assert slurm_versions.release_of("unknown") is None and slurm_versions.release_of("") is None
    assert slurm_versions.release("23.11.10") is None


def _status_warnings(tmp_path, version: str | None) -> list[str]:
    sample = tmp_path / "sample"
    shutil.copytree(ROOT / "samples" / "testbed-basic", sample)
    if version is not None:
        cfg = sample / "config.txt"
        cfg.write_text(cfg.read_text().replace("SLURM_VERSION           = 22.05.8", f"SLURM_VERSION           = {version}"))
    db = tmp_path / "h.db"
    r = CliRunner().invoke(app, ["collect", "--source", str(sample), "--db", str(db)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["status", "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["warnings"]


def test_status_warns_on_an_untested_release_only(tmp_path):
    assert not any("tested on" in w for w in _status_warnings(tmp_path / "a", None))
    assert not any("tested on" in w for w in _status_warnings(tmp_path / "b", "24.11.5"))
    assert not any("tested on" in w for w in _status_warnings(tmp_path / "d", "26.05.5"))
    warned = [w for w in _status_warnings(tmp_path / "c", "25.05.2") if "tested on" in w]
    assert warned == ["Slurm 25.05.2: fscontrol is tested on Slurm 22.05, 24.11 and 26.05 only; "
                      "its readings of this release's output are unchecked."]
