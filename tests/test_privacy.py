"""The one privacy policy (fscontrol.export.privacy) for everything a non-root user can read: the
published snapshot, each user's own file and the Prometheus textfile.

The attacker here is a local user who knows every name in passwd and in the association tree: they
try each name as it is, and as every hash the old files used (a fixed, public salt), against every
string in what they can read. They must match nothing. The same attacker runs as the testbed's
carol against root's real publish in tests/test_integration_privacy.py."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import stat
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from fscontrol.errors import UnsafeActionError
from fscontrol.export import metrics
from fscontrol.export import privacy
from fscontrol.export import publish as pub
from fscontrol.records import ShareRow
from fscontrol.snaprecords import SlurmConfig
from fscontrol.slurm import privatedata
from fscontrol.report import status as rstatus
from fscontrol.store.history import StoredSnapshot

T0 = 1_790_000_000.0
HOUR = 3600.0
ADMIN = "helpdesk"


def _snapshot(private: tuple[str, ...] = ()) -> StoredSnapshot:
    """Two accounts under root: chem (carol, dave) and phys (erin); carol and erin run jobs."""
    total = 1000 * HOUR
    cfg = SlurmConfig(cluster="tb", slurm_version="22.05.8", priority_type="priority/multifactor",
                      priority_flags=("NO_FAIR_TREE",), damping_factor=1, half_life_s=7 * 86400.0, calc_period_s=300,
                      usage_reset_period="NONE", private_data=private, enforce=("associations",))
    rows = (ShareRow("root", "", "", 0, None, False, 1.0, total, 1.0, 1.0, 0.5),
            ShareRow("chem", "", "root", 1, 1, False, 0.5, total * 0.7, 0.7, 0.7, 0.4),
            ShareRow("chem", "carol", "chem", 2, 1, False, 0.25, total * 0.5, 0.5, 0.6, 0.3),
            ShareRow("chem", "dave", "chem", 2, 1, False, 0.25, total * 0.2, 0.2, 0.45, 0.5),
            ShareRow("phys", "", "root", 1, 1, False, 0.5, total * 0.3, 0.3, 0.3, 0.6),
            ShareRow("phys", "erin", "phys", 2, 1, False, 0.5, total * 0.3, 0.3, 0.3, 0.6))
    running = (("101", "chem", "carol", 8.0, T0 + 3600), ("102", "chem", "dave", 4.0, T0 + 7200),
               ("103", "phys", "erin", 16.0, None))
    return StoredSnapshot(id=9, cluster="tb", taken_at=T0, config=cfg, shares=rows, usage_factors={"normal": 1.0},
                          source="test", running=running)


def _names(snap: StoredSnapshot) -> set[str]:
    """Every name the attacker knows: passwd, the association tree, the admin."""
    return ({p.pw_name for p in pwd.getpwall()} | {r.user for r in snap.shares if r.user}
            | {r.account for r in snap.shares} | {ADMIN})


def _guesses(cluster: str, names: set[str]) -> dict[str, str]:
    """What each name could appear as: itself, and every hash of it the published files have used."""
    out: dict[str, str] = {}
    for n in names:
        out[f'"{n}"'] = n
        out[f'="{n}"'] = n
        out[hashlib.sha256(f"fscontrol-admin:{cluster}:{n}".encode()).hexdigest()] = n
        out[hashlib.sha256(n.encode()).hexdigest()] = n
        out[hashlib.sha256(f"fscontrol-assoc:{cluster}:{n}:".encode()).hexdigest()[:32]] = n
        for u in names:
            out[hashlib.sha256(f"fscontrol-assoc:{cluster}:{n}:{u}".encode()).hexdigest()[:32]] = f"{n}/{u}"
            out[f'"{n}/{u}"'] = f"{n}/{u}"
    return out


def recovered(text: str, cluster: str, names: set[str]) -> set[str]:
    """The names (or account/user pairs) the attacker finds in `text`."""
    return {who for g, who in _guesses(cluster, names).items() if g in text}


HIDING = [("usage",), ("users",), ("accounts",), ("all",), ("jobs", "accounts"), ("jobs", "users")]


@pytest.mark.parametrize("private", HIDING, ids=",".join)
def test_a_local_user_who_knows_every_name_recovers_nothing_from_the_published_file(tmp_path, private):
    """Fails on ef8da55: the admins' and the running jobs' keys were SHA-256 of the name with a
    fixed, public salt, so hashing the names in passwd recovered the admins and every account's
    and user's running jobs."""
    snap = _snapshot(private)
    secret = privacy.load_secret(tmp_path / "secret")
    data = pub.build_published(snap, admins=[ADMIN], secret=secret)
    path = pub.write_published(data, tmp_path / "tb.json")
    text = path.read_text()
    assert recovered(text, "tb", _names(snap)) == set()
    assert data["admins_hmac"]  # the tokens are there, and the running jobs (or, too few to hide, their count)
    assert data["running"]["cluster"] or data["running"]["cluster_withheld"] == 3


