"""`fscontrol doctor` as a library call (config check's run on each cluster too), and the doctor's part in the agent's first tick.

diagnose() reads (fscontrol.slurm.survey), adds what only the history knows (the d the agent
itself last set) and judges (fscontrol.doctor.checks). first_tick_findings() judges what a tick
already read, with no extra command, when the history has no snapshot of the cluster yet.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from fscontrol.doctor import checks
from fscontrol.errors import FscontrolError
from fscontrol.slurm import survey

log = logging.getLogger("fscontrol.doctor")


def agent_damping(db_path: str | Path | None, cluster: str | None) -> int | None:
    """The d the agent expects on `cluster`: the last it set (its action log), or, once `control
    off` has run, the d it found before it first changed it (control off puts that back, by
    `scontrol fsdampeningfactor` or by slurm.conf and a reconfigure, which logs no set_damping);
    None: no history, nothing set, or nothing to expect."""
    if not db_path or not cluster or not Path(db_path).is_file():
        return None
    from fscontrol.store import history as store
    from fscontrol.store import ledger

    try:
        db = store.open_db(db_path, create=False, readonly=True)
        if ledger.get_state(db, cluster, "acting_off") is not None:
            d = ledger.originals(db, cluster).get("damping")
            return None if d is None else int(d)
        return ledger.last_applied_damping(db, cluster)
    except (FscontrolError, Exception):  # a history we cannot read: the check needing it is skipped
        return None


def diagnose(source, cfg=None, db_path: str | Path | None = None,
             slurm_conf: str | None = None) -> tuple[survey.Survey, list[checks.Finding]]:
    """Read the cluster `source` serves and judge it against `cfg` (agent.config.AgentConfig, or
    None: no control asked for). `slurm_conf`: the file to read for d (default: the config's
    slurm_conf when it says persist, else the SLURM_CONF slurmctld names)."""
    cluster = getattr(source, "cluster", None)
    cc = cfg.cluster(cluster) if cfg is not None else None
    if slurm_conf is None and cc is not None and cc.persist:
        slurm_conf = cc.slurm_conf
    pre = survey.read(source, slurm_conf=slurm_conf)
    name = cluster or pre.config.get("ClusterName")
    if cc is not None and cluster is None and cfg.clusters:
        cc = cfg.cluster(name)
    from fscontrol.act import lock, slurmconf

    history = Path(db_path) if db_path else lock.agent_history(cfg)  # the config's agent.db, else root's agent's
    d = agent_damping(history, name)
    sign = None
    if d is None and pre.conf_path:
        original = slurmconf.original_path(pre.conf_path)
        try:  # the pre-agent copy persist keeps, and the file no longer the same: an agent's edit is in place
            if Path(original).read_bytes() != Path(pre.conf_path).read_bytes():
                sign = (f"{original} exists and {pre.conf_path} differs from it (an fscontrol agent with "
                        "persist = true has written this file's d and not put it back)")
        except OSError:
            pass  # no such copy (no agent persisted here), or a file we cannot read: no sign
    s = dataclasses.replace(pre, agent_damping=d, agent_history=str(history), agent_sign=sign)
    return s, checks.check(s, checks.Intent.of(cc, cfg.clusters if cfg is not None else ()))


def first_tick_findings(snap, cc) -> list[checks.Finding]:
    """The doctor's findings from a tick's own snapshot, each logged as one line (warning for a
    fatal or a warning, info for the rest): the agent's first tick on a cluster runs this."""
    found = checks.check(survey.from_snapshot(snap), checks.Intent.of(cc))
    for f in found:
        log.log(logging.WARNING if f.severity != "info" else logging.INFO, "doctor on %s: %s", snap.cluster, f.line())
    return found


def control_stop(snap, cc) -> str | None:
    """Why control must only advise, from the doctor's first fatal finding on the tick's snapshot
    (its message and fix in one line), or None. Pure and cheap: every control decision asks."""
    if cc is None or cc.method not in checks.CONTROL_METHODS:
        return None
    f = checks.control_blocker(checks.check(survey.from_snapshot(snap), checks.Intent.of(cc)))
    return None if f is None else f"doctor: {f.check}: {f.message} -> fix: {f.fix}"


def config_doctor(cfg, source: str) -> list[dict]:
    """The doctor's report (report.doctor.report) for each cluster the config names (one Slurm
    when it names none), or report.doctor.not_run(cluster, why) where Slurm could not be read (no
    Slurm on this host): `config check` goes on."""
    from fscontrol.report import doctor as rdoctor
    from fscontrol.slurm.source import from_spec

    names = sorted(cfg.clusters) if len(cfg.clusters) > 1 else [None]
    out = []
    for name in names:
        try:
            s, findings = diagnose(from_spec(source, name, min(cfg.slurm_timeout_s, 30.0)), cfg)
        except FscontrolError as e:
            out.append(rdoctor.not_run(name or next(iter(cfg.clusters), None), str(e)))
            continue
        out.append(rdoctor.report(s, findings))
    return out

