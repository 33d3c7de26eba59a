"""The tick's publish stage: everything the agent writes for others to read. `publish_latest`
writes the world-readable snapshot users' forecasts read, each user's own file and the public page
(fscontrol.export, under its privacy policy); `metrics_text`/`write_metrics` the Prometheus
textfile. With them, what they read of Slurm and of the agent's record: the cluster's CPUs, the
next decay pass (also the loop's pass timing), the inflow window, the d in force, whether the
agent acts.
"""

from __future__ import annotations

import time

from fscontrol.errors import FscontrolError, NotFoundError, OutputError
from fscontrol.slurm import parse
from fscontrol.slurm.source import RecordedSlurm, SlurmSource, last_decay_pass
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger
from fscontrol.store import loaders as store_loaders
from fscontrol.store.connection import Database


def cluster_cpus(source: SlurmSource) -> int | None:
    """The cluster's total CPUs (`sinfo -h -o %C`): the forecast's cap on a plan step. None from a
    recording or when sinfo fails (the forecast then uses the config's or its fallback cap)."""
    if isinstance(source, RecordedSlurm) or not hasattr(source, "run"):
        return None
    try:
        return parse.parse_cpu_total(source.run(parse.CPUS_ARGS).stdout)
    except FscontrolError:
        return None


def partitions_billing(source: SlurmSource) -> dict[str, dict] | None:
    """Each partition's billing as the forecast bills a plan under it (`scontrol -o show partition`,
    read once a publish): {name: {weights (TRESBillingWeights text, "" where none), default
    (Default=YES), cpus (TotalCPUs), gpus (its TRES= gres/gpu count)}}. None from a recording or
    when scontrol fails (a GPU plan is then refused, a CPU plan billed as CPUs)."""
    from fscontrol.slurm.survey import PARTITION_ARGS, parse_partitions

    if isinstance(source, RecordedSlurm) or not hasattr(source, "run"):
        return None
    try:
        parts = parse_partitions(source.run(PARTITION_ARGS).stdout)
    except FscontrolError:
        return None
    out = {}
    for name, f in parts.items():
        tres = dict(kv.split("=", 1) for kv in (f.get("TRES") or "").split(",") if "=" in kv)
        out[name] = {"weights": f.get("TRESBillingWeights") or "", "default": f.get("Default") == "YES",
                     "cpus": _int(f.get("TotalCPUs")), "gpus": _int(tres.get("gres/gpu")) or 0,
                     # typed GPUs (AccountingStorageTRES=gres/gpu:a100): a job's GPUs count under both names
                     "gpu_types": sorted(k.split(":", 1)[1] for k in tres if k.startswith("gres/gpu:"))}
    return out


def users_job_qos(source: SlurmSource, cluster: str) -> dict[str, dict] | None:
    """The QOS each user's job gets without --qos, per account, and their default account
    (slurm.jobqos.read: two sacctmgr reads a publish), for the forecast's plans; None from a
    recording or when sacctmgr fails (a plan is then billed at `normal`'s UsageFactor, saying so)."""
    from fscontrol.slurm import jobqos

    if isinstance(source, RecordedSlurm) or not hasattr(source, "run"):
        return None
    try:
        return jobqos.read(source.run, cluster)
    except FscontrolError:
        return None


def _int(text) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def next_decay_pass(source: SlurmSource, *, after: float | None = None) -> tuple[float, float] | None:
    """(time of the next decay pass later than `after`, PriorityCalcPeriod), from `scontrol show
    config` and slurmctld's own record of its last pass (`source.last_decay_pass`); None where
    that record cannot be read or the cluster runs no decay passes we know of."""
    from fscontrol.model.decay import next_pass

    if isinstance(source, RecordedSlurm):  # a recording has no passes to come
        return None
    conf_out = source.config()
    conf = parse.parse_config(conf_out.stdout, " ".join(conf_out.argv))
    last = last_decay_pass(conf.raw.get("StateSaveLocation"))
    if last is None or conf.priority_type != "priority/multifactor":
        return None
    return next_pass(last, conf.calc_period_s, time.time() if after is None else after), float(conf.calc_period_s)


