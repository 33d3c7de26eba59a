"""Where Slurm's text comes from: a live cluster, or a folder recorded from one.

Both give the same interface, so every later stage is tested on recorded output exactly as it
runs on a live cluster, with no patching of subprocess.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections import namedtuple
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from fscontrol import jsontext
from fscontrol.slurm import command
from fscontrol.slurm import parse
from fscontrol.errors import ConfigError, NotFoundError, SlurmCommandError, SlurmTimeoutError


CommandOutput = namedtuple("CommandOutput", ("argv", "stdout", "started_at", "finished_at"), module=__name__)
CommandOutput.__doc__ = """What one Slurm command printed (`argv`: a tuple of str, `stdout`: str), with when it was asked
    (`started_at`, `finished_at`: POSIX seconds). A named tuple, not a frozen record
    (fscontrol.records): every command that reads Slurm makes some, and the record's class, built
    at import, was ~3 M instructions of a forecast's start from the user's own sshare (issue #31
    item 5)."""


TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: records says why)
if TYPE_CHECKING:
    from typing import Protocol
else:  # SlurmSource is a Protocol for type checkers; at run time nothing checks it against a class
    Protocol = object

DEFAULT_TIMEOUT_S = 60.0

# name in a sample folder -> what the live source runs for it
COMMANDS = ("config", "sshare", "squeue", "sprio", "qos", "sacct")


def from_spec(spec: str, cluster: str | None, timeout_s: float = DEFAULT_TIMEOUT_S) -> "SlurmSource":
    """The source a command's --source names: 'live' (the Slurm commands, each with `timeout_s`)
    or a recorded sample folder; `cluster` is Slurm's -M."""
    if spec == "live":
        return LiveSlurm(cluster=cluster, timeout_s=timeout_s)
    return RecordedSlurm(Path(spec), cluster=cluster)


class SlurmSource(Protocol):
    """What the collector reads. Each call returns the command's text and when it ran."""

    cluster: str | None

    def config(self) -> CommandOutput: ...
    def sshare(self) -> CommandOutput: ...
    def squeue(self) -> CommandOutput: ...
    def sprio(self) -> CommandOutput: ...
    def qos(self) -> CommandOutput: ...
    def sacct(self, start: float, end: float) -> CommandOutput: ...
    def describe(self) -> str: ...


def _iso_local(t: float) -> str:
    # sacct reads -S/-E in the local zone of the process; so does this
    return datetime.fromtimestamp(t).strftime("%Y-%m-%dT%H:%M:%S")


