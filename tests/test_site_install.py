"""The README's deployment checklist, from an empty prefix to a running agent and its users, on the
real testbed (issue #28, item 1). Every command the checklist shows is run here, as written,
with the site's paths moved into a private folder (the test must not write the host's /opt,
/etc or /var: other test sessions share the machine):

    /opt/fscontrol -> BASE/opt      /usr/local/bin -> BASE/bin       /etc/fscontrol -> BASE/etc
    /var/lib/fscontrol -> BASE/state (so also FSCONTROL_PUBLISHED, the users' default)
    /var/log -> BASE/log            /tmp/fscontrol.png -> BASE/fscontrol.png
    [clusters.mycluster] -> the testbed's ClusterName

and the Slurm the commands reach is the testbed's (SLURM_CONF; for 24.11 its client wrappers first
on PATH), as on a host whose slurm.conf is the testbed's. The two steps that would change the
host itself (copying into /etc/cron.d and /etc/systemd/system, systemctl) are replaced by running
what those files would run: the cron line's command through /bin/sh with the cron file's SHELL and
PATH, the units' ExecStart split as systemd splits it, with the unit's Environment, each as the
user the file names (root). Then the testbed's Unix user carol (a plain user) runs `status`,
`forecast`, `why` on a pending job of hers and the web page, from the install; then the install is
re-run as an upgrade, and the config and the history must be byte-identical after it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from test_site_units import cron_command, unit_service

ROOT = Path(__file__).resolve().parent.parent
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"  # found on the test's PATH; the users' PATH has no sbin


def checklist() -> tuple[list[str], str]:
    """The commands of the README's deployment checklist (its ```sh blocks, in order) and its config."""
    readme = (ROOT / "README.md").read_text()
    body = readme[readme.index("## Deploying at a site"):]
    body = body[: body.index("\n## ", 1)]
    commands = [ln.strip() for block in re.findall(r"^```sh\n(.*?)^```", body, re.S | re.M)
                for ln in block.splitlines() if ln.strip()]
    (config,) = re.findall(r"^```toml\n(.*?)^```", body, re.S | re.M)
    return commands, config


def test_the_checklist_is_what_this_test_runs():
    """Every command of the checklist is one this test knows how to run (a step added to the README
    without a test fails here); no root or Slurm needed."""
    commands, _ = checklist()
    for c in commands:
        assert c.startswith("sudo ") and "#" not in c, c
        assert _kind(c) is not None, c


def _kind(command: str) -> str | None:
    c = command.removeprefix("sudo ")
    for kind, pattern in (
        ("install", r"scripts/install-site\.sh /opt/fscontrol /usr/local/bin$"),
        ("mkdir", r"install -d -m 0755 /etc/fscontrol /var/lib/fscontrol$"),
        ("cron", r"cp /opt/fscontrol/share/fscontrol/fscontrol\.cron /etc/cron\.d/fscontrol$"),
        ("units", r"cp (/opt/fscontrol/share/fscontrol/fscontrol-tick\.(service|timer) ?){2} /etc/systemd/system/$"),
        ("timer", r"systemctl daemon-reload && sudo systemctl enable --now fscontrol-tick\.timer$"),
        ("fscontrol", r"fscontrol .*--config /etc/fscontrol/fscontrol\.toml( .*)?$"),
        ("apply", r"sed -i 's/\^apply = false/apply = true/' /etc/fscontrol/fscontrol\.toml$"),
    ):
        if re.match(pattern, c):
            return kind
    return None


