"""The one privacy policy for everything fscontrol lets a non-root user read.

Three things leave root's hands: the published snapshot (`<cluster>.json` and the public page
`<cluster>.html`, world-readable), each user's own file (`<cluster>.users/<name>/own.json`,
readable by that user alone) and the Prometheus textfile (node_exporter serves it over HTTP, to anyone who
can reach the port). Each consults this module, and nothing else decides what they may hold; what each PrivateData
flag hides is read in fscontrol/slurm/privatedata.py (`privatedata.` below).

The rule: fscontrol never shows a user more than Slurm itself would show them.

* Names (a user's or an account's usage, F, rank, running jobs) reach the world-readable files
  only when PrivateData hides none of usage, users, accounts (or `all`): then `sshare -a` shows
  them to anyone anyway (`privatedata.names_public`).
* Running jobs by association (who runs what, until when) reach the world-readable file only when
  names are public and PrivateData hides no jobs (`squeue` shows them to anyone anyway).
* The cluster's running list (unnamed: each job's time to its limit, billing rate and place in
  slurmctld's job list, for the forecasts) is per job, with its Slurm job id, only where PrivateData
  hides no jobs. Otherwise it carries no job and no one user's jobs: groups of at least 3 jobs of
  3 users ending in the same hour or later, each its summed rate and its rate-weighted time left
  to the hour; jobs no group can hide are withheld (`grouped_running`: squeue shows a user no one
  else's job, and sinfo only the CPUs in use). Ranks (`running_order`) stay in the own files, for
  a user's own jobs.
* A user's own running jobs always reach that user's own file (squeue shows a user their own
  jobs); the running jobs of the accounts above the user only when PrivateData hides neither
  `jobs` nor `accounts` (`privatedata.account_jobs_to_members`).
* The metrics name a user only when names are public, or when the admin names a group for
  node_exporter (`[agent] metrics_group`): then the textfile is written 0640 root:GROUP and
  carries every series. Otherwise it is 0644 with the aggregate series alone.
* Nothing world-readable is a plain hash of a name: a name's token is an HMAC-SHA256 keyed with
  the site secret, a random 32-byte key made at the first run, readable by root alone
  (`load_secret`). Hashing every name in passwd or sacctmgr matches none of them.
* The partitions' billing rules (TRESBillingWeights, CPUs, GPUs) reach the world-readable file
  only when PrivateData hides no partitions (`privatedata.partitions_public`); the QOS UsageFactors, the
  PriorityFlags and the release always (cluster configuration: anyone's sacctmgr/scontrol shows them).
* The QOS a job gets without --qos (each association's DefaultQOS, slurm.jobqos) and each user's
  default account reach the world-readable rows only where `privatedata.associations_public`; each user's
  own always reach their own file (Slurm shows a user their own associations and user record).
* Admins (`[agent] admins`, who may `forecast --user` anyone) are published as HMAC tokens; each
  admin's own file holds their token, so `forecast` recognises its own user without the file
  naming anyone, and no one can compute another's token.

Every name known to the host (`pwd.getpwall()`) gets an own folder and file, with or without
anything in it, all rewritten at every publish, so testing whether `<cluster>.users/<name>/`
exists, or reading its times, tells nothing; what is inside a user's folder (0500) only they can
see.
"""

from __future__ import annotations

import errno
import math
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from fscontrol import jsontext
from fscontrol.errors import OutputError, UnsafeActionError
from fscontrol.slurm import privatedata

OWN_FORMAT = "fscontrol-own"
SECRET_BYTES = 32

# What each PrivateData flag hides is read in one place, fscontrol/slurm/privatedata.py (the
# doctor and the user's commands read it there too); this module decides, from it, what may go
# in each file a user reads.


def metrics_name_users(private_data: Iterable[str], metrics_group: str | None) -> bool:
    """Per-user series in the textfile: names are public, or the file is readable by a group alone."""
    return bool(metrics_group) or privatedata.names_public(private_data)


