"""Against the real testbed: the tree shapes sites have, exact at every size (issue #33).

One tree, set with sacctmgr on the testbed's own, holds every shape at once:
- an account with FairShare=parent at the first tier (ops: alice, bob) and one deeper
  (science ─ bio: dave, and carol with FairShare=parent herself): both in one tree;
- a user with FairShare=parent in an account that has shares (carol@physics);
- users in several accounts (alice in flat, physics, ops and zoo's z00000);
- a large tree: zoo ─ z00000..zNNNNN, each with users zu0..zu8 (2,000 associations in all; set
  FSCONTROL_TREEZOO_ASSOCS=10000 or more for the opt-in run, docs/treezoo.md), where a user with
  no usage of their own in an account with usage has an EffectvUsage sshare's 6 decimals cannot
  hold (dave@z00000).

Real jobs run and end; then F of every (user, account) with a pending probe equals sprio's to
5e-6: on classic fair-share (`status`'s F, and fairshare.compute_fairshare from RawUsage alone);
busy, with jobs running through the passes and others ending between them (status's F: sprio's
and, on every user row, sshare's FairShare); then, after `scontrol reconfigure` switched slurmctld to Fair Tree, fairtree.compute_fair_tree's.
The testbed is put back to classic (slurmctld restarted) and the associations removed, whatever
happens. In group testbed-e (with the other Fair Tree switches): about 6 minutes at 2,000."""

from __future__ import annotations

import math
import os
import time

import pytest

from fscontrol.model import fairshare, fairtree
from fscontrol.report import status as rstatus
from fscontrol.slurm import parse
from fscontrol.store import history as store

pytestmark = pytest.mark.slurm

TOL = 5e-6  # the bound
ASSOCS = int(os.environ.get("FSCONTROL_TREEZOO_ASSOCS", "2000"))
ZOO_USERS = 9  # zu0..zu8 in every zoo account

# (account, parent, shares): added in this order, removed in the reverse
ACCOUNTS = [("ops", "root", "parent"), ("bio", "science", "parent"), ("zoo", "root", "1")]
# (user, account, shares)
USERS = [("alice", "ops", "1"), ("bob", "ops", "3"), ("dave", "bio", "2"), ("carol", "bio", "parent"),
         ("carol", "physics", "parent"), ("alice", "z00000", "1"), ("dave", "z00000", "1"), ("bob", "z00001", "2"),
         ("carol", "z00002", "1")]
# (user, account, cpus, QOS): 60-second jobs, all ended before the comparison. QOS zoox
# (UsageFactor 1e6) makes a testbed's minutes a site's months: sshare prints RawUsage truncated to
# an integer, which moves F by about S^-1 / root's RawUsage, so the total must dwarf 1 / the
# smallest share (a few 1e-5 here); bob@z00001 (QOS zooy, 1000) uses as little as his tiny share
QOS = {"zoox": "1000000", "zooy": "1000"}
JOBS = [("alice", "ops", 24, "zoox"), ("bob", "ops", 8, "zoox"), ("dave", "bio", 12, "zoox"), ("carol", "bio", 4, "zoox"),
        ("carol", "physics", 6, "zoox"), ("alice", "z00000", 4, "zoox"), ("bob", "z00001", 2, "zooy"),
        ("alice", "flat", 10, "zoox"), ("bob", "physics", 3, "zoox")]
RUN_S = 60
# the busy phase: (user, account, cpus, seconds) running through two passes, and short ones ending between
BUSY = [("alice", "flat", 8, 170), ("dave", "bio", 4, 170), ("carol", "z00002", 2, 170), ("bob", "ops", 2, 170)]
SHORT = [("carol", "physics", 2, 15), ("alice", "z00000", 1, 15), ("bob", "z00001", 1, 15)]
REAL_USERS = "alice,bob,carol,dave"


def _zoo_accounts() -> list[str]:
    n = max(1, math.ceil((ASSOCS - 26) / (ZOO_USERS + 1)))  # the testbed's tree and the shapes: 26 rows
    return [f"z{i:05d}" for i in range(n)]


def _batches(names: list[str], size: int = 500):
    for i in range(0, len(names), size):
        yield ",".join(names[i:i + size])


