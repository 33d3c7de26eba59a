"""Plans in Slurm's words ('4cpus+2gpus:10h', -p/--partition, -q/--qos), billed under the published
partition weights, and the PriorityUsageResetPeriod resets in the forecast (issue #33). Hand-worked:
the billing figures are docs/billing.md's (measured on the testbeds: tests/test_integration_tres.py),
the reset times are Slurm's `_next_reset` rules (priority_multifactor.c) worked by hand."""

from __future__ import annotations

import datetime as dt
import json
import math

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.export import publish as pub
from fscontrol.forecast import classic as fc
from fscontrol.forecast.billingplan import Biller
from fscontrol.model.usagereset import resets_between

UTC = dt.timezone.utc


def _rules(weights="CPU=1.0,GRES/gpu=8.0", flags="NO_FAIR_TREE", release="22.05.8", gpus=4):
    return {"cluster": "tb", "billing": {
        "release": release, "priority_flags": flags, "default_partition": "normal",
        "partitions": {"normal": {"weights": weights, "default": True, "cpus": 4, "gpus": gpus},
                       "cpu": {"weights": "", "default": False, "cpus": 64, "gpus": 0}},
        "cluster_gpus": gpus, "qos_usage_factor": {"normal": 1.0, "gpux2": 2.0}}}


def _rate(plan, published, **kw):
    b = Biller(published, **kw)
    segs = fc.parse_plan(plan, rate_of=b.rate_of)
    return segs, b


# ---------------------------------------------------------------------------- billing a plan
def test_four_cpus_two_gpus_bill_20_16_and_22_as_measured():
    """docs/billing.md: 4 CPUs + 2 GPUs on one node bill 4 + 2 x 8 = 20 under CPU=1.0,GRES/gpu=8.0
    (sum); under CPU=1.0,Node=6.0,GRES/gpu=8.0 with MAX_TRES_GRES, max(4, 6, 16) = 16 on 22.05/24.11
    (read as MAX_TRES) and 2 x 8 + max(4, 6) = 22 on 26.05 (the testbeds' sacct billing)."""
    segs, b = _rate("4cpus+2gpus:10h", _rules())
    assert segs[0].rate == 20.0 and segs[0].duration_s == 36000
    assert b.summary()["lines"] == ["billed under partition normal: CPU=1.0,GRES/gpu=8.0: 4cpus+2gpus -> 20 per run"]
    node = "CPU=1.0,Node=6.0,GRES/gpu=8.0"
    for release, want in (("22.05.8", 16.0), ("24.11.5", 16.0), ("26.05.5", 22.0)):
        segs, b = _rate("4cpus+2gpus:10h", _rules(node, "NO_FAIR_TREE,MAX_TRES_GRES", release))
        assert segs[0].rate == want, release
    assert "PriorityFlags=MAX_TRES_GRES: 4cpus+2gpus -> 22 per run" in b.summary()["lines"][0]
    # MAX_TRES as 22.05 shows it: the max of cpu 4, node 6, gpu 16
    assert _rate("4cpus+2gpus:1h", _rules(node, "NO_FAIR_TREE,MAX_TRES"))[0][0].rate == 16.0


def test_a_multi_node_plan_bills_over_the_jobs_totals():
    """A 2-node plan under MAX_TRES_GRES (26.05): slurmctld bills the job's totals
    (assoc_mgr_tres_weighted: Node is the node count), max(8, 2 x 6) + 4 x 8 = 44; 10 CPUs on 2 nodes
    bill max(10, 12) = 12 however they are spread (tests/test_billing.py)."""
    node = "CPU=1.0,Node=6.0,GRES/gpu=8.0"
    rules = _rules(node, "NO_FAIR_TREE,MAX_TRES_GRES", "26.05.5")
    assert _rate("2nodes+8cpus+4gpus:1h", rules)[0][0].rate == 44.0
    assert _rate("2nodes+10cpus:1h", rules)[0][0].rate == 12.0


