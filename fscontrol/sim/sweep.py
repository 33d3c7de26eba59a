"""Several simulator configurations on one workload, side by side.

A sweep is a list of runs, each a policy preset plus overrides (``RunSpec``), from repeated
``-p`` options and/or a sweep file (TOML)::

    # sweep.toml: `fscontrol simulate WORKLOAD --sweep sweep.toml [--jobs N]`
    [[runs]]
    preset = "easy"
    [[runs]]
    preset = "linear-eligible"
    name = "linear, depth 4"          # optional label (default: the preset, or a description)
    depth = 4                         # any Policy field: backfill, depth, age_weight, ...

Three ways to run it, one result shape (``SimResult.to_dict()`` plus ``"run"``: the spec), one
table (:func:`format_sweep`), one chart (:func:`write_chart`):

- in this process (``jobs=1``) or in ``jobs`` worker processes (``ProcessPoolExecutor``; each
  worker loads the workload once), with one progress bar for the whole sweep;
- on a Slurm cluster: :func:`write_sbatch` writes a folder with ``sweep.json`` (workload and
  runs) and ``sweep.sbatch``, a job array with one task per run; each task runs
  ``python -m fscontrol simulate-task DIR INDEX`` and writes ``results/INDEX.json``;
  :func:`merge_results` (``fscontrol simulate-merge DIR``) reads them back.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, NotFoundError, OutputError
from .policies import Policy, get_policy
from .progress import TextProgress

SWEEP_VERSION = 1


@dataclass(frozen=True)
class RunSpec:
    """One configuration: a preset (``policies.PRESETS``, ``+nobf`` allowed) and field overrides.

    A multifactor run with the agent in the loop carries ``overrides = {"multifactor": {...}}``:
    the keyword arguments of ``controlexp.multifactor_policies`` for one control method
    (``controls = [METHOD]``, ``u_star_node_hours``, ``slurm_conf`` as a path, ...), so it is
    plain JSON like any other run (processes, ``--sbatch``, a sweep file)."""

    preset: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None

    def policy(self) -> Policy:
        kw = dict(self.overrides)
        mf = kw.pop("multifactor", None)
        if mf is not None:
            return _multifactor_policy(self.preset, mf, kw, self.name)
        if self.name:
            kw["name"] = self.name
        return get_policy(self.preset, **kw)

    @property
    def label(self) -> str:
        return self.policy().label

    def to_dict(self) -> dict[str, Any]:
        return {"preset": self.preset, "overrides": dict(self.overrides), "name": self.name}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunSpec:
        return cls(str(d["preset"]), dict(d.get("overrides") or {}), d.get("name"))


def parse_sweep(data: Mapping[str, Any], where: str = "sweep") -> list[RunSpec]:
    """Runs from a parsed sweep table (``[[runs]]``, each ``preset`` + optional ``name`` + overrides)."""
    runs = data.get("runs") if isinstance(data, Mapping) else None
    if not isinstance(runs, list) or not runs:
        raise ConfigError(f"{where}: needs a list of runs ([[runs]] with a preset each)")
    extra = sorted(set(data) - {"runs"})
    if extra:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(extra)} (only [[runs]])")
    out = []
    for k, r in enumerate(runs):
        if not isinstance(r, Mapping) or not isinstance(r.get("preset"), str):
            raise ConfigError(f"{where}: runs[{k}] needs a preset (a string: easy, linear-eligible, ...)")
        name = r.get("name")
        if name is not None and not isinstance(name, str):
            raise ConfigError(f"{where}: runs[{k}].name must be a string")
        over = {key: v for key, v in r.items() if key not in ("preset", "name")}
        spec = RunSpec(r["preset"], over, name)
        try:
            spec.policy()
        except ConfigError as e:
            raise ConfigError(f"{where}: runs[{k}]: {e}") from None
        out.append(spec)
    return out


def load_sweep(path: str | Path) -> list[RunSpec]:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read sweep file {p}: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"sweep file {p}: {e}") from None
    return parse_sweep(data, str(p))


def check_labels(specs: Sequence[RunSpec]) -> None:
    seen: dict[str, int] = {}
    for k, s in enumerate(specs):
        lab = s.label
        if lab in seen:
            raise ConfigError(f"runs {seen[lab]} and {k} are both labelled {lab!r}: give one a name")
        seen[lab] = k


@dataclass(frozen=True)
class WorkloadSpec:
    """How to load the workload (``load_workload``'s arguments), so a worker or an array task can."""

    spec: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def load(self):
        from .load import load_workload

        return load_workload(self.spec, **self.options)

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec, "options": dict(self.options)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WorkloadSpec:
        return cls(str(d["spec"]), dict(d.get("options") or {}))

    def absolute(self) -> WorkloadSpec:
        """The spec with a file path made absolute (an array task starts elsewhere)."""
        p = Path(self.spec)
        return WorkloadSpec(str(p.resolve()), self.options) if p.exists() else self


MF_ARGS = ("slurm_conf", "fair_tree", "damping", "half_life", "calc_period", "u_star_node_hours", "controls",
           "reconfigure_at_h", "agent_down", "gate")


def _multifactor_policy(preset: str, mf: Any, rest: Mapping[str, Any], name: str | None) -> Policy:
    from dataclasses import replace

    from .controlexp import multifactor_policies

    if not isinstance(mf, Mapping) or set(mf) - set(MF_ARGS):
        bad = sorted(set(mf) - set(MF_ARGS)) if isinstance(mf, Mapping) else mf
        raise ConfigError(f"run {preset!r}: multifactor takes {', '.join(MF_ARGS)}; not {bad}")
    if not preset.startswith("mf-") or rest:
        raise ConfigError(f"run {preset!r}: multifactor settings go with an mf-* preset and nothing else")
    args = dict(mf)
    conf = args.pop("slurm_conf", None)
    if conf is not None:
        try:
            args["slurm_conf_text"] = Path(conf).read_text()
        except OSError as e:
            raise ConfigError(f"cannot read the slurm.conf {conf}: {e.strerror or e}") from None
    if args.get("fair_tree") is None:
        args["fair_tree"] = preset == "mf-fairtree" or None
    if len(args.get("controls") or ["none"]) != 1:
        raise ConfigError(f"run {preset!r}: one control method per run")
    (p,) = multifactor_policies(**args)
    return replace(p, name=name) if name else p


def multifactor_specs(*, slurm_conf: Path | None, controls: Sequence[str], **kw: Any) -> list[RunSpec]:
    """The runs `fscontrol simulate`'s multifactor options ask for: one per control method."""
    common = {k: (list(v) if isinstance(v, (tuple, list)) else v) for k, v in kw.items() if v is not None}
    if slurm_conf is not None:
        common["slurm_conf"] = str(Path(slurm_conf).resolve())
    preset = "mf-fairtree" if common.get("fair_tree") else "mf-classic"
    return [RunSpec(preset, {"multifactor": {**common, "controls": [c]}}) for c in (controls or ["none"])]


# ------------------------------------------------------------------------------ running

def run_one(workload, spec: RunSpec, *, per_user: bool = False, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    from .run import run_simulation

    r = run_simulation(workload, spec.policy(), progress=progress, per_user=per_user)
    d = r.to_dict()
    d["run"] = spec.to_dict()
    return d


_W: dict[str, Any] = {}


def _init_worker(wspec: dict[str, Any], queue) -> None:
    _W["workload"] = WorkloadSpec.from_dict(wspec).load()
    _W["queue"] = queue


def _work(index: int, spec: dict[str, Any], per_user: bool) -> dict[str, Any]:
    q = _W["queue"]

    def report(done: int, total: int) -> None:
        if q is not None:
            q.put((index, done, total))

    return run_one(_W["workload"], RunSpec.from_dict(spec), per_user=per_user, progress=report)


class SweepProgress:
    """One bar for the whole sweep: ``sweep [#####.....]  42%  3/8 runs done  12.3 s`` (a terminal only)."""

    def __init__(self, runs: int, jobs_per_run: int, enabled: bool | None = None, stream=None):
        self.bar = TextProgress("sweep", enabled=enabled, stream=stream)
        self.runs = runs
        self.per_run = max(1, jobs_per_run)
        self.done: dict[int, int] = {}
        self.finished = 0

    def update(self, index: int, done: int) -> None:
        self.done[index] = done
        self.draw()

    def run_done(self, index: int) -> None:
        self.done[index] = self.per_run
        self.finished += 1
        self.draw()

    def draw(self) -> None:
        total = self.runs * self.per_run
        self.bar.label = f"sweep, {self.finished}/{self.runs} runs done,"
        self.bar(min(total, sum(self.done.values())), total)

    def close(self) -> None:
        self.bar.close()


def run_sweep(
    wspec: WorkloadSpec,
    specs: Sequence[RunSpec],
    *,
    jobs: int = 1,
    per_user: bool = False,
    progress: bool = True,
    workload=None,
) -> list[dict[str, Any]]:
    """Run every spec on the workload; results in the order of ``specs``.

    jobs: worker processes (1: in this process). progress: a bar on stderr (on a terminal).
    workload: the loaded workload, if the caller has it (used when jobs == 1).
    """
    if jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, not {jobs}")
    check_labels(specs)
    specs = list(specs)
    if jobs == 1 or len(specs) == 1:
        w = workload if workload is not None else wspec.load()
        bar = SweepProgress(len(specs), len(w.jobs), enabled=None if progress else False)
        out = []
        try:
            for k, s in enumerate(specs):
                out.append(run_one(w, s, per_user=per_user, progress=lambda d, t, k=k: bar.update(k, d)))
                bar.run_done(k)
        finally:
            bar.close()
        return out
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    if workload is None:
        workload = wspec.load()  # load once here too: a bad workload fails before any worker starts
    ctx = mp.get_context("spawn")  # no fork of a threaded parent; workers import fscontrol afresh
    queue = ctx.Manager().Queue() if progress else None
    bar = SweepProgress(len(specs), len(workload.jobs), enabled=None if progress else False)
    results: list[dict[str, Any] | None] = [None] * len(specs)
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(specs)), mp_context=ctx, initializer=_init_worker,
                                 initargs=(wspec.to_dict(), queue)) as ex:
            futs = {ex.submit(_work, k, s.to_dict(), per_user): k for k, s in enumerate(specs)}
            pending = set(futs)
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                while queue is not None and not queue.empty():
                    k, d, _ = queue.get_nowait()
                    bar.update(k, d)
                for f in done:
                    k = futs[f]
                    results[k] = f.result()
                    bar.run_done(k)
    finally:
        bar.close()
    return [r for r in results if r is not None]