class Site:
    """The checklist's paths moved under BASE, and the testbed's Slurm."""

    def __init__(self, base: Path, slurm):
        self.base, self.slurm = base, slurm
        self.prefix, self.bindir, self.etc, self.state = base / "opt", base / "bin", base / "etc", base / "state"
        self.log = base / "log" / "fscontrol.log"
        self.config = self.etc / "fscontrol.toml"
        self.db = self.state / "history.db"
        self.cluster = next(ln.split("=", 1)[1].strip() for ln in slurm.scontrol("show", "config").splitlines()
                            if ln.startswith("ClusterName"))

    def moved(self, text: str) -> str:
        for old, new in (("/opt/fscontrol", self.prefix), ("/usr/local/bin", self.bindir), ("/etc/fscontrol", self.etc),
                         ("/var/lib/fscontrol", self.state), ("/var/log/fscontrol.log", self.log),
                         ("/tmp/fscontrol.png", self.base / "fscontrol.png"), ("[clusters.mycluster]", f"[clusters.{self.cluster}]")):
            text = text.replace(old, str(new))
        return text

    def env(self, base_env: dict[str, str] | None = None) -> dict[str, str]:
        """An environment whose Slurm commands reach the testbed."""
        env = dict(base_env if base_env is not None else {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})
        env["SLURM_CONF"] = str(self.slurm.conf)
        if (self.slurm.dir / "bin").is_dir():  # Slurm 24.11: the testbed's client wrappers first
            env["PATH"] = f"{self.slurm.dir / 'bin'}:{env['PATH']}"
        return env

    def run(self, argv: list[str], env=None, timeout: float = 300, user: str = "root") -> subprocess.CompletedProcess:
        env = self.env() if env is None else env
        return subprocess.run(self.as_user(user, argv, env), capture_output=True, text=True, timeout=timeout, env=env)

    @staticmethod
    def as_user(user: str, argv: list[str], env: dict[str, str]) -> list[str]:
        """runuser resets HOME and PATH as su does: the environment is given again after it."""
        if user == "root":
            return argv
        return [RUNUSER, "-u", user, "--", "/usr/bin/env", *(f"{k}={v}" for k, v in env.items()), *argv]

    def snapshots(self) -> int:
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30) as c:
            return c.execute("SELECT count(*) FROM snapshots").fetchone()[0]

    def last_tick(self) -> tuple[str, str | None]:
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30) as c:
            return c.execute("SELECT status, error FROM ticks ORDER BY id DESC LIMIT 1").fetchone()


def _ok(p: subprocess.CompletedProcess, what: str) -> str:
    assert p.returncode == 0, f"{what}: exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slurm  # needs root and the testbed's Unix users
def test_from_zero_to_a_running_agent_and_its_users(slurm):
    base = Path("/tmp") / f"fscontrol-site-{os.getpid()}"
    assert not base.exists()
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    site = Site(base, slurm)
    commands, config_text = checklist()
    web = None
    d_before = slurm.damping()
    # a cluster in use: the control steps need real usage to plan on (a job of alice's, through the
    # checklist), and little of it against u* (not what earlier tests left: d would stay at 1)
    slurm.reset_usage()
    busy = slurm.submit("alice", "flat", 16, 600)
    try:
        (base / "log").mkdir()  # the host's /var/log
        for c in commands:
            kind = _kind(c)
            argv = shlex.split(site.moved(c.removeprefix("sudo ")))
            if kind == "install":
                assert not site.prefix.exists()  # an empty machine
                # the install's defaults for the units, moved as the rest (--config, --log)
                p = site.run([str(ROOT / argv[0]), "--config", str(site.config), "--log", str(site.log), *argv[1:]])
                _ok(p, c)
                assert "installed in" in p.stderr and "(with matplotlib)" in p.stderr, p.stderr
                assert (site.prefix / ".fscontrol-site").is_file()
                assert os.readlink(site.bindir / "fscontrol") == str(site.prefix / "bin" / "fscontrol")
                _ok(site.run([str(site.prefix / "bin" / "python"), "-c", "import matplotlib"]), "matplotlib in the install")
                for f in ("fscontrol.cron", "fscontrol-tick.service", "fscontrol-tick.timer", "fscontrol.service"):
                    assert (site.prefix / "share" / "fscontrol" / f).is_file(), f
                _verify_units(site)
            elif kind == "mkdir":
                _ok(site.run(argv), c)
                assert site.state.stat().st_mode & 0o777 == 0o755
                # the config, as the README writes it (its paths moved)
                site.config.write_text(site.moved(config_text))
            elif kind == "fscontrol":
                if argv[1] == "control":
                    _wait_for_usage(slurm)
                out = _ok(site.run([str(site.bindir / "fscontrol"), *argv[1:]]), c)
                _check_fscontrol_step(site, argv[1:], out)
            elif kind == "cron":
                _run_cron_line(site)
            elif kind == "units":
                pass  # what they run is run at the timer's step
            elif kind == "timer":
                _run_unit(site, "fscontrol-tick.service")
                _run_service_loop(site)
            elif kind == "apply":
                _ok(site.run(argv), c)
                assert "apply = true" in site.config.read_text()
                # "the next tick acts": the cron line again, now applying (the testbed's d moves)
                _run_cron_line(site)
                assert slurm.damping() != d_before, "the applying tick did not set the damping factor"
            else:
                raise AssertionError(c)
        assert slurm.damping() == d_before  # the checklist's last step, control off, put d back
        assert site.snapshots() >= 5

        # the users: carol (a plain Unix user) on the same host, from the install
        web = _as_a_plain_user(site)

        # the upgrade: the same install again keeps the config and the history byte for byte
        kept = {p: _sha(p) for p in (site.config, site.db, site.state / "public" / f"{site.cluster}.json")}
        p = site.run([str(ROOT / "scripts" / "install-site.sh"), "--config", str(site.config), "--log", str(site.log),
                      str(site.prefix), str(site.bindir)])
        _ok(p, "the upgrade")
        assert "upgraded in" in p.stderr
        assert {p: _sha(p) for p in kept} == kept
        n = site.snapshots()
        _run_cron_line(site)  # and the agent ticks on with the upgraded install
        assert site.snapshots() == n + 1
    finally:
        slurm.run("scancel", busy, check=False)
        if web is not None and web.poll() is None:
            web.terminate()
            web.wait(timeout=30)
        if slurm.damping() != d_before:  # a failure half-way: leave the testbed's d as it was
            slurm.run("scontrol", "fsdampeningfactor", str(d_before), check=False)
        subprocess.run(["rm", "-rf", str(base)], check=False)