def _build(slurm) -> float:
    """The shapes and the large tree, by sacctmgr; its seconds. slurmdbd's time per association
    grows with the tree (2,000: 65 s; 10,000: about 23 minutes), so
    the few associations of the real users come before the zoo's thousands."""
    t0 = time.monotonic()
    wait = 60 + ASSOCS * 0.2  # per sacctmgr command
    for account, parent, shares in ACCOUNTS:
        slurm.run("sacctmgr", "-i", "add", "account", account, f"parent={parent}", f"fairshare={shares}", timeout=wait)
    zoo = _zoo_accounts()
    for names in _batches(zoo):
        slurm.run("sacctmgr", "-i", "add", "account", names, "parent=zoo", "fairshare=1", timeout=wait)
    # z00000 holds 200 of zoo's shares, so its users' F is neither 0 nor 1 at the usage below
    slurm.run("sacctmgr", "-i", "modify", "account", "where", "name=z00000", "set", "fairshare=200", timeout=wait)
    for user, account, shares in USERS:
        slurm.run("sacctmgr", "-i", "add", "user", user, f"account={account}", f"fairshare={shares}", timeout=wait)
    for qos, factor in QOS.items():
        slurm.run("sacctmgr", "-i", "add", "qos", qos, check=False)
        slurm.run("sacctmgr", "-i", "modify", "qos", "where", f"name={qos}", "set", f"usagefactor={factor}")
    slurm.run("sacctmgr", "-i", "modify", "user", "where", f"name={REAL_USERS}", "set", "qos+=" + ",".join(QOS), timeout=wait)
    zu = ",".join(f"zu{i}" for i in range(ZOO_USERS))
    for names in _batches(zoo, 100):  # one command a batch: users x accounts
        slurm.run("sacctmgr", "-i", "add", "user", zu, f"account={names}", "fairshare=1", timeout=wait * 10)
    return time.monotonic() - t0


def _cleanup(slurm) -> None:
    wait = 60 + ASSOCS * 0.2
    slurm.cancel_all()
    slurm.run("sacctmgr", "-i", "modify", "user", "where", f"name={REAL_USERS}", "set", "qos-=" + ",".join(QOS),
              check=False, timeout=wait)
    slurm.run("sacctmgr", "-i", "delete", "qos", ",".join(QOS), check=False, timeout=wait)
    # the zoo's users first: an account that is a user's default cannot be removed
    slurm.run("sacctmgr", "-i", "delete", "user", "where", "name=" + ",".join(f"zu{i}" for i in range(ZOO_USERS)),
              check=False, timeout=wait * 10)
    for user, account, _ in USERS:
        slurm.run("sacctmgr", "-i", "delete", "user", "where", f"name={user}", f"account={account}", check=False,
                  timeout=wait)
    accounts = _zoo_accounts() + [a for a, _, _ in reversed(ACCOUNTS)]
    for names in [*_batches(accounts[:-len(ACCOUNTS)]), *accounts[-len(ACCOUNTS):]]:
        for _ in range(10):  # refused while slurmdbd still sees the cancelled jobs as running
            out = slurm.run("sacctmgr", "-i", "delete", "account", "where", f"name={names}", check=False, timeout=wait)
            left = set(slurm.run("sacctmgr", "-n", "-P", "show", "account", "format=account").split())
            if not left & set(names.split(",")):
                break
            time.sleep(1)
        else:
            raise AssertionError(f"could not remove accounts {names[:80]}: {out}")
    slurm.set_priority_flags("NO_FAIR_TREE", restart=True)


def _wait_for_jobs_to_end(slurm, timeout: float = 300) -> None:
    end = time.time() + timeout
    while time.time() < end:
        states = slurm.run("squeue", "-h", "-o", "%P %T").split("\n")
        if not any(s.startswith("normal ") for s in states if s):
            return
        time.sleep(2)
    raise TimeoutError("jobs still running")


def _classic(snap, busy: bool = False) -> tuple[float, float, float]:
    """max |F - sprio| over the probes: status's F, compute_fairshare's, and F from sshare's printed
    EffectvUsage as main computed it before (for the report: not bounded). `busy`: jobs ran
    through the passes, so compute_fairshare (RawUsage of one moment) is not bounded either, and
    status's F is also held to sshare's FairShare on every user row."""
    assert snap.config.mode == "classic", snap.config.priority_flags
    d = snap.config.damping_factor
    data = rstatus.status_data(snap)
    shown = {(r["account"], r["user"]): r for r in data["table"]}
    model = {a.key: a for a in fairshare.compute_fairshare(snap.shares, d)}
    rows = {r.key: r for r in snap.shares}
    w_status = w_model = w_printed = 0.0
    assert snap.prio_fairshare, "no pending probe seen by sprio"
    bad = []
    for key, f_sprio in sorted(snap.prio_fairshare.items()):
        f_status = shown[key]["fairshare"]
        f_model = model[key].fairshare
        f_printed = fairshare.fairshare_factor(rows[key].effective_usage, shown[key]["norm_shares"], d)
        w_status = max(w_status, abs(f_status - f_sprio))
        w_model = max(w_model, abs(f_model - f_sprio))
        w_printed = max(w_printed, abs(f_printed - f_sprio))
        if abs(f_status - f_sprio) > TOL or (abs(f_model - f_sprio) > TOL and not busy):
            bad.append((key, f_sprio, f_status, f_model, f_printed, rows[key]))
    assert not bad, bad
    if busy:  # every user row, against the F slurmctld gave sshare (its 6 decimals)
        off = [(k, r["fairshare"], rows[k].fairshare) for k, r in shown.items() if r["user"] and rows[k].fairshare is not None
               and abs(r["fairshare"] - rows[k].fairshare) > TOL]
        assert not off, (len(off), off[:10])
    return w_status, w_model, w_printed