@pytest.mark.parametrize("private", [("jobs", "accounts"), ("jobs",), ("accounts",), ("all",)], ids=",".join)
def test_running_jobs_per_account_are_gated_on_private_data_jobs_and_accounts(private):
    """Fails on ef8da55: `running.accounts` was published under PrivateData=jobs,accounts."""
    run = pub.build_published(_snapshot(private))["running"]
    assert run["accounts"] == {} and run["users"] == {} and run["users_published"] is False
    # the cluster's jobs, naming no one: per job where Slurm shows jobs, else in groups of 3 users'
    # jobs at least: three jobs of three users, two timed and one with no limit, make no group (an
    # outside review: a group of fewer gave a job away), so all three are withheld, counted
    expect = ([] if privatedata.jobs_hidden(private) else [[3600.0, 8.0, 101], [7200.0, 4.0, 102], [None, 16.0, 103]])
    assert run["cluster"] == expect and run["cluster_grouped"] is privatedata.jobs_hidden(private)
    assert run["cluster_withheld"] == (3 if privatedata.jobs_hidden(private) else 0)
    own = pub.own_files(_snapshot(private), secret=None)
    assert own["carol"]["running"]["accounts"] == {}  # nor in a member's own file
    # her own job: hers to see, at the place the published list gives it (a rank where PrivateData hides jobs)
    expect = 0 if privatedata.jobs_hidden(private) else 101
    assert [e[2] for e in own["carol"]["running"]["users"]["chem/carol"]] == [expect]


@pytest.mark.parametrize("private", [("jobs",), ("all",), ("jobs", "usage")], ids=",".join)
def test_under_private_data_jobs_no_slurm_job_id_is_published(tmp_path, private):
    """The review of #29 (item 6): the cluster's running list carried every running job's Slurm job
    id under any PrivateData; squeue shows a user no one else's. Now their ranks in the same order,
    and the file says so (running.order)."""
    snap = _snapshot(private)
    data = pub.build_published(snap)
    run = data["running"]
    assert run["order"] == "rank" and run["cluster_grouped"] is True
    assert all(e[2] is None for e in run["cluster"])  # groups, no job's place (privacy.grouped_running)
    # a user's own jobs carry their rank in slurmctld's job-list order: 101 (1 h left) < 102 (2 h) < 103
    own = pub.own_files(snap, secret=None)
    assert [e[2] for e in own["carol"]["running"]["users"]["chem/carol"]] == [0]
    assert [e[2] for e in own["erin"]["running"]["users"]["phys/erin"]] == [2]
    text = pub.write_published(data, tmp_path / "tb.json").read_text()
    for job_id in ("101", "102", "103"):
        assert job_id not in text, job_id
    own = pub.own_files(snap, secret=None)
    assert all(job_id not in json.dumps(own) for job_id in ("101", "102", "103"))


def test_without_private_data_jobs_the_list_keeps_the_job_ids():
    run = pub.build_published(_snapshot(("usage",)))["running"]
    assert run["order"] == "job_id" and sorted(e[2] for e in run["cluster"]) == [101, 102, 103]


def test_every_private_data_test_counts_all():
    """publish._own_limits tested "usage" alone (`all` let an account's usage through); start tested
    the words "jobs" and "reservations" in the raw PrivateData value."""
    for pd in (("all",), "all", "jobs,usage", ("JOBS",)):
        assert privatedata.jobs_hidden(pd)
    assert not privatedata.usage_public(("all",)) and not privatedata.usage_public("usage,jobs")
    assert privatedata.usage_public(("jobs",)) and privatedata.usage_public("")
    assert privatedata.reservations_hidden("all") and privatedata.reservations_hidden("jobs,reservations")
    assert not privatedata.reservations_hidden("jobs")


