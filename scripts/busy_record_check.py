#!/usr/bin/env python3
"""The agent's record of the halving Slurm used, recomputed with the record's rules of 2026-11-26 16:00
(jobs ending in the pass's own second left out; two passes since the read: none) on a
scripts/busy.py run's database, against the sampler's sprio figures in its JSON:

    .venv/bin/python scripts/busy_record_check.py /tmp/fscontrol-busy/busy-T.db busy.json T
"""
import sqlite3, json, sys
from fscontrol.model.decay import decay_factor_per_second
f, jf, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
db=sqlite3.connect(f)
rep=json.load(open(jf))
F=decay_factor_per_second(300)
decs=db.execute("select d.id, d.snapshot_id, s.taken_at, s.usage_at, d.h_slurm, d.pass_seen_at, d.u_star, d.s_ref from decisions d join snapshots s on s.id=d.snapshot_id order by d.id").fetchall()
rows=[]
for i,(did,sid,tak,ua,hs,ps,us,sref) in enumerate(decs):
    if hs is None or i+1>=len(decs): continue
    nsid=decs[i+1][1]
    pass_at, d = db.execute("select usage_at, config_json from snapshots where id=?", [nsid]).fetchone()
    dval=json.loads(d)["config"]["damping_factor"]
    extra=0.0
    for jid, end, bill in db.execute("select j.job_id, max(j.end), max(j.billing) from job_usage j where j.snapshot_id>? and j.state!='RUNNING' group by j.job_id having max(j.end)=?", [sid, pass_at]):
        st=db.execute("select min(start) from job_usage where job_id=?", [jid]).fetchone()[0]
        t=end-max(st, ua); extra += t*bill*F**t
    rows.append(((ps-t0)/60, hs/us-1, (hs - sref*dval*extra)/us-1, (pass_at - ua) > 61.5))
out=[]
for p in rep["all"]:
    if p["record"] is None: continue
    mean=p["record"]-p["record_vs_sprio"]
    m=next((r for r in rows if abs(r[1]-p["record"])<1e-5 and r[0]>p["min"]), None)
    out.append((p["min"], mean, p["record"], m[2], m[3]))
for o in out: print("%.2f sprio %+.4f%% record %+.4f%% without end==pass %+.4f%% diff %.4f pt two_passes=%s"%(o[0],100*o[1],100*o[2],100*o[3],100*abs(o[3]-o[1]),o[4]))
ok=[o for o in out if not o[4]]
print("recorded", len(out), "one pass since the read", len(ok), "worst diff (points)", 100*max(abs(o[3]-o[1]) for o in ok))