class LiveSlurm:
    """Runs Slurm's clients as argument lists (never a shell) with a timeout.

    `cluster` adds `-M cluster` (sshare, squeue, sprio, sacct, scontrol, sbatch); never to
    sacctmgr, which has no -M (QOS live in slurmdbd, shared by every cluster it serves).
    SLURM_TIME_FORMAT=%s makes every time POSIX seconds: no time-zone guessing.
    (A plain class: it holds settings and runs commands, it is no record.)"""

    def __init__(self, cluster: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 env: dict[str, str] | None = None, deadline: float | None = None) -> None:
        self.cluster = cluster
        self.timeout_s = timeout_s
        self.env = env
        self.deadline = deadline  # time.monotonic() past which no command starts (a tick's deadline)
        self._config_json: bool | None = None  # does this Slurm print `scontrol show config` as JSON?

    def __repr__(self) -> str:
        return (f"LiveSlurm(cluster={self.cluster!r}, timeout_s={self.timeout_s!r}, env={self.env!r}, "
                f"deadline={self.deadline!r})")

    def _cluster_args(self, command: str) -> tuple[str, ...]:
        return ("-M", self.cluster) if self.cluster and command != "sacctmgr" else ()

    def run(self, argv: tuple[str, ...], timeout: float | None = None) -> CommandOutput:
        """Run one command; `timeout` (seconds) may shorten the source's own (a tick's deadline)."""
        full = (argv[0], *self._cluster_args(argv[0]), *argv[1:])
        env = dict(os.environ if self.env is None else self.env)
        env["SLURM_TIME_FORMAT"] = "%s"
        limit = self.timeout_s if timeout is None else max(0.1, min(self.timeout_s, timeout))
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise SlurmTimeoutError(f"not run: the tick's deadline passed before `{' '.join(full)}`")
            limit = min(limit, left)
        t0 = time.time()
        try:
            # (the agent lock's file goes with the command: a tick killed meanwhile stays locked until it ends)
            raw = command.run(list(full), timeout=limit, env=env, pass_fds=command.inherited_fds())
        except FileNotFoundError:
            raise SlurmCommandError(f"`{full[0]}` not found: is the Slurm client installed and on PATH?") from None
        except subprocess.TimeoutExpired:
            raise SlurmTimeoutError(f"`{' '.join(full)}` timed out after {limit:g} s") from None
        t1 = time.time()
        try:
            proc = subprocess.CompletedProcess(raw.args, raw.returncode, raw.stdout.decode(), raw.stderr.decode(errors="replace"))
        except UnicodeDecodeError as e:
            raise SlurmCommandError(f"`{' '.join(full)}` printed bytes that are not UTF-8 (at byte {e.start}): not read") from None
        if proc.returncode != 0:
            err = (proc.stderr or proc.stdout).strip().splitlines()
            detail = err[-1] if err else "no message"
            raise SlurmCommandError(f"`{' '.join(full)}` failed (exit {proc.returncode}): {detail}")
        if proc.stderr.strip() and not proc.stdout.strip():
            raise SlurmCommandError(f"`{' '.join(full)}` printed only an error: {proc.stderr.strip().splitlines()[-1]}")
        return CommandOutput(argv=full, stdout=proc.stdout, started_at=t0, finished_at=t1)

    def config(self) -> CommandOutput:
        """`scontrol show config`: its JSON where the Slurm has it (26.05+), else its text.

        `scontrol --json show config` prints JSON on 26.05, the text on 24.11 (its --json does not
        reach show config) and fails on 22.05 (no such option); the text is then asked for, and this
        source asks for it directly from then on. parse.parse_config reads both forms."""
        from fscontrol.slurm import configjson  # here: the forecast reads sshare alone

        if self._config_json is not False:
            try:
                out = self.run(parse.CONFIG_JSON_ARGS)
            except SlurmTimeoutError:
                raise
            except SlurmCommandError:
                out = None
            if out is not None and configjson.looks_like_json(out.stdout):
                self._config_json = True
                return out
            self._config_json = False
            if out is not None:
                return out  # 24.11: the text itself, under the JSON's argument list
        return self.run(parse.CONFIG_ARGS)

    def sshare(self) -> CommandOutput:
        return self.run(parse.SSHARE_ARGS)

    def squeue(self) -> CommandOutput:
        return self.run(parse.SQUEUE_ARGS)

    def sprio(self) -> CommandOutput:
        try:
            return self.run(parse.SPRIO_ARGS)
        except SlurmCommandError as e:
            # sprio exits 1 with "You have no pending jobs" / "Unable to find jobs": that is data
            if "no pending jobs" in str(e).lower() or "unable to find jobs" in str(e).lower():
                now = time.time()
                return CommandOutput(argv=parse.SPRIO_ARGS, stdout="", started_at=now, finished_at=now)
            raise

    def qos(self) -> CommandOutput:
        return self.run(parse.QOS_ARGS)

    def sacct(self, start: float, end: float) -> CommandOutput:
        return self.run(parse.sacct_args(_iso_local(start), _iso_local(end)))

    def sacct_jobs(self, start: float, end: float):
        """sacct's jobs streamed through a temporary file (spool.SacctJobs): the output is never
        held in memory; the same argument list, timeout, deadline and errors as run()."""
        from fscontrol.slurm import spool

        full, env, limit = self._spooled_call(parse.sacct_args(_iso_local(start), _iso_local(end)))
        jobs, _, _ = spool.run_sacct(full, limit, env)
        return jobs

    def _spooled_call(self, argv: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str], float]:
        """(the full argument list, its environment, its time limit) for a command whose output is
        spooled to disk: run()'s cluster arguments, timeout and deadline."""
        full = (argv[0], *self._cluster_args(argv[0]), *argv[1:])
        env = dict(os.environ if self.env is None else self.env)
        env["SLURM_TIME_FORMAT"] = "%s"
        limit = self.timeout_s
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise SlurmTimeoutError(f"not run: the tick's deadline passed before `{' '.join(full)}`")
            limit = min(limit, left)
        return full, env, limit

    def _streamed(self, argv: tuple[str, ...], parser):
        """parser(lines, command) over the command's output spooled to disk (spool.run_to_file): the
        same argument list, timeout, deadline and errors as run(), the output never held whole."""
        from fscontrol.slurm import spool

        full, env, limit = self._spooled_call(argv)
        cmd = " ".join(full)
        fh, _, _ = spool.run_to_file(full, limit, env, pass_fds=command.inherited_fds())
        with fh:
            return parser(spool.checked_lines(fh, cmd, lambda at: SlurmCommandError(
                f"`{cmd}` printed bytes that are not UTF-8 (at byte {at}): not read")), cmd)

    def sshare_spooled(self):
        """sshare's output spooled to disk (spool.SpooledOutput; run()'s argument list, timeout,
        deadline and errors), parsed from it a block at a time: never held whole (issue #31)."""
        from fscontrol.slurm import spool

        full, env, limit = self._spooled_call(parse.SSHARE_ARGS)
        cmd = " ".join(full)
        fh, t0, t1 = spool.run_to_file(full, limit, env, pass_fds=command.inherited_fds())
        return spool.SpooledOutput(fh, cmd, t0, t1, lambda at: SlurmCommandError(
            f"`{cmd}` printed bytes that are not UTF-8 (at byte {at}): not read"))

    def squeue_jobs(self):
        """squeue's jobs (spool.Spooled of QueueJob), its output read from disk a block at a time."""
        from fscontrol.slurm import spool

        return self._streamed(parse.SQUEUE_ARGS, spool.queue_of)

    def sprio_rows(self):
        """sprio's rows (parse.parse_sprio), as squeue_jobs; none when sprio says there are none."""
        try:
            from fscontrol.slurm import spool

            return self._streamed(parse.SPRIO_ARGS, spool.prio_of)
        except SlurmCommandError as e:
            if "no pending jobs" in str(e).lower() or "unable to find jobs" in str(e).lower():
                return ()
            raise

    def root_usage(self, accounts: Sequence[str] = ()) -> CommandOutput:
        """Root's RawUsage (one small RPC): `sshare -n -P -A root -o Account,User,RawUsage`; with
        `accounts`, those accounts' rows too (`-A root,a,b`)."""
        return self.run(parse.root_usage_args(accounts))  # run() adds -M once

    def version(self) -> str:
        out = self.run(("sinfo", "--version")).stdout.strip()
        return out

    def describe(self) -> str:
        return f"live Slurm{' cluster ' + self.cluster if self.cluster else ''}"