# ------------------------------------------------------------------------------ Slurm job array

def write_sbatch(
    folder: str | Path,
    wspec: WorkloadSpec,
    specs: Sequence[RunSpec],
    *,
    per_user: bool = False,
    python: str | None = None,
    time_limit: str = "1:00:00",
    extra_directives: Iterable[str] = (),
) -> Path:
    """Write ``sweep.json`` and ``sweep.sbatch`` (a job array, one task per run) into ``folder``.

    Each task runs ``PYTHON -m fscontrol simulate-task FOLDER $SLURM_ARRAY_TASK_ID`` with the
    fscontrol that wrote the script first on PYTHONPATH, and writes ``results/<index>.json``;
    Slurm's own output goes to ``logs/``. The folder is private (0700, files 0600).
    """
    check_labels(specs)
    d = Path(folder).resolve()
    if d.exists() and any(d.iterdir()):
        raise OutputError(f"{d} is not empty: give a new folder for the sweep")
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(d, 0o700)
        for sub in ("results", "logs"):
            (d / sub).mkdir(mode=0o700, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot make the sweep folder {d}: {e.strerror or e}") from None
    import fscontrol

    pkg_root = Path(fscontrol.__file__).resolve().parents[1]
    py = python or sys.executable
    sweep = {
        "version": SWEEP_VERSION,
        "workload": wspec.absolute().to_dict(),
        "runs": [s.to_dict() for s in specs],
        "labels": [s.label for s in specs],
        "per_user": per_user,
        "created": time.time(),
    }
    n = len(specs)
    lines = [
        "#!/bin/bash",
        "# fscontrol simulate sweep: one array task per run (sweep.json); merge with",
        f"#   fscontrol simulate-merge {shlex.quote(str(d))}",
        f"#SBATCH --job-name=fscontrol-sweep",
        f"#SBATCH --array=0-{n - 1}",
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=1",
        f"#SBATCH --time={time_limit}",
        f"#SBATCH --output={d}/logs/%A_%a.out",
        *[f"#SBATCH {x}" for x in extra_directives],
        "set -euo pipefail",
        "umask 077",
        f"export PYTHONPATH={shlex.quote(str(pkg_root))}${{PYTHONPATH:+:$PYTHONPATH}}",
        f"exec {shlex.quote(py)} -m fscontrol simulate-task {shlex.quote(str(d))} \"$SLURM_ARRAY_TASK_ID\"",
        "",
    ]
    try:
        _write_private(d / "sweep.json", json.dumps(sweep, indent=2) + "\n")
        _write_private(d / "sweep.sbatch", "\n".join(lines))
    except OSError as e:
        raise OutputError(f"cannot write the sweep into {d}: {e.strerror or e}") from None
    return d / "sweep.sbatch"


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(text)


def read_sweep(folder: str | Path) -> dict[str, Any]:
    d = Path(folder)
    p = d / "sweep.json"
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise NotFoundError(f"{d} is not a sweep folder (no sweep.json: `fscontrol simulate ... --sbatch DIR` writes one)") from None
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{p}: unreadable ({e})") from None
    if data.get("version") != SWEEP_VERSION:
        raise ConfigError(f"{p}: sweep version {data.get('version')!r}, this fscontrol reads {SWEEP_VERSION}")
    return data


def run_task(folder: str | Path, index: int) -> Path:
    """One array task: run ``runs[index]`` of the sweep in ``folder``, write ``results/<index>.json``."""
    from ..atomic import write_text

    d = Path(folder)
    sweep = read_sweep(d)
    runs = sweep["runs"]
    if not 0 <= index < len(runs):
        raise ConfigError(f"task {index}: the sweep in {d} has runs 0..{len(runs) - 1}")
    w = WorkloadSpec.from_dict(sweep["workload"]).load()
    res = run_one(w, RunSpec.from_dict(runs[index]), per_user=bool(sweep.get("per_user")))
    res["task"] = {"index": index, "host": os.uname().nodename, "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
                   "array_job_id": os.environ.get("SLURM_ARRAY_JOB_ID")}
    try:
        return write_text(d / "results" / f"{index}.json", json.dumps(res) + "\n", mode=0o600)
    except OSError as e:
        raise OutputError(f"cannot write {d / 'results' / f'{index}.json'}: {e}") from None


def merge_results(folder: str | Path, *, partial: bool = False) -> list[dict[str, Any]]:
    """The array tasks' results, in the sweep's order. Missing ones: an error naming them (or, with
    ``partial``, left out)."""
    d = Path(folder)
    sweep = read_sweep(d)
    out, missing = [], []
    for k in range(len(sweep["runs"])):
        p = d / "results" / f"{k}.json"
        try:
            out.append(json.loads(p.read_text()))
        except FileNotFoundError:
            missing.append(k)
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"{p}: unreadable ({e})") from None
    if missing and not partial:
        raise NotFoundError(f"{len(missing)} of {len(sweep['runs'])} runs have no result yet (tasks "
                            f"{', '.join(map(str, missing[:20]))}{' ...' if len(missing) > 20 else ''}); see {d / 'logs'}")
    return out


