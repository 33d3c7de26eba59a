"""One user's forecast request, whoever asks: the command line (`fscontrol forecast`, fscontrol.cli)
and the web page (fscontrol.web) build a ForecastRequest and call `forecast`, which reads what
the request names (the published snapshot, the user's own sshare row, a recorded sample or the
history), checks who may see what, applies the caps on one request (fscontrol.export.limits), and
returns the forecast as plain data for either to render.

Imports stay inside the functions: this is on `fscontrol forecast`'s cold-start path."""

from __future__ import annotations

from pathlib import Path


class ForecastRequest:
    """What a forecast is asked for (the command's options; fscontrol.cli.forecast documents each).
    `now` is set to a recording's time when the request forecasts from one.

    ForecastRequest(**fields): the fields below, each given or its default. A plain class, not a
    dataclass: a dataclass of 22 fields compiles its generated methods from source at import, ~7 M
    instructions of every forecast's start (issue #31 item 5); a request is only ever built by name."""

    user: str | None = None
    account: str | None = None
    plan: str | None = None
    steps: list[str] | None = None
    job: int | None = None
    target: float = 0.5
    published: Path | None = None
    source: str = "live"
    cluster: str | None = None
    db: Path | None = None
    config_path: Path | None = None
    max_age: str = "1h"
    stale_ok: bool = False
    horizon: str | None = None
    billing_per_core: float | None = None  # None: billed under the published partition weights (forecast.billingplan)
    partition: str | None = None
    qos: str | None = None
    plot: Path | None = None
    now: float | None = None
    reader: object = None  # read_published's stand-in (same arguments), e.g. the web's per-snapshot index
    said_only: bool = False  # the web page's: build only the projections whose answers are said (service.forecast_data)

    def __init__(self, **fields) -> None:
        known = ForecastRequest.__annotations__
        for name, value in fields.items():
            if name not in known:
                raise TypeError(f"ForecastRequest() got an unexpected keyword argument {name!r}")
            setattr(self, name, value)

    def __repr__(self) -> str:
        return "ForecastRequest(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in ForecastRequest.__annotations__) + ")"

    def __eq__(self, other) -> bool:
        if type(other) is not ForecastRequest:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in ForecastRequest.__annotations__)

    __hash__ = None  # type: ignore[assignment]  (mutable, as the dataclass was)


_YEAR_10000 = 253402300800.0  # 10000-01-01T00:00:00Z: the last POSIX time datetime can print is before it


