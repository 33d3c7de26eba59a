"""Parsers on real captured Slurm 22.05 output, and on the ways that output goes wrong."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fscontrol.slurm import parse
from fscontrol.errors import ParseError

DATA = Path(__file__).parent / "data" / "captures"


def text(name: str) -> str:
    """A capture's output without fscontrol's own comment lines (the .cmd sibling says how)."""
    return (DATA / f"{name}.txt").read_text()


# ---------------------------------------------------------------------------- sshare
def test_sshare_tree_depth_and_parents_from_indentation():
    rows = parse.parse_sshare(text("run2/sshare_long_running"))
    assert len(rows) == 13
    root = rows[0]
    assert (root.account, root.user, root.depth, root.parent) == ("root", "", 0, "")
    assert root.raw_shares is None and root.norm_usage is None  # blank tokens in the root row
    by_key = {r.key: r for r in rows}
    assert by_key[("root", "root")].depth == 1 and by_key[("root", "root")].parent == "root"
    alice = by_key[("physics", "alice")]
    assert (alice.depth, alice.parent, alice.norm_shares) == (2, "physics", 0.1)
    assert by_key[("flat", "bob")].billing_run_mins == 320  # TRESRunMins billing=320
    assert by_key[("physics", "")].parent == "root"


def test_sshare_values_after_usage():
    rows = {r.key: r for r in parse.parse_sshare(text("run2/sshare_fields_after"))}
    assert rows[("root", "")].raw_usage == 9780
    assert rows[("chem", "carol")].effective_usage == pytest.approx(0.0566)
    assert rows[("flat", "")].fairshare == pytest.approx(0.083331)


def test_sshare_plain_seven_columns():
    # `sshare -a -n -P` has no header: refused, since columns are only known by name
    with pytest.raises(ParseError, match="missing column"):
        parse.parse_sshare(text("run2/sshare_plain_running"), "sshare -a -n -P")
    header = "Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare\n"
    rows = parse.parse_sshare(header + text("run2/sshare_plain_running"), "sshare -a -P")
    assert len(rows) == 13 and rows[0].norm_usage is None and rows[0].fairshare == 0.5


def test_sshare_missing_column_names_the_column():
    bad = text("run2/sshare_long_running").replace("EffectvUsage", "Effective")
    with pytest.raises(ParseError, match="missing column.*EffectvUsage"):
        parse.parse_sshare(bad)


def test_sshare_truncated_line_names_line_number():
    lines = text("run2/sshare_long_running").splitlines()
    lines[4] = lines[4][:20]
    with pytest.raises(ParseError, match=r"line 5: expected 10 fields, got \d"):
        parse.parse_sshare("\n".join(lines))


def test_sshare_non_numeric_usage():
    bad = text("run2/sshare_long_running").replace("flat|alice|1|0.066667|0|", "flat|alice|1|0.066667|lots|")
    with pytest.raises(ParseError, match="RawUsage is not a number: 'lots'"):
        parse.parse_sshare(bad)


def test_sshare_empty_output_and_non_admin_view():
    with pytest.raises(ParseError, match="no header"):
        parse.parse_sshare("")
    header_only = text("run2/sshare_long_running").splitlines()[0]
    with pytest.raises(ParseError, match="no root row"):
        parse.parse_sshare(header_only)


def test_sshare_user_row_outside_its_account_is_rejected():
    lines = text("run2/sshare_long_running").splitlines()
    # move a user row of `flat` under `chem`
    flat_alice = next(i for i, ln in enumerate(lines) if ln.startswith("  flat|alice"))
    lines.insert(4, lines.pop(flat_alice))
    with pytest.raises(ParseError, match="outside that account"):
        parse.parse_sshare("\n".join(lines))


# ---------------------------------------------------------------------------- sacct
def test_sacct_billing_elapsed_and_pending():
    jobs = {j.job_id: j for j in parse.parse_sacct(text("run2/sacct_X_hdr"))}
    assert len(jobs) == 14
    j8 = jobs["8"]
    assert (j8.user, j8.account, j8.billing, j8.alloc_cpus, j8.state) == ("alice", "flat", 16, 16, "COMPLETED")
    assert j8.elapsed_s == 120.0
    assert j8.start == pytest.approx(1795283680.0)  # 2026-11-21T17:54:40 UTC
    pending = jobs["1"]
    assert pending.state == "PENDING" and pending.elapsed_s == 0 and pending.billing == 0 and pending.start is None


def test_sacct_bad_time_and_truncation():
    t = text("run2/sacct_X_hdr")
    with pytest.raises(ParseError, match="bad time"):
        parse.parse_sacct(t.replace("2026-11-21T17:54:40", "yesterday", 1))
    with pytest.raises(ParseError, match="expected 13 fields"):
        parse.parse_sacct(t.replace("|COMPLETED|1|2026-11-21T17:54:38\n", "|COMPLETED\n", 1))


# ---------------------------------------------------------------------------- squeue / sprio / config
def test_squeue_iso_format_and_unlimited():
    jobs = parse.parse_squeue(text("run2/squeue_running_hdr"))
    assert len(jobs) == 14
    running = [j for j in jobs if j.state == "RUNNING"]
    assert sum(j.cpus for j in running) == 124
    assert jobs[0].start is None and jobs[0].time_limit_s == 300 and jobs[0].reason == "Priority"


def test_config_priority_settings():
    # the run2 capture is `scontrol show config | grep ...`: no ClusterName, which is required
    with pytest.raises(ParseError, match="no ClusterName"):
        parse.parse_config(text("run2/show_config_prio"))
    cfg = parse.parse_config("ClusterName = c1\n" + text("run2/show_config_prio"))
    assert cfg.mode == "classic" and cfg.damping_factor == 1
    assert cfg.half_life_s == 300 and cfg.calc_period_s == 60
    assert cfg.weights["fairshare"] == 100000


def test_config_modes():
    base = "ClusterName = c\nPriorityType = priority/multifactor\nFairShareDampeningFactor = 1\nPriorityDecayHalfLife = 7-00:00:00\nPriorityCalcPeriod = 00:05:00\n"
    assert parse.parse_config(base + "PriorityFlags = \n").mode == "fair_tree"
    assert parse.parse_config(base + "PriorityFlags = DEPTH_OBLIVIOUS\n").mode == "depth_oblivious"
    cfg = parse.parse_config(base + "PriorityFlags = NO_FAIR_TREE,SMALL_RELATIVE_TO_TIME\n")
    assert cfg.mode == "classic" and cfg.half_life_s == 7 * 86400
    with pytest.raises(ParseError, match="no `Key = Value`"):
        parse.parse_config("garbage\n")


def test_durations():
    assert parse.parse_duration("1-02:03:04") == 93784
    assert parse.parse_duration("5:00") == 300
    assert parse.parse_duration("UNLIMITED") is None
    assert math.isinf(parse._num("inf", float, "x", "c", 1, "", allow_inf=True))
    with pytest.raises(ParseError):
        parse._num("inf", float, "x", "c", 1, "")


def test_split_clusters():
    t = "CLUSTER: a\nA|B\n1|2\nCLUSTER: b\nA|B\n3|4\n"
    assert parse.split_clusters(t) == {"a": "A|B\n1|2", "b": "A|B\n3|4"}


# ---------------------------------------------------------------------------- our own testbed captures
# The same recording (scripts/capture-parser-fixtures.sh) from each Slurm the testbed runs: tb/ from
# 22.05.8 (Debian 12), tb-24.11/ from 24.11.5 (Debian 13), tb-26.05/ from 26.05.5 (Debian sid); every
# NAME.cmd names the version.
TB_CAPTURES = {"tb": "22.05.8", "tb-24.11": "24.11.5", "tb-26.05": "26.05.5"}
tb_versions = pytest.mark.parametrize("tb", sorted(TB_CAPTURES))


@pytest.mark.parametrize("tb", ["tb-24.11", "tb-26.05"])
def test_captures_name_their_slurm(tb):
    cmds = sorted((DATA / tb).glob("*.cmd"))
    assert len(cmds) >= 15
    for cmd in cmds:
        assert f"from slurm-wlm {TB_CAPTURES[tb]}," in cmd.read_text(), cmd.name


@tb_versions
def test_sshare_cluster_line_and_parent_shares(tb):
    rows = {r.key: r for r in parse.parse_sshare(text(f"{tb}/sshare_parent_M"))}
    dave = rows[("flat", "dave")]
    assert dave.shares_parent and dave.raw_shares is None
    assert dave.norm_shares == 0.2  # a `parent` user takes its account's NormShares
    # two-level tree: users of physics sit at depth 3 under science
    assert rows[("physics", "bob")].depth == 3 and rows[("physics", "")].parent == "science"
    assert rows[("science", "")].raw_shares == 2


@tb_versions
def test_sshare_long_is_a_consistent_tree(tb):
    rows = parse.parse_sshare(text(f"{tb}/sshare_long"))
    parse.check_share_tree(rows)
    by = {r.key: r for r in rows}
    assert by[("chem", "carol")].parent == "chem" and by[("science", "")].norm_shares == 0.4
    # root's RawUsage is its children's sum (each printed truncated to an integer)
    top = [r.raw_usage for r in rows if r.depth == 1]
    assert 0 <= next(r.raw_usage for r in rows if r.depth == 0) - sum(top) < len(top)


@tb_versions
def test_sshare_as_a_normal_user_shows_only_own_user_rows(tb):
    rows = parse.parse_sshare(text(f"{tb}/sshare_as_user"))
    assert {r.user for r in rows if r.is_user} == {"alice"}


@tb_versions
def test_epoch_and_iso_times_agree(tb):
    epoch = {j.job_id: j for j in parse.parse_sacct(text(f"{tb}/sacct_fmt"))}
    iso = {j.job_id: j for j in parse.parse_sacct(text(f"{tb}/sacct_fmt_iso"))}  # this machine runs in UTC
    assert epoch.keys() == iso.keys() and len(epoch) >= 10
    for k in epoch:
        assert (epoch[k].start, epoch[k].end, epoch[k].elapsed_s) == (iso[k].start, iso[k].end, iso[k].elapsed_s)
    done = [j for j in epoch.values() if j.state == "COMPLETED"]
    assert done and all(j.elapsed_s == j.end - j.start > 0 for j in done)
    assert all(j.billing == 0 and j.start is None for j in epoch.values() if j.state == "PENDING")


@tb_versions
def test_full_show_config(tb):
    cfg = parse.parse_config(text(f"{tb}/show_config"))
    assert (cfg.cluster, cfg.slurm_version, cfg.mode) == ("tbcluster", TB_CAPTURES[tb], "classic")
    assert cfg.enforce == ("associations", "limits", "qos") and cfg.private_data == ()
    assert cfg.half_life_s == 300 and cfg.calc_period_s == 60


@tb_versions
def test_squeue_sprio_qos_formats(tb):
    q = parse.parse_squeue(text(f"{tb}/squeue_fmt"))
    assert all(j.submit and j.submit > 1.7e9 for j in q)
    assert any(j.state == "RUNNING" and j.start for j in q) and any(j.reason == "PartitionDown" for j in q)
    p = parse.parse_sprio(text(f"{tb}/sprio_fmt"))
    assert p and all(0 <= r.fairshare_norm <= 1 for r in p)
    assert {r.name: r.usage_factor for r in parse.parse_qos(text(f"{tb}/qos"))} == {"normal": 1.0, "fspad": 1.0}


def test_squeue_long_names_24_11():
    """The -O format fscontrol runs (parse.SQUEUE_ARGS), from 24.11: the agent's marks in
    AdminComment come back whole, a "|" inside one too; Nice and a held job's Priority=0."""
    q = {j.job_id: j for j in parse.parse_squeue(text("tb-24.11/squeue_long"))}
    assert "-O " + parse.SQUEUE_FORMAT.replace("|", "\\|").replace(",", "\\,") in (DATA / "tb-24.11/squeue_long.cmd").read_text()
    held = q["340"]
    assert (held.state, held.reason, held.priority, held.admin_comment) == ("PENDING", "JobHeldAdmin", 0, "fscontrol:held|x y")
    assert (q["341"].nice, q["341"].admin_comment) == (100, "fscontrol:nice=100")
    assert q["337"].state == "RUNNING" and q["337"].start and q["337"].admin_comment == ""
    assert q["326"].start is None and q["326"].time_limit_s == 60