def test_without_private_data_the_running_jobs_are_published_by_name():
    run = pub.build_published(_snapshot(()))["running"]
    assert run["users_published"] and set(run["users"]) == {"chem/carol", "chem/dave", "phys/erin"}
    assert {k: len(v) for k, v in run["accounts"].items()} == {"chem": 2, "phys": 1}


def test_under_private_data_usage_members_see_their_accounts_running_jobs_in_their_own_file():
    own = pub.own_files(_snapshot(("usage",)), secret=None)
    assert set(own) == {"carol", "dave", "erin"}
    assert set(own["carol"]["running"]["users"]) == {"chem/carol"}
    assert {k: len(v) for k, v in own["carol"]["running"]["accounts"].items()} == {"chem": 2}
    assert "phys" not in json.dumps(own["carol"]) and "erin" not in json.dumps(own["carol"])


def test_own_files_are_readable_by_their_user_alone_and_every_known_name_has_one(tmp_path):
    snap = _snapshot(("usage",))
    secret = privacy.load_secret(tmp_path / "secret")
    data = pub.build_published(snap, admins=[ADMIN], secret=secret)
    data["own_files"] = True
    path = pub.write_published(data, tmp_path / "tb.json")
    names = {"carol": (4001, 4001), "dave": (4002, 4002), "erin": (4003, 4003), ADMIN: (4004, 4004), "zoe": (4005, 4005)}
    folder = privacy.write_own_files(path, pub.own_files(snap, secret=secret, admins=[ADMIN]), names=names)
    root = os.geteuid() == 0
    assert stat.S_IMODE(folder.stat().st_mode) == 0o711
    sizes = set()
    for name, (uid, _) in names.items():
        d, f = folder / name, folder / name / "own.json"
        if root:  # root's, with an ACL for the user alone (the group bits show its mask; others none)
            assert stat.S_IMODE(os.lstat(d).st_mode) == 0o750 and stat.S_IMODE(os.lstat(f).st_mode) == 0o440
            assert os.lstat(d).st_uid == 0 and os.lstat(f).st_uid == 0
            assert privacy._acl_readers(os.open(f, os.O_RDONLY)) == {uid}
        else:
            assert stat.S_IMODE(os.lstat(d).st_mode) == 0o500 and stat.S_IMODE(os.lstat(f).st_mode) == 0o400
        sizes.add(os.lstat(d).st_size)
    assert len(sizes) == 1  # what others can stat (the user's folder) is alike for everyone
    carol = privacy.read_own(path, "carol", 4001)
    assert carol["snapshot_id"] == 9 and "admin_token" not in carol
    seen = privacy.merge_own(data, carol)["running"]
    assert seen["own_users_published"] and set(seen["users"]) == {"chem/carol"}
    assert privacy.read_own(path, ADMIN, 4004)["admin_token"] in data["admins_hmac"]
    assert privacy.read_own(path, "carol", 4002 if root else 99999) is None  # not hers: not read
    # a name no longer known loses its folder; a folder of the user's (the scheme before, or a
    # filesystem without ACLs) that they broke is taken back, not followed
    del names["zoe"]
    if root:
        os.chown(folder / "dave", 4002, 4002)
    (folder / "dave").chmod(0o700)
    (folder / "dave" / "own.json").unlink()
    (folder / "dave" / "own.json").symlink_to(tmp_path / "secret")
    privacy.write_own_files(path, {}, names=names)
    assert not (folder / "zoe").exists() and (folder / "dave" / "own.json").is_file()
    assert not (folder / "dave" / "own.json").is_symlink()
    assert stat.S_IMODE((tmp_path / "secret").stat().st_mode) == 0o600


def test_a_user_can_write_nothing_in_their_own_folder_and_others_cannot_enter_it(tmp_path):
    """An outside review of #29: `<user>/` was the user's (0500), so they could chmod it and fill
    the filesystem of root's publish folder (and of the history, often slurmctld's state); what they
    put there stayed. Now, as root, it is root's with an ACL that lets the user alone read, and
    whatever a user had put there goes at the next publish. Played as the users themselves."""
    import shutil
    import tempfile

    if os.geteuid() != 0:  # (the fast suite runs as root in CI: scripts/test.sh)
        if os.environ.get("CI") == "true" or os.environ.get("FSCONTROL_REQUIRE_SLURM") == "1":
            raise AssertionError("plays two users with setpriv: needs root, and CI must run this test")
        pytest.skip("plays two users with setpriv: root only")
    tmp_path = Path(tempfile.mkdtemp(prefix="fscontrol-own-", dir="/tmp"))  # (pytest's is root's 0700: no user gets in)
    tmp_path.chmod(0o755)
    try:
        _play_users(tmp_path)
    finally:
        shutil.rmtree(tmp_path)