def forecast(args: ForecastRequest, asker: tuple | None = None) -> dict:
    """The forecast `args` ask for, as plain data. `asker` (name, uid[, admin]): who asks when it is
    not the process's own user, e.g. the web page's REMOTE_USER (fscontrol.web.app, with whether the
    site named them an admin of the page); then no uid makes them root, a recorded sample's snapshot
    grants no admin rights, and no own file is read (it is the process's user's, not theirs)."""
    import importlib.util
    import os
    import time

    from fscontrol.forecast import classic as fc
    from fscontrol.export import limits
    from fscontrol.export import publish as pub
    from fscontrol.forecast import service as uf
    from fscontrol.errors import ConfigError

    if args.plot is not None and importlib.util.find_spec("matplotlib") is None:
        raise ConfigError("--plot needs matplotlib, which is not installed: install matplotlib into fscontrol's environment (.venv/bin/pip install matplotlib, or pip install '.[plot]' in the checkout) (or use the text chart / --json)")
    if args.plot is not None and not args.plot.parent.is_dir():
        from fscontrol.errors import OutputError

        raise OutputError(f"cannot write the --plot file {args.plot}: folder {args.plot.parent} does not exist")
    if args.plan is not None and args.steps:
        raise ConfigError("give the campaign either as --plan or as --run/--idle steps, not both")
    import math

    if args.billing_per_core is not None and not (math.isfinite(args.billing_per_core) and args.billing_per_core > 0):
        raise ConfigError(f"--billing-per-core must be a number > 0 (a core's billing weight x the QOS UsageFactor), got {args.billing_per_core:g}")
    if args.job is not None and args.job < 1:
        raise ConfigError(f"--job must be a job id (a whole number of at least 1), got {args.job}")
    if args.now is not None and not (math.isfinite(args.now) and 0 <= args.now < _YEAR_10000):
        raise ConfigError(f"--now must be a POSIX time (seconds since 1970, before the year 10000), got {args.now:g}")
    segments: list = []
    process_user, _ = uf.invoker()
    requester, uid = (asker or uf.invoker())[:2]
    site_admin = bool(asker is not None and len(asker) > 2 and asker[2])  # the web page's admins (web.app)
    who = args.user or requester
    target = args.published or pub.default_path(args.cluster)
    own = None
    if args.published is None and (args.db is not None or (not os.environ.get("FSCONTROL_PUBLISHED") and not _published_there(target))):
        own = _unpublished_snapshot(args, who)  # nothing published: the sample (--source) or the history is the snapshot
    mine = None
    read = args.reader or pub.read_published
    if own is not None:
        data_pub, trusted = own, False
    else:
        from fscontrol.export import privacy

        # only the asker's own rows and their accounts' up to root (what their own sshare shows): a big
        # cluster's file is never held whole, nor read row by row (the file's index; the web's PublishedIndex)
        if read is pub.read_published:
            data_pub, path = read(target, args.cluster, users={who}, ancestors=True)
        else:
            data_pub, path = read(target, args.cluster, users={who})
        trusted = os.stat(path).st_uid == 0
        if asker is None:  # the process's own user: their own file beside it (privacy.py), theirs alone
            mine = privacy.read_own(path, requester, uid)
            if who == requester:
                data_pub = privacy.merge_own(data_pub, mine)
    caps = limits.from_published(data_pub)
    if (args.plan is not None or args.steps or args.horizon) and caps["max_cpus"] is None and args.source == "live":
        caps["max_cpus"] = caps["cluster_cpus"] = _live_cluster_cpus(args.cluster)
    if args.plan is not None:  # --plan "" is an empty plan, as --plan "," is
        limits.check_plan_text(args.plan, caps)
    if len(args.steps or ()) > caps["max_plan_steps"]:
        raise limits.PlanError(f"{len(args.steps)} --run/--idle steps: at most {caps['max_plan_steps']} are forecast in one request")
    from fscontrol.forecast.billingplan import Biller

    default_qos = None
    if args.qos is None and args.billing_per_core is None and (args.plan is not None or args.steps):  # issue #33 D6
        from fscontrol.export import jobqos

        default_qos = jobqos.for_plan(data_pub, who, args.account)
    biller = Biller(data_pub, args.partition, args.qos, args.billing_per_core, default_qos=default_qos)
    if args.plan is not None:
        segments = fc.parse_plan(args.plan, rate_of=biller.rate_of)
    for step in args.steps or ():
        try:
            if ":" in step:  # --run 56cpus:14d (or idle:3d)
                segments += fc.parse_plan(step, rate_of=biller.rate_of)
            else:  # --idle 3d
                segments.append(fc.Segment(fc.parse_duration(step), 0.0))
        except fc.PlanError as e:
            raise fc.PlanError(f"--run/--idle {step!r}: {e}; --run takes '<N>cpus:<duration>', --idle a duration like 3d") from None
    max_age_s = fc.parse_duration(args.max_age)
    horizon_s = fc.parse_duration(args.horizon) if args.horizon else None
    limits.check(segments, horizon_s, caps, args.billing_per_core or 1.0, max_gpus=biller.max_gpus(),
                 gpus_where=f"partition {biller.partition}'s" if biller.partition else None)
    # a recording with a snapshot that is not root's (the demo's, one's own): nothing there is private
    # to anyone but what the reader can already read; root's published file keeps the check
    admin = site_admin or uf.is_admin(requester, uid, data_pub, trusted, mine) or (asker is None and args.source not in ("live", "published") and not trusted)
    uf.check_access(who, requester, admin)
    if (data_pub.get("config") or {}).get("priority_mode") == "fair_tree":
        from fscontrol.forecast import fairtree as ftf

        if segments and asker is None:  # the web page's planner fields are simply not used under Fair Tree
            raise ConfigError("--plan/--run/--idle: under Fair Tree a campaign has no halving to forecast; the forecast "
                              "shows your rank, what moves it, and your budget before anyone passes you")
        if args.now is None and args.source not in ("live", "published"):  # a recording: as of when it was made
            args.now = float(data_pub.get("taken_at") or 0)
        now = time.time() if args.now is None else args.now
        if args.job is not None:  # not what a rank depends on, but a -j that is not theirs is refused all the same
            _checked_job(args, who)
        if own is None and not ftf.can_use_published(data_pub, who):
            # no outlook of the agent's that serves: a rank depends on everyone's usage, every row;
            # bounded: a big tree without outlooks (an older agent's file) is refused, not ranked here
            size = os.stat(path).st_size
            if size > ftf.MAX_WHOLE_TREE_BYTES:
                from fscontrol.export.publish import PublishedError

                raise PublishedError(
                    f"{path} has no Fair Tree outlook for {who} (an older fscontrol published it): ranking its whole "
                    f"tree ({size / 1e6:.0f} MB) here would take more than one request should; ask your admin to "
                    "publish with this version (or, as an admin, `fscontrol forecast --db HISTORY`)")
            data_pub, _ = pub.read_published(path, args.cluster)
            if asker is None and who == requester:
                data_pub = privacy.merge_own(data_pub, mine)
        data = ftf.forecast_data(data_pub, user=who, now=now, account=args.account, requester=requester,
                                 is_admin=admin, max_age_s=max_age_s, stale_ok=args.stale_ok, horizon_s=horizon_s)
        _add_limits(data, data_pub, args.account)
        if args.plot is not None:
            ftf.plot_png(data, str(args.plot))
        return data
    pending: dict[str, int] = {}
    if args.source == "published":
        rows = uf.rows_from_published(data_pub, who)
        if args.job is not None:  # the rows are the file's, the queue is the cluster's: -j is checked there
            pending = _checked_job(args, who)
    elif args.source == "live":
        from fscontrol.slurm.source import LiveSlurm

        argv = ("sshare", "-l", "-P") + (("-u", who) if who != process_user else ())
        live = LiveSlurm(cluster=args.cluster)
        rows = uf.parse_own_sshare(live.run(argv).stdout, who)
        from fscontrol.errors import SlurmCommandError

        try:
            queued = live.run(("squeue", "-u", who) + uf.PENDING_ARGS).stdout
        except SlurmCommandError:  # PrivateData=all can deny squeue to users: forecast a job submitted now
            if args.job is not None:
                raise
            queued = ""
        if args.job is None:
            pending = uf.parse_own_pending(queued)
        else:  # -j names one of `who`'s own pending jobs (in --account, if given): its account is the one forecast
            pending = _named_job(args.job, args.account, who, uf.own_pending_jobs(queued))
    else:
        from fscontrol.slurm.source import RecordedSlurm

        recorded = RecordedSlurm(Path(args.source), cluster=args.cluster)
        out = recorded.sshare()
        rows = uf.parse_own_sshare(out.stdout, who)
        if args.now is None:  # a recording: the forecast is as of when it was recorded, not today
            args.now = max(out.finished_at, float(data_pub.get("taken_at") or 0))
        if args.job is not None:  # -j names one of `who`'s pending jobs in the recorded squeue
            pending = _checked_job(args, who, recorded)
    data = uf.forecast_data(
        data_pub,
        rows,
        user=who,
        now=time.time() if args.now is None else args.now,
        plan=segments,
        target=args.target,
        account=args.account,
        requester=requester,
        is_admin=admin,
        max_age_s=max_age_s,
        stale_ok=args.stale_ok,
        horizon_s=horizon_s,
        pending=pending,
        rows_from="published" if args.source == "published" else "sshare",
        said_only=args.said_only,
    )
    _add_limits(data, data_pub, args.account)
    billed = biller.summary()
    if billed is not None:
        data["billing"] = billed
    if args.plot is not None:
        uf.plot_png(data, str(args.plot))
    return data


