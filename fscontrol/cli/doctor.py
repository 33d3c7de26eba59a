"""`fscontrol doctor`: every reason fair-share, or the agent's control, cannot do what the admin
expects, one line each with its severity and fix (registered on the app in fscontrol.cli.app;
the checks: fscontrol.doctor.checks, docs/doctor.md)."""

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
    """The report's lines: a head line, then each finding and its fix."""
    found = data["findings"]
    lines = [f"{data['cluster'] or '?'} (Slurm {data['slurm_version'] or '?'}, {data['source']}): "
             + (f"{len(found)} finding(s)" if found else "nothing stops fair-share or the agent's control")]
    for f in found:
        lines.append(f"{f['severity'].upper():7} {f['check']}: {f['message']}")
        lines.append(f"        fix: {f['fix']}")
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