def _play_users(tmp_path: Path) -> None:
    import subprocess

    snap = _snapshot(("usage",))
    data = pub.build_published(snap)
    data["own_files"] = True
    path = pub.write_published(data, tmp_path / "tb.json")
    names = {"carol": (4001, 4001), "dave": (4002, 4002)}
    folder = tmp_path / "tb.users"
    folder.mkdir(mode=0o711)
    (folder / "carol").mkdir(mode=0o700)  # carol's folder as the scheme before made it, with her filler
    (folder / "carol" / "filler.bin").write_bytes(b"\0" * 4096)
    os.chown(folder / "carol" / "filler.bin", 4001, 4001)
    os.chown(folder / "carol", 4001, 4001)
    privacy.write_own_files(path, pub.own_files(snap, secret=None), names=names)
    assert sorted(os.listdir(folder / "carol")) == ["own.json"]  # her filler is gone

    def as_user(uid: int, code: str) -> subprocess.CompletedProcess:
        return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", sys.executable, "-c", code],
                              capture_output=True, text=True, timeout=60)

    mine = folder / "carol" / "own.json"
    r = as_user(4001, f"import json; print(json.load(open({str(mine)!r}))['user'])")
    assert r.returncode == 0 and r.stdout.strip() == "carol", r.stderr  # she reads her own
    for code in (f"open({str(folder / 'carol' / 'x')!r}, 'w')", f"import os; os.chmod({str(folder / 'carol')!r}, 0o700)",
                 f"open({str(mine)!r}, 'a')", f"import os; os.chmod({str(mine)!r}, 0o600)"):
        r = as_user(4001, code)
        assert r.returncode != 0 and "PermissionError" in r.stderr, code  # and can write nothing there
    r = as_user(4002, f"import os; os.listdir({str(folder / 'carol')!r})")
    assert r.returncode != 0 and "PermissionError" in r.stderr  # dave cannot enter carol's folder
    r = as_user(4002, f"open({str(mine)!r})")
    assert r.returncode != 0 and "PermissionError" in r.stderr


def test_the_site_secret_is_made_once_and_refused_when_others_could_read_it(tmp_path):
    p = tmp_path / "secret"
    a = privacy.load_secret(p)
    assert len(a) == 32 and stat.S_IMODE(p.stat().st_mode) == 0o600
    assert privacy.load_secret(p) == a  # made at the first run, read afterwards
    assert privacy.token(a, "admin", "tb", "x") != privacy.token(privacy.load_secret(tmp_path / "other"), "admin", "tb", "x")
    p.chmod(0o640)
    with pytest.raises(UnsafeActionError, match="readable by others"):
        privacy.load_secret(p)
    p.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to(p)
    with pytest.raises(UnsafeActionError, match="symlink"):
        privacy.load_secret(link)
    if os.geteuid() == 0:
        os.chown(p, 4001, 4001)
        with pytest.raises(UnsafeActionError, match="belongs to uid 4001"):
            privacy.load_secret(p)
    assert privacy.secret_path("/var/lib/fscontrol/history.db") == Path("/var/lib/fscontrol/secret")


def _metrics_state(private: tuple[str, ...], group: str | None) -> dict:
    snap = _snapshot(private)
    status = rstatus.status_data(snap, target_core_hours=100.0, dummy=None, reference="median")
    return {"tb": {"status": status, "taken_at": snap.taken_at, "decision": None, "holds": 0,
                   "name_users": privacy.metrics_name_users(private, group)}}


@pytest.mark.parametrize("private", HIDING, ids=",".join)
def test_the_world_readable_metrics_name_no_one_under_private_data(tmp_path, private):
    """Fails on ef8da55: every user's usage, F and rank by name, under any PrivateData, 0644."""
    snap = _snapshot(private)
    text = metrics.render(metrics.families(_metrics_state(private, None), []))
    assert recovered(text, "tb", _names(snap)) == set()
    assert "fscontrol_user_" not in text and "fscontrol_usage_core_hours{" in text  # the aggregates stay
    path = metrics.write_textfile(tmp_path / "fscontrol.prom", text)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_metrics_name_users_for_a_named_node_exporter_group_only(tmp_path):
    import grp

    group = grp.getgrgid(os.getegid()).gr_name
    text = metrics.render(metrics.families(_metrics_state(("usage",), group), []))
    assert 'user="carol"' in text and "fscontrol_user_fairshare" in text
    path = metrics.write_textfile(tmp_path / "fscontrol.prom", text, group=group)
    st = path.stat()
    assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_gid == os.getegid()
    # no PrivateData: the names are public anyway, the file stays world-readable
    assert 'user="carol"' in metrics.render(metrics.families(_metrics_state((), None), []))


