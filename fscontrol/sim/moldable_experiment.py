"""Srinivasan, Krishnamoorthy and Sadayappan's moldable experiment on the SDSC Blue Horizon log.

Regenerate the tables and charts of docs/moldable.md (opt-in, several minutes on the whole log)::

    .venv/bin/python -m fscontrol.sim.moldable_experiment --sigma 0 --png docs/moldable-sigma0.png
    .venv/bin/python -m fscontrol.sim.moldable_experiment --sigma 1 --png docs/moldable-sigma1.png

Per job category (trace processor-seconds, decade bins): the mean turnaround time under each
strategy and its change against rigid scheduling with conservative backfill (the first row).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Optional

import typer

from ..errors import FscontrolError
from . import cmdline
from .moldable import MoldParams
from .moldable_report import format_categories, render_categories_png, render_categories_text, run_moldable, size_profile, summarize
from .workload import read_swf

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_LOG = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"

# the paper's comparison: rigid, greedy, WPFS, sqrt-FS, sqrt-FS + both reservation kinds
DEFAULT_STRATEGIES = ("rigid-cons", "rigid-easy", "greedy", "wpfs-cons", "wpfs", "sqrtfs", "sqrtfs-cat-xf")


def main(argv: Sequence[str] | None = None) -> int:
    return cmdline.run(moldable, argv, "python -m fscontrol.sim.moldable_experiment", __doc__.splitlines()[0])


def moldable(
    log: Annotated[str, typer.Option("--log", help="SWF log (default: the bundled SDSC Blue Horizon log)")] = str(DEFAULT_LOG),
    limit: Annotated[Optional[int], typer.Option("--limit", help="only the first N job records")] = None,
    sigma: Annotated[float, typer.Option("--sigma", help="Downey's sigma (0: perfect scalability)")] = 0.0,
    rf: Annotated[float, typer.Option("--rf", help="range factor (1: any size)")] = 1.0,
    lf: Annotated[float, typer.Option("--lf", help="load factor (1.25 = LF 125%)")] = 1.0,
    avg_par: Annotated[str, typer.Option("--avg-par", help="Downey's A: machine, trace, or a number")] = "machine",
    xfactor: Annotated[float, typer.Option("--xfactor", help="Xfactor reservation threshold")] = 2.0,
    estimates: Annotated[str, typer.Option("--estimates", help="user (the log's requests) or exact (actual run times)")] = "user",
    backfill: Annotated[str, typer.Option("--backfill", help="schedule-time jobs without a reservation: now or best")] = "best",
    share_over: Annotated[str, typer.Option("--share-over", help="fair-share sums over the 'system' (waiting and running) "
                                            "or the 'queue'")] = "system",
    strategies: Annotated[str, typer.Option("--strategies", help="comma-separated; the first is the baseline")] = ",".join(DEFAULT_STRATEGIES),
    sizes: Annotated[bool, typer.Option("--sizes", help="also print the share of jobs per partition size")] = False,
    from_json: Annotated[Optional[str], typer.Option("--from-json", help="redraw the table and charts from a --json file "
                                                     "(no simulation)")] = None,
    only: Annotated[Optional[str], typer.Option("--only", help="with --from-json: the comma-separated strategies to show "
                                                "(the first is the baseline)")] = None,
    png: Annotated[Optional[str], typer.Option("--png", help="write the chart (needs matplotlib)")] = None,
    json_out: Annotated[Optional[str], typer.Option("--json", help="write the per-category figures as JSON")] = None,
    fmt: Annotated[str, typer.Option("--format", help="tabulate format")] = "github",
) -> int:
    a = SimpleNamespace(log=log, limit=limit, sigma=sigma, rf=rf, lf=lf, avg_par=avg_par, xfactor=xfactor, estimates=estimates,
                        backfill=backfill, share_over=share_over, strategies=strategies, sizes=sizes, from_json=from_json,
                        only=only, png=png, json=json_out, format=fmt)
    if a.from_json:
        return _redraw(a)
    try:
        params = MoldParams(sigma=a.sigma, rf=a.rf, lf=a.lf, avg_par=a.avg_par, xfactor=a.xfactor,
                            estimates=a.estimates, backfill=a.backfill,
                            share_over=a.share_over)
        w = read_swf(a.log, limit=a.limit)
        results = []
        for name in a.strategies.split(","):
            r = run_moldable(w, name.strip(), params)
            print(f"# {name}: {r.wall_s:.1f} s", file=sys.stderr, flush=True)
            results.append(r)
        title = f"{w.name}: sigma={a.sigma:g}, RF={a.rf:g}, LF={a.lf * 100:g}%, A={params.avg_par}, {a.estimates} estimates, "
        title += f"Xfactor>{a.xfactor:g}, backfill {a.backfill}, shares over the {a.share_over}"
        print(f"{title}; {len(w.jobs):,} jobs on {w.nodes} nodes; mean turnaround (h) per category, "
              f"change against {results[0].policy.label.removeprefix('mold-')}\n")
        print(format_categories(results, fmt=a.format))
        print()
        print(render_categories_text(results))
        print()
        for r in results:
            o = r.overall
            print(f"{r.policy.label.removeprefix('mold-'):14} utilization {o['utilization'] * 100:5.1f}%  "
                  f"mean wait {o['mean_wait_s'] / 3600:6.2f} h  mean turnaround {o['mean_turnaround_s'] / 3600:6.2f} h  "
                  f"simulated in {r.wall_s:.1f} s")
        if a.sizes:
            print()
            print(size_profile(results))
        if a.png:
            render_categories_png(results, a.png, title=title)
        if a.json:
            Path(a.json).write_text(json.dumps({
                "title": title,
                "params": params.to_dict(),
                "results": [summarize(r) for r in results],
            }, indent=2))
    except FscontrolError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def _redraw(a: SimpleNamespace) -> int:
    try:
        d = json.loads(Path(a.from_json).read_text())
    except (OSError, ValueError) as e:
        print(f"error: cannot read {a.from_json}: {e}", file=sys.stderr)
        return 2
    res = [{**r, "strategy": r["strategy"].removeprefix("mold-")} for r in d["results"]]
    if a.only:
        by = {r["strategy"]: r for r in res}
        want = [x.strip() for x in a.only.split(",")]
        missing = [x for x in want if x not in by]
        if missing:
            print(f"error: not in {a.from_json}: {', '.join(missing)}", file=sys.stderr)
            return 2
        res = [by[x] for x in want]
    print(f"{d['title']}; mean turnaround (h) per category, change against {res[0]['strategy']}\n")
    print(format_categories(res, fmt=a.format))
    print()
    print(render_categories_text(res))
    if a.png:
        try:
            render_categories_png(res, a.png, title=d["title"])
        except FscontrolError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