def last_decay_pass(state_save_location: str | None) -> float | None:
    """When slurmctld's decay thread last ran: StateSaveLocation/priority_last_decay_ran, whose
    first 8 bytes are that time, big-endian seconds (priority_multifactor.c, `pack_time` in
    `_write_last_decay_ran`, written at the end of every pass). Readable on the controller's
    host by root or SlurmUser (the file is 0600); None where it cannot be read (the loop's
    control then runs on its interval, not just before each pass)."""
    if not state_save_location:
        return None
    try:
        with open(os.path.join(state_save_location, "priority_last_decay_ran"), "rb") as fh:
            head = fh.read(8)
    except OSError:
        return None
    if len(head) != 8:
        return None
    t = int.from_bytes(head, "big")
    return float(t) if 0 < t < 2**40 else None


class RecordedSlurm:
    """A `samples/<scenario>/` folder: `<name>.txt` outputs plus `meta.json` (commands, times,
    Slurm version). sacct returns the recorded window whatever window is asked for."""

    def __init__(self, folder: Path | str, cluster: str | None = None) -> None:
        self.cluster = cluster
        self.folder = Path(folder)
        meta_path = self.folder / "meta.json"
        if not meta_path.is_file():
            raise NotFoundError(f"{self.folder} is not a recorded sample (no meta.json)")
        try:
            self.meta = jsontext.loads(meta_path.read_text())
        except (OSError, ValueError) as e:  # (ValueError: json.JSONDecodeError, and the text not UTF-8)
            raise NotFoundError(f"{meta_path}: unreadable ({e})") from None
        if self.cluster is None:
            self.cluster = self.meta.get("cluster")

    def _get(self, name: str) -> CommandOutput:
        info = self.meta["commands"].get(name)
        path = self.folder / f"{name}.txt"
        if info is None or not path.is_file():
            raise NotFoundError(f"sample {self.folder} has no {name} output")
        try:
            text = path.read_bytes().decode()
        except UnicodeDecodeError as e:
            raise SlurmCommandError(f"sample {path} holds bytes that are not UTF-8 (at byte {e.start}): not read") from None
        return CommandOutput(
            argv=tuple(info["argv"]),
            stdout=text,
            started_at=float(info["started_at"]),
            finished_at=float(info["finished_at"]),
        )

    def config(self) -> CommandOutput:
        return self._get("config")

    def sshare(self) -> CommandOutput:
        return self._get("sshare")

    def squeue(self) -> CommandOutput:
        return self._get("squeue")

    def sprio(self) -> CommandOutput:
        return self._get("sprio")

    def qos(self) -> CommandOutput:
        return self._get("qos")

    def sacct(self, start: float, end: float) -> CommandOutput:
        return self._get("sacct")

    def sacct_jobs(self, start: float, end: float):
        """The recorded sacct's jobs read line by line from the file (spool.SacctJobs); through
        _get (the text in memory) when a subclass replaces _get."""
        from fscontrol.slurm import spool

        if type(self)._get is not RecordedSlurm._get:
            out = self._get("sacct")
            return spool.from_text(out.stdout, " ".join(out.argv))
        info = self.meta["commands"].get("sacct")
        path = self.folder / "sacct.txt"
        if info is None or not path.is_file():
            raise NotFoundError(f"sample {self.folder} has no sacct output")
        return spool.from_file(path, " ".join(info["argv"]))

    def _streamed(self, name: str, parser):
        """parser(lines, command) over the recorded output read a block at a time (spool.checked_lines:
        the whole-output checks first); through _get (the text) when a subclass replaces _get."""
        from fscontrol.errors import ParseError
        from fscontrol.slurm import spool

        if type(self)._get is not RecordedSlurm._get:
            out = self._get(name)
            cmd = " ".join(out.argv)
            if out.stdout and not out.stdout.endswith("\n"):
                raise ParseError(cmd, "output does not end with a newline: cut short?")
            return parser(out.stdout, cmd)
        info = self.meta["commands"].get(name)
        path = self.folder / f"{name}.txt"
        if info is None or not path.is_file():
            raise NotFoundError(f"sample {self.folder} has no {name} output")
        cmd = " ".join(info["argv"])
        with open(path, "rb") as fh:
            return parser(spool.checked_lines(fh, cmd, lambda at: SlurmCommandError(
                f"sample {path} holds bytes that are not UTF-8 (at byte {at}): not read")), cmd)

    def sshare_spooled(self):
        """The recorded sshare (spool.SpooledOutput over its own file), parsed a block at a time;
        through _get (the text) when a subclass replaces _get."""
        from fscontrol.slurm import spool

        if type(self)._get is not RecordedSlurm._get:
            out = self._get("sshare")
            return spool.output_of_text(out.stdout, " ".join(out.argv), out.started_at, out.finished_at)
        info = self.meta["commands"].get("sshare")
        path = self.folder / "sshare.txt"
        if info is None or not path.is_file():
            raise NotFoundError(f"sample {self.folder} has no sshare output")
        return spool.SpooledOutput(open(path, "rb"), " ".join(info["argv"]),  # noqa: SIM115 (closed by it)
                                   float(info["started_at"]), float(info["finished_at"]),
                                   lambda at: SlurmCommandError(f"sample {path} holds bytes that are not UTF-8 (at byte {at}): not read"))

    def squeue_jobs(self):
        """The recorded squeue's jobs (parse.parse_squeue), read a block at a time."""
        from fscontrol.slurm import spool

        return self._streamed("squeue", spool.queue_of)

    def sprio_rows(self):
        """The recorded sprio's rows (parse.parse_sprio), read a block at a time."""
        from fscontrol.slurm import spool

        return self._streamed("sprio", spool.prio_of)

    @property
    def window(self) -> tuple[float, float]:
        w = self.meta["sacct_window"]
        return float(w[0]), float(w[1])

    def describe(self) -> str:
        return f"recorded sample {self.folder.name} (captured {self.meta.get('captured_at', '?')})"


