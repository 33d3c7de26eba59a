"""`fscontrol forecast` and `fscontrol publish`: the user's fair-share forecast.

Golden output (regenerate: FSCONTROL_REGEN_GOLDEN=1) for Yalim's figure 3 campaign (PEARC'20;
docs/worked-example.md): a user with no usage on a cluster controlled to halve fair-share
every u* = 10,000 core-hours, usage half-life one week, runs 28 cores for weeks 0-2, idles
half a week, 56 cores for weeks 2.5-4, 84 for 4-5, 28 for 5-6.5.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from plot_support import hide_matplotlib
from typer.testing import CliRunner

from fscontrol.export import publish as pub
from fscontrol.forecast import service as uf
from fscontrol.cli.app import app
from fscontrol.errors import NotFoundError, UnsafeActionError
from fscontrol.forecast.classic import parse_plan
from fscontrol.records import ShareRow
from fscontrol.snaprecords import SlurmConfig
from fscontrol.store.history import StoredSnapshot

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"
SAMPLE = ROOT / "samples" / "testbed-basic"
WEEK = 7 * 86400
HOUR = 3600
T0 = 1_800_000_000.0  # the snapshot's time
YALIM_PLAN = "28cpus:2w,idle:0.5w,56cpus:1.5w,84cpus:1w,28cpus:1.5w"
HEADER = "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|GrpTRESMins|TRESRunMins"


def _check(name: str, got: str) -> None:
    path = GOLDEN / name
    if os.environ.get("FSCONTROL_REGEN_GOLDEN") == "1":
        path.write_text(got)
    assert got == path.read_text()


# ---------------------------------------------------------------------------- the cluster
def _config(private: tuple[str, ...] = ()) -> SlurmConfig:
    return SlurmConfig(
        cluster="agave",
        slurm_version="22.05.8",
        priority_type="priority/multifactor",
        priority_flags=("NO_FAIR_TREE",),
        damping_factor=1,
        half_life_s=WEEK,
        calc_period_s=300,
        usage_reset_period="NONE",
        private_data=private,
        enforce=("associations", "limits"),
    )


def _agave_rows() -> tuple[ShareRow, ...]:
    """Agave style: every user in an account of their own, one share each. Ten users, nine of
    them with 100,000/9 core-hours, `yalim` with none: U = 100,000 core-hours, S = 0.1,
    H = S x d x U = 10,000 core-hours = u*."""
    total = 100_000 * HOUR
    users = [f"u{i}" for i in range(1, 10)] + ["yalim"]
    rows = [ShareRow("root", "", "", 0, None, False, 1.0, total, 1.0, 1.0, 0.5)]
    for name in users:
        u = 0 if name == "yalim" else total // 9
        un = u / total
        f = 2 ** (-(un / 0.1))
        rows.append(ShareRow(name, "", "root", 1, 1, False, 0.1, u, un, un, f))
        rows.append(ShareRow(name, name, name, 2, 1, False, 0.1, u, un, un, f))
    return tuple(rows)


def _snapshot(private: tuple[str, ...] = ()) -> StoredSnapshot:
    return StoredSnapshot(
        id=7, cluster="agave", taken_at=T0, config=_config(private), shares=_agave_rows(),
        usage_factors={"normal": 1.0}, source="test",
    )


def _sshare_text(rows, users: set[str], accounts: bool = True) -> str:
    """`sshare -l -P` as a user sees it: root and the accounts (unless PrivateData=usage), and
    only their own user rows."""
    out = [HEADER]
    for r in rows:
        if r.user and r.user not in users:
            continue
        if not r.user and not accounts:
            continue
        acc = " " * r.depth + r.account
        shares = "" if r.raw_shares is None else str(r.raw_shares)
        nu = "" if r.norm_usage is None or r.depth == 0 else f"{r.norm_usage:.6f}"
        out.append(f"{acc}|{r.user}|{shares}|{r.norm_shares:.6f}|{r.raw_usage}|{nu}|{r.effective_usage:.6f}|{r.fairshare:.6f}||cpu=0,billing=0")
    return "\n".join(out) + "\n"


def _sample(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sshare.txt").write_text(text)
    (folder / "meta.json").write_text(json.dumps({
        "cluster": "agave",
        "commands": {"sshare": {"argv": ["sshare", "-l", "-P"], "started_at": T0, "finished_at": T0}},
    }))
    return folder


@pytest.fixture()
def agave(tmp_path):
    (tmp_path / "public").mkdir(exist_ok=True)
    path = pub.write_published(pub.build_published(_snapshot(), target_core_hours=10_000), tmp_path / "public" / "agave.json")
    sample = _sample(tmp_path / "yalim-sshare", _sshare_text(_agave_rows(), {"yalim"}))
    return path, sample


@pytest.fixture()
def as_user(monkeypatch):
    """Run the CLI as a normal user (the identity comes from the real uid, never the environment)."""
    def set_user(name: str, uid: int = 1000):
        monkeypatch.setattr(uf, "invoker", lambda: (name, uid))
    set_user("yalim")
    return set_user


def _run(*args: str):
    return CliRunner().invoke(app, ["forecast", *args])


def _yalim_args(agave, *extra: str) -> list[str]:
    path, sample = agave
    return ["--published", str(path), "--source", str(sample), "--now", str(T0 + 600), "--horizon", "9w", *extra]


# ---------------------------------------------------------------------------- golden
def test_yalim_campaign_text_golden(agave, as_user):
    r = _run(*_yalim_args(agave, "--plan", YALIM_PLAN))
    assert r.exit_code == 0, r.output
    _check("forecast_yalim.txt", r.output)


def test_yalim_campaign_json_golden(agave, as_user):
    r = _run(*_yalim_args(agave, "--plan", YALIM_PLAN, "--json"))
    assert r.exit_code == 0, r.output
    _check("forecast_yalim.json", r.output)
    data = json.loads(r.output)
    (a,) = data["associations"]
    assert a["account"] == "yalim" and a["fairshare"] == 1.0 and a["exact"]
    assert a["halving_core_hours"] == pytest.approx(10_000)
    ap = a["after_plan"]
    # the worked example's numbers (docs/worked-example.md, the continuous ODE); the forecast steps
    # Slurm's 5-minute passes, and F shows a run's last stretch one pass after it ends
    assert ap["fairshare"] == pytest.approx(0.5082, abs=1e-4)
    assert ap["lowest_fairshare"] == pytest.approx(0.3486, abs=1e-4)
    assert ap["lowest_at_days"] == pytest.approx(35.0, abs=300 / 86400 + 1e-9)
    assert ap["idle_days_to_target"] is None or ap["idle_days_to_target"] == 0
    assert len(a["trajectory"]) == 60


def test_run_idle_steps_keep_their_order(agave, as_user):
    plan = _run(*_yalim_args(agave, "--plan", YALIM_PLAN, "--json"))
    steps = _run(*_yalim_args(
        agave, "--run", "28cpus:2w", "--idle", "0.5w", "--run", "56cpus:1.5w", "--run", "84cpus:1w",
        "--run", "28cpus:1.5w", "--json",
    ))
    assert steps.exit_code == 0, steps.output
    assert json.loads(steps.output) == json.loads(plan.output)
    swapped = _run(*_yalim_args(agave, "--idle", "0.5w", "--run", "28cpus:2w", "--json"))
    assert json.loads(swapped.output)["plan"][0]["kind"] == "idle"


def test_plan_and_steps_do_not_mix(agave, as_user):
    r = _run(*_yalim_args(agave, "--plan", "28cpus:1d", "--run", "8cpus:1d"))
    assert r.exit_code == 2 and "either as --plan or as --run/--idle" in r.output


def test_worked_example_numbers_from_the_pure_function():
    data = uf.forecast_data(
        pub.build_published(_snapshot()), _agave_rows(), user="yalim", now=T0, plan=parse_plan(YALIM_PLAN),
        horizon_s=9 * WEEK, points=19,
    )
    tr = data["associations"][0]["trajectory"]
    # every half week, as the table in docs/worked-example.md (Yalim's continuous ODE); the forecast
    # steps Slurm's 5-minute passes (f = 1 - 0.693/T a second), within 3e-4 of it
    table = [1.0, 0.8713, 0.7904, 0.7378, 0.7027, 0.7792, 0.6363, 0.5514, 0.4983, 0.4042, 0.3486]
    assert [p["days"] for p in tr][:11] == [3.5 * i for i in range(11)]
    assert all(abs(p["fairshare"] - want) <= 3e-4 for p, want in zip(tr, table))
    assert tr[4]["effective_usage_core_hours"] == pytest.approx(5090.4, rel=1e-3)


def test_idle_recovery_and_budget_for_a_heavy_user():
    rows = _agave_rows()
    data = uf.forecast_data(pub.build_published(_snapshot()), rows, user="u1", now=T0, target=0.9)
    a = data["associations"][0]
    u = 100_000 / 9  # core-hours; H = 10,000
    assert a["fairshare"] == pytest.approx(2 ** (-u / 10_000), rel=1e-5)
    import math

    from fscontrol.model.decay import decay_lambda
    expect = math.log(u / (-10_000 * math.log2(0.9))) / decay_lambda(WEEK) / 86400
    # the continuous ODE's time; the forecast gives the decay pass (5 min) at which F shows it
    assert a["idle_days_to_target"] == pytest.approx(expect, abs=2 * 300 / 86400)
    assert a["core_hours_to_halve"] == pytest.approx(10_000)  # the agent holds H (tests/test_admin_reads.py)
    assert a["core_hours_to_target"] == 0  # already below 0.9


# ---------------------------------------------------------------------------- messages
def test_no_published_snapshot(tmp_path, as_user):
    r = _run("--published", str(tmp_path / "public"), "--source", str(SAMPLE))
    assert r.exit_code == 6
    assert "no published snapshot yet at" in r.output and "fscontrol publish" in r.output
    (tmp_path / "empty").mkdir()
    r = _run("--published", str(tmp_path / "empty"), "--source", str(SAMPLE))
    assert r.exit_code == 6 and "no published snapshot yet in" in r.output


def test_stale_snapshot_warns_with_its_age_then_refuses(agave, as_user):
    path, sample = agave
    r = _run("--published", str(path), "--source", str(sample), "--now", str(T0 + 3 * HOUR))
    assert r.exit_code == 0, r.output
    assert "is 3.0 h old (taken 2027-01-15T08:00:00Z), older than 60 min" in r.output
    r = _run("--published", str(path), "--source", str(sample), "--now", str(T0 + 3 * 86400))
    assert r.exit_code == 6
    assert "is 3.0 days old" in r.output and "too old to forecast from" in r.output and "--stale-ok" in r.output
    r = _run("--published", str(path), "--source", str(sample), "--now", str(T0 + 3 * 86400), "--stale-ok")
    assert r.exit_code == 0 and "3.0 days old" in r.output
    r = _run("--published", str(path), "--source", str(sample), "--now", str(T0 + 3 * HOUR), "--max-age", "4h")
    assert r.exit_code == 0 and "warning" not in r.output


def test_unknown_user(agave, as_user):
    as_user("nobody-here")
    r = _run(*_yalim_args(agave))
    assert r.exit_code == 6
    assert "unknown user 'nobody-here': sshare shows no association for them on agave" in r.output


def test_j_from_a_recording_is_one_of_the_users_recorded_pending_jobs(as_user):
    """Issue #28 (an outside tester): with the rows from a recording, -j 99999999 was taken as
    "your pending job" (exit 0); it is one of the user's pending jobs in the recorded squeue
    (alice's job 11 is; carol's running 15 and 99999999 are not): one line, exit 6."""
    args = ["--source", str(SAMPLE), "-u", "alice", "-A", "flat"]
    ok = _run(*args, "-j", "11")
    assert ok.exit_code == 0 and "your pending job 11" in ok.output, ok.output
    for job in ("99999999", "15"):
        r = _run(*args, "-j", job)
        lines = r.output.strip().splitlines()
        assert r.exit_code == 6 and len(lines) == 1 and f"no pending job {job} of alice's" in lines[0], r.output


def test_j_under_fair_tree_is_checked_too(as_user):
    """-j is not what a Fair Tree rank depends on, but one that is not the user's pending job is
    refused there too (carol's 55 is; 99999999 and bob's running 54 are not)."""
    args = ["--source", str(ROOT / "samples" / "testbed-fairtree"), "-u", "carol"]
    assert _run(*args, "-j", "55").exit_code == 0
    for job in ("99999999", "54"):
        r = _run(*args, "-j", job)
        assert r.exit_code == 6 and len(r.output.strip().splitlines()) == 1 and f"no pending job {job}" in r.output, r.output


def test_unknown_account(agave, as_user):
    r = _run(*_yalim_args(agave, "--account", "physics"))
    assert r.exit_code == 6 and "user 'yalim' has no association in account 'physics' (has: yalim)" in r.output


@pytest.mark.parametrize(
    "plan, part, why",
    [
        ("56cpus:14d,idle:3x", "part 2 'idle:3x'", "duration '3x' is neither a number with a unit"),
        ("56gpus:14d", "part 1 '56gpus:14d'", "'56gpus' names no CPUs: write them too, e.g. '4cpus+56gpus'"),
        ("56cpus", "part 1 '56cpus'", "no single ':'"),
    ],
)
def test_bad_plan_says_which_part_and_the_form(agave, as_user, plan, part, why):
    r = _run(*_yalim_args(agave, "--plan", plan))
    assert r.exit_code == 2
    assert f"cannot read plan part {part.split(' ', 2)[1]} {part.split(' ', 2)[2]}" in r.output
    assert why in r.output and "expected '<N>cpus:<duration>' or 'idle:<duration>'" in r.output


def test_bad_run_and_idle_steps(agave, as_user):
    r = _run(*_yalim_args(agave, "--idle", "3 days"))
    assert r.exit_code == 2 and "--run/--idle '3 days'" in r.output and "--idle a duration like 3d" in r.output
    r = _run(*_yalim_args(agave, "--run", "8cpu:1q"))
    assert r.exit_code == 2 and "duration '1q'" in r.output


def test_bad_target(agave, as_user):
    r = _run(*_yalim_args(agave, "--target", "1.5"))
    assert r.exit_code == 2 and "--target must be a fair-share strictly between 0 and 1" in r.output


def test_plot_without_matplotlib_is_a_clear_message(agave, as_user, tmp_path, monkeypatch):
    hide_matplotlib(monkeypatch)
    r = _run(*_yalim_args(agave, "--plot", str(tmp_path / "f.png")))
    assert r.exit_code == 2 and "--plot needs matplotlib" in r.output and "pip install matplotlib" in r.output and "fscontrol[plot]" not in r.output
    assert not (tmp_path / "f.png").exists()


@pytest.mark.plot
def test_plot(agave, as_user, tmp_path):
    r = _run(*_yalim_args(agave, "--plan", YALIM_PLAN, "--plot", str(tmp_path / "f.png")))
    assert r.exit_code == 0 and (tmp_path / "f.png").stat().st_size > 1000


# ---------------------------------------------------------------------------- who may see what
def test_non_admin_asking_for_another_user_is_refused(agave, as_user):
    as_user("yalim", 1000)
    r = _run(*_yalim_args(agave, "--user", "u1"))
    assert r.exit_code == 7
    assert "refused: you (yalim) may only ask for your own forecast; --user u1 needs root or an fscontrol admin" in r.output
    assert "u1" not in r.output.replace("--user u1", "")  # nothing of u1's shown


def test_root_may_ask_for_anyone(agave, as_user, tmp_path):
    path, _ = agave
    as_user("root", 0)
    sample = _sample(tmp_path / "u1-sshare", _sshare_text(_agave_rows(), {"u1"}))
    r = _run("--published", str(path), "--source", str(sample), "--now", str(T0), "--user", "u1", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["user"] == "u1"


def test_configured_admin_in_a_root_owned_published_file(tmp_path, as_user):
    from fscontrol.export import privacy

    secret = privacy.load_secret(tmp_path / "secret")
    data = pub.build_published(_snapshot(), admins=["helpdesk"], secret=secret)
    data["own_files"] = True
    path = pub.write_published(data, tmp_path / "agave.json")
    privacy.write_own_files(path, pub.own_files(_snapshot(), secret=secret, admins=["helpdesk"]),
                            names={"helpdesk": (1234, 1234), "carol": (1235, 1235)})
    sample = _sample(tmp_path / "s", _sshare_text(_agave_rows(), {"u1"}))
    as_user("helpdesk", 1234)
    r = _run("--published", str(path), "--source", str(sample), "--now", str(T0), "--user", "u1")
    if os.stat(path).st_uid == 0:
        assert r.exit_code == 0, r.output
    else:  # a file a user could have written: its admins list is not trusted
        assert r.exit_code == 7
    tokens = {"cluster": "agave", "admins_hmac": [privacy.admin_token(secret, "agave", "helpdesk")]}
    own = privacy.read_own(path, "helpdesk", 1234)
    assert own is not None and own["admin_token"] in tokens["admins_hmac"]
    assert uf.is_admin("helpdesk", 1234, tokens, trusted=False, own=own) is False
    assert uf.is_admin("helpdesk", 1234, tokens, trusted=True, own=own) is True
    assert uf.is_admin("helpdesk", 1234, tokens, trusted=True, own=None) is False  # no token of one's own
    assert uf.is_admin("carol", 1235, tokens, trusted=True, own=privacy.read_own(path, "carol", 1235)) is False
    assert uf.is_admin("carol", 1235, tokens, trusted=True, own=own) is False  # another's file names them
    assert "helpdesk" not in json.dumps(tokens)


def test_pure_function_refuses_before_reading_anything():
    with pytest.raises(UnsafeActionError):
        uf.forecast_data({}, (), user="u1", requester="yalim", is_admin=False, now=T0)


def test_private_data_usage_publishes_no_per_user_rows(tmp_path):
    data = pub.build_published(_snapshot(private=("usage",)))
    assert data["per_association"] is False and data["associations"] == []
    path = pub.write_published(data, tmp_path / "agave.json")
    text = path.read_text()
    for name in [f"u{i}" for i in range(1, 10)] + ["yalim"]:
        assert f'"{name}"' not in text
    assert data["halving_core_hours"] == pytest.approx(10_000)
    assert data["total_usage_core_hours"] == pytest.approx(100_000)
    assert data["decay_lambda"] > 0 and data["config"]["damping_factor"] == 1
    # without PrivateData the rows sshare shows anyone are published
    open_data = pub.build_published(_snapshot())
    assert {a["user"] for a in open_data["associations"] if a["user"]} == {f"u{i}" for i in range(1, 10)} | {"yalim"}


def test_forecast_under_private_data_from_the_users_own_rows_only(tmp_path, as_user):
    path = pub.write_published(pub.build_published(_snapshot(private=("usage",))), tmp_path / "agave.json")
    # PrivateData=usage: a normal user's sshare returns only their own association
    sample = _sample(tmp_path / "s", _sshare_text(_agave_rows(), {"u1"}, accounts=False))
    as_user("u1")
    r = _run("--published", str(path), "--source", str(sample), "--now", str(T0), "--json")
    assert r.exit_code == 0, r.output
    a = json.loads(r.output)["associations"][0]
    assert a["account"] == "u1" and a["fairshare"] == pytest.approx(2 ** (-(100_000 / 9) / 10_000), rel=1e-5)
    r = _run("--published", str(path), "--source", "published", "--now", str(T0))
    assert r.exit_code == 6 and "no per-user rows (PrivateData=usage)" in r.output


def test_published_source_without_private_data(agave, as_user):
    path, _ = agave
    as_user("u1")
    r = _run("--published", str(path), "--source", "published", "--now", str(T0), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["associations"][0]["account"] == "u1"


def test_an_unknown_user_in_the_published_rows_is_said_of_the_published_file(agave, as_user):
    """Issue #28: with the rows from the published file, "sshare shows no association" named a
    command that never ran; the message says where the rows came from."""
    path, _ = agave
    as_user("nobody-here")
    r = _run("--published", str(path), "--source", "published", "--now", str(T0))
    assert r.exit_code == 6 and "sshare" not in r.output, r.output
    assert "unknown user 'nobody-here': the published file has no association for them on agave" in r.output


def test_controller_d_not_sshares_fairshare_column(tmp_path, as_user):
    """sshare's FairShare uses the client's slurm.conf d; the forecast uses the controller's."""
    snap = _snapshot()
    from dataclasses import replace
    snap = replace(snap, config=replace(snap.config, damping_factor=4))
    path = pub.write_published(pub.build_published(snap), tmp_path / "agave.json")
    sample = _sample(tmp_path / "s", _sshare_text(_agave_rows(), {"u1"}))  # FairShare printed at d=1
    as_user("u1")
    a = json.loads(_run("--published", str(path), "--source", str(sample), "--now", str(T0), "--json").output)["associations"][0]
    un = (100_000 * HOUR // 9) / (100_000 * HOUR)
    assert a["fairshare"] == pytest.approx(2 ** (-(un / 0.1) / 4), rel=1e-5)
    assert a["fairshare_sshare"] == pytest.approx(2 ** (-(un / 0.1)), abs=1e-6)
    assert a["halving_core_hours"] == pytest.approx(40_000)
    text = _run("--published", str(path), "--source", str(sample), "--now", str(T0)).output
    assert "computed with the d in this machine's slurm.conf; slurmctld uses d=4" in text


def test_private_data_user_without_association_is_unknown(tmp_path, as_user):
    path = pub.write_published(pub.build_published(_snapshot(private=("usage",))), tmp_path / "agave.json")
    sample = _sample(tmp_path / "s", HEADER + "\n")  # PrivateData=usage, no association: only the header
    as_user("newcomer")
    r = _run("--published", str(path), "--source", str(sample), "--now", str(T0))
    assert r.exit_code == 6 and "unknown user 'newcomer'" in r.output


def test_own_rows_parser_reads_a_tree_and_a_rows_only_table():
    tree = uf.parse_own_sshare(_sshare_text(_agave_rows(), {"u3"}))
    assert [r.key for r in tree if r.is_user] == [("u3", "u3")] and tree[0].account == "root"
    only = uf.parse_own_sshare(_sshare_text(_agave_rows(), {"u3"}, accounts=False))
    assert [(r.account, r.user, r.raw_shares, r.norm_shares) for r in only] == [("u3", "u3", 1, 0.1)]


# ---------------------------------------------------------------------------- the recorded testbed sample
def test_testbed_sample_publish_and_forecast(tmp_path, as_user):
    db = tmp_path / "h.db"
    assert CliRunner().invoke(app, ["collect", "--source", str(SAMPLE), "--db", str(db)]).exit_code == 0
    out = tmp_path / "public" / "tbcluster.json"
    r = CliRunner().invoke(app, ["publish", "--db", str(db), "--out", str(out)])
    # --out never makes folders: a typo would create them (as root); its own exit code, not the database's
    assert r.exit_code == 1 and "does not exist" in r.output and not out.parent.exists(), r.output
    out.parent.mkdir()
    r = CliRunner().invoke(app, ["publish", "--db", str(db), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "published snapshot 1 of tbcluster" in r.output
    assert oct(out.stat().st_mode & 0o777) == "0o644"
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp file left
    data = json.loads(out.read_text())
    as_user("alice")
    r = _run("--published", str(out.parent), "-M", "tbcluster", "--source", str(SAMPLE), "--now", str(data["taken_at"] + 60), "--json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert {a["account"] for a in got["associations"]} == {"flat", "physics"}
    flat = next(a for a in got["associations"] if a["account"] == "flat")
    assert not flat["exact"] and "approximation" in flat["note"]  # below the first tier
    assert flat["fairshare"] == pytest.approx(2 ** (-0.252068 / 0.05), rel=1e-6)
    assert "bob" not in r.output and "carol" not in r.output and "dave" not in r.output
    r = _run("--published", str(out), "--source", str(SAMPLE), "--now", str(data["taken_at"] + 60), "-A", "physics")
    assert r.exit_code == 0 and "account physics" in r.output and "account flat" not in r.output


def test_publish_without_history(tmp_path):
    r = CliRunner().invoke(app, ["publish", "--db", str(tmp_path / "none.db"), "--out", str(tmp_path / "x.json")])
    assert r.exit_code == 6


def test_write_is_atomic_and_world_readable(tmp_path):
    p = tmp_path / "d" / "c.json"
    p.parent.mkdir()
    pub.write_published({"format": pub.FORMAT, "version": 1, "x": 1}, p)
    pub.write_published({"format": pub.FORMAT, "version": 1, "x": 2}, p)
    assert json.loads(p.read_text())["x"] == 2 and oct(p.stat().st_mode & 0o777) == "0o644"
    assert [x.name for x in p.parent.iterdir()] == ["c.json"]
    with pytest.raises(NotFoundError):
        pub.read_published(p, cluster="other")


def test_chart_is_readable():
    data = uf.forecast_data(
        pub.build_published(_snapshot()), _agave_rows(), user="yalim", now=T0, plan=parse_plan(YALIM_PLAN),
        horizon_s=9 * WEEK,
    )
    lines = uf.chart(data["associations"][0]["trajectory"], 0.5, data["plan"])
    assert len(lines) == 11 + 3
    assert all(len(line) <= 90 for line in lines)
    assert lines[5].rstrip().endswith("target 0.50")
    assert lines[-1].startswith("  cores 28===")


# ---------------------------------------------------------------------------- cold start
def test_cold_start_imports_no_scipy_or_numpy():
    code = (
        "import fscontrol.cli.app, fscontrol.forecast.service, fscontrol.export.publish; import sys; "
        "assert 'scipy' not in sys.modules and 'numpy' not in sys.modules, "
        "sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'numpy'))"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _heavy_imports_after(run: str, heavy: str = "{'typer', 'pydantic', 'rich', 'scipy', 'numpy', 'sqlite_utils'}") -> list[str]:
    """Top-level modules among the heavy ones that a fresh process imported while running `run`."""
    code = f"import sys\n{run}\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & {heavy}))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return eval(out.strip().splitlines()[-1])  # noqa: S307 - our own repr of a list of names


def _forecast_args(agave) -> str:
    path, sample = agave
    return f"['--published', {str(path)!r}, '--source', {str(sample)!r}, '--user', 'yalim', '--now', '{T0}', '--plan', '28cpus:1w']"


def test_forecast_inside_the_typer_app_imports_no_scipy_numpy_or_sqlite_utils(agave):
    run = ("from typer.testing import CliRunner; from fscontrol.cli.app import app\n"
           f"r = CliRunner().invoke(app, ['forecast'] + {_forecast_args(agave)}); assert r.exit_code == 0, r.output")
    assert set(_heavy_imports_after(run)) <= {"typer", "rich", "pydantic"}


def test_console_script_forecast_imports_typer_but_no_pydantic_rich_or_maths(agave):
    """The command users type runs on the one framework (typer, below 0.29: no pydantic) and loads
    none of the heavy modules: no pydantic, rich, scipy, numpy, sqlite_utils."""
    run = f"from fscontrol.cli.main import exit_code\nassert exit_code(['forecast', *{_forecast_args(agave)}]) == 0"
    assert _heavy_imports_after(run) == ["typer"]
    assert "argparse" not in _heavy_imports_after(run, "{'argparse', 'typer'}")


def test_python_m_and_console_script_agree(agave):
    path, sample = agave
    args = ["forecast", "--published", str(path), "--source", str(sample), "--user", "yalim", "--now", str(T0), "--json"]
    via_m = subprocess.run([sys.executable, "-m", "fscontrol", *args], capture_output=True, text=True)
    via_typer = CliRunner().invoke(app, args)
    assert via_m.returncode == via_typer.exit_code == 0
    assert json.loads(via_m.stdout) == json.loads(via_typer.stdout)


@pytest.mark.parametrize("flag", ["usage", "users", "accounts", "all", "Jobs,Users"])
def test_no_name_is_published_under_any_private_data_that_hides_people(flag):
    """PrivateData=users or accounts hides names in Slurm as usage hides numbers: the published
    file then has no per-user row and no user or admin name."""
    snap = _snapshot(private=tuple(flag.split(",")))
    data = pub.build_published(snap, admins=["helpdesk"])
    text = json.dumps(data)
    assert data["associations"] == [] and data["per_association"] is False
    names = {r.user for r in snap.shares if r.user} | {"helpdesk"}
    assert not [n for n in names if f'"{n}"' in text]


def test_published_rows_where_private_data_hides_no_one():
    data = pub.build_published(_snapshot(private=("jobs",)), admins=["helpdesk"])
    assert data["associations"] and "helpdesk" not in json.dumps(data)