def inflow_window(slurm_cfg) -> float:
    """How far back the published inflow looks: three usage half-lives (a steady load read as
    steadily as the usage itself remembers it; tests/test_forecast_busy_offline.py), at least 5
    decay passes, at most a day."""
    period = float(slurm_cfg.calc_period_s or 300)
    return min(86400.0, max(5 * period, 3 * float(slurm_cfg.half_life_s or 0)))


def published_inflow(db: Database, snap) -> tuple:
    """What the published snapshot says of the submissions that keep coming: the history's mean
    inflow over the inflow window before `snap` and how much of their time to the limit running
    jobs typically still run (store_loaders.window_inflow)."""
    return store_loaders.window_inflow(db, snap.cluster, snap.taken_at - inflow_window(snap.config), snap.taken_at)


def publish_latest(db: Database, cfg, cluster: str | None, out=None, admins=(), now: float | None = None,
                   source: SlurmSource | None = None, damping: int | None = None, live: bool = False):
    """Write the latest snapshot of the cluster for `fscontrol forecast` (world-readable, atomic),
    and each user's own file beside it (fscontrol.export.privacy: what only they may read, and an
    admin's token, keyed with the site secret made at the first run). With the live `source`, the
    next decay pass after the snapshot goes with it (the Fair Tree forecast's pass times).
    `live`: without `source`, read the live cluster when the snapshot came from it (`fscontrol
    publish`). `damping`: the d the tick just left in slurmctld (its control stage read it back); without it,
    the d a tick recorded in force after the snapshot was taken (damping_in_force_after), else the
    snapshot's. The published d is slurmctld's, never one tick behind it.
    Returns (path, what was written)."""
    from fscontrol.export import privacy
    from fscontrol.export import publish as pub

    snap = store.load_snapshot(db, cluster=cluster)
    if source is None and live and str(snap.source or "").startswith("live"):
        from fscontrol.slurm.source import LiveSlurm

        # `fscontrol publish` after a collect from this cluster: its partitions' billing rules and
        # the next pass come from it too, as a tick's publish does (not from a recording's snapshot)
        source = LiveSlurm(cluster=cluster, timeout_s=float(getattr(cfg, "slurm_timeout_s", 60.0) or 60.0))
    if damping is None:
        damping = damping_in_force_after(db, snap.cluster, snap.taken_at)
    cc = cfg.cluster(snap.cluster)
    admins = tuple(admins) or tuple(cfg.admins)
    secret = privacy.load_secret(privacy.secret_path(_db_file(db), getattr(cfg, "secret", None)))
    upcoming = None
    if source is not None:
        try:
            upcoming = next_decay_pass(source, after=snap.taken_at)
        except FscontrolError:
            upcoming = None  # the pass times are a refinement: the forecast says "within one pass" without them
    from fscontrol.export import limits as caps

    fc = getattr(cfg, "forecast", None) or {}
    size = cluster_cpus(source) if source is not None else None
    partitions = partitions_billing(source) if source is not None else None
    job_qos = users_job_qos(source, snap.cluster) if source is not None else None
    gate = _gate_published(db, cfg, cc, snap)
    data = pub.build_published(
        snap,
        gate=gate,
        limits=caps.published_limits(size, fc.get("max_cpus"), fc.get("max_horizon_s", caps.DEFAULT_MAX_HORIZON_S),
                                     fc.get("max_plan_steps", caps.DEFAULT_MAX_PLAN_STEPS)),
        reference=cc.reference_share,
        dummy=cc.dummy_key,
        target_core_hours=cc.target_core_hours,
        admins=admins,
        published_at=time.time() if now is None else now,
        method=cc.method,
        next_pass_at=upcoming[0] if upcoming else None,
        secret=secret,
        inflow=published_inflow(db, snap),
        damping=damping,
        control=published_control(db, cfg, snap.cluster),
        partitions=partitions,
        job_qos=job_qos,
    )
    try:
        if out is None:  # the agent's own folder (configured or the default) is made; an --out folder never is
            target = pub.default_path(snap.cluster, cfg.publish_dir)
            target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        else:
            target = out
        from pathlib import Path

        from fscontrol.store import quota as store_quota

        privacy.write_own_files(Path(target), pub.own_files(snap, secret=secret, admins=admins, gate=gate,
                                                            tres_limits=store_quota.latest_limits(db, snap.cluster, snap.id),
                                                            job_qos=job_qos))
        data["own_files"] = True
        del snap  # its running jobs and rows (~120 MiB at 1M jobs) are not needed to write the files (issue #31)
        path = pub.write_published(data, target)
        from fscontrol.export.public_page import write_public

        write_public(data, path)  # <cluster>.html next to it: the public page
        return path, data
    except OSError as e:
        raise OutputError(f"cannot write the published snapshot: {e}") from None


