"""The one executor: everything between a plan and Slurm, for every stage that acts.

    intent  -> the planned commands (and the ledger rows of the holds about to be placed) are
               written before any of them runs (write_plan, ledger_intent, record_originals);
    apply   -> each command run in order under one deadline, its outcome recorded as soon as it
               is known, with the ledger row it settles (apply, settle_ledger_row);
    settle  -> what an earlier tick left open (killed, timed out) checked against the next
               snapshot (settle, write_settlement);
    persist -> slurm.conf through act/slurmconf.py, the one writer (persist_and_verify), only
               when a restart would otherwise start on a d too far off, at most hourly.

agent/pipeline.py composes these into a tick; nothing else runs a planned command. A command is
an argument list run with a timeout by the source's `run` (never a shell).
"""

from __future__ import annotations

import math
import time
from collections import namedtuple
from dataclasses import replace
from collections.abc import Callable, Sequence

from fscontrol.errors import FscontrolError, SlurmCommandError, SlurmTimeoutError, UnsafeActionError
from fscontrol.snaprecords import Snapshot
from fscontrol.slurm import parse
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger
from fscontrol.store.connection import Database

Run = Callable[..., object]  # source.run: (argv, timeout=...) -> CommandOutput


def record_originals(db: Database, cluster: str, snap: Snapshot, plan) -> None:
    """Before the agent first changes a setting, what Slurm held (for `control off`)."""
    for a in plan:
        if a.kind == "set_damping":
            store_ledger.record_original(db, cluster, "damping", snap.config.damping_factor, snap.taken_at)
        elif a.kind == "set_usage_factor":
            qos = next(x.split("=", 1)[1] for x in a.argv if x.startswith("name="))
            uf = {q.name: q.usage_factor for q in snap.qos}.get(qos)
            store_ledger.record_original(db, cluster, f"usage_factor:{qos}", uf, snap.taken_at)


# (a named tuple: a frozen dataclass costs ~0.5 ms to build at import)
Settled = namedtuple("Settled", (
    "actions",  # list: (action id, new status, note)
    "ledger",  # gate.Reconciled or None
    "changes",  # tuple
))


def settle(db: Database, snap: Snapshot) -> Settled:
    """Step 2 of the tick: what earlier ticks left open, checked against this snapshot. Pure reads."""
    from fscontrol.records import MARK_PREFIX

    entries = store_ledger.ledger_entries(db, snap.cluster)
    rec = None
    if entries or any(j.admin_comment.startswith(MARK_PREFIX) for j in snap.queue):  # the gate's: its module then
        from fscontrol.act import gate

        rec = gate.reconcile_ledger(snap.queue, entries)
    changes = tuple(("job " + j, old, new, why) for j, old, new, why in (rec.changes if rec else ()))
    out = []
    qos = {q.name: q.usage_factor for q in snap.qos}
    for a in store_ledger.open_actions(db, snap.cluster):
        argv, kind = a["argv"], a["kind"]
        opts = dict(x.split("=", 1) for x in argv if "=" in x)
        if kind == "set_damping":
            ok = snap.config.damping_factor == int(argv[-1])
        elif kind == "set_usage_factor":
            ok = abs(qos.get(opts.get("name", ""), -1.0) - float(opts.get("usagefactor", "nan"))) <= 1e-6
        elif kind == "submit_dummy":
            user, account = opts.get("--uid"), argv[argv.index("-A") + 1]
            ok = any(j.user == user and j.account == account for j in snap.queue)
        elif kind == "persist_damping":  # ("edit", path, "FairShareDampeningFactor=d", ...): the file says
            try:
                with open(argv[1]) as fh:
                    ok = any(ln.strip() == argv[2] for ln in fh)
            except OSError:
                ok = None
        else:
            ok = None
        if ok is None:  # gate commands: their jobs' ledger rows were settled by their marks above
            new, note = ("settled", "settled through the ledger and the job's mark") if kind in (
                "hold", "nice", "release", "unnice", "unmark") else ("unverified", "not checkable from a snapshot")
        else:
            new, note = ("ok", "Slurm shows it done") if ok else ("not_done", "Slurm does not show it")
        out.append((a["id"], new, f"settled at the next tick: {note}"))
        changes += ((f"action {a['id']} ({kind})", a["status"], new, note),)
    return Settled(out, rec, changes)


NOTHING_SETTLED = Settled([], None, ())


