"""`fscontrol collect`: one snapshot into the history, parsed with argparse so it starts light.

As with `forecast` (forecast_cmd), the console script (fscontrol.cli.main) sends `fscontrol collect ...`
here before typer is imported: typer's import alone costs more than the whole collect of a small
cluster, and about a third of a 2,500-user one (docs/benchmarks.md). `cli.collect` is a
pass-through to the same function, so `fscontrol --help` lists the command and CliRunner tests
reach it. The option help texts live here and cli.py uses them too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fscontrol.cli.argfmt import HelpFormatter
from fscontrol.errors import FscontrolError

SOURCE_HELP = ("Where to read Slurm from: 'live' (run the Slurm commands) or a recorded sample folder "
               "(e.g. samples/testbed-basic).")
DB_HELP = ("History database. Default: $FSCONTROL_DB, else /var/lib/fscontrol/history.db for root, "
           "~/.local/state/fscontrol/history.db for other users.")
CLUSTER_HELP = "Slurm cluster name (passed to Slurm as -M)."
JSON_HELP = "Print JSON for scripts instead of a table."
DESCRIPTION = ("Take one snapshot of the cluster (sshare, sacct, squeue, sprio, config) into the history. "
               "Everything is read and parsed before anything is written; a failed Slurm command writes "
               "nothing but a failed-tick record, and exits 3.")
EPILOG = ("exit codes: 0 ok, 2 bad option or configuration, 3 a Slurm command failed or is unreadable,\n"
          "4 history locked or unreadable, 6 no such sample, history folder or cluster")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fscontrol collect", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=HelpFormatter)
    p.add_argument("--source", "-s", default="live", help=SOURCE_HELP + " Default: live.")
    p.add_argument("--db", type=Path, help=DB_HELP)
    p.add_argument("--cluster", "-M", help=CLUSTER_HELP)
    p.add_argument("--json", dest="json_out", action="store_true", help=JSON_HELP)
    return p


def main(argv: list[str] | None = None) -> int:
    """Collect once; returns the exit code (argparse itself exits 2 on a bad option)."""
    args = parser().parse_args(argv)
    from fscontrol.agent import pipeline
    from fscontrol.slurm import source
    from fscontrol.store import history as store

    try:
        db = store.open_db(args.db or store.default_db_path())
        res = pipeline.collect(source.from_spec(args.source, args.cluster), db)
    except FscontrolError as e:
        print(f"fscontrol: error: {e}", file=sys.stderr)
        return e.exit_code
    snap = res.snapshot
    info = {
        "snapshot_id": res.snapshot_id,
        "cluster": snap.cluster,
        "taken_at": snap.taken_at,
        "associations": len(snap.shares),
        "users": len(snap.users),
        "jobs_in_window": len(snap.jobs),
        "queued_jobs": len(snap.queue),
    }
    if args.json_out:
        import json

        print(json.dumps(info))
    else:
        print(f"snapshot {res.snapshot_id} of {snap.cluster}: {info['associations']} associations "
              f"({info['users']} users), {info['jobs_in_window']} jobs in the sacct window, "
              f"{info['queued_jobs']} in the queue")
    return 0
