"""The site install's promises that need neither root nor Slurm (tests/test_site_install.py runs the
install itself on the testbed):

- the cron file and systemd units in cron/ are what scripts/site-units.sh writes for the install's
  default PREFIX and config, their command is PREFIX/bin/fscontrol (what the install makes), and for
  any other PREFIX the written files name that PREFIX and nothing of the default;
- scripts/install-site.sh never deletes what it did not make: a non-empty folder that is not an
  earlier install, a file or a link as PREFIX, and a BINDIR/fscontrol that is not its own link are
  refused with one line, exit 1, before anything is written (so also when not run as root), and
  the folder is left byte for byte as it was; an earlier install (its mark, or the layout installs
  made before the mark existed) is an upgrade.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALL = ROOT / "scripts" / "install-site.sh"
UNITS = ROOT / "scripts" / "site-units.sh"
FILES = ("fscontrol.cron", "fscontrol-tick.service", "fscontrol-tick.timer", "fscontrol.service")


def install_defaults() -> dict[str, str]:
    text = INSTALL.read_text()
    return {
        "prefix": re.search(r"^PREFIX=\$\{args\[0\]:-([^}]+)\}", text, re.M).group(1),
        "config": re.search(r"^CONFIG=(\S+)", text, re.M).group(1),
        "log": re.search(r"^LOG=(\S+)", text, re.M).group(1),
    }


def cron_command(text: str) -> tuple[str, str, dict[str, str]]:
    """(user, command, environment) of a cron.d file's one job line."""
    env, jobs = {}, []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if re.match(r"^[A-Z_]+=", line):
            k, v = line.split("=", 1)
            env[k] = v
        else:
            jobs.append(line.split(None, 6))
    (job,) = jobs
    return job[5], job[6], env


def unit_service(text: str) -> dict[str, list[str]]:
    """The [Service] section's keys (each a list: Environment= may repeat)."""
    out: dict[str, list[str]] = {}
    section = None
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "Service" and "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out.setdefault(k, []).append(v)
    return out


def write_units(tmp_path: Path, prefix: str, config: str, log: str) -> Path:
    out = tmp_path / "units"
    subprocess.run([str(UNITS), prefix, config, log, str(out)], check=True, capture_output=True, timeout=60)
    return out


def test_shipped_files_are_the_install_defaults(tmp_path):
    d = install_defaults()
    out = write_units(tmp_path, d["prefix"], d["config"], d["log"])
    for f in FILES:
        assert (out / f).read_bytes() == (ROOT / "cron" / f).read_bytes(), f
    user, cmd, env = cron_command((ROOT / "cron" / "fscontrol.cron").read_text())
    argv = shlex.split(cmd)
    assert user == "root" and argv[:4] == [f"{d['prefix']}/bin/fscontrol", "tick", "--config", d["config"]]
    assert argv[4:] == [f">>{d['log']}", "2>&1"] and env["SHELL"] == "/bin/sh"
    for unit, verb in (("fscontrol-tick.service", "tick"), ("fscontrol.service", "run")):
        svc = unit_service((ROOT / "cron" / unit).read_text())
        assert svc["User"] == ["root"]
        assert shlex.split(svc["ExecStart"][0]) == [f"{d['prefix']}/bin/fscontrol", verb, "--config", d["config"]]


def test_units_for_another_prefix(tmp_path):
    out = write_units(tmp_path, "/srv/sw/fsc", "/srv/etc/fsc.toml", "/srv/log/fsc.log")
    _, cmd, _ = cron_command((out / "fscontrol.cron").read_text())
    assert shlex.split(cmd) == ["/srv/sw/fsc/bin/fscontrol", "tick", "--config", "/srv/etc/fsc.toml", ">>/srv/log/fsc.log", "2>&1"]
    for f in FILES:
        text = (out / f).read_text()
        assert "/opt/fscontrol" not in text and "/etc/fscontrol/fscontrol.toml" not in text, f
        assert (out / f).stat().st_mode & 0o777 == 0o644
    svc = unit_service((out / "fscontrol-tick.service").read_text())
    assert shlex.split(svc["ExecStart"][0])[:4] == ["/srv/sw/fsc/bin/fscontrol", "tick", "--config", "/srv/etc/fsc.toml"]