# ---------------------------------------------------------------------------- the site secret
def secret_path(db_file: str | Path | None, configured: str | None = None) -> Path:
    """`[agent] secret`, else `secret` beside the history (/var/lib/fscontrol/secret)."""
    if configured:
        return Path(configured)
    return (Path(db_file).parent if db_file else Path("/var/lib/fscontrol")) / "secret"


def load_secret(path: str | Path, create: bool = True) -> bytes:
    """The site secret: made at the first run (O_CREAT|O_EXCL, 0600, 32 random bytes as hex),
    read afterwards. Refused (UnsafeActionError) when it is a symlink, not a regular file, not the
    caller's, or readable by anyone else: a secret others can read keys nothing."""
    p = Path(path)
    if create:
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        except OSError as e:
            raise OutputError(f"cannot make the site secret {p}: {e.strerror}") from None
        else:
            try:
                os.write(fd, os.urandom(SECRET_BYTES).hex().encode() + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as e:
        why = "it is a symlink" if e.errno == errno.ELOOP else e.strerror
        raise UnsafeActionError(f"cannot use the site secret {p}: {why}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeActionError(f"refused: the site secret {p} is not a regular file")
        if st.st_uid != os.geteuid():
            raise UnsafeActionError(f"refused: the site secret {p} belongs to uid {st.st_uid}, not to this user ({os.geteuid()})")
        if st.st_mode & 0o077:
            raise UnsafeActionError(f"refused: the site secret {p} is readable by others (mode {st.st_mode & 0o777:o}; "
                                    "it must be 0600): remove it and a new one is made")
        raw = os.read(fd, 4096).strip()
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(raw.decode())
    except ValueError:
        key = b""
    if len(key) < 16:
        raise UnsafeActionError(f"refused: the site secret {p} is not {SECRET_BYTES} hex-encoded bytes: remove it and a new one is made")
    return key


def token(secret: bytes, kind: str, cluster: str, *names: str) -> str:
    """HMAC-SHA256 of (kind, cluster, names) under the site secret, hex."""
    import hashlib
    import hmac

    msg = "\x1f".join((kind, cluster, *names)).encode()
    return hmac.new(secret, msg, hashlib.sha256).hexdigest()


def admin_token(secret: bytes, cluster: str, name: str) -> str:
    return token(secret, "admin", cluster, name)


# ---------------------------------------------------------------------------- running jobs
def run_key(account: str, user: str = "") -> str:
    """How running jobs are keyed, in the published file and in a user's own file: the account
    (its whole subtree) or account/user."""
    return f"{account}/{user}" if user else account


def account_path(parent: Mapping[str, str], account: str) -> list[str]:
    """The account and its ancestors, up to (without) root."""
    out, a = [], account
    while a and a != "root" and a not in out:
        out.append(a)
        a = parent.get(a, "")
    return out


ORDER_JOB_ID = "job_id"  # the running lists' third field: the job's place in slurmctld's job list, its id
ORDER_RANK = "rank"  # ... its rank among the running jobs (0..n-1 in that same order): PrivateData hides jobs


def running_order(private_data: Iterable[str] | str) -> str:
    """What the published running lists' third field is (`running.order`): every running job's
    place in slurmctld's job list, as its job id where Slurm shows anyone the jobs, else as its
    rank among them (squeue shows a user no one else's job id: the world-readable file must not)."""
    return ORDER_RANK if privatedata.jobs_hidden(private_data) else ORDER_JOB_ID


GROUP_S = 3600.0  # grouped_running: a group closes only at the end of an hour of time left, its time left to the hour ...
GROUP_MIN = 3  # ... and only once it holds this many jobs ...
GROUP_USERS = 3  # ... of this many users


def _enough(group: list[tuple[float | None, float, str]]) -> bool:
    return len(group) >= GROUP_MIN and len({u for _, _, u in group}) >= GROUP_USERS


def grouped_running(jobs: Iterable[tuple[float | None, float, str]]) -> tuple[list[list], int]:
    """The cluster's running jobs where PrivateData hides jobs, `jobs` each (time to its limit or
    None, rate, user): (groups, jobs withheld). No entry is one job, nor one user's jobs: in order
    of time left, jobs are grouped until a group holds GROUP_MIN jobs of GROUP_USERS users and the
    next job ends in a later hour (GROUP_S) of time left; a last group short of that joins the one
    before. Each group is [its rate-weighted mean time left, to the hour; its summed rate; None],
    the jobs with no limit one group [None, summed rate, None] under the same rule. Jobs that no
    group can hide (too few jobs or users run) are withheld, counted. A user who subtracts their
    own jobs from a group still sees the sum of two other users' jobs at least; two snapshots in a
    row show a started job's rate (as sinfo's allocated CPUs do) and its limit to the hour only.
    Within a group the charge's timing is smoothed (its cost to the forecast: docs/privacy.md)."""
    jobs = list(jobs)
    timed = sorted((float(left), float(rate), user) for left, rate, user in jobs if left is not None)
    groups: list[list[tuple[float | None, float, str]]] = []
    for left, rate, user in timed:
        g = groups[-1] if groups else None
        if g is None or (_enough(g) and math.floor(left / GROUP_S) > math.floor(float(g[-1][0] or 0.0) / GROUP_S)):
            groups.append([(left, rate, user)])
        else:
            g.append((left, rate, user))
    if len(groups) > 1 and not _enough(groups[-1]):
        small = groups.pop()
        groups[-1] += small
    unlimited: list[tuple[float | None, float, str]] = [(None, float(r), u) for left, r, u in jobs if left is None]
    kept = [g for g in groups if _enough(g)]
    withheld = len(timed) - sum(len(g) for g in kept)
    out: list[list] = []
    for g in kept:
        rate = math.fsum(r for _, r, _ in g)
        mean = (math.fsum(float(x or 0.0) * r for x, r, _ in g) / rate if rate > 0
                else math.fsum(float(x or 0.0) for x, _, _ in g) / len(g))
        out.append([round(mean / GROUP_S) * GROUP_S, rate, None])
    if unlimited and _enough(unlimited):
        out.append([None, math.fsum(r for _, r, _ in unlimited), None])
    elif unlimited:
        withheld += len(unlimited)
    return out, withheld


def running_maps(snap, entry) -> tuple[list, dict[str, list], dict[str, list]]:
    """Every running job as entry(job, order) in the cluster's list, under each account of its path
    and under its account/user; `order` is the job's place in slurmctld's job list as running_order
    says (the same in the published file and in every own file of one snapshot). Unfiltered
    otherwise: the callers decide (with this module) who may see which."""
    from fscontrol.slurm.jobid import job_order

    parent = {r.account: r.parent for r in snap.shares if not r.user}
    cluster: list[list] = []
    accounts: dict[str, list[list]] = {}
    users: dict[str, list[list]] = {}
    place = {job[0]: job_order(job[0]) for job in snap.running}
    if running_order(snap.config.private_data) == ORDER_RANK:  # an array's tasks share their array's place
        rank = {o: i for i, o in enumerate(sorted({o for o in place.values() if o is not None}))}
        place = {j: rank.get(o) for j, o in place.items()}
    for job in snap.running:
        e = entry(job, place[job[0]])
        cluster.append(e)
        _, account, user = job[0], job[1], job[2]
        for a in account_path(parent, account):
            accounts.setdefault(run_key(a), []).append(e)
        users.setdefault(run_key(account, user), []).append(e)
    return cluster, accounts, users


def own_running(snap, user: str, accounts: dict[str, list], users: dict[str, list]) -> dict:
    """What `user`'s own file carries of the running jobs: their own associations' jobs, and the
    accounts on their paths only when PrivateData lets members see their accounts' jobs."""
    parent = {r.account: r.parent for r in snap.shares if not r.user}
    mine = [r.account for r in snap.shares if r.user == user]
    own_users = {run_key(a, user): users[run_key(a, user)] for a in mine if run_key(a, user) in users}
    own_accounts: dict[str, list] = {}
    if privatedata.account_jobs_to_members(snap.config.private_data):
        for a in mine:
            for x in account_path(parent, a):
                if x in accounts:
                    own_accounts[x] = accounts[x]
    return {"users": own_users, "accounts": own_accounts, "accounts_published": privatedata.account_jobs_to_members(snap.config.private_data)}


# ---------------------------------------------------------------------------- own files
def own_folder(published: Path) -> Path:
    """`<cluster>.users/` beside `<cluster>.json`."""
    return published.with_name(published.stem + ".users")


def own_file(published: Path, user: str) -> Path:
    return own_folder(published) / user / "own.json"


def _safe_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and not name.startswith(".") and "\0" not in name


def known_names() -> dict[str, tuple[int, int]]:
    """Every user the host knows (name: (uid, gid)), for own files (see the module's note)."""
    import pwd

    return {p.pw_name: (p.pw_uid, p.pw_gid) for p in pwd.getpwall()}


_ACL = "system.posix_acl_access"


def _acl(owner: int, uid: int, perm: int) -> bytes:
    """A POSIX access ACL in the kernel's extended-attribute form (version 2): the owner `owner`,
    user `uid` `perm`, nothing for the group and for others (the mask `perm`)."""
    import struct

    def entry(tag: int, p: int, ident: int = 0xFFFFFFFF) -> bytes:
        return struct.pack("<HHI", tag, p, ident)

    return struct.pack("<I", 2) + entry(0x01, owner) + entry(0x02, perm, uid) + entry(0x04, 0) + entry(0x10, perm) + entry(0x20, 0)


def _acl_readers(fd: int) -> set[int]:
    """The users a file's access ACL lets read it by name (none without an ACL)."""
    try:
        raw = os.getxattr(fd, _ACL)
    except OSError:
        return set()
    out = set()
    import struct

    for k in range(4, len(raw) - 7, 8):
        tag, perm, ident = struct.unpack_from("<HHI", raw, k)
        if tag == 0x02 and perm & 4:
            out.add(ident)
    return out


def _root_own(d: Path, uid: int, data: str) -> bool:
    """Root's form of a user's folder: `d` root's, 0700, and own.json root's, 0400, each with an
    access ACL that lets `uid` (and no one else) read them: the user can read their file and
    write nothing here (an outside review: a folder of the user's own let them fill the publish
    filesystem). Whatever else the folder holds (from when it was the user's) is removed. False
    where the filesystem has no ACLs (nothing changed then)."""
    import shutil

    from fscontrol import atomic

    try:
        os.setxattr(d, _ACL, _acl(7, uid, 5), follow_symlinks=False)  # (probe and set: before the chown)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return False
        raise
    os.chown(d, 0, 0, follow_symlinks=False)
    os.chmod(d, 0o700)
    os.setxattr(d, _ACL, _acl(7, uid, 5), follow_symlinks=False)  # (chmod rewrote the mask)
    with os.scandir(d) as it:
        for e in it:
            if e.name == "own.json" and e.is_file(follow_symlinks=False):
                continue
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path, ignore_errors=True)
            else:
                os.unlink(e.path)
    atomic.write_text(d / "own.json", data, mode=0o400, uid=0, gid=0)
    os.setxattr(d / "own.json", _ACL, _acl(4, uid, 4), follow_symlinks=False)
    return True


def write_own_files(published: Path, own: Mapping[str, dict], names: Mapping[str, tuple[int, int]] | None = None) -> Path:
    """Write each user's own file, `<cluster>.users/<user>/own.json`. The folder is root's, mode
    0711 (not listable); as root, `<user>/` and own.json are root's too, 0700 and 0400, with an
    access ACL that lets the user alone read them (`_root_own`: no one else may enter the folder or
    stat what it holds, and the user can write nothing there); where the filesystem has no ACLs,
    `<user>/` is the user's, mode 0500, and own.json the user's, 0400. Every name the host knows gets one (`own` gives the
    content; the others get an empty one), every file is rewritten at every publish (the folders'
    times move together), so neither a folder's existence nor its times tell anything. Not root:
    the caller's own folders and files. Written by atomic.write_text, the one atomic writer (a temp
    file it made, fsync, fchown and fchmod on the descriptor, then rename: nothing a user puts in
    their folder is followed).
    Folders of names no longer known are removed. A user whose folder cannot be written (they
    broke it) is skipped."""
    import json  # (the writer's: a forecast reads with jsontext)

    import shutil

    from fscontrol import atomic

    folder = own_folder(published)
    if not folder.parent.is_dir():  # never made here: a typo would otherwise create folders as root
        raise FileNotFoundError(f"folder {folder.parent} does not exist")
    me = os.geteuid()
    try:
        folder.mkdir(mode=0o711)
    except FileExistsError:
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != me:
            raise UnsafeActionError(f"refused: {folder} is not a folder of this user's (uid {me})") from None
    os.chmod(folder, 0o711)
    names = dict(known_names() if names is None else names)
    root = me == 0
    wanted = {n for n in set(names) | set(own) if _safe_name(n) and (n in names or not root)}
    for name in sorted(wanted):
        uid, gid = names.get(name, (me, os.getegid())) if root else (me, os.getegid())
        body = own.get(name) or {"format": OWN_FORMAT, "user": name}
        data = json.dumps(body, sort_keys=True, allow_nan=False) + "\n"
        d = folder / name
        try:
            try:
                st = os.lstat(d)
            except FileNotFoundError:
                os.mkdir(d, 0o500)
                st = os.lstat(d)
            if not stat.S_ISDIR(st.st_mode):
                os.unlink(d)
                os.mkdir(d, 0o500)
                st = os.lstat(d)
            if root and _root_own(d, uid, data):
                continue
            if root and (st.st_uid, st.st_gid) != (uid, gid):
                os.chown(d, uid, gid, follow_symlinks=False)
            os.chmod(d, 0o500)
            atomic.write_text(d / "own.json", data, mode=0o400, uid=uid if root else None, gid=gid if root else None)
        except OSError:
            continue
    for d in folder.iterdir():
        if d.name not in wanted and not d.name.startswith("."):
            if d.is_dir() and not d.is_symlink():
                shutil.rmtree(d, ignore_errors=True)
            else:
                d.unlink(missing_ok=True)
    return folder


def read_own(published_path: Path, user: str, uid: int) -> dict | None:
    """The caller's own file beside the published snapshot: a regular file (not a symlink) owned
    by `uid` or root, for `user`; None when there is none or it is not usable."""
    if not _safe_name(user):
        return None
    p = own_file(Path(published_path), user)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid not in (uid, 0):
            return None
        if st.st_uid == 0 and uid != 0 and uid not in _acl_readers(fd):  # root's: for the user its ACL names
            return None
        data = jsontext.loads(os.read(fd, 1 << 26))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("format") != OWN_FORMAT or data.get("user") != user:
        return None
    return data


def merge_own(published: dict, own: dict | None) -> dict:
    """The published snapshot as its reader sees it: the reader's own running jobs (and their
    accounts', where PrivateData allows) added to the file's. An own file with running jobs of
    another snapshot is ignored; one without any says the reader had none at the last publish."""
    if not own or published.get("own_files") is not True:
        return published
    if "snapshot_id" in own and own["snapshot_id"] != published.get("snapshot_id"):
        return published
    out = dict(published)
    run = published.get("running")
    if run:
        mine = own.get("running") or {}
        out["running"] = {**run, "users": {**(run.get("users") or {}), **(mine.get("users") or {})},
                          "accounts": {**(run.get("accounts") or {}), **(mine.get("accounts") or {})},
                          "own_users_published": True}
    if own.get("job_qos"):  # the QOS the reader's jobs get without --qos, per account (publish.own_files)
        out["job_qos"] = own["job_qos"]
    if own.get("tres_limits"):  # the reader's own limits (publish._own_limits): only ever in their own file
        out["tres_limits"] = own["tres_limits"]
    gate = published.get("gate")
    if gate and own.get("gate_accounts"):
        out["gate"] = {**gate, "accounts": {**(gate.get("accounts") or {}), **own["gate_accounts"]}}
    return out
