"""The privacy policy on the real testbed: root collects, publishes (with an admin) and writes the
metrics under PrivateData; carol, a plain Unix user who is handed every name in passwd and in
sacctmgr, reads all she can and brute-forces it, and recovers nothing. Her own forecast still
works, with her own running jobs from her own file."""

from __future__ import annotations

import inspect
import json
import subprocess
import time

import pytest
from test_integration_forecast import _forecast_as, _public_dir, _user_python
from test_privacy import _guesses, recovered

from fscontrol.agent import config, pipeline, publishing
from fscontrol.export import privacy
from fscontrol.store import history as store

pytestmark = pytest.mark.slurm

ATTACK = r'''
import json, os, pwd, sys
names = set(json.load(open(sys.argv[1])))
found, read, denied = set(), [], []
for top in sys.argv[2:]:
    for dirpath, dirs, files in os.walk(top, onerror=lambda e: denied.append(e.filename)):
        for f in files:
            p = os.path.join(dirpath, f)
            try:
                text = open(p, errors="replace").read()
            except OSError:
                denied.append(p)
                continue
            read.append(p)
            found |= recovered(text, CLUSTER, names)
# probing the own folders by name: a folder for every name, alike for everyone
own = [d for d in os.listdir(sys.argv[2]) if d.endswith(".users")]
probe = {}
for d in own:
    for n in sorted(names & {p.pw_name for p in pwd.getpwall()}):
        try:
            st = os.lstat(os.path.join(sys.argv[2], d, n))
            probe.setdefault((st.st_mode, st.st_size), []).append(n)
        except OSError:
            probe.setdefault("missing", []).append(n)
        p = os.path.join(sys.argv[2], d, n, "own.json")  # everyone's own file, by name
        try:
            text = open(p).read()
        except OSError:
            denied.append(p)
            continue
        read.append(p)
        found |= recovered(text, CLUSTER, names)
print(json.dumps({"found": sorted(found), "read": read, "denied": denied, "probe_classes": len(probe),
                  "missing": probe.get("missing", [])}))
'''


def test_a_plain_user_who_knows_every_name_recovers_nothing(slurm, tmp_path):
    conf = slurm.conf
    original = conf.read_text()
    state = slurm.dir / "privacy"
    subprocess.run(["rm", "-rf", str(state)], check=True)
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    prom = state / "prom"
    prom.mkdir(mode=0o755)
    prom.chmod(0o755)
    slurm.cancel_all()
    try:
        for flag in ("usage", "jobs,accounts"):
            conf.write_text(original + f"PrivateData={flag}\n")
            slurm.scontrol("reconfigure")
            jobs = {slurm.submit("carol", "chem", 4, 120), slurm.submit("alice", "flat", 4, 120),
                    slurm.submit("bob", "physics", 4, 120)}
            deadline = time.monotonic() + 90
            while set(slurm.run("squeue", "-h", "-t", "R", "-o", "%i").split()) < jobs and time.monotonic() < deadline:
                time.sleep(1)
            db = store.open_db(state / "history.db")
            pipeline.collect(slurm.source(), db)
            snap = store.load_snapshot(db, cluster="tbcluster")
            assert {j[2] for j in snap.running} >= {"carol", "alice"}, snap.running
            cfg = config.from_dict({"agent": {"admins": ["alice"], "metrics": str(prom / "fscontrol.prom")},
                                    "clusters": {"tbcluster": {"target_core_hours": 10}}})
            public = _public_dir(slurm)
            published, data = publishing.publish_latest(db, cfg, "tbcluster", out=public / "tbcluster.json")
            publishing.write_metrics(db, cfg)
            db.close()
            # every name the attacker knows: passwd and the association tree (sacctmgr, as root: all of it)
            assocs = slurm.run("sacctmgr", "-n", "-P", "list", "assoc", "format=account,user")
            names = {line.split("|")[i] for line in assocs.splitlines() for i in (0, 1) if "|" in line} - {""}
            names |= {line.split(":")[0] for line in subprocess.run(["getent", "passwd"], capture_output=True, text=True,
                                                                     check=True).stdout.splitlines()}
            assert {"alice", "bob", "carol", "chem", "flat"} <= names
            (state / "names.json").write_text(json.dumps(sorted(names)))
            (state / "names.json").chmod(0o644)
            script = state / "attack.py"
            script.write_text("CLUSTER = 'tbcluster'\nimport hashlib\n" + inspect.getsource(_guesses)
                              + inspect.getsource(recovered) + ATTACK)
            script.chmod(0o644)
            got = subprocess.run(["runuser", "-u", "carol", "--", _user_python(slurm, "carol"), str(script),
                                  str(state / "names.json"), str(public), str(prom)],
                                 capture_output=True, text=True, timeout=300, check=False)
            assert got.returncode == 0, got.stderr
            out = json.loads(got.stdout)
            print(f"\nPrivateData={flag}: carol read {len(out['read'])} files, denied {len(out['denied'])}; "
                  f"recovered {out['found']}; own-folder probe classes {out['probe_classes']}")
            assert str(published) in out["read"] and str(prom / "fscontrol.prom") in out["read"]
            assert any(p.endswith("/carol/own.json") for p in out["read"])  # her own file: hers to read
            assert not any("/alice/" in p or "/bob/" in p for p in out["read"])
            # carol's own names are hers to see (her own file); nothing of anyone else's
            parent = {r.account: r.parent for r in snap.shares if not r.user}
            hers = [r.account for r in snap.shares if r.user == "carol"]
            allowed = {"carol"} | {f"{a}/carol" for a in hers} | {x for a in hers for x in privacy.account_path(parent, a)}
            assert set(out["found"]) <= allowed, (out["found"], allowed)
            assert out["probe_classes"] == 1 and out["missing"] == []  # every user has a folder, alike
            # her own forecast works, with her own running job (her own file), and she is no admin
            own = _forecast_as(slurm, "carol", published, "-A", "chem", "--plan", "4cpus:1:00:00", "--json")
            if flag == "usage":
                assert own.returncode == 0, own.stderr
                a = json.loads(own.stdout)["associations"][0]
                assert "not published here" not in a.get("assumed", ""), a.get("assumed")
            assert not any(n in own.stdout + own.stderr for n in ("alice", "bob", "dave"))
            other = _forecast_as(slurm, "carol", published, "--user", "alice")
            assert other.returncode == 7
            slurm.cancel_all()
    finally:
        conf.write_text(original)
        slurm.scontrol("reconfigure")
        slurm.cancel_all()
