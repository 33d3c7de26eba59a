"""`fscontrol collect` on the one framework: the console script and the typer app are one path
(typer, below 0.29: no pydantic), and what a collect loads is typer and fscontrol's readers and
writers, nothing heavy."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli import main as console
from fscontrol.cli.app import app

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "testbed-basic"


def _heavy_after(code: str, heavy: str = "{'typer', 'pydantic', 'rich', 'scipy', 'argparse'}") -> list[str]:
    # (sqlite-utils brings click when it makes a new history)
    run = f"import sys\n{code}\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & {heavy}))"
    out = subprocess.run([sys.executable, "-c", run], check=True, capture_output=True, text=True).stdout
    return eval(out.strip().splitlines()[-1])  # noqa: S307 - our own repr of a list of names


def test_the_console_scripts_collect_loads_typer_and_nothing_heavy(tmp_path):
    db = tmp_path / "h.db"
    code = (f"from fscontrol.cli.main import main\ntry:\n    main(['collect', '--source', {str(SAMPLE)!r}, '--db', {str(db)!r}])\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code")
    assert _heavy_after(code) == ["typer"]  # the first collect makes the history (sqlite-utils)
    assert _heavy_after(code) == ["typer"]
    assert _heavy_after(code, "{'numpy', 'sqlite_utils', 'tabulate', 'apscheduler'}") == []
    assert db.exists()


def test_console_and_typer_paths_give_the_same_snapshot_and_exit_codes(tmp_path, capsys):
    db = tmp_path / "h.db"
    with pytest.raises(SystemExit) as e:
        console.main(["collect", "-s", str(SAMPLE), "--db", str(db), "--json"])
    assert e.value.code == 0
    first = json.loads(capsys.readouterr().out)
    r = CliRunner().invoke(app, ["collect", "-s", str(SAMPLE), "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    second = json.loads(r.output)
    assert second["snapshot_id"] == first["snapshot_id"] + 1
    for k in ("cluster", "associations", "users", "jobs_in_window", "queued_jobs"):
        assert first[k] == second[k]
    assert (first["cluster"], first["associations"], first["users"]) == ("tbcluster", 15, 9)
    # a bad option: the usage error, exit 2, on both paths
    with pytest.raises(SystemExit) as e:
        console.main(["collect", "--bogus"])
    assert e.value.code == 2 and "No such option: --bogus" in capsys.readouterr().err
    assert CliRunner().invoke(app, ["collect", "--bogus"]).exit_code == 2
    # a library error: one line, its exit code (6: no such sample folder)
    with pytest.raises(SystemExit) as e:
        console.main(["collect", "-s", str(tmp_path / "nowhere"), "--db", str(db)])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 6 and len(err) == 1 and err[0].startswith("fscontrol: error:"), err


def test_collect_help_names_every_option():
    r = CliRunner().invoke(app, ["collect", "--help"])
    assert r.exit_code == 0
    for opt in ("--source", "-s", "--db", "--cluster", "-M", "--json", "exit codes"):
        assert opt in r.output, opt
