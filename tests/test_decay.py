"""Decay: Slurm's factor and step model against a real slurmctld, the ODE against a numerical
solver, and the sacct inflow."""

from __future__ import annotations

import csv
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad, solve_ivp

from fscontrol.model.decay import (
    decay_factor_per_second,
    decay_lambda,
    decayed_charge,
    effective_half_life,
    inflow,
    job_charge,
    ode_step,
    piecewise_usage,
    usage_factors,
)
from fscontrol.model.passes import Charge, slurm_pass, slurm_usage
from fscontrol.records import JobRecord
from fscontrol.snaprecords import QosRow

RUN2 = Path(__file__).parent / "data" / "captures" / "run2"
HL = 300  # the testbed's PriorityDecayHalfLife


def epoch(s: str) -> float:
    return datetime.strptime(s[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()


def log_lines() -> list[str]:
    return (RUN2 / "slurmctld_decay_log_lines.txt").read_text().splitlines()


def passes() -> list[float]:
    """Logged decay passes (Slurm's time(NULL): whole seconds), with the one before them."""
    logged = [math.floor(epoch(ln[1:20])) for ln in log_lines() if "Decay factor over" in ln]
    return [logged[0] - 60.0, *logged]


def sacct_charges(name: str) -> dict[str, list[Charge]]:
    """account/user -> charges of the COMPLETED jobs in a `sacct -X -P` capture with header."""
    lines = (RUN2 / f"{name}.txt").read_text().splitlines()
    hdr = lines[0].split("|")
    out: dict[str, list[Charge]] = {}
    for line in lines[1:]:
        f = dict(zip(hdr, line.split("|")))
        if f["State"] == "COMPLETED":
            billing = float(f["AllocTRES"].split("billing=")[1].split(",")[0])
            out.setdefault(f"{f['Account']}/{f['User']}", []).append(Charge(epoch(f["Start"]), epoch(f["End"]), billing))
    return out


# ---------------------------------------------------------------------------- the factor
def test_factor_matches_slurmctld_log():
    """slurmctld logged: 'Decay factor over 60 seconds goes from 0.997690000000000 -> 0.870436621044062'."""
    line = next(ln for ln in log_lines() if "Decay factor over 60 seconds" in ln)
    per_s, per_pass = (float(x) for x in line.split("goes from ")[1].split(" -> "))
    assert decay_factor_per_second(HL) == pytest.approx(per_s, abs=1e-15)
    assert math.exp(-decay_lambda(HL) * 60) == pytest.approx(per_pass, abs=1e-14)
    # README 5c: effective half-life 299.72 s, not 300
    assert effective_half_life(HL) == pytest.approx(299.72, abs=0.005)


def test_lambda_edge_cases():
    assert decay_lambda(0) == 0.0 and effective_half_life(0) == math.inf
    week = 7 * 86400
    assert decay_lambda(week) == pytest.approx(math.log(2) / week, rel=3e-4)  # 0.693 vs ln 2
    for bad in (-5, 0.5):
        with pytest.raises(ValueError):
            decay_lambda(bad)


# ---------------------------------------------------------------------------- the step model
def test_step_model_reproduces_captured_raw_usage():
    """Every 10 s sample of every user association in run 2 (sshare_series.csv), from sacct's
    jobs and the logged passes: within sshare's integer truncation (< 1)."""
    charges = sacct_charges("sacct_X_hdr")
    pad = sacct_charges("pad_sacct")
    reset = epoch("2026-11-21T18:02:37")  # pad_reset_rawusage: fsdummy set to 0 (timeline.log)
    ends = [c.end for cs in (*charges.values(), *pad.values()) for c in cs]
    p = passes()
    series: dict[str, list[tuple[float, float]]] = {}
    with open(RUN2 / "sshare_series.csv") as fh:
        for r in csv.DictReader(fh):
            if r["user"] and r["user"] != "root":
                series.setdefault(f"{r['account']}/{r['user']}", []).append((float(r["epoch"]), float(r["rawusage"])))
    checked = 0
    for assoc, samples in series.items():
        # samples within 1 s of a pass or job end race with it; fsdummy's around its reset too
        ok = [
            (t, u)
            for t, u in samples
            if all(abs(t - x) > 1 for x in (*p, *ends)) and not (assoc == "fsadmin/fsdummy" and t >= reset - 1)
        ]
        model = slurm_usage([t for t, _ in ok], p, charges.get(assoc, []) + pad.get(assoc, []), HL)
        for (t, u), m in zip(ok, model):
            assert 0 <= m - u < 1.0 + 1e-6, (assoc, t, u, m)
            checked += 1
    assert checked > 600


def test_padding_job_charge():
    """README 5b: the 60 s, billing 1e6 dummy job added 52,939,571 (57 s at the pass, a 3 s
    tail at its end), not 6e7."""
    first = (RUN2 / "pad_sshare_after_end.txt").read_text().splitlines()
    printed = next(int(ln.split("|")[3]) for ln in first if "fsdummy" in ln)
    at = epoch("2026-11-21T18:01:40")  # pad_sshare_after_end.cmd
    (job,) = sacct_charges("pad_sacct")["fsadmin/fsdummy"]
    u = slurm_usage([at], passes(), [job], HL)[0]
    assert math.floor(u) == printed
    f = decay_factor_per_second(HL)
    assert u == pytest.approx(57 * 1e6 * f**57 + 3 * 1e6 * f**3)
    # without `limits` the tail is never charged (README G10)
    assert slurm_usage([at], passes(), [job], HL, limits=False)[0] == pytest.approx(57 * 1e6 * f**57)


def test_jobs_ending_together_are_each_charged_once():
    ps = [0.0, 60.0, 120.0]
    a, b = Charge(10.0, 90.0, 4.0), Charge(30.0, 90.0, 2.0)
    both = slurm_usage([100.0, 130.0], ps, [a, b], HL)
    alone = [x + y for x, y in zip(slurm_usage([100.0, 130.0], ps, [a], HL), slurm_usage([100.0, 130.0], ps, [b], HL))]
    assert both == pytest.approx(alone)
    f = decay_factor_per_second(HL)
    assert both[0] == pytest.approx(50 * 4 * f**50 + 30 * 2 * f**30 + 30 * 4 * f**30 + 30 * 2 * f**30)


def test_slurm_pass_formula():
    f = decay_factor_per_second(HL)
    assert slurm_pass(100.0, 60, [(60, 2.0), (10, 5.0)], HL) == pytest.approx(100 * f**60 + 120 * f**60 + 50 * f**10)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.sampled_from([30.0, 60.0, 300.0]), st.floats(0.1, 500.0), st.sampled_from([300, 3600, 86400]))
def test_step_model_constant_job_is_a_geometric_sum(k, period, rate, hl):
    """A job running through k passes of period P: u_k = P b f^P (1 - f^{Pk}) / (1 - f^P)."""
    ps = [i * period for i in range(k + 1)]
    u = slurm_usage([ps[-1] + 0.5], ps, [Charge(-10.0, 1e12, rate)], hl)[0]
    f = decay_factor_per_second(hl)
    assert u == pytest.approx(period * rate * f**period * (1 - f ** (period * k)) / (1 - f**period), rel=1e-9)


# ---------------------------------------------------------------------------- the ODE
segments = st.lists(st.tuples(st.floats(0.0, 5e5), st.floats(0.0, 200.0)), min_size=1, max_size=5)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 1e8), segments, st.floats(1e-7, 1e-4))
def test_closed_form_agrees_with_numerical_ode(u0, segs, lam):
    """RK45 (tight tolerances) piece by piece, the rate being constant on each piece."""
    pieces = [*segs, (2e5, 0.0)]  # then idle
    total = sum(d for d, _ in pieces)
    times = sorted({min(total, total * i / 7) for i in range(8)})
    numeric: dict[float, float] = {}
    start, u = 0.0, u0
    for dur, rate in pieces:
        end = start + dur
        inside = [t for t in times if start <= t <= end and t not in numeric]
        if dur > 0:
            sol = solve_ivp(lambda t, y, r=rate: [r - lam * y[0]], (start, end), [u], rtol=1e-11, atol=1e-8, dense_output=True)
            numeric.update({t: float(sol.sol(t)[0]) for t in inside})
            u = float(sol.y[0][-1])
        else:
            numeric.update({t: u for t in inside})
        start = end
    mine = piecewise_usage(u0, segs, lam, times)
    for t, a in zip(times, mine):
        assert a == pytest.approx(numeric[t], rel=1e-6, abs=1e-3), t