def write_settlement(db: Database, cluster: str, settled: Settled, taken_at: float) -> None:
    """The settlement, inside the tick's intent transaction."""
    for aid, st, note in settled.actions:
        store_ledger.update_action(db, aid, st, note, None, time.time())
    if settled.ledger is not None:
        store_ledger.write_ledger(db, cluster, settled.ledger.ledger, {}, taken_at)


def write_plan(db: Database, cluster: str, decision_id: int | None, stage: str, plan: Sequence, *, apply_it: bool,
               at: float, tick_id: int) -> list[int]:
    """The intent: every planned command, `pending` (to be run) or `planned` (a dry run)."""
    status = "pending" if apply_it else "planned"
    return store_ledger.write_actions(db, cluster, decision_id, stage,
                                      [a if a.status == "refused" else replace(a, status=status) for a in plan], at, tick_id)


def ledger_intent(rec, plan, snap: Snapshot) -> dict:
    """The ledger as it will be once the planned holds and releases are done; written before any
    of them runs, so a kill between commands never leaves a job held that no ledger row owns."""
    from fscontrol.act import gate

    entries = dict(rec.ledger) if rec is not None else {}
    for jid in plan.stale_ledger:  # gone, or someone else's now: the plan says why (stale_why)
        entries.pop(jid, None)
    nice_of = {j.job_id: j.nice for j in snap.queue}
    for a in plan.actions:
        if a.kind in ("hold", "nice"):
            entries[a.job_id] = gate.LedgerEntry(a.kind, nice_of.get(a.job_id, 0), a.nice if a.kind == "nice" else None, "holding")
        elif a.kind in ("release", "unnice") and a.job_id in entries:
            entries[a.job_id] = replace(entries[a.job_id], state="releasing")
    return entries


def apply(db: Database, run: Run, plan, ids, deadline: float, *, dependent: bool, cluster: str | None = None) -> list:
    """Run the planned commands in order, each outcome recorded as soon as it is known (with the
    ledger row it settles). `dependent`: the rest is skipped after a failure (control's commands
    build on each other); the gate's are independent. A command that times out may have acted:
    'unknown', settled by the next tick."""
    done = []
    blocked = None
    not_released: set[str] = set()  # gate: a release that did not go through keeps its job's mark
    for aid, a in zip(ids, plan):
        left = deadline - time.monotonic()
        if a.status == "refused":  # planned as refused (control off: a slurm.conf line no longer the agent's)
            res = a
        elif blocked:
            res = replace(a, status="skipped", output=f"not run: {blocked}")
        elif a.kind == "unmark" and a.job_id in not_released:
            res = replace(a, status="skipped", output="not run: the release before it did not go through (the mark stays)")
        elif left <= 0:
            res = replace(a, status="skipped", output="not run: the tick's deadline (agent.tick_deadline) passed")
        else:
            try:
                if a.argv[0] == "edit":  # persist_damping, restore_conf_damping: slurm.conf (_edit_conf)
                    out = _edit_conf(a, run, left)
                else:
                    out = run(a.argv, timeout=left).stdout.strip()
                job = out.split(";")[0] if a.kind == "submit_dummy" else a.job_id
                res = replace(a, status="ok", output=out[:2000], job_id=job)
            except SlurmTimeoutError as e:
                res = replace(a, status="unknown", output=str(e)[:2000])
            except UnsafeActionError as e:  # refused before it changed anything (slurmconf's checks)
                res = replace(a, status="refused", output=str(e)[:2000])
            except (FscontrolError, OSError) as e:
                res = replace(a, status="failed", output=str(e)[:2000])
            if dependent and res.status != "ok":
                blocked = "an earlier action failed or timed out"
            if a.kind == "release" and res.status != "ok":
                not_released.add(a.job_id)
        with store.transaction(db):
            store_ledger.update_action(db, aid, res.status, res.output, res.job_id, time.time())
            if cluster is not None and a.job_id:
                settle_ledger_row(db, cluster, a, res.status)
        done.append(res)
    return done


def _edit_conf(a, run: Run, left: float) -> str:
    """An edit of slurm.conf, ("edit", path, "FairShareDampeningFactor=v" | "no ... line",
    [ONLY_IF=v,] ["scontrol reconfigure"]), through act/slurmconf.py, the one writer; its
    reconfigure within what is left of the tick's deadline."""
    from fscontrol.act import slurmconf  # (here: a tick that edits no slurm.conf never imports it)

    value = a.argv[2].split("=", 1)[1] if "=" in a.argv[2] else None
    mine = next((x.rsplit("=", 1)[1] for x in a.argv[3:] if x.startswith(slurmconf.ONLY_IF)), None)
    return slurmconf.edit_damping(a.argv[1], value, lambda argv: run(argv, timeout=left).stdout,
                                  time.strftime("%Y%m%dT%H%M%S"), reconfigure=a.argv[-1] == "scontrol reconfigure",
                                  expect=mine)


