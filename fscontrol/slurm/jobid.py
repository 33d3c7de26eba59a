"""A job as the user names it: an array task (123_4) or a heterogeneous job's component (123+1).

squeue's full listing (`squeue -a`) shows a pending array as one row (`123_[1-5]`) and lists jobs
under their own ids (%A: a het component's own job id, an array's), so a task or a component the
user names is not found there by its name. `squeue -h -j NAME -o %A|%i` finds it: one row per job
it matches (-j 123+1 lists every component of job 123, so only the row whose %i is the name
counts). `fscontrol why` and `fscontrol start` resolve a name through `own_id` (one helper, an
outside tester's issue #33 D6b: `start -j 123_4` was "not pending").
"""

from __future__ import annotations


def job_order(job_id: str) -> int | None:
    """A job's place in slurmctld's job list: jobs are appended as they are created, so by job id
    (an array task by its array's id). None when the id is not a number."""
    head = str(job_id).split("_", 1)[0].split("+", 1)[0]
    return int(head) if head.isdigit() else None


def args(job_id: str) -> tuple[str, ...]:
    """The squeue that lists `job_id`'s rows as '%A|%i'."""
    return ("squeue", "-h", "-j", job_id, "-o", "%A|%i")


def own_id(text: str, job_id: str) -> str | None:
    """The job id (%A) of the row of `squeue -h -j JOB_ID -o %A|%i` (`text`) that is `job_id` itself
    (its %i), or whose own id it is (a plain number); None when squeue lists no such row."""
    rows = [ln.strip().split("|", 1) for ln in text.splitlines() if ln.strip()]
    rows = [(r[0].strip(), r[1].strip()) for r in rows if len(r) == 2]
    named = next((raw for raw, name in rows if name == job_id), None)
    if named is not None:
        return named
    return next((raw for raw, _ in rows if raw == job_id), None)


def resolve(run, job_id: str) -> str | None:
    """`own_id` of `job_id` on the live queue (`run`: a source's run); None when squeue fails or
    does not list it."""
    from fscontrol.errors import SlurmCommandError

    try:
        return own_id(run(args(job_id)).stdout, job_id)
    except SlurmCommandError:
        return None


def state_args(job_id: str) -> tuple[str, ...]:
    """The squeue that lists `job_id`'s rows as '%T|%r|%a|%P|%i' (job_state reads it)."""
    return ("squeue", "-h", "-j", job_id, "-o", "%T|%r|%a|%P|%i")


def job_state(squeue_text: str, job_id: str | None = None) -> tuple[str | None, str | None, str | None, str | None]:
    """(state, reason, account, partition) of `squeue -h -j JOBID -o %T|%r|%a|%P[|%i]`; with `job_id`
    and the %i field, only the row that is that job (-j 123+5 lists every component of job 123)."""
    for line in squeue_text.splitlines():
        f = line.split("|")
        if len(f) == 5 and job_id is not None and f[4].strip() != job_id:
            continue
        if len(f) in (4, 5):
            return f[0].strip(), f[1].strip() or None, f[2].strip() or None, f[3].strip() or None
    return None, None, None, None


def array_tasks(job_id: str) -> int:
    """How many tasks a pending array row of squeue names (`123_[1-5,7]` 6, `123_[1-9:2%3]` 5, `123_4` 1,
    `123` 1): its brackets' ranges (with a step after `:`, a throttle after `%` not counted)."""
    s = str(job_id)
    if not s.endswith("]") or "_[" not in s:
        return 1
    spec = s[s.index("_[") + 2:-1].split("%", 1)[0]
    n = 0
    for part in spec.split(","):
        rng, _, step = part.partition(":")
        a, _, b = rng.partition("-")
        try:
            lo, hi, st = int(a), int(b or a), int(step or 1)
        except ValueError:
            return 1
        n += max(0, (hi - lo) // max(st, 1) + 1)
    return max(n, 1)