def test_ode_step_limits():
    assert ode_step(10.0, 2.0, 0.0, 5.0) == 20.0
    assert ode_step(10.0, 2.0, 0.1, 1e6) == pytest.approx(20.0)  # steady state c/lambda
    with pytest.raises(ValueError):
        piecewise_usage(0.0, [(-1.0, 1.0)], 0.1, [0.0])


def test_decayed_charge_is_the_integral():
    lam, rate = 1e-3, 7.0
    expect, _ = quad(lambda t: rate * math.exp(-lam * (5000 - t)), 1000, 3000)
    assert decayed_charge(rate, 1000, 3000, 5000, lam) == pytest.approx(expect, rel=1e-10)
    assert decayed_charge(rate, 1000, 3000, 5000, 0.0) == pytest.approx(14000)


# ---------------------------------------------------------------------------- sacct inflow
def job(jid, user, acct, qos, billing, start, end, elapsed) -> JobRecord:
    return JobRecord(jid, user, acct, "normal", qos, "COMPLETED", billing, billing, 1, start, start, end, elapsed)


def test_usage_factors_from_qos_rows():
    assert usage_factors([QosRow("normal", 1.0), QosRow("half", 0.5)]) == {"normal": 1.0, "half": 0.5}


def test_inflow_with_usage_factors_and_unknown_qos():
    jobs = [
        job("1", "alice", "flat", "normal", 16, 0.0, 120.0, 120.0),
        job("2", "alice", "flat", "half", 4, 0.0, 100.0, 100.0),
        job("3", "bob", "phys", "mystery", 2, 50.0, None, 30.0),  # unknown QOS: factor 1
        job("4", "bob", "phys", "normal", 8, None, None, 0.0),  # never started
    ]
    got = inflow(jobs, {"normal": 1.0, "half": 0.5})
    assert got == {("flat", "alice"): 16 * 120 + 4 * 100 * 0.5, ("phys", "bob"): 2 * 30}