def settle_ledger_row(db, cluster: str, a, status: str) -> None:
    """The ledger row of one gate command, once its outcome is known ('unknown' leaves the intent
    for the next tick to settle against the job's mark). One row read, one row written."""
    state = store_ledger.ledger_state(db, cluster, a.job_id)
    if state is None or status == "unknown":
        return
    if a.kind in ("hold", "nice"):
        store_ledger.set_ledger_state(db, cluster, a.job_id, "held" if status == "ok" else None)  # a failed RPC changed nothing
    elif a.kind in ("release", "unnice"):
        if status != "ok":
            store_ledger.set_ledger_state(db, cluster, a.job_id, "held")
        elif a.kind == "unnice":
            store_ledger.set_ledger_state(db, cluster, a.job_id, None)
    elif a.kind == "unmark" and status == "ok" and state == "releasing":
        store_ledger.set_ledger_state(db, cluster, a.job_id, None)


def one_action_tick(db: Database, run: Run, cluster: str, stage: str, a, apply_it: bool,
                    started: float, budget_s: float):
    """A tick of one command (the watch, the trim): the intent recorded first, then the outcome."""
    return actions_tick(db, run, cluster, stage, [a], apply_it, started, budget_s)[0]


def actions_tick(db: Database, run: Run, cluster: str, stage: str, plan: Sequence, apply_it: bool,
                 started: float, budget_s: float) -> list:
    """A tick of a few dependent commands (the trim's padding): every intent recorded first, in
    one transaction, then each outcome; the rest skipped after a failure."""
    status = "pending" if apply_it else "planned"
    with store.transaction(db):
        tick_id = store.record_tick(db, cluster, started, None, "running", stage=stage)
        ids = store_ledger.write_actions(db, cluster, None, stage, [replace(a, status=status) for a in plan], started, tick_id)
    done = list(plan)
    if apply_it:
        done = apply(db, run, plan, ids, time.monotonic() + budget_s, dependent=True)
    bad = next((a for a in done if a.status not in ("ok", "planned")), None)
    with store.transaction(db):
        store.update_tick(db, tick_id, "ok" if bad is None else "failed", time.time(), None if bad is None else bad.output)
    return done


URGENT_FACTOR = 2.0  # slurm.conf's d this far off is written inside persist_interval (slurmconf.persist_due)


def persist_and_verify(db: Database, source, run: Run, cc, dec, did: int, done: tuple, tick_id: int,
                       conf_path: str | None = None, now: float | None = None, deadline: float | None = None):
    """After control acted: write d into slurm.conf when persist asks for it (slurmconf.persist_due:
    only when a restart would start on a d more than persist_tolerance off, at most once every
    persist_interval; `scontrol reconfigure` only with persist_reconfigure), and read the new d
    back. `conf_path`: SLURM_CONF as slurmctld reports it (used when the config names none). The
    write is an action like any other, run by `apply` under the tick's `deadline` (time.monotonic();
    None: none)."""
    from fscontrol.act import actions as act

    verified = None
    set_ok = any(a.kind == "set_damping" and a.status == "ok" for a in done)
    set_failed = any(a.kind == "set_damping" and a.status != "ok" for a in done)
    if cc.persist and not dec.advise_only and dec.method in ("damping", "hybrid") and not set_failed:
        done = done + _persist(db, run, cc, dec, did, tick_id, cc.slurm_conf or conf_path,
                               time.time() if now is None else now, act, deadline=deadline)
    if set_ok:
        verified = parse.parse_config(source.config().stdout).damping_factor
        if verified != dec.d_target:
            raise SlurmCommandError(
                f"scontrol fsdampeningfactor {dec.d_target} ran, but slurmctld reports FairShareDampeningFactor={verified}"
            )
    return done, verified


