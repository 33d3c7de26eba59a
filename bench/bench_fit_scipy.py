"""Should scipy fit the decay rate? The hand-rolled fit against scipy's solvers, same history, same run.

Data: SYNTHETIC, bench_fit.py's history (2,500 users x 2,000 snapshots, ~5 million pairs, resets,
gaps, noise), generated once into a temporary folder (.npy); each candidate then runs in a fresh
child process that loads it, fits, and prints its result; the parent takes the child's wall time,
CPU time and peak RSS (os.wait4's ru_maxrss: the interpreter, numpy, the matrices and the fit).

* load:      the baseline: a child that loads the matrices (and imports numpy) and does nothing else;
* blocked:   fscontrol.model.fit.fit_decay_matrix, what `fscontrol fit` runs: Gauss-Newton on the
             one parameter, block by block (no residual vector or Jacobian held);
* minpack:   scipy.optimize.least_squares(method="lm"), MINPACK, analytic Jacobian, on the whole
             residual vector: the fit fscontrol had before issue #14, kept as the test oracle
             (tests/test_fit_blocked.py reference_fit; the pairs are built first, as it needs them);
* trf:       the same with least_squares' default method "trf";
* brent:     scipy.optimize.minimize_scalar (Brent) over the blocked fit's own r.r (fit._evaluate),
             in place of its Gauss-Newton step: scipy as the 1-D solver, no vector held.

Each round runs the children in turn (load, blocked, minpack, trf, brent); the table gives the
medians. All must agree on lambda (printed relative to the blocked fit) and its standard error.

Run:  .venv/bin/python bench/bench_fit_scipy.py [--repeat 3] [--users 2500] [--snapshots 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, math, sys, time
sys.path[:0] = [sys.argv[3] + "/bench", sys.argv[3] + "/tests"]
import numpy as np
d = sys.argv[2]
times, usage, inflow = (np.load(f"{d}/{n}.npy") for n in ("times", "usage", "inflow"))
hl = float(open(f"{d}/half_life").read())
which = sys.argv[1]
t0 = time.perf_counter()
out = {}
if which == "load":
    pass
elif which == "blocked":
    from fscontrol.model.fit import fit_decay_matrix
    r = fit_decay_matrix(times, usage, inflow, hl)
    out = {"lam": r.lam, "lam_se": r.lam_se, "n": r.n_residuals, "breaks": r.n_breaks}
elif which in ("minpack", "trf"):
    import scipy.optimize
    from fscontrol.model.fit import pairs_from_matrix
    import test_fit_blocked as tfb
    if which == "trf":  # the oracle's least_squares call, method "trf" instead of "lm"
        real = scipy.optimize.least_squares
        tfb.least_squares = lambda *a, **k: real(*a, **{**k, "method": "trf"})
    ref = tfb.reference_fit(pairs_from_matrix(times, usage, inflow), hl)
    out = {"lam": ref["lam"], "lam_se": ref["lam_se"], "n": ref["n_residuals"], "breaks": ref["n_breaks"]}
elif which == "brent":
    from scipy.optimize import minimize_scalar
    from fscontrol.model import fit as fitmod
    calls = [0]
    def solve(src, w, use, r_out, x0, scale, calc_period_s):
        def rr(theta):
            calls[0] += 1
            return fitmod._evaluate(src, w, use, r_out, theta, scale, calc_period_s)[0]
        sol = minimize_scalar(rr, bracket=(0.9 * x0, x0), method="brent", options={"xtol": 1e-10})
        rr_, _, jj = fitmod._evaluate(src, w, use, r_out, float(sol.x), scale, calc_period_s)
        calls[0] += 1
        return float(sol.x), rr_, jj, bool(sol.success), calls[0]
    fitmod._solve = solve
    r = fitmod.fit_decay_matrix(times, usage, inflow, hl)
    out = {"lam": r.lam, "lam_se": r.lam_se, "n": r.n_residuals, "breaks": r.n_breaks, "passes": calls[0]}
out["fit_s"] = time.perf_counter() - t0
print(json.dumps(out))
"""

NAMES = ("load", "blocked", "minpack", "trf", "brent")


def run_child(which: str, data: str) -> dict:
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", CHILD, which, data, str(ROOT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=data, env={**os.environ, "PYTHONPATH": str(ROOT)})
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    out, err = p.stdout.read(), p.stderr.read()
    p.stdout.close()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{which}: {err.decode()[-2000:]}")
    res = json.loads(out)
    res.update(wall=wall, cpu=ru.ru_utime + ru.ru_stime, rss_mib=ru.ru_maxrss / 1024)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--users", type=int, default=2500)
    ap.add_argument("--snapshots", type=int, default=2000)
    ap.add_argument("--only", default=",".join(NAMES), help="comma-separated candidates")
    args = ap.parse_args()
    names = [n for n in NAMES if n in args.only.split(",")]
    sys.path.insert(0, str(ROOT / "bench"))
    import numpy as np

    import bench_fit

    bench_fit.N_USERS, bench_fit.N_SNAP = args.users, args.snapshots
    with tempfile.TemporaryDirectory(prefix="fscontrol-fit-scipy-") as d:
        times, usage, inflow, _ = bench_fit.synthetic_history()
        for n, a in (("times", times), ("usage", usage), ("inflow", inflow)):
            np.save(f"{d}/{n}.npy", a)
        Path(d, "half_life").write_text(str(bench_fit.HALF_LIFE_S))
        runs: dict[str, list[dict]] = {n: [] for n in names}
        for _ in range(args.repeat):
            for n in names:
                runs[n].append(run_child(n, d))
    base = runs.get("blocked", [{}])[0].get("lam")
    print(f"{args.users} users x {args.snapshots} snapshots, {args.repeat} rounds (medians; fit = the fit inside the child)")
    print(f"{'candidate':<9} {'wall s':>7} {'cpu s':>7} {'fit s':>7} {'peak MiB':>9}  lambda vs blocked   half-life d +- se")
    for n in names:
        rs = runs[n]
        med = {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "fit_s", "rss_mib")}
        r = rs[0]
        lam = r.get("lam")
        rel = f"{lam / base - 1:+.1e}" if lam and base else ""
        hl = f"{0.6931471805599453 / lam / 86400:.6f} +- {0.6931471805599453 / lam**2 * r['lam_se'] / 86400:.6f}" if lam else ""
        extra = f" ({r['passes']} passes)" if "passes" in r else ""
        print(f"{n:<9} {med['wall']:7.2f} {med['cpu']:7.2f} {med['fit_s']:7.2f} {med['rss_mib']:9.0f}  {rel:<18} {hl}{extra}")


if __name__ == "__main__":
    main()