def format_forecast(data: dict) -> str:
    """The forecast's text (`fscontrol forecast` without --json): Fair Tree's (rank and budget)
    or classic fair-share's, then the user's limits."""
    from fscontrol.forecast import service as uf
    from fscontrol.model.quota import text_block

    fmt = uf.format_forecast
    if data.get("priority_mode") == "fair_tree" and "rank" in (data["associations"] or [{}])[0]:
        from fscontrol.forecast import fairtree as ftf

        fmt = ftf.format_forecast
    return fmt(data) + text_block(data.get("tres_limits"))


def _add_limits(data: dict, data_pub: dict, account: str | None) -> None:
    """The reader's limits from their own file (privacy.merge_own put them there; nobody else's are
    ever read): "limits" in the forecast's data, each with its plain words (model.quota.describe).
    No key when none were published for them (no limits, an older agent, another user's forecast)."""
    from fscontrol.model import quota

    own = data_pub.get("tres_limits")
    if not own:
        return  # no key: the forecast's JSON is as before
    entries = [dict(e, text=quota.describe(e)) for e in own.get("entries") or []
               if account is None or e["scope"] == "qos" or e["account"] in set((own.get("lines") or {}).get(account) or [account])]
    data["tres_limits"] = {"read_at": own.get("read_at"), "entries": entries}