def test_plain_cpus_bill_under_the_partitions_cpu_weight_and_the_qos_usage_factor():
    assert _rate("4cpus:1h", _rules("CPU=2.0,GRES/gpu=8.0"))[0][0].rate == 8.0
    assert _rate("56cpus:14d", _rules(), partition="cpu")[0][0].rate == 56.0  # no weights there: billing = CPUs
    segs, b = _rate("4cpus+2gpus:1h", _rules(), qos="gpux2")
    assert segs[0].rate == 40.0  # 20 x UsageFactor 2
    assert b.summary()["lines"][0].endswith("4cpus+2gpus -> 20 x UsageFactor 2 (QOS gpux2) per run = 40")
    # --billing-per-core still overrides, for CPUs
    assert _rate("4cpus:1h", _rules(), billing_per_core=3.0)[0][0].rate == 12.0
    with pytest.raises(fc.PlanError, match="--billing-per-core prices CPUs only"):
        _rate("4cpus+2gpus:1h", _rules(), billing_per_core=3.0)


def test_without_published_rules_cpus_are_cpus_and_gpus_are_refused():
    assert _rate("56cpus:14d,idle:3d", {"cluster": "old"})[0][0].rate == 56.0
    with pytest.raises(fc.PlanError, match="write the job's billing as cpus") as e:
        _rate("4cpus+2gpus:1h", {"cluster": "old"})
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("plan, kw, says", [
    ("4cpus+2gpus:1h", {"partition": "cpu"}, "partition cpu has none"),
    ("4cpus+2gpus:1h", {"partition": "nope"}, "--partition 'nope': no such partition on tb (has: cpu, normal)"),
    ("4cpus:1h", {"qos": "nope"}, "--qos 'nope': no such QOS"),
    ("2gpus:1h", {}, "'2gpus' names no CPUs"),
    ("0cpus+2gpus:1h", {}, "CPUs per run must be at least 1"),
    ("4cpus+4cpus:1h", {}, "names cpu twice"),
    ("4cpus+2gpus:-1h", {}, "cannot read plan part 1"),
])
def test_bad_gpu_plans_are_one_line(plan, kw, says):
    with pytest.raises(fc.PlanError) as e:
        _rate(plan, _rules(), **kw)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_cluster_without_gpus_refuses_a_gpu_plan():
    with pytest.raises(fc.PlanError, match="partition normal has none"):
        _rate("4cpus+2gpus:1h", _rules(gpus=0))


def test_gpus_are_capped_at_the_partitions_like_cpus_at_the_clusters():
    from fscontrol.export import limits

    caps = limits.from_published({"limits": limits.published_limits(64)})
    segs, b = _rate("4cpus+4gpus:1h", _rules())
    limits.check(segs, None, caps, max_gpus=b.max_gpus(), gpus_where="partition normal's")
    segs, b = _rate("4cpus+5gpus:1h", _rules())
    with pytest.raises(limits.PlanError, match=r"plan step 1 asks for 5 GPUs: more than partition normal's, 4 GPUs"):
        limits.check(segs, None, caps, max_gpus=b.max_gpus(), gpus_where="partition normal's")
    # the CPU cap reads the step's CPUs, not its billing: 40 billing a second is 4 CPUs
    segs, _ = _rate("4cpus+4gpus:1h", _rules("CPU=1.0,GRES/gpu=9.0"))
    limits.check(segs, None, limits.from_published({"limits": limits.published_limits(8)}), max_gpus=4)
    segs, _ = _rate("9cpus:1h", _rules())
    with pytest.raises(limits.PlanError, match="asks for 9 CPUs"):
        limits.check(segs, None, limits.from_published({"limits": limits.published_limits(8)}), max_gpus=4)