def test_squeue_long_names_26_05():
    """The -O format fscontrol runs, from 26.05: "(null)" for an empty AdminComment (as 24.11) is no mark."""
    raw = text("tb-26.05/squeue_long")
    assert "|(null)\n" in raw
    q = {j.job_id: j for j in parse.parse_squeue(raw)}
    assert (q["15"].state, q["15"].reason, q["15"].priority, q["15"].admin_comment) == (
        "PENDING", "JobHeldAdmin", 0, "fscontrol:held|x y")
    assert (q["16"].nice, q["16"].admin_comment) == (100, "fscontrol:nice=100")
    assert q["13"].state == "RUNNING" and q["13"].start and q["13"].admin_comment == ""
    # more CPUs than the node has: 26.05 takes the job and it pends (24.11 refused it)
    assert (q["18"].cpus, q["18"].reason) == (500, "PartitionConfig")


def test_root_usage_26_05():
    root = parse.parse_root_usage(text("tb-26.05/sshare_root"))
    long_root = next(r for r in parse.parse_sshare(text("tb-26.05/sshare_long")) if r.depth == 0)
    assert root == long_root.raw_usage > 0  # the same moment's full tree agrees


def test_root_usage_24_11():
    assert parse.parse_root_usage(text("tb-24.11/sshare_root")) == 29671
    long_root = next(r for r in parse.parse_sshare(text("tb-24.11/sshare_long")) if r.depth == 0)
    assert long_root.raw_usage == 29671  # the same moment's full tree agrees