def _wait_for_usage(slurm) -> None:
    """Until a decay pass has charged the running job: sshare's RawUsage above 0."""
    for _ in range(4):
        if any(r.raw_usage > 0 for r in slurm.sshare().values()):
            return
        slurm.wait_for_pass()
    raise AssertionError("no usage charged after 4 decay passes")


def _check_fscontrol_step(site: Site, args: list[str], out: str) -> None:
    """What each `fscontrol ... --config` step of the checklist must show."""
    if args[:2] == ["config", "check"]:
        assert "valid. apply = false" in out and f"cluster {site.cluster}: method damping" in out, out
    elif args[0] == "tick":  # the dry-run tick really collected from the testbed, published, wrote the metrics
        assert site.snapshots() == 1 and site.last_tick()[0] == "ok", site.last_tick()
        pub = json.loads((site.state / "public" / f"{site.cluster}.json").read_text())
        assert pub["cluster"] == site.cluster
        assert "fscontrol_ticks_total" in (site.state / "fscontrol.prom").read_text()
    elif args[0] == "status":
        assert re.search(rf"^cluster:\s+{site.cluster} ", out, re.M) and re.search(r"^carol\s+chem\s", out, re.M), out
    elif args[0] == "history":
        assert (site.base / "fscontrol.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "ticks:" in out
    elif args == ["control", "--config", str(site.config)]:
        assert "fsdampeningfactor" in out, out  # the plan: the command the agent would run
    elif args[:2] == ["control", "off"]:
        assert "fsdampeningfactor" in out, out
    elif args[0] == "doctor":  # the README's config on a sound cluster: exit 0 (_ok), no warning, nothing fatal
        assert out.startswith(f"{site.cluster} (Slurm "), out
        assert not re.search(r"^\s*(FATAL|WARNING)", out, re.M | re.I), out
    else:
        raise AssertionError(f"no check for fscontrol {args}")


def _verify_units(site: Site) -> None:
    """systemd's own check of the units as written for this PREFIX: they parse, and every
    ExecStart names an executable that exists (Debian's systemd-analyze; no running systemd needed)."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return  # not Debian's systemd: the runs below still execute what the units name
    share = site.prefix / "share" / "fscontrol"
    p = subprocess.run([analyze, "verify", *(str(share / u) for u in ("fscontrol-tick.service", "fscontrol-tick.timer",
                                                                      "fscontrol.service"))],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and not p.stderr.strip(), p.stderr


def _run_cron_line(site: Site) -> None:
    """The cron file's one line, its command run as cron runs it: through its SHELL, with its PATH,
    as the user it names."""
    user, command, cron_env = cron_command((site.prefix / "share" / "fscontrol" / "fscontrol.cron").read_text())
    assert user == "root" and command.startswith(f"{site.prefix}/bin/fscontrol tick --config {site.config} "), command
    n, size = site.snapshots() if site.db.exists() else 0, site.log.stat().st_size if site.log.exists() else 0
    p = site.run([cron_env["SHELL"], "-c", command], env=site.env({"PATH": cron_env["PATH"], "SHELL": cron_env["SHELL"]}),
                 user=user)
    _ok(p, command)
    log = site.log.read_text()[size:]
    assert site.snapshots() == n + 1 and site.last_tick()[0] == "ok", (log, site.last_tick())
    assert site.cluster in log, log


def _run_unit(site: Site, unit: str) -> None:
    """A oneshot unit's ExecStart as systemd runs it: split into words, the unit's Environment=, its User=."""
    svc = unit_service((site.prefix / "share" / "fscontrol" / unit).read_text())
    (user,) = svc["User"]
    (exec_start,) = svc["ExecStart"]
    argv = shlex.split(exec_start)
    assert user == "root" and argv[0] == str(site.prefix / "bin" / "fscontrol") and str(site.config) in argv, argv
    env = dict(e.split("=", 1) for e in svc.get("Environment", []))
    n = site.snapshots()
    _ok(site.run(argv, env=site.env({"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", **env}), user=user),
        exec_start)
    assert site.snapshots() == n + 1 and site.last_tick()[0] == "ok", site.last_tick()


def _run_service_loop(site: Site) -> None:
    """fscontrol.service (the loop, the timer's alternative): its ExecStart ticks at once; its
    KillSignal ends it cleanly within TimeoutStopSec."""
    svc = unit_service((site.prefix / "share" / "fscontrol" / "fscontrol.service").read_text())
    argv = shlex.split(svc["ExecStart"][0])
    assert svc["User"] == ["root"] and argv[:2] == [str(site.prefix / "bin" / "fscontrol"), "run"], argv
    n = site.snapshots()
    proc = subprocess.Popen(argv, env=site.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.time() + 180
        while site.snapshots() == n and time.time() < end and proc.poll() is None:
            time.sleep(1)
        assert site.snapshots() == n + 1, "the loop did not tick"
        time.sleep(1)
        proc.send_signal(getattr(signal, svc["KillSignal"][0]))
        _, err = proc.communicate(timeout=float(svc["TimeoutStopSec"][0]))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and "fscontrol run: stopped; 1 ok, 0 failed" in err, err[-2000:]


def _as_a_plain_user(site: Site) -> subprocess.Popen:
    """carol, with a home of her own, `fscontrol` from BINDIR on her PATH (or the module's), the
    agent's published folder as her default (FSCONTROL_PUBLISHED stands for /var/lib/fscontrol/public)."""
    home = site.base / "carol"
    home.mkdir()
    subprocess.run(["chown", "carol:", str(home)], check=True)
    module = next((site.prefix / "modulefiles" / "fscontrol").glob("*.lua"))
    module_path = re.search(r'prepend_path\("PATH", "([^"]+)"\)', module.read_text()).group(1)
    assert module_path == str(site.prefix / "bin")
    user_env = {"HOME": str(home), "FSCONTROL_PUBLISHED": str(site.state / "public")}
    env = site.env({**user_env, "PATH": f"{site.bindir}:/usr/bin:/bin"})

    def carol(*args: str, path_env=env) -> str:
        return _ok(site.run(["fscontrol", *args], env=path_env, user="carol", timeout=120), f"carol: fscontrol {' '.join(args)}")

    assert carol("--version").startswith("fscontrol ")  # the install is hers to run: world-readable, the link on her PATH
    # status: the cluster as sshare shows it to her, collected into her own history
    out = carol("status", "--source", "live")
    assert re.search(rf"^cluster:\s+{site.cluster} ", out, re.M) and re.search(r"^carol\s+chem\s", out, re.M), out
    assert (home / ".local" / "state" / "fscontrol" / "history.db").stat().st_uid != 0
    # forecast: the snapshot the agent's tick published, and her own sshare row; once through the module's PATH
    out = carol("forecast")
    assert out.startswith(f"fair-share forecast for carol on {site.cluster}") and "chem" in out, out
    data = json.loads(carol("forecast", "--json", path_env=site.env({**user_env, "PATH": f"{module_path}:/usr/bin:/bin"})))
    assert data["user"] == "carol" and {a["account"] for a in data["associations"]} >= {"chem", "flat"}, data
    # why: a pending job of hers, on the live testbed
    job = site.slurm.probe("carol", "chem")
    try:
        out = carol("why", job)
    finally:
        site.slurm.run("scancel", job, check=False)
    assert f"job {job} (carol, account chem" in out and "fair-share" in out, out
    # the web page, served as her on loopback, fetched over loopback
    web = subprocess.Popen(site.as_user("carol", ["fscontrol", "web", "--port", "0"], env), env=env,
                           stderr=subprocess.PIPE, text=True)
    line = web.stderr.readline()
    assert line.startswith("serving http://127.0.0.1:"), line
    url = line.split()[1]
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    with opener.open(url, timeout=60) as r:
        page = r.read().decode()
    assert r.status == 200 and "carol" in page and "alice" not in page
    api = url.replace("/?token=", "/api/forecast?token=") + "&cpus=8&length=1&unit=h"
    with opener.open(api, timeout=60) as r:
        fc = json.loads(r.read().decode())["forecast"]
    chem = next(a for a in fc["associations"] if a["account"] == "chem")
    assert fc["user"] == "carol" and 0 < chem["fairshare"] <= 1 and chem["fairshare_sshare"] is not None
    # and the public page the tick wrote beside the JSON
    html = (site.state / "public" / f"{site.cluster}.html").read_text()
    assert site.cluster in html and "<script" not in html
    return web