# ---------------------------------------------------------------------------- the reset times (Slurm's rules, by hand)
def _utc(*a):
    return dt.datetime(*a, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("period, now, first_three", [
    # Friday 2026-11-27 01:40 UTC
    ("DAILY", (2026, 11, 27, 1, 40), [(2026, 11, 28), (2026, 11, 29), (2026, 11, 30)]),
    # WEEKLY: 00:00 of the next Sunday (7 - tm_wday days on; tm_wday of a Friday is 5)
    ("WEEKLY", (2026, 11, 27, 1, 40), [(2026, 11, 29), (2026, 12, 6), (2026, 12, 13)]),
    # on a Sunday after midnight: that Sunday's reset has been; the next is a week on
    ("WEEKLY", (2026, 11, 29, 0, 0, 1), [(2026, 12, 6), (2026, 12, 13), (2026, 12, 20)]),
    ("MONTHLY", (2026, 11, 27, 1, 40), [(2026, 12, 1), (2027, 1, 1), (2027, 2, 1)]),
    ("MONTHLY", (2026, 12, 31, 23, 59), [(2027, 1, 1), (2027, 2, 1), (2027, 3, 1)]),
    ("QUARTERLY", (2026, 11, 27, 1, 40), [(2027, 1, 1), (2027, 4, 1), (2027, 7, 1)]),
    ("QUARTERLY", (2026, 3, 31, 12, 0), [(2026, 4, 1), (2026, 7, 1), (2026, 10, 1)]),
    ("YEARLY", (2026, 11, 27, 1, 40), [(2027, 1, 1), (2028, 1, 1), (2029, 1, 1)]),
])
def test_reset_times_follow_slurms_next_reset(period, now, first_three):
    got = resets_between(_utc(*now), _utc(*now) + 800 * 86400, period, UTC)[:3]
    assert got == [_utc(*d) for d in first_three]


def test_reset_times_at_midnight_exactly_and_none_now():
    t = _utc(2026, 12, 1)
    assert resets_between(t - 1, t, "monthly", UTC) == [t]  # (now, until]: midnight itself is in
    assert resets_between(t, t + 86400 * 27, "MONTHLY", UTC) == []  # at the reset: the next is a month on
    assert resets_between(t, t + 1e9, "NONE", UTC) == [] == resets_between(t, t + 1e9, "NOW", UTC)
    with pytest.raises(Exception, match="PriorityUsageResetPeriod 'FORTNIGHTLY'"):
        resets_between(t, t + 1, "FORTNIGHTLY", UTC)


def test_reset_times_in_slurmctlds_zone_keep_midnight_across_dst():
    from zoneinfo import ZoneInfo

    z = ZoneInfo("Europe/Berlin")
    now = dt.datetime(2026, 3, 28, 12, tzinfo=z).timestamp()  # DST starts 2026-03-29 02:00
    got = resets_between(now, now + 3 * 86400, "DAILY", z)
    assert [dt.datetime.fromtimestamp(x, z).strftime("%m-%d %H:%M") for x in got] == ["03-29 00:00", "03-30 00:00", "03-31 00:00"]
    assert got[1] - got[0] == 23 * 3600  # the short day


def test_the_projection_drops_to_zero_at_a_reset():
    """u = 0 at the reset, then the rest of the plan from 0: 1 billing a second for the day after
    the reset at a 1-day half-life gives (1 - 1/2)/lam."""
    lam = math.log(2) / 86400
    p = fc.trajectory(100.0, 50.0, lam, [(2 * 86400, 1.0)], [86400 - 1, 86400, 2 * 86400], resets=[86400])
    assert p[0].usage > 50000 and p[1].usage == 0.0 and p[1].fairshare == 1.0
    assert p[2].usage == pytest.approx(0.5 / lam, rel=1e-9)


# ---------------------------------------------------------------------------- the CLI, end to end
def test_cli_bills_a_gpu_plan_and_models_a_monthly_reset(tmp_path, monkeypatch):
    """`fscontrol forecast --plan 4cpus+2gpus:10h -p normal` over a published file that carries the
    billing rules: the line says the weights and the 20, --json has them, and a MONTHLY reset inside
    the chart is a line with its date."""
    from tests.test_forecast_cli import T0, _agave_rows, _sample, _snapshot, _sshare_text
    from fscontrol.forecast import service as uf

    monkeypatch.setattr(uf, "invoker", lambda: ("yalim", 1000))
    monkeypatch.setenv("TZ", "UTC")
    import time
    time.tzset()
    from dataclasses import replace

    snap = _snapshot()
    snap = replace(snap, config=replace(snap.config, usage_reset_period="MONTHLY"))
    data = pub.build_published(snap, target_core_hours=10_000, partitions={
        "normal": {"weights": "CPU=1.0,GRES/gpu=8.0", "default": True, "cpus": 512, "gpus": 8}})
    (tmp_path / "public").mkdir()
    path = pub.write_published(data, tmp_path / "public" / "agave.json")
    sample = _sample(tmp_path / "s", _sshare_text(_agave_rows(), {"yalim"}))
    now = T0 + 600
    base = ["forecast", "--published", str(path), "--source", str(sample), "--now", str(now), "--horizon", "9w"]
    r = CliRunner().invoke(app, [*base, "--plan", "4cpus+2gpus:10h"])
    assert r.exit_code == 0, r.output
    assert "billed under partition normal: CPU=1.0,GRES/gpu=8.0: 4cpus+2gpus -> 20 per run" in r.output
    first = resets_between(now, now + 63 * 86400, "MONTHLY", UTC)[0]
    when = dt.datetime.fromtimestamp(first, UTC).strftime("%Y-%m-%d %H:%M")
    assert f"usage resets to 0 at {when}" in r.output and "(PriorityUsageResetPeriod=MONTHLY)" in r.output
    j = json.loads(CliRunner().invoke(app, [*base, "--plan", "4cpus+2gpus:10h", "--json"]).output)
    assert j["billing"]["runs"][0]["billing"] == 20.0 and j["plan"][0]["cores"] == 20.0
    assert j["usage_reset"]["period"] == "MONTHLY"
    traj = j["associations"][0]["trajectory"]
    after = [p for p in traj if p["days"] * 86400 >= first - now]
    assert after and after[0]["fairshare"] == 1.0  # nothing of the plan left after the reset: F = 1
    a = j["associations"][0]  # the statements agree with the chart: back at the target by the reset at the latest
    assert a["idle_days_to_target"] is not None and a["idle_days_to_target"] * 86400 <= first - now + 1e-6
    ap = a["after_plan"]
    assert ap["idle_days_to_target"] is not None and ap["idle_days_to_target"] * 86400 <= first - now - 10 * 3600 + 1e-6
    for bad, says in ((["--plan", "4cpus+9gpus:1h"], "asks for 9 GPUs: more than partition normal's, 8 GPUs"),
                      (["--plan", "4cpus+2gpus:1h", "-p", "gpu"], "--partition 'gpu': no such partition"),
                      (["--plan", "4cpus+1e3gpus:1h"], "cannot read plan part 1")):
        r = CliRunner().invoke(app, [*base, *bad])
        assert r.exit_code == 2 and says in r.output and len(r.output.strip().splitlines()) == 1, r.output


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(now=st.floats(min_value=0, max_value=4.1e9), period=st.sampled_from(["DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY"]))
def test_every_reset_is_the_first_boundary_after_the_last(now, period):
    """Each reset is a UTC midnight of the period's kind (any day; a Sunday; a 1st; a quarter's 1st;
    1 January), strictly after `now`, and no such midnight lies between `now` and the first reset or
    between two resets (walked day by day: the rules of _next_reset, independently)."""
    got = resets_between(now, now + 400 * 86400, period, UTC)
    assert got and got[0] > now

    def kind(d: dt.datetime) -> bool:
        return {"DAILY": True, "WEEKLY": d.isoweekday() == 7, "MONTHLY": d.day == 1,
                "QUARTERLY": d.day == 1 and d.month in (1, 4, 7, 10), "YEARLY": d.day == 1 and d.month == 1}[period]

    want, day = [], dt.datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    while True:
        day += dt.timedelta(days=1)
        if day.timestamp() > now + 400 * 86400:
            break
        if kind(day):
            want.append(day.timestamp())
    assert got == want


def test_the_partitions_are_published_only_where_privatedata_shows_them():
    """privatedata.partitions_public: PrivateData=partitions (or all) hides them from users in Slurm, so
    the world-readable file carries no partition then (a GPU plan is refused, a CPU plan is CPUs);
    the QOS UsageFactors, flags and release are cluster configuration anyone's sacctmgr shows."""
    from dataclasses import replace

    from tests.test_forecast_cli import _snapshot

    parts = {"normal": {"weights": "CPU=1.0,GRES/gpu=8.0", "default": True, "cpus": 8, "gpus": 4}}
    open_ = pub.build_published(_snapshot(), partitions=parts)["billing"]
    assert open_["partitions"] == parts and open_["default_partition"] == "normal" and open_["cluster_gpus"] == 4
    assert open_["qos_usage_factor"] == {"normal": 1.0}
    for hidden in (("partitions",), ("all",)):
        snap = _snapshot()
        snap = replace(snap, config=replace(snap.config, private_data=hidden))
        shut = pub.build_published(snap, partitions=parts)["billing"]
        assert shut["partitions"] is None and shut["default_partition"] is None, hidden
        assert "CPU=1.0" not in json.dumps(pub.build_published(snap, partitions=parts))
        with pytest.raises(fc.PlanError, match="write the job's billing as cpus"):
            _rate("4cpus+2gpus:1h", {"cluster": "agave", "billing": shut})
        assert _rate("4cpus:1h", {"cluster": "agave", "billing": shut})[0][0].rate == 4.0


def test_recovery_statements_come_no_later_than_the_reset():
    """A reset sets every usage to 0: where the projection's recovery comes after the first reset,
    or never at the current load, the recovery is the reset, said so; where it comes first, it stands."""
    from fscontrol.forecast.resets import _recovery_by_reset

    a = {"idle_days_to_target": None, "idle_to_target_text": "not at the current load", "recovery": {"reachable": False},
         "after_plan": {"idle_days_to_target": 40.0, "idle_to_target_text": "in 40 days"}}
    _recovery_by_reset(a, [4 * 86400.0, 34 * 86400.0], plan_end=10 * 86400.0)
    from fscontrol.forecast.loaded import when_text

    assert a["idle_days_to_target"] == 4.0 and a["idle_to_target_text"] == f"{when_text(4.0)}, at the usage reset"
    assert a["recovery"] == {"reachable": True, "by_reset": True}
    assert a["after_plan"]["idle_days_to_target"] == 24.0 and "at the usage reset" in a["after_plan"]["idle_to_target_text"]
    b = {"idle_days_to_target": 1.5, "idle_to_target_text": "in 1 day 12 h", "after_plan": None}
    _recovery_by_reset(b, [4 * 86400.0], plan_end=None)
    assert b["idle_days_to_target"] == 1.5 and b["idle_to_target_text"] == "in 1 day 12 h"


def test_a_weight_too_large_to_forecast_is_one_line():
    """An outside tester: a partition weight of 1e308 gave a NaN traceback in the chart. A step that
    bills more than the forecast models (or no finite number) is one line."""
    for w in ("CPU=1.0,GRES/gpu=1e308", "CPU=1.0,GRES/gpu=1e12"):
        with pytest.raises(fc.PlanError, match="more than the forecast models") as e:
            _rate("4cpus+1gpus:1h", _rules(weights=w))
        assert "\n" not in str(e.value)
    assert _rate("4cpus+1gpus:1h", _rules(weights="CPU=1.0,GRES/gpu=1e9"))[0][0].rate == 1e9 + 4


def test_the_plan_is_echoed_as_written_not_in_billing_units():
    """An outside tester: '4cpus:1h' under CPU=0.5 was echoed 'plan 2cpus:1h' (billing relabelled as CPUs)."""
    from fscontrol.forecast.service import plan_text

    segs, _ = _rate("4cpus:1h,idle:30m", _rules(weights="CPU=0.5"))
    assert segs[0].rate == 2.0 and plan_text(segs) == "4cpus:1h,idle:30m"


def test_typed_gpus_bill_under_their_type_weight():
    """An outside tester (24.11): gres/gpu:a100 weighted 10, a plan's GPUs billed 0. With one GPU type
    on the partition a job's GPUs count under the typed name too, as Slurm's AllocTRES shows
    (gres/gpu=2,gres/gpu:a100=2); with several types weighted by type the plan cannot say which."""
    rules = _rules(weights="CPU=1.0,GRES/gpu:a100=10.0")
    rules["billing"]["partitions"]["normal"]["gpu_types"] = ["a100"]
    assert _rate("4cpus+2gpus:1h", rules)[0][0].rate == 24.0
    rules["billing"]["partitions"]["normal"]["gpu_types"] = ["a100", "v100"]
    with pytest.raises(fc.PlanError, match="GPUs of types a100, v100, weighted by type"):
        _rate("4cpus+2gpus:1h", rules)
    rules = _rules(weights="CPU=1.0,GRES/gpu=8.0")  # no types published (an older file): as before
    assert _rate("4cpus+2gpus:1h", rules)[0][0].rate == 20.0