def test_no_docstring_claims_the_published_file_names_no_one_while_it_hashes_names():
    """ef8da55 said "the file names no one" of SHA-256 hashes anyone could recompute."""
    import inspect

    assert "names no one" not in inspect.getsource(pub)
    assert not hasattr(pub, "assoc_token") and not hasattr(pub, "admin_token")


def test_publish_makes_the_secret_beside_the_history_and_writes_own_files(tmp_path):
    from fscontrol.agent import config, pipeline, publishing
    from fscontrol.store import history as store

    db = store.open_db(tmp_path / "h.db")
    sample = Path(__file__).resolve().parent.parent / "samples" / "testbed-basic"
    from fscontrol.slurm.source import RecordedSlurm

    pipeline.collect(RecordedSlurm(sample), db)
    (tmp_path / "pub").mkdir()
    cfg = config.from_dict({"agent": {"admins": [ADMIN]}})
    path, data = publishing.publish_latest(db, cfg, None, out=tmp_path / "pub" / "tb.json")
    assert stat.S_IMODE((tmp_path / "secret").stat().st_mode) == 0o600
    assert data["own_files"] is True and len(data["admins_hmac"]) == 1
    assert (tmp_path / "pub" / "tb.users").is_dir()
    snap = store.load_snapshot(db)
    assert ADMIN not in recovered(Path(path).read_text(), snap.cluster, _names(snap))
    cfg2 = replace(cfg, secret=str(tmp_path / "elsewhere"))
    publishing.publish_latest(db, cfg2, None, out=tmp_path / "pub" / "tb.json")
    assert (tmp_path / "elsewhere").is_file()


def test_config_names_the_metrics_group_and_the_secret():
    from fscontrol.agent import config
    from fscontrol.errors import ConfigError

    cfg = config.from_dict({"agent": {"metrics_group": "prometheus", "secret": "/etc/fscontrol/secret"}})
    assert cfg.metrics_group == "prometheus" and cfg.secret == "/etc/fscontrol/secret"
    assert config.from_dict({}).metrics_group is None and config.from_dict({}).secret is None
    with pytest.raises(ConfigError, match="'agent.metrics_group' must be str"):
        config.from_dict({"agent": {"metrics_group": 5}})


def test_a_metrics_group_that_does_not_exist_is_one_clear_error(tmp_path):
    from fscontrol.errors import ConfigError

    with pytest.raises(ConfigError, match="names no group: 'no-such-group-fscontrol'"):
        metrics.write_textfile(tmp_path / "m.prom", "x 1\n", group="no-such-group-fscontrol")
    assert list(tmp_path.iterdir()) == []  # no partial write


def _gate(snap: StoredSnapshot) -> dict:
    table = {"decided_at": T0, "action": "hold", "unit": "cpus", "under_waiting": 1,
             "accounts": {"chem": [12.0, 8.0, "over"], "phys": [16.0, 20.0, "under"]}}
    return pub.gate_summary(table, snap.shares, snap.cluster, 120.0)


@pytest.mark.parametrize("private", HIDING, ids=",".join)
def test_the_gate_s_accounts_follow_the_running_jobs_policy(private):
    """main (before the merge) keyed the gate's accounts by the same fixed-salt hash: recoverable."""
    snap = _snapshot(private)
    data = pub.build_published(snap, gate=_gate(snap))
    assert data["gate"]["accounts"] == {} and data["gate"]["accounts_published"] is False
    assert data["gate"]["next_at"] == T0 + 120.0  # when it decides names no one
    assert recovered(json.dumps(data), "tb", _names(snap)) == set()
    own = pub.own_files(snap, secret=None, gate=_gate(snap))
    if privatedata.account_jobs_to_members(private):  # a member sees their own account's entry, not another's
        assert set(own["carol"]["gate_accounts"]) == {"chem"} and set(own["erin"]["gate_accounts"]) == {"phys"}
        seen = privacy.merge_own({**data, "own_files": True}, own["carol"])["gate"]["accounts"]
        assert set(seen) == {"chem"}
    else:
        assert not any("gate_accounts" in o for o in own.values())