def test_root_usage_from_sshare_root_only():
    from fscontrol.slurm.parse import parse_root_usage

    assert parse_root_usage("root||6636\n root|root|0\n") == 6636
    with pytest.raises(ParseError):
        parse_root_usage(" root|root|0\n")
    with pytest.raises(ParseError):
        parse_root_usage("root||lots\n")


def test_root_and_top_level_accounts_in_one_sshare():
    # real output of parse.root_usage_args(("flat", "science", "fsadmin")) on the 22.05 testbed
    # (slurm-wlm 22.05.8, 2026-11-27): the accounts' own rows, indented, no users but root's own
    out = "root||124\n root|root|0\n flat||74\n fsadmin||0\n science||50\n"
    assert parse.root_usage_args(("flat", "science", "fsadmin")) == (
        "sshare", "-n", "-P", "-A", "root,flat,science,fsadmin", "-o", "Account,User,RawUsage")
    assert parse.root_usage_args(()) == parse.ROOT_USAGE_ARGS
    assert parse.parse_account_usage(out) == {"root": 124, "flat": 74, "fsadmin": 0, "science": 50}
    assert parse.parse_root_usage(out) == 124 == 74 + 50  # root is its children's sum (RawUsage truncated)
    with pytest.raises(ParseError):
        parse.parse_account_usage("root||124\n flat||lots\n")
