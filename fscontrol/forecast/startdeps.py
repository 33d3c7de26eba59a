"""A pending job's dependencies, as the start estimate plays them (forecast/start.py).

squeue's `%E` (`squeue -a -h -t PD -o %i|%E`, parse.DEPS_ARGS) prints what is left of a job's
dependency as slurmctld writes it (job_scheduler.c `_depend_list2str`): each part
`type:ID[_*|_N][+minutes](state)`, or `singleton(state)`, the parts joined by `,` (all must be
met) or `?` (any one), the parts already met left out. The estimate reads:

* `afterok`, `afterany`, `aftercorr`: the job becomes eligible when that job ends (afterok taken
  to end well: the estimate does not guess failures; aftercorr: when the whole array ends, an upper
  bound for the task that corresponds);
* `after`: when that job starts, + the minutes (slurmctld reads `+minutes` for `after` alone);
* an array `ID_*`: when its last task ends (or starts); a heterogeneous job `ID`: its components.

The jobs waited for must be RUNNING (their end is then known: their start + the user's typical
fraction of the limit, or the limit for the range); a job waiting for a job that is itself
pending gets no estimate yet, with that reason (its release would depend on the plan, and a
chain of plans made the estimate neither consistent nor cheap: an outside tester's findings,
2026-11-29). A job is eligible from the moment its dependency is met (slurmctld clears it in the
pass after the job it waits for ends, and sets its begin time then, so its age counts from then).
No estimate (the reason says why) for `afternotok` (it runs only if the job fails), `singleton`,
`expand`, `afterburstbuffer`, a dependency that can no longer be met (a part `failed`, unless an
any-of list has others), a job waited for that has no time limit, or one not in the queue
(ended, or hidden by PrivateData)."""

from __future__ import annotations

import re
from dataclasses import dataclass

END_KINDS = ("afterok", "afterany", "aftercorr")

_PART = re.compile(r"(?P<kind>[a-z]+)(?::(?P<id>\d+)(?P<task>_\*|_\d+)?(?:\+(?P<min>\d+))?)?\((?P<state>[a-z]+)\)")


@dataclass(frozen=True, slots=True)
class Dep:
    """What one pending job waits for: `refs`, each (\"start\" or \"end\", job id, seconds after),
    all of them (`any_of` False) or the first (True); `why` non-empty: not estimated, and why."""

    refs: tuple[tuple[str, str, float], ...] = ()
    any_of: bool = False
    why: str = ""
    text: str = ""  # squeue's %E, as it printed it


def parse_dep(text: str) -> Dep:
    """One job's `%E` as a Dep (see the module's docstring)."""
    text = text.strip()
    if text in ("", "(null)"):
        return Dep()
    any_of = "?" in text
    refs = []
    failed = ""
    for raw in re.split(r"[,?]", text):
        m = _PART.fullmatch(raw.strip())
        if m is None:
            return Dep(why=f"a dependency the estimate does not read ({raw.strip()})")
        kind, state = m["kind"], m["state"]
        if state == "failed":
            # all of them: the job never runs; any of them: the others may still be met
            # (test_job_dependency fails it only when no part is left unfulfilled)
            failed = failed or raw.strip()
            continue
        if kind in END_KINDS or kind == "after":
            if m["id"] is None:
                return Dep(why=f"a dependency the estimate does not read ({raw.strip()})")
            job = m["id"] + ("_*" if m["task"] == "_*" else (m["task"] or ""))
            off = 60.0 * int(m["min"] or 0) if kind == "after" else 0.0  # (+minutes: `after` alone)
            refs.append(("start" if kind == "after" else "end", job, off))
        elif kind == "afternotok":
            return Dep(why=f"runs only if job {m['id']} fails (afternotok): not estimated")
        elif kind == "singleton":
            return Dep(why="waits for the user's jobs of the same name to end (singleton): not estimated")
        else:
            return Dep(why=f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} dependency: not estimated")
    if failed and (not any_of or not refs):
        return Dep(why=f"its dependency {failed} can no longer be met")
    return Dep(tuple(refs), any_of, text=text)


def parse_deps(text: str) -> dict[str, Dep]:
    """job id -> its Dep, from `squeue -a -h -t PD -o %i|%E` (the jobs with a dependency left)."""
    out: dict[str, Dep] = {}
    for line in text.splitlines():
        job, sep, dep = line.strip().partition("|")
        if not sep or not job:
            continue
        d = parse_dep(dep)
        if d.refs or d.why:
            out[job] = d
    return out