# ------------------------------------------------------------------------------ table and chart

def _h(x: float | None) -> str:
    return "-" if x is None else f"{x / 3600.0:,.2f}"


def sweep_rows(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The comparison's numbers, one dict per run (the --json of the table, seconds)."""
    rows = []
    for r in results:
        o = r["overall"]
        rows.append({
            "run": r["policy"]["label"],
            "preset": r.get("run", {}).get("preset"),
            "jobs": o["jobs"],
            "finished": o["finished"],
            "mean_wait_s": o["mean_wait_s"],
            "median_wait_s": o["median_wait_s"],
            "max_wait_s": o["max_wait_s"],
            "mean_bsld": o["mean_bsld"],
            "utilization": o.get("utilization"),
            "makespan_s": o.get("makespan_s"),
            # multifactor under control: |H/u* - 1| after the warm-up (multifactor.halving_summary)
            "halving_p95_error": (r.get("halving") or {}).get("p95_abs_error"),
            "halving_max_error": (r.get("halving") or {}).get("max_abs_error"),
        })
    return rows


def format_sweep(results: Sequence[Mapping[str, Any]]) -> str:
    """One line per run: waits in hours, bounded slowdown, utilization, makespan."""
    from tabulate import tabulate

    table = []
    rows = sweep_rows(results)
    controlled = any(row["halving_p95_error"] is not None for row in rows)
    for row in rows:
        util = row["utilization"]
        table.append([
            row["run"], f"{row['finished']:,}/{row['jobs']:,}", _h(row["mean_wait_s"]), _h(row["median_wait_s"]),
            _h(row["max_wait_s"]), "-" if row["mean_bsld"] is None else f"{row['mean_bsld']:,.2f}",
            "-" if util is None else f"{util * 100:.1f}%", _h(row["makespan_s"]),
        ] + ([_pct(row["halving_p95_error"]), _pct(row["halving_max_error"])] if controlled else []))
    head = ["run", "finished", "mean wait (h)", "median wait (h)", "max wait (h)", "mean bsld", "utilization", "makespan (h)"]
    if controlled:
        head += ["|H/u*-1| p95", "|H/u*-1| max"]
    w = results[0]["workload"] if results else {}
    title = f"workload {w.get('name', '?')}: {w.get('jobs', 0):,} jobs on {w.get('nodes', 0):,} {_unit(w)}; {len(results)} runs"
    return title + "\n\n" + tabulate(table, headers=head, tablefmt="simple", disable_numparse=True)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.2f}%"


