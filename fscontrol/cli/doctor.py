"""`fscontrol doctor`: every reason fair-share, or the agent's control, cannot do what the admin
expects, one line each with its severity and fix; and `fscontrol config check`, which runs it
(both registered on the app in fscontrol.cli.app; the checks: fscontrol.doctor.checks,
docs/doctor.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from fscontrol.cli.options import ClusterOpt, ConfigOpt, DbOpt, JsonOpt, SourceOpt

# doctor's own exit codes (the errors' are fscontrol's usual ones, fscontrol.cli.app)
EXIT_WARNING = 8
EXIT_FATAL = 9

EPILOG = ("\b\nexit codes: 0 nothing found (or notes only), 8 warnings (fair-share works, not as expected),\n"
          "9 at least one fatal finding (fair-share has no effect, or the configured control cannot work),\n"
          "2 bad option or configuration, 3 `scontrol show config` failed or is unreadable, 130 interrupted")


def exit_for(findings) -> int:
    """0, EXIT_WARNING or EXIT_FATAL for the most severe finding."""
    from fscontrol.doctor.checks import worst

    return {"fatal": EXIT_FATAL, "warning": EXIT_WARNING}.get(worst(findings) or "", 0)


def report(s, findings, json_out: bool = True) -> dict:
    """The doctor's JSON object (report_lines prints it)."""
    return {"cluster": s.config.get("ClusterName"), "slurm_version": s.config.get("SLURM_VERSION"),
            "source": s.source, "worst": next((f.severity for f in findings), None),
            "exit_code": exit_for(findings), "findings": [f.as_dict() for f in findings],
            "not_read": {k: v for k, v in sorted(s.errors.items())}}


def report_lines(data: dict) -> list[str]:
    """The report's lines: a head line, then one line per finding, its fix after it."""
    from fscontrol.doctor import checks

    found = data["findings"]
    lines = [f"{data['cluster'] or '?'} (Slurm {data['slurm_version'] or '?'}, {data['source']}): "
             + (f"{len(found)} finding(s)" if found else "nothing stops fair-share or the agent's control")]
    for f in found:
        lines.append(checks.line(f))
    return lines


def doctor(
    config_path: ConfigOpt = None,
    source: SourceOpt = "live",
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    slurm_conf: Annotated[Optional[Path], typer.Option(
        "--slurm-conf", help="The slurm.conf to read for its FairShareDampeningFactor line. Default: the config's "
        "slurm_conf when persist = true, else the SLURM_CONF that `scontrol show config` names.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Say every reason fair-share, or fscontrol's control, cannot do what you expect: the live
    configuration (scontrol show config, sshare, sacctmgr) judged against the config's method,
    one line each with its severity (fatal, warning, info) and the exact change that fixes it.
    Changes nothing."""
    import json

    from fscontrol.agent import config
    from fscontrol.agent.diagnose import diagnose
    from fscontrol.cli.common import _fail, _source
    from fscontrol.errors import FscontrolError

    try:
        cfg = config.load(config_path)
        s, findings = diagnose(_source(source, cluster, cfg.slurm_timeout_s), cfg, db_path=db,
                               slurm_conf=str(slurm_conf) if slurm_conf else None)
    except FscontrolError as e:
        raise _fail(e) from None
    out = report(s, findings)
    typer.echo(json.dumps(out, indent=2) if json_out else "\n".join(report_lines(out)))
    code = exit_for(findings)
    if code:
        raise typer.Exit(code)


def config_check(config_path: ConfigOpt = None, json_out: JsonOpt = False,
                 source: Annotated[str, typer.Option("--source", "-s", help=(
                     "Where the doctor reads Slurm from: 'live' or a recorded sample folder.")) ] = "live",
                 doctor: Annotated[bool, typer.Option("--doctor/--no-doctor", help=(
                     "Also run `fscontrol doctor` on each cluster the config names (the default); where Slurm "
                     "does not answer it says so and the check goes on."))] = True) -> None:
    """Validate the config file and print the effective settings (defaults filled in); then
    `fscontrol doctor` for each cluster it names. Exit 2 for a config mistake, 9 when the doctor
    finds a fatal reason (docs/doctor.md), else 0 (its warnings and notes are printed)."""
    import json

    from fscontrol.agent import config
    from fscontrol.cli.common import _fail
    from fscontrol.errors import FscontrolError

    try:
        cfg = config.load(config_path)
    except FscontrolError as e:
        raise _fail(e) from None
    eff = config.effective(cfg)
    checked = _config_doctor(cfg, source) if doctor else []
    code = 9 if any(c.get("worst") == "fatal" for c in checked) else 0  # (a warning: printed, not a failure)
    if json_out:
        if doctor:
            eff = {**eff, "doctor": checked}
        typer.echo(json.dumps(eff, indent=2))
        if code:
            raise typer.Exit(code)
        return
    typer.echo(f"{config_path or 'no config file'}: valid. apply = {str(cfg.apply).lower()}, "
               f"history {cfg.db or '(default)'}, collect every {cfg.schedule['collect']:g} s")
    for name, cc in sorted(cfg.clusters.items()):
        target = "-" if cc.target_core_hours is None else f"{cc.target_core_hours:g} core-hours"
        gate = f", gate {cc.gate.action} over {len(cc.allocations)} allocation(s)" if cc.gate.enabled else ""
        typer.echo(f"  cluster {name}: method {cc.method}, u* {target}, reference share {cc.reference_share}{gate}")
    typer.echo("the settings in force (defaults filled in):")
    for line in config.effective_lines(cfg):
        typer.echo(f"  {line}")
    typer.echo("(--json prints them as JSON)")
    for c in checked:
        if "not_run" in c:
            typer.echo(f"doctor{' on ' + c['cluster'] if c.get('cluster') else ''}: not run: {c['not_run']}")
        else:
            typer.echo("doctor on " + "\n".join(report_lines(c)))
    if code:
        raise typer.Exit(code)


def _config_doctor(cfg, source: str) -> list[dict]:
    """`fscontrol doctor` (its JSON) for each cluster the config names (one Slurm when it names
    none), or {"cluster", "not_run": why} where Slurm could not be read (no Slurm on this host)."""
    from fscontrol.agent.diagnose import diagnose
    from fscontrol.cli.common import _source
    from fscontrol.errors import FscontrolError

    names = sorted(cfg.clusters) if len(cfg.clusters) > 1 else [None]
    out = []
    for name in names:
        try:
            s, findings = diagnose(_source(source, name, min(cfg.slurm_timeout_s, 30.0)), cfg)
        except FscontrolError as e:
            out.append({"cluster": name or next(iter(cfg.clusters), None), "not_run": str(e)})
            continue
        out.append(report(s, findings, json_out=True))
    return out