def capture(source: LiveSlurm, folder: Path, window_s: float = 3600.0, note: str = "", since: float | None = None,
            history_s: float | None = None, force: bool = False) -> dict:
    """Record a live cluster into `folder`: each command's output, argv and time, the Slurm
    version, and the sacct window (the last `window_s` seconds, or from `since`: a series of
    captures whose windows tile, each from where the previous one ended), so RecordedSlurm can
    replay it.

    history_s: also record what the simulator needs to replay the last `history_s` seconds
    (``fscontrol simulate FOLDER``, fscontrol.sim.history): `jobs` (sacct with eligible times,
    time limits, CPUs and nodes, times not clipped), `nodes` (sinfo: each node's CPUs and
    partitions), `deps` (squeue: the pending jobs' dependencies) and `reservations` (scontrol -o
    show reservation: the advance reservations); the association tree with its shares is the sshare
    output every capture has.

    The folder is made private (0700) and every file in it 0600: they name users and accounts.

    The folder must be new, empty, or (with `force`) an earlier capture (it has a meta.json and
    only the files a capture writes), which is then replaced whole; anything else is refused
    (ConfigError) before any Slurm command runs. The capture is written into a private temporary
    folder beside `folder` and renamed into place at the end: a failed capture leaves nothing."""
    folder = Path(folder)
    if history_s is not None:
        # sacct needs a real local date: refuse a period reaching before 1970 (or not a period)
        if not history_s > 0 or history_s > time.time():
            raise ConfigError(f"--history {history_s:g} s reaches before 1970: give a shorter period")
    existing = check_capture_folder(folder, force=force)
    parent = folder.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # here: the forecast's start-up reads recordings, never captures (tempfile brings random)

    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.capture-", dir=parent))  # 0700
    try:
        meta = _capture_into(source, tmp, window_s, note, since, history_s)
        if existing == "capture":
            old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=parent))
            os.replace(folder, old / "c")
            os.replace(tmp, folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            if existing == "empty":
                folder.rmdir()
            os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return meta


def check_capture_folder(folder: Path, force: bool = False) -> str:
    """"new" (absent), "empty", or "capture" (an earlier capture, only with `force`); raise
    ConfigError for a folder capture must not take over."""
    folder = Path(folder)
    if not folder.exists():
        return "new"
    if not folder.is_dir():
        raise ConfigError(f"{folder} exists and is not a folder: not overwritten")
    names = set(os.listdir(folder))
    if not names:
        return "empty"
    meta_path = folder / "meta.json"
    if "meta.json" not in names:
        raise ConfigError(f"{folder} is not empty and not an earlier capture (no meta.json): nothing written; "
                          "give a new folder")
    try:
        commands = jsontext.loads(meta_path.read_text()).get("commands", {})
        ours = {"meta.json"} | {f"{n}.txt" for n in commands}
    except (OSError, ValueError, AttributeError):
        ours = {"meta.json"}
    if not force:
        raise ConfigError(f"{folder} already holds a capture: nothing written; give a new folder, or --force to "
                          "replace it")
    if names - ours:
        raise ConfigError(f"{folder} holds an earlier capture and other files ({', '.join(sorted(names - ours)[:3])}): "
                          "not replaced even with --force")
    return "capture"


def _capture_into(source: LiveSlurm, folder: Path, window_s: float, note: str, since: float | None,
                  history_s: float | None) -> dict:
    import json  # (here: a forecast's reads go through jsontext)

    os.chmod(folder, 0o700)
    outputs: dict[str, CommandOutput] = {}
    outputs["config"] = source.config()
    outputs["sshare"] = source.sshare()
    outputs["squeue"] = source.squeue()
    outputs["sprio"] = source.sprio()
    outputs["qos"] = source.qos()
    end = time.time()
    start = since if since is not None else end - window_s
    outputs["sacct"] = source.sacct(start, end)
    hist_start = None
    if history_s is not None:
        hist_start = end - history_s
        outputs["jobs"] = source.run(parse.history_sacct_args(_iso_local(hist_start), _iso_local(end)))
        outputs["nodes"] = source.run(parse.NODES_ARGS)
        outputs["deps"] = source.run(parse.DEPS_ARGS)
        from fscontrol.slurm.resv import RESV_ARGS

        outputs["reservations"] = source.run(RESV_ARGS)  # advance reservations (the replay names them)
        from fscontrol.slurm.partitions import PARTITIONS_ARGS

        outputs["partitions"] = source.run(PARTITIONS_ARGS)  # PriorityTier, PriorityJobFactor (the replay's queue)
        from fscontrol.slurm.tres import ASSOC_ARGS, QOS_LIMITS_ARGS

        # the association and QOS limits on running jobs and CPUs (the replay holds jobs to them)
        outputs["assoc"] = source.run(ASSOC_ARGS)
        outputs["qoslimits"] = source.run(QOS_LIMITS_ARGS)
    cfg = parse.parse_config(outputs["config"].stdout)
    meta = {
        "cluster": source.cluster or cfg.cluster,
        "slurm_version": cfg.slurm_version,
        "captured_at": datetime.fromtimestamp(outputs["sshare"].finished_at).astimezone().isoformat(),
        "captured_by": f"fscontrol capture (uid {os.getuid()})",
        "environment": {"SLURM_TIME_FORMAT": "%s"},
        "sacct_window": [start, end],
        "note": note,
        "commands": {
            name: {"argv": list(o.argv), "started_at": o.started_at, "finished_at": o.finished_at}
            for name, o in outputs.items()
        },
    }
    if hist_start is not None:
        meta["history_window"] = [hist_start, end]
    # the decay passes' phase (a replay's passes fall when slurmctld's did): slurmctld's record of its
    # last pass, readable on the controller's host by root or SlurmUser, for the local cluster only
    decay = None if source.cluster else last_decay_pass(cfg.raw.get("StateSaveLocation"))
    if decay is not None:
        meta["priority_last_decay_ran"] = decay
    for name, o in outputs.items():
        _write_private(folder / f"{name}.txt", o.stdout)
    _write_private(folder / "meta.json", json.dumps(meta, indent=2) + "\n")
    return meta


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path` readable by its owner only (0600, also when the file was there)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(text)