def _named_job(job: int, account: str | None, who: str, jobs: list[tuple[int, str, bool]]) -> dict[str, int]:
    """{account: job} for -j JOB when squeue lists it as `who`'s own pending job (in `account` when
    one is given); NotFoundError (exit 6) when it is not theirs, not pending, held, or elsewhere."""
    from fscontrol.errors import NotFoundError

    mine = [(a, held) for order, a, held in jobs if order == job]
    where = f" in account {account}" if account else ""
    if not mine:
        raise NotFoundError(f"--job {job}: squeue lists no pending job {job} of {who}'s (-j takes one of your own pending jobs)")
    if account and all(a != account for a, _ in mine):
        raise NotFoundError(f"--job {job}: {who}'s pending job {job} is in account {mine[0][0]}, not {account}")
    if all(held for a, held in mine if not account or a == account):
        raise NotFoundError(f"--job {job}: {who}'s job {job}{where} is held (JobHeld*): it waits for a release, not for its priority")
    return {a: job for a, held in mine if not held and (not account or a == account)}


def _checked_job(args, who: str, recorded=None) -> dict[str, int]:
    """{account: job} for -j when it is one of `who`'s pending jobs: in a recording's squeue
    (`recorded`, or args.source naming one), else in the cluster's (squeue as the user); one
    line (NotFoundError, exit 6) otherwise (_named_job)."""
    from fscontrol.forecast import service as uf

    if recorded is None and args.source not in ("live", "published"):
        from fscontrol.slurm.source import RecordedSlurm

        recorded = RecordedSlurm(Path(args.source), cluster=args.cluster)
    if recorded is not None:
        return _named_job(args.job, args.account, who, _recorded_pending(recorded, who))
    from fscontrol.slurm.source import LiveSlurm

    queued = LiveSlurm(cluster=args.cluster).run(("squeue", "-u", who) + uf.PENDING_ARGS).stdout
    return _named_job(args.job, args.account, who, uf.own_pending_jobs(queued))


def _recorded_pending(recorded, who: str) -> list[tuple[int, str, bool]]:
    """`who`'s pending jobs in a recording's squeue, as own_pending_jobs gives them (none when
    the recording has no squeue: then no -j is theirs)."""
    from fscontrol.errors import FscontrolError
    from fscontrol.slurm.jobid import job_order

    try:
        jobs = list(recorded.squeue_jobs())
    except (FscontrolError, OSError):
        return []
    out = []
    for j in jobs:
        order = job_order(j.job_id)
        if j.user == who and j.state == "PENDING" and order is not None:
            out.append((order, j.account, str(j.reason).startswith("JobHeld")))
    return out