def _unit(w: Mapping[str, Any]) -> str:
    return "CPUs" if (w.get("meta") or {}).get("unit") == "cpus" else "nodes"


def write_chart(results: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Bars side by side per run: mean wait (h), mean bounded slowdown, utilization (%). Needs matplotlib."""
    from fscontrol.plotting import pyplot, save

    plt = pyplot("the sweep chart")
    rows = sweep_rows(results)
    labels = [r["run"] for r in rows]
    panels = (
        ("mean wait (h)", [(r["mean_wait_s"] or 0.0) / 3600.0 for r in rows]),
        ("mean bounded slowdown (10 s)", [r["mean_bsld"] or 0.0 for r in rows]),
        ("utilization (%)", [(r["utilization"] or 0.0) * 100.0 for r in rows]),
    )
    width = max(8.0, 1.0 + 0.55 * len(rows) * 3)
    fig, axes = plt.subplots(1, 3, figsize=(min(width, 24.0), 4.8), dpi=100)
    for ax, (title, vals) in zip(axes, panels):
        xs = range(len(vals))
        ax.bar(xs, vals, color=[f"C{k % 10}" for k in xs])
        ax.set_title(title, fontsize=10)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
        for x, v in zip(xs, vals):
            if math.isfinite(v):
                ax.annotate(f"{v:,.1f}", (x, v), ha="center", va="bottom", fontsize=7)
    w = results[0]["workload"] if results else {}
    fig.suptitle(f"{w.get('name', '')}: {len(rows)} runs", fontsize=11)
    fig.tight_layout()
    return save(fig, path, "the chart")
