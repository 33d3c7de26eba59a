"""`fscontrol collect`: one snapshot into the history (registered on the app in fscontrol.cli.app).

The function imports the collect's modules when it runs: the console script builds only this
command, so `collect` from cron pays for typer, its options and the collect itself.
"""

from __future__ import annotations

from fscontrol.cli.options import ClusterOpt, ConfigOpt, DbOpt, JsonOpt, SourceOpt

EPILOG = ("\b\nexit codes: 0 ok, 2 bad option or configuration, 3 a Slurm command failed or is unreadable,\n"
          "4 history locked or unreadable, 6 no such sample, history folder or cluster, 130 interrupted")


def collect(
    source: SourceOpt = "live",
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    config_path: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Take one snapshot of the cluster (sshare, sacct, squeue, sprio, config) into the history.
    Everything is read and parsed before anything is written; a failed Slurm command writes
    nothing but a failed-tick record, and exits 3."""
    import typer

    from fscontrol.agent import commands
    from fscontrol.cli.common import _fail
    from fscontrol.errors import FscontrolError
    from fscontrol.report import collect as rcollect

    try:
        data = commands.collect(config_path, db, source, cluster)
    except FscontrolError as e:
        raise _fail(e) from None
    if json_out:
        import json

        typer.echo(json.dumps(data))
    else:
        typer.echo(rcollect.format_collect(data))
