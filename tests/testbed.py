"""The project's real single-host Slurm (scripts/testbed.sh), driven from the tests.

Commands run as argument lists with timeouts. Jobs are submitted as the testbed's Unix users
with runuser, as a site's users would submit them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from fscontrol.slurm import parse
from fscontrol.records import ShareRow
from fscontrol.slurm.source import LiveSlurm

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "testbed.sh"
# pytest-xdist runs independent groups of testbed tests at once (tests/conftest.py): each worker
# gets a testbed of its own, in its own folder and on its own loopback ports, so the groups never
# see each other's jobs, usage or slurm.conf edits. FSCONTROL_TESTBED_PORT_OFFSET moves a whole
# test session (e.g. a second checkout's) off the default ports.
#
# FSCONTROL_SLURM chooses the Slurm the testbed runs: 22.05 (Debian 12's, the host's; default),
# 24.11 (Debian 13's, from the root scripts/install-slurm.sh 24.11 builds) or 26.05 (Debian
# unstable's, from the root scripts/install-slurm.sh 26.05 builds). A 24.11 or 26.05 testbed has its
# own default folder and sits 1000 (26.05: 7000) ports higher, so all three can run side by side;
# its client commands are wrappers in DIR/bin, put first on the tests' PATH.
SLURM_VERSIONS = ("22.05", "24.11", "26.05")
SLURM_VERSION = os.environ.get("FSCONTROL_SLURM", "22.05")
if SLURM_VERSION not in SLURM_VERSIONS:
    raise RuntimeError(f"FSCONTROL_SLURM={SLURM_VERSION!r}: the testbed runs Slurm {', '.join(SLURM_VERSIONS)}")
VERSION_PORT_SHIFT = {"22.05": 0, "24.11": 1000, "26.05": 7000}[SLURM_VERSION]
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
WORKER_INDEX = int(WORKER[2:]) if WORKER.startswith("gw") and WORKER[2:].isdigit() else 0
_BASE_DIR = Path(os.environ.get("FSCONTROL_TESTBED_DIR")
                 or ("/tmp/fscontrol-testbed" if SLURM_VERSION == "22.05" else f"/tmp/fscontrol-testbed-{SLURM_VERSION}"))
DEFAULT_DIR = _BASE_DIR.with_name(f"{_BASE_DIR.name}-{WORKER}") if WORKER else _BASE_DIR
PORT_OFFSET = (int(os.environ.get("FSCONTROL_TESTBED_PORT_OFFSET", "0")) + VERSION_PORT_SHIFT
               + (10 * (WORKER_INDEX + 1) if WORKER else 0))
TRIXIE_ROOT = Path(os.environ.get("FSCONTROL_TRIXIE_ROOT", "/var/cache/fscontrol/trixie"))
SID_ROOT = Path(os.environ.get("FSCONTROL_SID_ROOT", "/var/cache/fscontrol/sid"))
# the Debian root the version's daemons run in (None: the host's own Slurm)
SLURM_ROOT = {"22.05": None, "24.11": TRIXIE_ROOT, "26.05": SID_ROOT}[SLURM_VERSION]
START_LOCK = Path("/tmp/fscontrol-testbed-start.lock")  # one start at a time: useradd, seeding


def testbed_env(offset: int = PORT_OFFSET) -> dict[str, str]:
    """testbed.sh's port variables for this worker (used when it writes a new testbed's configs)."""
    return {
        "TB_CTLD_PORT": str(16817 + offset), "TB_SLURMD_PORT": str(16818 + offset),
        "TB_DBD_PORT": str(16819 + offset), "TB_DB_PORT": str(16306 + offset),
    }


class TestbedUnavailable(Exception):
    pass


@dataclass
class Testbed:
    dir: Path
    started_here: bool = False
    env: dict[str, str] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.dir / "etc" / "slurm.conf"

    def run(self, *argv: str, user: str | None = None, timeout: float = 60, check: bool = True) -> str:
        cmd = list(argv) if user is None else ["runuser", "-u", user, "--", *argv]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self.env, check=False)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip() or p.stdout.strip()}")
        return p.stdout

    def source(self, **kw) -> LiveSlurm:
        return LiveSlurm(env=self.env, **kw)

    def submit(self, user: str, account: str, cpus: int, seconds: int, partition: str = "normal", **opts: str) -> str:
        args = [
            "sbatch", "--parsable", f"--chdir={self.dir / 'jobs'}", "-o", "/dev/null",
            "-A", account, "-p", partition, "-n", str(cpus), "-t", str(max(1, seconds // 60 + 2)),
        ]
        for k, v in opts.items():
            args.append(f"--{k.replace('_', '-')}={v}")
        args += ["--wrap", f"sleep {seconds}"]
        return self.run(*args, user=user).strip().split(";")[0]

    def probe(self, user: str, account: str) -> str:
        """A job that pends forever in the DOWN partition, so sprio shows its association's factor."""
        return self.submit(user, account, 1, 60, partition="parked")

    def cancel_all(self) -> None:
        ids = self.run("squeue", "-h", "-o", "%A").split()
        if ids:
            # a heterogeneous job's components refuse a cancel of their own ("Operation not permitted
            # on individual component"): the leader's cancel ends them, so the exit status is not asked
            self.run("scancel", *ids, check=False)
            for _ in range(300):  # (up to a minute: a loaded machine completes them slowly)
                if not self.run("squeue", "-h", "-o", "%A").strip():
                    break
                time.sleep(0.2)

    def sshare(self) -> dict[tuple[str, str], ShareRow]:
        return {r.key: r for r in parse.parse_sshare(self.run(*parse.SSHARE_ARGS))}

    def reset_usage(self) -> None:
        """RawUsage=0 for every top-level account (Slurm allows only 0); clears the tree. Every one:
        an account another test added under root keeps root's usage, and everyone's F, else."""
        rows = self.run("sacctmgr", "-nP", "show", "assoc", "cluster=tbcluster", "format=account,parentname,user",
                        check=False).splitlines()
        tops = {r.split("|")[0] for r in rows if r.count("|") == 2 and r.split("|")[1] == "root" and not r.split("|")[2]}
        # and root itself: a deleted association's usage stays in root's RawUsage (22.05: 60,073,260
        # left by the tree zoo's accounts under children summing to 113, in CI), and with it every F
        # near 1 and every d at 1; root's reset clears the tree too
        tops |= {"flat", "science", "fsadmin", "root"}

        def usage() -> dict[str, float]:
            return {k[0]: r.raw_usage for k, r in self.sshare().items() if k[0] in tops and not k[1]}

        before = usage()
        # slurmctld clears it when slurmdbd passes the change on: a reset that did not arrive (slurmdbd
        # not connected yet after a restart) leaves the old usage, and every F after it wrong
        for attempt in range(60):
            if attempt % 10 == 0:  # (again every 10 s)
                for acct in sorted(tops):
                    self.run("sacctmgr", "-i", "modify", "account", "where", f"name={acct}", "set", "rawusage=0", check=False)
            after = usage()
            # 0 itself (read within the second; a pass since may charge running jobs again, and decay
            # alone shrinks usage too, so "less than before" would not tell a reset that never came)
            if all(v == 0 for v in after.values()):
                return
            time.sleep(1)
        raise RuntimeError(f"sacctmgr's RawUsage=0 did not reach slurmctld: {before} -> {after}")

    def wait_running(self, job: str, timeout: float = 120) -> None:
        """Until squeue shows `job` RUNNING (or `timeout` s: the test's own check then fails)."""
        end = time.time() + timeout
        while time.time() < end and self.run("squeue", "-h", "-j", job, "-o", "%T").strip() != "RUNNING":
            time.sleep(0.5)

    def wait_gone(self, jobs: list[str], timeout: float = 400) -> None:
        """Until none of `jobs` is in squeue (they ran and ended; or `timeout` s), then 2 s more for
        their records (sacct) before a capture."""
        end = time.time() + timeout
        while time.time() < end and self.run("squeue", "-h", "-j", ",".join(jobs), "-o", "%A", check=False).strip():
            time.sleep(0.5)
        time.sleep(2)

    def wait_controller(self, timeout: float = 120) -> None:
        """Until slurmctld answers (24.11 on: a reconfigure restarts it)."""
        end = time.time() + timeout
        while time.time() < end and not self.controller_up():
            time.sleep(0.5)

    def wait_for_pass(self, timeout: float = 150) -> None:
        """Wait until the next decay pass has run: any association's RawUsage moves.

        Slurm runs a pass every PriorityCalcPeriod (60 s here) at a fixed phase; sshare's RawUsage
        moves only then. Not root's alone: under control with d fixed, the agent holds root's
        RawUsage constant (padding makes up what real usage loses), by design."""
        from fscontrol.slurm.source import last_decay_pass

        state = self.dir / "spool" / "ctld"  # slurmctld's own record of its last pass (root reads it)
        last = last_decay_pass(str(state))
        if last is not None:
            end = time.time() + timeout
            while time.time() < end:
                time.sleep(0.5)
                if last_decay_pass(str(state)) not in (None, last):
                    return
            raise TimeoutError("no decay pass seen")

        def usages() -> dict:
            return {k: r.raw_usage for k, r in self.sshare().items()}

        before = usages()
        end = time.time() + timeout
        while time.time() < end:
            time.sleep(2)
            if usages() != before:
                return
        raise TimeoutError("no decay pass seen")

    def stable_snapshot(self, db):
        """A snapshot (collected into `db`) with no decay pass between its sshare and sprio:
        retried until sshare reads the same before and after."""
        from fscontrol.agent import pipeline
        from fscontrol.store import history as store

        for _ in range(5):
            before = self.sshare()
            res = pipeline.collect(self.source(), db)
            if self.sshare() == before:
                return store.load_snapshot(db, res.snapshot_id)
        raise AssertionError("a decay pass fell inside every collection")

    def scontrol(self, *args: str) -> str:
        return self.run("scontrol", *args)

    def controller_up(self) -> bool:
        """`scontrol ping`: does a slurmctld answer on this testbed's port?"""
        p = subprocess.run(["scontrol", "ping"], env=self.env, capture_output=True, text=True, timeout=60)
        return p.returncode == 0 and " is UP" in p.stdout

    def stop_controller(self) -> None:
        """Only slurmctld (SIGTERM to its recorded pid and to any other slurmctld of this testbed,
        as one a 24.11 reconfigure has just started): jobs keep running under slurmd."""
        subprocess.run([str(SCRIPT), "ctld-stop", str(self.dir)], capture_output=True, text=True, timeout=120, check=True)
        if self.controller_up():
            raise RuntimeError("slurmctld still answers after scripts/testbed.sh ctld-stop")

    def start_controller(self) -> None:
        """slurmctld again, recovering its saved state; FairShareDampeningFactor comes back from
        slurm.conf, as after any restart."""
        p = subprocess.run([str(SCRIPT), "ctld-start", str(self.dir)], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"slurmctld did not come back: {p.stderr.strip()[-1000:]}")

    def set_conf(self, **settings: str) -> None:
        """Rewrite slurm.conf's lines for these keys ("" removes the line) and `scontrol reconfigure`."""
        conf = self.conf
        lines = [ln for ln in conf.read_text().splitlines() if ln.split("=", 1)[0] not in settings]
        lines += [f"{k}={v}" for k, v in settings.items() if v != ""]
        conf.write_text("\n".join(lines) + "\n")
        self.scontrol("reconfigure")

    def set_priority_flags(self, flags: str, restart: bool = False) -> None:
        """PriorityFlags ("" = Fair Tree): slurmctld switches algorithm at once and ranks (or
        computes classic F) at its next pass. A reconfigure leaves the other algorithm's
        NormShares in place on 22.05 (fairtree.held_shares); `restart` restarts slurmctld after it,
        which renormalises them (the tests leave the testbed so for the tests after them). Returns
        once slurmctld answers (a reconfigure restarts it on 24.11 and later)."""
        self.set_conf(PriorityFlags=flags)
        if restart:
            self.stop_controller()
            self.start_controller()
        for _ in range(60):
            if self.controller_up():
                return
            time.sleep(1)

    def damping(self) -> int:
        line = next(ln for ln in self.scontrol("show", "config").splitlines() if ln.startswith("FairShareDampeningFactor"))
        return int(line.split("=")[1])

    # the limits a test may set with sacctmgr and forget (or fail to take back: check=False)
    ASSOC_LIMITS = ("GrpTRES", "GrpJobs", "GrpSubmit", "GrpWall", "GrpTRESMins", "GrpTRESRunMins", "MaxJobs",
                    "MaxSubmit", "MaxTRES", "MaxTRESPerNode", "MaxTRESMins", "MaxWall", "Fairshare", "QOS")
    QOS_LIMITS = ("Priority", "UsageFactor", "GrpTRES", "GrpJobs", "GrpSubmit", "MaxTRES", "MaxTRESPU", "MaxJobsPU",
                  "MaxSubmitPU", "MaxTRESPA", "MaxJobsPA", "MaxWall", "Flags")

    def limits(self) -> dict[tuple[str, ...], dict[str, str]]:
        """Every association's and QOS's limits, as sacctmgr shows them."""
        out: dict[tuple[str, ...], dict[str, str]] = {}
        for kind, keys, fmt in (("assoc", ("Account", "User", "Partition"), self.ASSOC_LIMITS), ("qos", ("Name",), self.QOS_LIMITS)):
            args = ["sacctmgr", "-nP", "show", kind, "format=" + ",".join((*keys, *fmt))]
            if kind == "assoc":
                args.insert(4, "cluster=tbcluster")
            for line in self.run(*args).splitlines():
                f = line.split("|")
                if len(f) == len(keys) + len(fmt):
                    out[(kind, *f[:len(keys)])] = dict(zip(fmt, f[len(keys):]))
        return out

    def restore_limits(self, base: dict[tuple[str, ...], dict[str, str]]) -> list[str]:
        """Put back every limit that differs from `base` (a limit `base` has unset: -1)."""
        fixed = []
        for key, now in self.limits().items():
            was = base.get(key)
            if was is None or was == now:
                continue  # (an association or QOS a test added: left, its usage is reset with the rest)
            sets = [f"{k}={self._limit_back(k, now[k], was[k])}" for k in now if now[k] != was[k]]
            if key[0] == "assoc":
                where = [f"account={key[1]}"] + ([f"user={key[2]}"] if key[2] else []) + (
                    [f"partition={key[3]}"] if key[3] else [])
                target = "user" if key[2] else "account"
                self.run("sacctmgr", "-i", "modify", target, "where", *where, "cluster=tbcluster", "set", *sets, check=False)
            else:
                self.run("sacctmgr", "-i", "modify", "qos", "where", f"name={key[1]}", "set", *sets, check=False)
            fixed.append(f"{'/'.join(k for k in key[1:] if k)} {' '.join(sets)}")
        return fixed

    @staticmethod
    def _limit_back(key: str, now: str, was: str) -> str:
        """The value that sets `key` from `now` back to `was`: a TRES list TRES by TRES (cpu=-1
        clears one), anything else its old value, or -1 (unset)."""
        if "TRES" in key:
            old = dict(t.split("=", 1) for t in was.split(",") if "=" in t)
            cur = dict(t.split("=", 1) for t in now.split(",") if "=" in t)
            return ",".join([f"{t}=-1" for t in cur if t not in old] + [f"{t}={v}" for t, v in old.items()])
        return was if was else ("" if key == "QOS" else "-1")

    def partition_weights_changed(self, conf_text: str) -> bool:
        """Does a partition bill other TRESBillingWeights than slurm.conf gives it (`scontrol update
        partitionname=... TRESBillingWeights=...`, which only a reconfigure undoes)?"""
        conf = {}
        for ln in conf_text.splitlines():
            f = dict(t.split("=", 1) for t in ln.split() if "=" in t)
            if "PartitionName" in f:
                conf[f["PartitionName"]] = f.get("TRESBillingWeights", "")
        for ln in self.run("scontrol", "-o", "show", "partition", check=False).splitlines():
            f = dict(t.split("=", 1) for t in ln.split() if "=" in t)
            w = f.get("TRESBillingWeights", "")
            if "PartitionName" in f and (w if w != "(null)" else "") != conf.get(f["PartitionName"], ""):
                return True
        return False

    def restore_baseline(self, conf_text: str, limits: dict | None = None) -> list[str]:
        """Put the testbed back as it was started, before a test: the daemons up, no job, slurm.conf
        as testbed.sh wrote it (no agent backups), slurmctld's runtime d the file's, the node
        usable. The testbed groups share a worker's Slurm one after another (tests/conftest.py):
        what one test left (a persisted d, a stopped slurmctld, a pending job, a drained node) must
        not decide the next group's results. Returns what it had to put back (empty: nothing)."""
        fixed: list[str] = []
        if subprocess.run([str(SCRIPT), "status", str(self.dir)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **testbed_env()}).returncode != 0:
            ensure_testbed(self.dir)  # testbed.sh start brings back what is not running
            fixed.append("a daemon was not running")
        for _ in range(60):
            if self.controller_up():
                break
            time.sleep(1)
        else:
            self.start_controller()
            fixed.append("slurmctld did not answer")
        if self.run("squeue", "-h", "-o", "%A").split():
            self.cancel_all()
            fixed.append("jobs left in the queue")
        now_text = self.conf.read_text()
        if now_text != conf_text:
            self.conf.write_text(conf_text)
            if sorted(now_text.split("\n")) != sorted(conf_text.split("\n")):  # (not only its lines' order)
                fixed.append("slurm.conf changed")
        for left in (*self.conf.parent.glob(self.conf.name + ".fscontrol-*"),
                     *self.conf.parent.glob("." + self.conf.name + ".fscontrol-*.tmp")):
            left.unlink()
            fixed.append(f"{left.name} left")
        if self.partition_weights_changed(conf_text):
            fixed.append("partition TRESBillingWeights set by scontrol update")  # the reconfigure below clears them
        d_file = next((int(ln.split("=", 1)[1]) for ln in conf_text.splitlines()
                       if ln.split("=", 1)[0].strip() == "FairShareDampeningFactor"), 1)
        if "slurm.conf changed" in fixed or self.damping() != d_file or \
                "partition TRESBillingWeights set by scontrol update" in fixed:
            if "slurm.conf changed" not in fixed and self.damping() != d_file:
                fixed.append(f"runtime d {self.damping()}, slurm.conf's {d_file}")
            self.scontrol("reconfigure")
            for _ in range(60):  # (24.11+: a reconfigure restarts slurmctld in place)
                if self.controller_up():
                    break
                time.sleep(1)
            if self.damping() != d_file:
                self.scontrol("fsdampeningfactor", str(d_file))
        for name in re.findall(r"ReservationName=(\S+)", self.run("scontrol", "show", "reservation", check=False)):
            self.run("scontrol", "delete", f"reservation={name}", check=False)
            fixed.append(f"reservation {name} left")
        if limits is not None:
            fixed += self.restore_limits(limits)
        shares = self.sshare()
        root = shares.get(("root", ""))
        below = sum(r.raw_usage for r in shares.values() if r.parent == "root" and r.key != ("root", ""))
        if root is not None and root.raw_usage > 1.01 * below + 1:  # usage of associations deleted since
            fixed.append(f"root's RawUsage {root.raw_usage:,.0f} over its children's {below:,.0f} (deleted associations)")
            self.reset_usage()
        states = self.run("sinfo", "-h", "-N", "-p", "normal", "-o", "%N %t").split("\n")
        for row in filter(None, (r.split() for r in states)):
            node, state = row[0], row[1].rstrip("*~#!%$@^-")
            if state.startswith(("down", "drain", "drng", "fail", "inval")):  # (not idle, mix, alloc, comp, resv, plnd)
                self.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)
                fixed.append(f"node {node} {row[1]}")
        return fixed


