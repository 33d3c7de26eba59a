"""`simulate`'s output (issue #14): one unit per quantity, named in every header and JSON field,
and charts that stay readable whatever the number of accounts."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.sim import (
    SimJob,
    Workload,
    format_comparison,
    format_report,
    load_workload,
    render_gantt_text,
    run_simulation,
)

ROOT = Path(__file__).resolve().parent.parent
SECTION5 = ROOT / "samples" / "sim" / "sfs-section5.toml"
SDSC = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"


def many_accounts(n: int, nodes: int = 64) -> Workload:
    """n accounts; account k submits k % 7 + 1 one-node jobs (so their usage differs)."""
    jobs = []
    for k in range(n):
        for m in range(k % 7 + 1):
            jobs.append(SimJob(f"{k}.{m}", 60.0 * k, 3600.0, 3600.0, 1 + m % 3, f"u{k}", f"acct{k:03d}"))
    return Workload("many", nodes, jobs, {})


def _labels(report: str) -> list[str]:
    """The row labels of the overall table and every column header of the other tables."""
    out = []
    lines = report.splitlines()
    for k, line in enumerate(lines):
        if k + 1 < len(lines) and re.fullmatch(r"[- ]+", lines[k + 1]) and not re.fullmatch(r"[- ]+", line):
            out += re.split(r"\s{2,}", line.strip())  # a header row (under it, the dashes)
        m = re.match(r"^(\S.*?)\s{2,}\S", line)
        if m and not re.fullmatch(r"[- ]+", line):
            out.append(m.group(1))
    return out


def test_report_states_one_time_unit_hours_in_every_header():
    r5 = [run_simulation(load_workload(str(SECTION5)), p) for p in ("sfs-size", "linear-size")]
    text = format_report(r5[0]) + "\n" + format_comparison(r5, groups=["bob"])
    assert "(min)" not in text and "days" not in text and "jobs/day" not in text, text
    labels = _labels(text)
    timed = [lab for lab in labels if re.search(r"wait|first start|makespan|throughput", lab)]
    assert len(timed) >= 9, labels
    for lab in timed:
        assert lab.endswith("(h)") or lab.endswith("(jobs/h)"), (lab, text)
    # the same figure in the text (hours) and the JSON (seconds)
    d = r5[0].to_dict()
    assert f"mean wait (h)                 {d['overall']['mean_wait_s'] / 3600:.2f}" in text
    assert f"makespan (h)                  {d['overall']['makespan_s'] / 3600:.2f}" in text


def test_json_fields_are_named_with_their_unit():
    d = run_simulation(many_accounts(3), "easy").to_dict(jobs=True)
    dimensionless = {"jobs", "finished", "mean_slowdown", "mean_bsld", "utilization"}
    for name, m in [("overall", d["overall"]), *d["by_account"].items()]:
        for k in m:
            assert k in dimensionless or k.endswith(("_s", "_hours", "_per_h")), (name, k)
    assert "throughput_per_h" in d["overall"] and "throughput_per_day" not in d["overall"]
    for k in d["jobs"][0]:
        assert k in {"id", "user", "account", "nodes"} or k.endswith("_s"), k


def test_text_gantt_is_in_hours_and_names_the_busiest_accounts_only():
    from fscontrol.sim.gantt import TOP_ACCOUNTS

    r = run_simulation(many_accounts(162), "easy")
    g = render_gantt_text(r)
    assert "days" not in g and " h from the first submission" in g
    legend = g.splitlines()[-1]
    assert "?" not in legend and f"+={162 - TOP_ACCOUNTS} other accounts" in legend, legend
    assert legend.count("=") == TOP_ACCOUNTS + 2  # the named ones, others, idle
    small = render_gantt_text(run_simulation(many_accounts(5), "easy"))
    assert "+=" not in small and all(f"acct{k:03d}" in small for k in range(5))


def test_png_layout_is_fixed_and_the_legend_bounded():
    from fscontrol.sim.gantt import OTHERS, TOP_ACCOUNTS, png_layout, rank_accounts

    five, many = png_layout(5), png_layout(162)
    assert five["pixels"] == many["pixels"] == (1440, 720)
    assert five["legend_entries"] == 5 and many["legend_entries"] == TOP_ACCOUNTS + 1
    r = run_simulation(many_accounts(162), "easy")
    shown = list(range(len(r.workload.jobs)))
    named, used, rest = rank_accounts(r, shown, 0.0, max(r.end))
    assert len(named) == TOP_ACCOUNTS and len(rest) == 162 - TOP_ACCOUNTS and OTHERS not in used
    assert min(used[a] for a in named) >= max(used[a] for a in rest)
    # one account more than the top is named rather than drawn as "1 others"
    r = run_simulation(many_accounts(TOP_ACCOUNTS + 1), "easy")
    assert rank_accounts(r, list(range(len(r.workload.jobs))), 0.0, max(r.end))[2] == []


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


@pytest.mark.plot
def test_png_size_does_not_grow_with_the_accounts(tmp_path):
    from fscontrol.sim import render_gantt_png

    def png_layout(n):  # the fixed size, spelled out so that this test runs on older code too
        return {"pixels": (1440, 720)}

    sizes = {n: _png_size(render_gantt_png(run_simulation(many_accounts(n), "easy"), tmp_path / f"g{n}.png"))
             for n in (5, 162)}
    assert sizes[5] == sizes[162] == png_layout(5)["pixels"], sizes
    # the case: the SDSC log's first 17,250 records have 162 accounts (was 1208 x 4167)
    r = CliRunner().invoke(app, ["simulate", str(SDSC), "--limit", "17250", "--no-progress", "--json",
                                 "--png", str(tmp_path / "sdsc.png")])
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.output)[0]["by_account"]) == 162
    assert _png_size(tmp_path / "sdsc.png") == (1440, 720)