def damping_in_force_after(db: Database, cluster: str, taken_at: float) -> int | None:
    """The d an applying tick read back from slurmctld after the snapshot taken at `taken_at`
    (agent_state 'damping_in_force', written by run_tick with its snapshot's time: a later snapshot
    read d from slurmctld itself), or None: the snapshot's d stands."""
    rec = store_ledger.get_state(db, cluster, "damping_in_force")
    if isinstance(rec, dict) and rec.get("d") is not None and float(rec.get("at") or 0.0) >= taken_at:
        return int(rec["d"])
    return None


def published_control(db: Database, cfg, cluster: str) -> dict:
    """Whether the agent acts on the cluster, for the forecast (it says the agent holds the total
    usage only then): `applying` = the config's agent.apply (the ticks act) and not turned off;
    `off` = `control off --apply` stopped it until `control on`."""
    off = store_ledger.get_state(db, cluster, "acting_off") is not None
    return {"applying": bool(getattr(cfg, "apply", False)) and not off, "off": off}


def _gate_published(db: Database, cfg, cc, snap) -> dict | None:
    """The gate's state for the published snapshot (`fscontrol why` on a held job): its latest
    decision's table, as the gate tick recorded it. None when the gate is off or never decided."""
    if not (cc.gate.enabled and cc.allocations):
        return None
    last = store_ledger.get_state(db, snap.cluster, "gate_table")
    if not last:
        return None
    from fscontrol.export import publish as pub

    return pub.gate_summary(last, snap.shares, snap.cluster, cfg.schedule["gate"])


def _db_file(db: Database) -> str | None:
    """The history's file (the site secret lives beside it), None for an in-memory one."""
    return store.db_file(db)


def metrics_text(db: Database, cfg, clusters: list[str] | None = None) -> str:
    """The Prometheus textfile for every cluster in the history (or the named ones)."""
    from fscontrol.export import metrics, privacy
    from fscontrol.report import status as rstatus

    names = clusters or store.clusters(db)
    state = {}
    for name in names:
        try:
            snap = store.load_snapshot(db, cluster=name)
        except NotFoundError:
            continue
        cc = cfg.cluster(name)
        last = store_ledger.last_decision(db, name)
        # the one halving formula, as status and the forecast use it: while the agent holds the
        # total (S_ref d U), F halves after S d U (fairshare.usage_to_halve(total_held=); issue #30)
        status = rstatus.status_of(db, snap, cc, decisions=3)  # the last pass Slurm used, for its metric
        state[name] = {"status": status, "taken_at": snap.taken_at, "decision": last,
                       "holds": len(store_ledger.gate_ledger(db, name)),
                       "name_users": privacy.metrics_name_users(snap.config.private_data, getattr(cfg, "metrics_group", None))}
    return metrics.render(metrics.families(state, store.tick_stats(db)))


def write_metrics(db: Database, cfg, path=None) -> str | None:
    target = path or cfg.metrics
    if not target:
        return None
    from fscontrol.export import metrics

    try:
        return str(metrics.write_textfile(target, metrics_text(db, cfg), group=getattr(cfg, "metrics_group", None)))
    except OSError as e:
        raise OutputError(f"cannot write the metrics file {target}: {e}") from None
