"""The reports on a read-only history (issue 28, item 6): an admin's copy, or a snapshot on a
read-only mount. `status`, `history`, `metrics`, `fit` and the forecast from the history read it
(sqlite mode=ro, immutable when its folder is read-only too: no -shm can be made); nothing is
written into it. A history that is read-only and needs a migration, or that a command would
write into, is one clear line.

A real read-only file needs a user who is not root (root writes any file mode): the commands run
as the testbed's user `carol` (runuser; made here as the testbed makes it if no testbed ran yet),
with Debian's python3 and the venv's packages; skipped where not root or carol cannot read the
checkout."""

from __future__ import annotations

import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from fscontrol.agent import pipeline
from fscontrol.slurm.source import RecordedSlurm
from fscontrol.store import history as store
from fscontrol.store import schema as store_schema

ROOT = Path(__file__).resolve().parent.parent
SERIES = ROOT / "samples" / "testbed-series"
USER = "carol"


def _as_user_env() -> list[str]:
    if os.getuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("needs root to run the commands as another user")
    try:
        pwd.getpwnam(USER)
    except KeyError:  # made as the testbed makes its users (scripts/testbed.sh), whichever test runs first
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", USER], capture_output=True, timeout=60)
        pwd.getpwnam(USER)
    site = sysconfig.get_paths()["purelib"]
    py = next((p for p in (sys.executable, "/usr/bin/python3") if subprocess.run(
        ["runuser", "-u", USER, "--", p, "-c", f"import sys; sys.path[:0] = [{site!r}, {str(ROOT)!r}]; import typer, fscontrol"],
        capture_output=True, timeout=60).returncode == 0), None)
    if py is None:
        pytest.skip(f"{USER} cannot run a Python that reads this checkout and its venv")
    return ["runuser", "-u", USER, "--", "env", "HOME=/tmp", "PYTHONDONTWRITEBYTECODE=1", f"PYTHONPATH={site}:{ROOT}", py,
            "-m", "fscontrol"]


@pytest.fixture(scope="module")
def readonly_history(tmp_path_factory):
    """The testbed series collected in order (a history `fit` can fit), then made read-only:
    the file 0444 and its folder 0555, both root's."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="fscontrol-ro-"))  # pytest's own tmp is root's alone (0700)
    folder.chmod(0o755)
    db_path = folder / "hist" / "history.db"
    db_path.parent.mkdir()
    db = store.open_db(db_path)
    for sample in sorted(p for p in SERIES.iterdir() if p.is_dir()):
        pipeline.collect(RecordedSlurm(sample), db)
    db.close()
    os.chmod(db_path, 0o444)
    os.chmod(db_path.parent, 0o555)
    before = {p.name: p.read_bytes() for p in db_path.parent.iterdir()}
    yield db_path, before
    os.chmod(db_path.parent, 0o755)
    shutil.rmtree(folder)


@pytest.mark.parametrize("cmd,want", [
    (["status"], "underflow"),
    (["history"], "ticks: collect ok"),
    (["metrics"], "fscontrol_last_tick_timestamp_seconds"),
    (["fit"], "not stored: the history is read-only to you"),
])
def test_reports_read_a_readonly_history(readonly_history, cmd, want):
    db_path, before = readonly_history
    r = subprocess.run(_as_user_env() + cmd + ["--db", str(db_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert want in r.stdout
    assert "readonly" not in r.stderr
    assert {p.name: p.read_bytes() for p in db_path.parent.iterdir()} == before  # nothing written, no -shm


def test_forecast_from_a_readonly_history(readonly_history):
    db_path, _ = readonly_history
    env = _as_user_env()
    i = env.index("env") + 1
    env.insert(i, f"FSCONTROL_DB={db_path}")
    env.insert(i, "FSCONTROL_PUBLISHED=")
    r = subprocess.run(env + ["forecast", "--source", "published", "-u", "carol", "--stale-ok", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert '"user": "carol"' in r.stdout


def test_collect_into_a_readonly_history_is_one_line(readonly_history):
    db_path, _ = readonly_history
    r = subprocess.run(_as_user_env() + ["collect", "--source", str(sorted(SERIES.iterdir())[0]), "--db", str(db_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 4, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"fscontrol: error: history database {db_path} is read-only to you (the file or its folder): the reports "
        "(status, history, fit, metrics) read it; collecting into it needs write access"]


def test_readonly_history_that_needs_a_migration_is_one_line(readonly_history):
    db_path, _ = readonly_history
    old = db_path.parent.parent / "old" / "history.db"
    old.parent.mkdir()
    shutil.copy(db_path, old)
    conn = sqlite3.connect(old)
    # the newest migration a reader needs undone in the bookkeeping: as an older fscontrol left it (one
    # that only adds a table its readers do without, OPTIONAL_MIGRATIONS, does not stop a report)
    last = next(n for n, _ in reversed(store_schema.MIGRATIONS) if n not in store_schema.OPTIONAL_MIGRATIONS)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table in ("_sqlite_migrations", "_migrations"):
        if table in tables:
            conn.execute(f"DELETE FROM {table} WHERE name = ?", [last])
    conn.commit()
    conn.close()
    os.chmod(old, 0o444)
    os.chmod(old.parent, 0o555)
    try:
        r = subprocess.run(_as_user_env() + ["status", "--db", str(old)], capture_output=True, text=True, timeout=300)
    finally:
        os.chmod(old.parent, 0o755)
    assert r.returncode == 4, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "this fscontrol reads" in lines[0] and "upgrades it" in lines[0], r.stderr