def ensure_testbed(directory: Path = DEFAULT_DIR, *, offset: int = PORT_OFFSET, nodes: int = 1) -> Testbed:
    """Start (or reuse) the testbed in `directory`. Raises TestbedUnavailable with the reason.
    `offset`: its ports (a second testbed of the same worker: PORT_OFFSET + 5, in the 10 ports
    the worker's offset owns); `nodes`: how many slurmd, one per node (testbed.sh TB_NODES), used
    when it is made."""
    if os.geteuid() != 0:
        raise TestbedUnavailable("the Slurm testbed needs root (it starts daemons and switches job users)")
    slurm = ("slurmctld", "slurmd", "slurmdbd") if SLURM_VERSION == "22.05" else ()
    for b in (*slurm, "mariadbd", "munged"):
        if shutil.which(b) is None and not Path(f"/usr/sbin/{b}").exists():
            raise TestbedUnavailable(f"{b} is not installed: run scripts/install-slurm.sh")
    if SLURM_ROOT is not None and not (SLURM_ROOT / ".fscontrol-ready").is_file():
        raise TestbedUnavailable(f"no Slurm {SLURM_VERSION} root in {SLURM_ROOT}: run scripts/install-slurm.sh {SLURM_VERSION}")
    running = directory.exists() and subprocess.run(
        [str(SCRIPT), "status", str(directory)], capture_output=True, text=True, timeout=60).returncode == 0
    if not running:
        import fcntl

        with open(START_LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # starts one after another; the testbeds then run side by side
            p = subprocess.run([str(SCRIPT), "start", str(directory)], capture_output=True, text=True, timeout=300,
                               env={**os.environ, **testbed_env(offset), "TB_SLURM": SLURM_VERSION,
                                    "TB_NODES": str(nodes)})
        if p.returncode != 0:
            raise TestbedUnavailable(f"scripts/testbed.sh start failed: {p.stderr.strip()[-2000:]}")
    return Testbed(dir=directory, started_here=not running, env=testbed_client_env(directory))


def side_testbed(suffix: str, *, cpus: str, nodes: int):
    """A module fixture's testbed of its own beside the worker's (DEFAULT_DIR + `suffix`, the
    worker's second ports), of `nodes` nodes of `cpus` CPUs (testbed.sh TB_CPUS: one number, or a
    comma list, one a node): yields it, cancels its jobs after and stops it if started here.
    Unavailable: a failure where the real-Slurm tests must run (FSCONTROL_REQUIRE_SLURM=1), else a skip."""
    import pytest

    env_cpus = os.environ.get("TB_CPUS")
    os.environ["TB_CPUS"] = cpus
    try:
        tb = ensure_testbed(DEFAULT_DIR.with_name(DEFAULT_DIR.name + suffix), offset=PORT_OFFSET + 5, nodes=nodes)
    except TestbedUnavailable as e:
        if os.environ.get("FSCONTROL_REQUIRE_SLURM") == "1":
            pytest.fail(f"real-Slurm tests must run here but the testbed {suffix} is unavailable: {e}", pytrace=False)
        pytest.skip(f"Slurm testbed unavailable: {e}")
    finally:
        if env_cpus is None:
            os.environ.pop("TB_CPUS", None)
        else:
            os.environ["TB_CPUS"] = env_cpus
    yield tb
    tb.cancel_all()
    if tb.started_here and os.environ.get("FSCONTROL_KEEP_TESTBED") != "1":
        stop_testbed(tb)


def testbed_client_env(directory: Path) -> dict[str, str]:
    """The environment the Slurm clients of the testbed in `directory` run with: its slurm.conf
    and, for 24.11 and 26.05, its client wrappers (DIR/bin) first on PATH."""
    env = dict(os.environ)
    env["SLURM_CONF"] = str(directory / "etc" / "slurm.conf")
    if SLURM_VERSION != "22.05":
        env["PATH"] = f"{directory / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}"
    return env


def stop_testbed(tb: Testbed) -> None:
    subprocess.run([str(SCRIPT), "stop", str(tb.dir)], capture_output=True, text=True, timeout=300)
