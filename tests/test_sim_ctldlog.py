"""fscontrol.sim.ctldlog: the completion latency per job from a slurmctld.log."""

from __future__ import annotations

from pathlib import Path

from fscontrol.sim.ctldlog import completion_lags, ends_and_allocations, pass_delays, summary

SEED46 = Path(__file__).resolve().parent.parent / "samples" / "fidelity" / "seed46-classic-4x32"


def _log(lines: list[tuple[str, str]]) -> str:
    return "\n".join(f"[2026-11-28T12:{t}] {m}" for t, m in lines) + "\n"


def test_an_end_in_its_second_and_one_at_its_last_ms():
    text = _log([
        ("31:46.496", "_job_complete: JobId=8 WEXITSTATUS 0"),
        ("31:46.496", "_job_complete: JobId=8 done"),
        ("31:46.505", "sched: Allocate JobId=12 NodeList=tbnode3 #CPUs=9 Partition=normal"),
        ("35:17.997", "_job_complete: JobId=48 done"),
        ("35:19.167", "sched: Allocate JobId=23 NodeList=tbnode1 #CPUs=4 Partition=normal"),  # 1.17 s: not 48's pass
        ("36:10.950", "_job_complete: JobId=5 done"),
        ("36:11.020", "sched: Allocate JobId=6 NodeList=tbnode1 #CPUs=4 Partition=normal"),  # 70 ms, next second
    ])
    ends, allocs = ends_and_allocations(text)
    assert sorted(ends) == ["48", "5", "8"] and len(allocs) == 3
    assert [round(d * 1000) for d in pass_delays(ends, allocs)] == [9, 70]
    lags = completion_lags(text)
    # 8: allocated in its end's second; 5: its pass's allocation fell in the next second;
    # 48: no pass of its own: its end (.997) plus the log's median delay (39.5 ms) crosses the second
    assert lags == {"8": 0.0, "5": 1.0, "48": 1.0}


def test_a_log_without_ends_gives_nothing():
    assert completion_lags(_log([("30:18.193", "_slurm_rpc_submit_batch_job: JobId=1 InitPrio=100000 usec=498")])) == {}


def test_seed46_log_matches_its_sacct_and_starts_in_the_end_second():
    """The kept capture's log: every logged end and start is sacct's second (floored), and every
    main-scheduler allocation within 1 s of an end fell in that end's second."""
    text = (SEED46 / "slurmctld.log").read_text()
    ends, allocs = ends_and_allocations(text)
    rows = (SEED46 / "jobs.txt").read_text().splitlines()
    head = rows[0].split("|")
    end_col = {r.split("|")[0]: r.split("|")[head.index("End")] for r in rows[1:]}
    assert ends and all(str(int(t)) == end_col[j] for j, t in ends.items())
    s = summary(text)
    assert s["after_an_end"] > 0 and s["in_the_end_second"] == s["after_an_end"]
    assert s["ends"] == len(ends) and sum(s["lags"].values()) == len(ends)
    assert s["lags"].get(0.0, 0) > s["lags"].get(1.0, 0)