def test_inflow_clipped_to_a_window():
    j = job("1", "alice", "flat", "normal", 10, 100.0, 400.0, 300.0)
    assert job_charge(j, 1.0, (200.0, 300.0)) == 10 * 100
    assert job_charge(j, 2.0, (0.0, 150.0)) == 10 * 50 * 2
    assert job_charge(j, 1.0, (500.0, 600.0)) == 0.0
    running = job("2", "bob", "phys", "normal", 3, 100.0, None, 0.0)
    assert inflow([running], {}, window=(0.0, 1000.0)) == {("phys", "bob"): 3 * 900}


def test_next_pass_and_slurmctlds_record_of_its_last_pass(tmp_path):
    """The pass schedule the loop's control aligns to: slurmctld writes the time of its last pass
    as 8 big-endian bytes (then the last reset) into StateSaveLocation/priority_last_decay_ran
    (checked on the testbed: 0x6b042da6 = the pass time, mtime the same second)."""
    from fscontrol.model.decay import next_pass
    from fscontrol.slurm.source import last_decay_pass

    assert next_pass(1000.0, 60.0, 1000.0) == 1060.0
    assert next_pass(1000.0, 60.0, 1059.9) == 1060.0
    assert next_pass(1000.0, 60.0, 1060.0) == 1120.0
    assert next_pass(1000.0, 300.0, 5000.0) == 5200.0
    (tmp_path / "priority_last_decay_ran").write_bytes((1795435942).to_bytes(8, "big") + (1795425209).to_bytes(8, "big"))
    assert last_decay_pass(str(tmp_path)) == 1795435942.0
    assert last_decay_pass(str(tmp_path / "nowhere")) is None
    assert last_decay_pass(None) is None
    (tmp_path / "priority_last_decay_ran").write_bytes(b"\x00\x01")  # cut short
    assert last_decay_pass(str(tmp_path)) is None