def test_tree_shapes_and_a_large_tree_match_sprio_on_classic_and_fair_tree(slurm, tmp_path):
    from test_integration_fairtree import _compare as compare_fair_tree

    slurm.cancel_all()
    slurm.reset_usage()
    db = store.open_db(tmp_path / "h.db")
    try:
        built_s = _build(slurm)
        for user, account, cpus, qos in JOBS:
            slurm.submit(user, account, cpus, RUN_S, qos=qos)
        probes = {(a, u) for u, a, _ in USERS} | {("flat", u) for u in ("alice", "bob", "carol", "dave")} | {
            ("physics", "alice"), ("physics", "bob"), ("chem", "carol")}
        for account, user in sorted(probes):
            slurm.probe(user, account)
        _wait_for_jobs_to_end(slurm)
        slurm.wait_for_pass()
        slurm.wait_for_pass()  # EffectvUsage and the priorities follow the charges one pass later
        snap = slurm.stable_snapshot(db)  # pipeline.collect ran parse.check_share_tree on it
        shares = {r.key: r for r in snap.shares}
        n_assoc = len(snap.shares)
        assert n_assoc >= ASSOCS, n_assoc
        assert shares[("ops", "")].shares_parent and shares[("bio", "")].shares_parent
        assert shares[("physics", "carol")].shares_parent and shares[("bio", "carol")].shares_parent
        assert set(snap.prio_fairshare) == probes, sorted(probes - set(snap.prio_fairshare))
        assert all(shares[(a, u)].raw_usage > 0 for u, a, _, _ in JOBS)
        # dave@z00000 has no usage of his own: his UE is a share of z00000's, printed to 6 decimals only
        dave = shares[("z00000", "dave")]
        assert dave.raw_usage == 0 and 0 < snap.prio_fairshare[("z00000", "dave")] < 1
        w_status, w_model, w_printed = _classic(snap)
        # the test bites: main's F, from sshare's printed EffectvUsage, is off by more than the bound
        assert w_printed > TOL, w_printed
        f_range = sorted(snap.prio_fairshare.values())
        assert sum(1e-3 < f < 0.999 for f in f_range) >= len(f_range) // 2, f_range  # F neither 0 nor 1 mostly

        # busy (issue #33's outside tester: 534 of 10,528 rows off by up to 0.25): jobs run through the
        # passes and others end between them, so slurmctld's NormUsage and EffectvUsage (set at a pass's
        # start, a user's when first asked after it) are of other moments than sshare's RawUsage
        for user, account, cpus, seconds in BUSY:
            slurm.submit(user, account, cpus, seconds, qos="zoox")
        slurm.wait_for_pass()
        for user, account, cpus, seconds in SHORT:  # they end before the next pass: charged at their end
            slurm.submit(user, account, cpus, seconds, qos="zoox")
        slurm.wait_for_pass()
        busy = slurm.stable_snapshot(db)
        assert len(busy.running) >= len(BUSY), busy.running  # still running when read
        w_busy, w_busy_model, _ = _classic(busy, busy=True)
        # the test bites: F recomputed from RawUsage alone (slurmctld's rule, one moment) is off
        assert w_busy_model > TOL, w_busy_model
        _wait_for_jobs_to_end(slurm)

        # the same tree under Fair Tree (22.05's reconfigure keeps the classic NormShares: fairtree.held_shares)
        slurm.set_priority_flags("")
        slurm.wait_for_pass()
        slurm.wait_for_pass()
        snap2 = slurm.stable_snapshot(db)
        assert set(snap2.prio_fairshare) == probes
        w_tree = compare_fair_tree(snap2)
        ft = fairtree.compute_fair_tree(snap2.shares)
        assert ft.by_key()[("ops", "alice")].fs_parent == "root" and ft.by_key()[("bio", "dave")].fs_parent == "science"
    finally:
        _cleanup(slurm)
    rows = tuple(slurm.sshare().values())
    parse.check_share_tree(rows)
    assert not any(r.account.startswith("z") for r in rows)
    print(f"treezoo: {n_assoc} associations (built in {built_s:.0f} s), {len(probes)} probes; classic max |F - sprio| "
          f"status {w_status:.1e}, model {w_model:.1e} (F from sshare's printed EffectvUsage: {w_printed:.1e}); "
          f"busy: status {w_busy:.1e}, F from RawUsage alone {w_busy_model:.1e}; "
          f"Fair Tree {w_tree:.1e} over N = {ft.n_users} users; sprio's classic F {', '.join(f'{f:.4f}' for f in f_range)}")