def _live_cluster_cpus(cluster: str | None) -> int | None:
    """The cluster's CPUs from `sinfo -h -o %C`, run as the user, when the snapshot does not say
    (a snapshot published without a live source); None when sinfo fails."""
    from fscontrol.errors import SlurmCommandError
    from fscontrol.slurm import parse
    from fscontrol.slurm.source import LiveSlurm

    try:
        return parse.parse_cpu_total(LiveSlurm(cluster=cluster).run(parse.CPUS_ARGS).stdout)
    except SlurmCommandError:
        return None


def _published_there(target: Path) -> bool:
    """Something is published at `target` (a file, or a folder holding a .json file)."""
    try:
        return target.is_file() or (target.is_dir() and any(target.glob("*.json")))
    except OSError:
        return True  # unreadable: read_published says so


def _unpublished_snapshot(args, who: str | None = None) -> dict | None:
    """When nothing is published, what `fscontrol publish` would write, built in memory from a
    recorded sample (--source FOLDER: collected into a temporary history) or else from the history
    --db, the config's agent.db or $FSCONTROL_DB names (its latest snapshot): the forecast runs from either without a publish
    step first. None when there is neither (the caller reports the missing published file). A
    snapshot that came from a recording is forecast as of when it was recorded. The reader holds the
    whole history here, so `who`'s own running jobs (what their own file would carry) go with it."""
    import os
    import time

    from fscontrol.agent import config
    from fscontrol.export import publish as pub
    from fscontrol.store import history as store

    if args.source not in ("live", "published"):
        import tempfile

        from fscontrol.agent import pipeline, publishing
        from fscontrol.slurm.source import RecordedSlurm

        with tempfile.TemporaryDirectory(prefix="fscontrol-forecast-") as tmp:
            db = store.open_db(Path(tmp) / "history.db")
            limits = None  # a recording holds no limits
            try:
                pipeline.collect(RecordedSlurm(Path(args.source), cluster=args.cluster), db)
                snap = store.load_snapshot(db, cluster=args.cluster)
                inflow = publishing.published_inflow(db, snap)
            finally:
                db.close()
        # a recording has no agent's record: whether the agent acts is the config's (as status judges
        # from an agent's last decision), never "unknown, so held" (an outside tester, issue 30)
        control = {"applying": bool(getattr(config.load(args.config_path), "apply", False)), "off": False}
    else:
        cfg = config.load(args.config_path)
        path = args.db or cfg.db or os.environ.get("FSCONTROL_DB")
        if args.db is not None and not Path(args.db).is_file():
            from fscontrol.errors import NotFoundError

            raise NotFoundError(f"--db {args.db}: no such history")
        if not path or not Path(path).is_file():
            return None
        db = store.open_db(path, create=False, readonly=True)
        try:
            from fscontrol.agent import publishing

            snap = store.load_snapshot(db, cluster=args.cluster)
            inflow = publishing.published_inflow(db, snap)
            from fscontrol.store import quota as store_quota

            limits = store_quota.latest_limits(db, snap.cluster, snap.id)
            control = publishing.published_control(db, cfg, snap.cluster)
        finally:
            db.close()
        if args.now is None and snap.source.startswith("recorded sample"):
            args.now = snap.taken_at  # a recording: as of when it was made, as with --source FOLDER
    from fscontrol.export import privacy

    cc = config.load(args.config_path).cluster(snap.cluster)
    data = pub.build_published(snap, reference=cc.reference_share, dummy=cc.dummy_key,
                               target_core_hours=cc.target_core_hours, admins=(), published_at=time.time(),
                               method=cc.method, inflow=inflow, outlooks=False,  # Fair Tree: ranks the one user
                               control=control)
    data["own_files"] = True
    return privacy.merge_own(data, pub.own_files(snap, secret=None, tres_limits=limits).get(who or "") or {"user": who})