class Rows:
    """The queue's rows (job ids) indexed for `members`: the rows themselves, each by its base id
    (`N` of `N_4`, `N_[5-9]`, `N+1`), and by its own id (squeue's %A: `own`, row -> own id), so a
    reference is found in the rows it names rather than by a scan of the queue."""

    def __init__(self, ids, own: dict[str, str] | None = None):
        self.ids = set(ids)
        self.base: dict[str, list[str]] = {}
        for x in ids:
            self.base.setdefault(re.split(r"[_+]", x, maxsplit=1)[0], []).append(x)
        self.own: dict[str, list[str]] = {}
        for x, o in (own or {}).items():
            if x in self.ids:
                self.own.setdefault(o, []).append(x)


def members(ref: str, rows: Rows) -> list[str]:
    """The rows a reference names: the job itself (or the row whose own id it is), a heterogeneous
    job's components (`N+0`, `N+1`), for `N_*` (or an array's own id N) every row of array N
    (`N_4`, `N_[5-9]`), for `N_4` that task's row or the pending rest's that holds it."""
    if ref.endswith("_*"):
        return list(rows.base.get(ref[:-2], ()))
    if ref in rows.ids:
        return [ref]
    if "_" not in ref:  # (an array's own id names the whole array, as `_*` does)
        return list(rows.base.get(ref, ())) or list(rows.own.get(ref, ()))
    base, _, task = ref.partition("_")
    out = []
    for x in rows.base.get(base, ()):
        rng = x.partition("_")[2]
        if rng.startswith("["):
            for piece in rng.strip("[]").split("%")[0].split(","):
                span, _, step = piece.partition(":")  # ("1-21:2": every other task, xlate_array_task_str)
                lo, _, hi = span.partition("-")
                if (lo.isdigit() and (hi or lo).isdigit() and int(lo) <= int(task) <= int(hi or lo)
                        and (not step.isdigit() or (int(task) - int(lo)) % max(1, int(step)) == 0)):
                    out.append(x)
    return out


def resolve(deps: dict[str, Dep], playable: list, running: list,
            pending_ids: set[str]) -> tuple[dict[str, tuple[bool, list]], dict[str, str]]:
    """By job id, for each job of `playable` (StartJobs, the estimate's pending jobs) that has a Dep:
    its references as ("start" or "end", seconds after, [k: running job k]), with its any_of flag; or
    the reason it gets no estimate (a job it waits for that is pending itself, has no time limit,
    or that squeue does not show). `pending_ids`: every pending row's id."""
    at = {j.job_id: k for k, j in enumerate(running)}
    rows = Rows([*at, *pending_ids], {j.job_id: j.own_id for j in running if j.own_id})
    out: dict[str, tuple[bool, list]] = {}
    why: dict[str, str] = {}
    for j in playable:
        d = deps.get(j.job_id)
        if d is None or not d.refs:
            continue
        refs, bad = [], []
        for kind, ref, off in d.refs:
            named = members(ref, rows)
            if not named:
                bad.append(f"waits for job {ref}, which is not among the jobs played with it (it just ended or is still "
                           "configuring, or PrivateData hides it)")
            elif any(x not in at for x in named):
                bad.append(f"waits for job {ref}, itself pending: the estimate does not chain dependencies")
            elif any(running[at[x]].limit_s is None for x in named):
                bad.append(f"waits for job {ref}, which has no time limit")
            else:
                refs.append((kind, off, [at[x] for x in named]))
        if bad and (not d.any_of or not refs):
            why[j.job_id] = bad[0]
        else:
            out[j.job_id] = (d.any_of, refs)  # (any of them: those it can play, an upper bound)
    return out, why


def played(j, windows, deps, limits: bool = False) -> bool:
    """Whether start.estimate plays pending job j (StartJob) in its plan, as far as its squeue reason
    goes: priority and resources, a reservation it runs in, one of `windows` holding its nodes
    (resvplan), a dependency it can read (`deps`: startdeps.Dep by job id), or, with `limits` read,
    an association or QOS limit (model/acctpolicy.REASONS). startparts asks it too."""
    from fscontrol.forecast import resvplan
    from fscontrol.model.acctpolicy import REASONS
    from fscontrol.forecast.startqueue import waiting

    return (waiting(j.reason) or (bool(j.reservation) and j.reason == "Reservation")
            or (limits and j.reason in REASONS)
            or (bool(windows) and resvplan.reserved_reason(j.reason))
            or (j.reason == "Dependency" and bool(deps) and j.job_id in deps and not deps[j.job_id].why))


def releases(dep_of: dict[int, tuple[bool, list]], run_start: list[float], run_end: list[float]) -> dict[int, float]:
    """When each dependent job's dependency is met, from its running jobs' starts and ends (an
    array's or a heterogeneous job's: its last task's start, its last end; a COMPLETING job's end
    is now, the caller's: slurmctld releases the dependency once it has completed)."""
    out = {}
    for i, (any_of, refs) in dep_of.items():
        times = [max((run_start if kind == "start" else run_end)[k] for k in rows) + off for kind, off, rows in refs]
        out[i] = (min if any_of else max)(times)
    return out