def test_units_refuse_a_path_a_shell_would_read(tmp_path):
    p = subprocess.run([str(UNITS), "/srv/my fsc", "/etc/x.toml", "/var/log/x", str(tmp_path / "o")], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "absolute path" in p.stderr and not (tmp_path / "o").exists()


def tree_digest(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        st = p.lstat()
        h.update(f"{p.relative_to(path)} {st.st_mode:o} {st.st_size}\n".encode())
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
        elif p.is_symlink():
            h.update(os.readlink(p).encode())
    return h.hexdigest()


def run_install(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(INSTALL), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("check", [True, False], ids=["--check", "install"])
def test_a_foreign_prefix_is_refused_and_left_untouched(tmp_path, check):
    shared = tmp_path / "opt"
    (shared / "othertool" / "bin").mkdir(parents=True)
    (shared / "othertool" / "bin" / "tool").write_text("#!/bin/sh\n")
    (shared / "README").write_text("a site's shared software\n")
    bindir = tmp_path / "bin"
    before = tree_digest(tmp_path)
    p = run_install(*(["--check"] if check else []), str(shared), str(bindir))
    assert p.returncode == 1, p.stderr
    assert p.stderr.count("\n") == 1 and "refusing" in p.stderr and "nothing was changed" in p.stderr
    assert tree_digest(tmp_path) == before and not bindir.exists()


def test_a_file_or_link_as_prefix_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    before = tree_digest(tmp_path)
    for prefix in ("f", "link"):
        p = run_install(str(tmp_path / prefix), str(tmp_path / "bin"))
        assert p.returncode == 1 and "refusing" in p.stderr, p.stderr
    assert tree_digest(tmp_path) == before


def test_a_foreign_fscontrol_in_bindir_is_refused(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "fscontrol").write_text("#!/bin/sh\necho someone else's\n")
    before = tree_digest(tmp_path)
    p = run_install("--check", str(tmp_path / "new"), str(bindir))
    assert p.returncode == 1 and f"refusing {bindir}/fscontrol" in p.stderr, p.stderr
    (bindir / "fscontrol").unlink()
    (bindir / "fscontrol").symlink_to("/usr/bin/true")
    p = run_install("--check", str(tmp_path / "new"), str(bindir))
    assert p.returncode == 1 and "not to an fscontrol site install" in p.stderr, p.stderr
    assert not (tmp_path / "new").exists()


def _fake_install(prefix: Path, mark: bool) -> None:
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "fscontrol").write_text("#!/bin/sh\n")
    (prefix / "bin" / "fscontrol").chmod(0o755)
    (prefix / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (prefix / "modulefiles" / "fscontrol").mkdir(parents=True)
    if mark:
        (prefix / ".fscontrol-site").write_text("fscontrol site install\n")


def test_an_earlier_install_is_an_upgrade(tmp_path):
    marked, legacy, empty = tmp_path / "marked", tmp_path / "legacy", tmp_path / "empty"
    _fake_install(marked, mark=True)
    _fake_install(legacy, mark=False)  # made by install-site.sh before the mark existed
    empty.mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "fscontrol").symlink_to(legacy / "bin" / "fscontrol")  # moving the link from one install to another
    assert "would upgrade" in run_install("--check", str(marked), str(bindir)).stdout
    assert "would upgrade" in run_install("--check", str(legacy), str(bindir)).stdout
    assert "would install" in run_install("--check", str(empty), str(bindir)).stdout
    (legacy / "notes.txt").write_text("the admin's\n")  # no longer only what the script made: foreign
    p = run_install("--check", str(legacy), str(tmp_path / "bin2"))
    assert p.returncode == 1 and "refusing" in p.stderr


def test_bad_paths_are_refused_before_anything_is_written(tmp_path):
    for args in (["--config", "/etc/my conf.toml", str(tmp_path / "new")], ["--log", "relative.log", str(tmp_path / "new")],
                 ["relative/prefix"]):
        p = run_install(*args, str(tmp_path / "bin"))
        assert p.returncode == 2 and "absolute path" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not any(tmp_path.iterdir())