def _persist(db: Database, run: Run, cc, dec, did: int, tick_id: int, path: str | None, now: float, act, *,
             deadline: float | None = None) -> tuple:
    """The slurm.conf write of persist, when due: () when not, else the recorded action.

    When persist cannot write slurm.conf at all (no file named, one that cannot be read, one
    that uses Include), the action is recorded as "refused" with the reason, at every control
    tick, and the tick goes on: the runtime d (scontrol fsdampeningfactor) works without the
    file, which matters only to slurmctld's next start; the tick prints the reason as a WARNING
    (the loop logs it). Such a tick is not a failed one: failing every tick would hide the control
    that works behind an exit code an admin learns to ignore (issue #30)."""
    from fscontrol.act import slurmconf

    cluster = store_ledger.decision_cluster(db, did)
    d = dec.d_target
    argv = ("edit", path or "(unknown slurm.conf)", f"FairShareDampeningFactor={d}") + (
        ("scontrol reconfigure",) if cc.persist_reconfigure else ())
    before = last = refused = None
    if not path:
        refused = ("persist = true, but there is no slurm.conf to write: the config sets no slurm_conf and slurmctld "
                   "reports no SLURM_CONF; set slurm_conf, or persist = false")
    else:
        try:
            with open(path) as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError) as e:
            refused = (f"persist = true, but {path} cannot be read ({getattr(e, 'strerror', None) or e}): set slurm_conf "
                       "to the file slurmctld reads (and run the agent where it can write it), or persist = false")
        else:
            before = slurmconf.conf_damping_value(text)
            if slurmconf.has_include(text):
                try:  # where slurmctld's next start would read d
                    value, where = slurmconf.read_damping(path, cluster)
                except UnsafeActionError as e:
                    start = f"the d a restart would start on is unknown ({e})"
                else:
                    due, start = slurmconf.persist_due(value, d, tolerance=cc.persist_tolerance, last_write_at=None,
                                                       interval_s=cc.persist_interval_s, now=now,
                                                       where=f"{where}'s" if where else "Slurm's default (no file sets it)")
                    if not due:
                        return ()  # the included file says d already (within persist_tolerance)
                refused = (f"persist = true, but {path} uses Include: fscontrol does not edit a split slurm.conf; {start}; "
                           f"set FairShareDampeningFactor={d} where slurmctld reads it, or persist = false")
    if refused is not None:
        p_act = act.Action("persist_damping", argv, "persist = true: slurm.conf for slurmctld's next start",
                           status="refused", output=refused)
        with store.transaction(db):
            store_ledger.write_actions(db, cluster, did, "control", [p_act], now, tick_id)
        return (p_act,)
    last = store_ledger.get_state(db, cluster, "persist_written")
    due, why = slurmconf.persist_due(before, d, tolerance=cc.persist_tolerance,
                                     last_write_at=(last or {}).get("at"), interval_s=cc.persist_interval_s, now=now,
                                     urgent_factor=None if cc.persist_reconfigure else URGENT_FACTOR)
    if not due:
        if "persist_interval" not in why:
            return ()  # slurm.conf says d already, or within persist_tolerance: nothing to say
        # a restart would start off, and persist_interval holds the write back: said at the tick (the
        # admin sees why slurm.conf lags the runtime d), not recorded (it is no action, and it recurs)
        return (act.Action("persist_damping", argv, f"persist = true: {why}", status="held",
                           output=f"not written now: {why}"),)
    p_act = act.Action("persist_damping", argv, f"persist = true: {why}; slurm.conf gets d = {d}", status="pending")
    # the original is what the line was before the agent's own edit: recorded with the intent when
    # the file does not hold the agent's line now (first edit, or the admin took the line back
    # since), put back as it was if the edit fails (issue #30: an Include-refused edit recorded
    # null, and `control off` later removed the admin's own line)
    prev = store_ledger.originals(db, cluster).get("slurm_conf_damping", _NONE)
    ours = bool(last) and last.get("path") == path and before == str(last.get("d"))
    with store.transaction(db):
        if not ours:
            store_ledger.set_original(db, cluster, "slurm_conf_damping", {"path": path, "value": before}, now)
        (pid,) = store_ledger.write_actions(db, cluster, did, "control", [p_act], now, tick_id)
    if deadline is None:  # no tick around it (a caller of its own): each command within its own timeout
        deadline = math.inf
    (p_act,) = apply(db, run, [p_act], [pid], deadline, dependent=True)  # the one executor: deadline, statuses
    with store.transaction(db):
        # 'unknown': the reconfigure after the write timed out (slurmconf: the file stays written), so
        # the file holds the agent's line: recorded as written, the original kept for `control off`
        if p_act.status in ("ok", "unknown"):
            store_ledger.set_state(db, cluster, "persist_written", {"at": now, "d": d, "path": path}, now)
        elif not ours:  # no edit: no original of one
            if prev is _NONE:
                store_ledger.forget_original(db, cluster, "slurm_conf_damping")
            else:
                store_ledger.set_original(db, cluster, "slurm_conf_damping", prev, now)
    return (p_act,)


_NONE = object()