def test_without_private_data_the_gate_s_accounts_are_published_by_name():
    snap = _snapshot(())
    g = pub.build_published(snap, gate=_gate(snap))["gate"]
    assert g["accounts_published"] and g["accounts"]["chem"]["state"] == "over"


def test_why_says_the_gate_s_numbers_are_not_published_to_the_user_under_private_data():
    from fscontrol.forecast import waits

    held = waits.WaitJob("9", "carol", "chem", "normal", "PENDING", 2, 0, 0, "JobHeldAdmin", "2026-11-26T10:00:00", "",
                      "fscontrol:hold")
    snap = _snapshot(("jobs",))
    gate = pub.build_published(snap, gate=_gate(snap))["gate"]
    h = waits.hold_of(held, gate, privacy.run_key("chem"), now=T0 + 30)
    assert h["gate"] is None and "not published to you (PrivateData" in h["gate_unknown"]
    open_gate = pub.build_published(_snapshot(()), gate=_gate(_snapshot(())))["gate"]
    assert waits.hold_of(held, open_gate, privacy.run_key("chem"), now=T0 + 30)["gate"]["over_by"] == 4.0


def _jobs(seed: int, n: int, users: int) -> list[tuple]:
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(n):
        x = rng.random()
        left = None if x < 0.1 else 0.0 if x < 0.13 else rng.uniform(0, 30 * HOUR)
        out.append((left, float(rng.randint(1, 64)), f"u{rng.randrange(users)}"))
    return out


@pytest.mark.parametrize("seed", range(60))
def test_under_private_data_jobs_no_published_entry_is_one_job_nor_one_user_s(seed):
    """The review of #29 (item 6, left open then): under PrivateData=jobs the world-readable list
    gave each running job's time to its limit and its rate (squeue hides both; sinfo shows only
    the CPUs in use). Then groups of 3 jobs; an outside review broke those (one or two jobs
    published exactly; a no-limit group of one; a group of the attacker's own jobs and one other,
    read back by subtracting their own). Now every group holds 3 jobs of 3 users, its time left
    to the hour, and the jobs no group can hide are withheld, counted."""
    import math

    n, users = [(0, 1), (1, 1), (2, 2), (3, 3), (3, 1), (5, 2), (17, 3), (200, 40), (40, 3), (12, 12)][seed % 10]
    jobs = _jobs(seed, n, users)
    groups, withheld = privacy.grouped_running(jobs)
    timed = sorted(j for j in jobs if j[0] is not None)
    unlimited = [j for j in jobs if j[0] is None]
    g_timed = [g for g in groups if g[0] is not None]
    assert all(g[2] is None for g in groups)
    assert all(g[0] % privacy.GROUP_S == 0 for g in g_timed)  # to the hour
    # by hand: walk the timed jobs in order of time left; a group closes once it holds 3 jobs of 3
    # users and the next job ends in a later hour; a last group short of that joins the one before;
    # a group still short is withheld; the jobs with no limit are one group under the same rule
    sizes: list[list[tuple]] = []
    for job in timed:
        g = sizes[-1] if sizes else None
        if g is None or (len(g) >= 3 and len({u for *_, u in g}) >= 3 and job[0] // 3600 > g[-1][0] // 3600):
            sizes.append([job])
        else:
            g.append(job)
    if len(sizes) > 1 and not (len(sizes[-1]) >= 3 and len({u for *_, u in sizes[-1]}) >= 3):
        last = sizes.pop()
        sizes[-1] += last
    kept = [g for g in sizes if len(g) >= 3 and len({u for *_, u in g}) >= 3]
    assert len(g_timed) == len(kept)
    for got, g in zip(g_timed, kept, strict=True):
        rate = math.fsum(r for _, r, _ in g)
        assert got[1] == pytest.approx(rate, rel=1e-12)
        assert abs(got[0] - math.fsum(x * r for x, r, _ in g) / rate) <= privacy.GROUP_S / 2 + 1e-6
    u_ok = len(unlimited) >= 3 and len({u for *_, u in unlimited}) >= 3
    assert (len(groups) - len(g_timed)) == (1 if u_ok else 0)
    assert withheld == len(jobs) - sum(len(g) for g in kept) - (len(unlimited) if u_ok else 0)
    # no group is one user's: whoever subtracts their own jobs from any group still holds two others' sum
    assert all(len({u for *_, u in g}) >= 3 for g in kept)
