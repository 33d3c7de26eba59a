"""`fscontrol doctor`: every reason fair-share, or the agent's control, cannot do what the admin
expects, one line each with its severity and fix; and `fscontrol config check`, which runs it
(both registered on the app in fscontrol.cli.app; the checks: fscontrol.doctor.checks,
docs/doctor.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from fscontrol.cli.options import ClusterOpt, ConfigOpt, DbOpt, JsonOpt, SourceOpt

EPILOG = ("\b\nexit codes: 0 nothing found (or notes only), 8 warnings (fair-share works, not as expected),\n"
          "9 at least one fatal finding (fair-share has no effect, or the configured control cannot work),\n"
          "2 bad option or configuration, 3 `scontrol show config` failed or is unreadable, 130 interrupted")
# (the doctor's own exit codes, 8 and 9, are its report's: fscontrol.report.doctor)


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

    from fscontrol.agent import commands
    from fscontrol.cli.common import _fail, _finish
    from fscontrol.errors import FscontrolError
    from fscontrol.report import doctor as rdoctor

    try:
        res = commands.doctor(config_path, source, db, cluster, slurm_conf)
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(json.dumps(res.data, indent=2) if json_out else "\n".join(rdoctor.report_lines(res.data)))
    _finish(res)


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

    from fscontrol.agent import commands
    from fscontrol.cli.common import _fail, _finish
    from fscontrol.errors import FscontrolError

    try:
        res = commands.config_check(config_path, source, doctor)
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(json.dumps(res.data["json"], indent=2) if json_out else "\n".join(res.data["lines"]))
    _finish(res)
