"""Bounded work for every request a plain user can make (issue 28, item 5).

* the caps: CPUs per plan step at the cluster's size (published by the agent), the plan's length at
  the config's `[forecast] max_horizon`, the number of steps; beyond them one line and exit 2 (CLI),
  400 with the same line (web planner);
* the bound: one forecast request, in a fresh process, at 2,500 users and at ~100,000 associations
  (scripts/gen_synthetic.py: SYNTHETIC clusters, collected and published as the agent does), stays
  under 100 MiB of peak RSS and ~1 s of CPU. Measured with os.wait4 (the child's own rusage).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import webfixtures as wf
from fscontrol.agent import config
from fscontrol.errors import ConfigError
from fscontrol.export import publish as pub
from fscontrol.export import limits, runsorted
from fscontrol.web.app import make_app

ROOT = Path(__file__).resolve().parent.parent
BASIC = wf.SAMPLES / "testbed-basic"
MIB = 1024 * 1024


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fscontrol", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture(scope="module")
def basic(tmp_path_factory):
    """testbed-basic published, its limits as the agent publishes them for a cluster of 8 CPUs."""
    out = wf.publish(BASIC, tmp_path_factory.mktemp("bounds"))
    f = out / "tbcluster.json"
    data = json.loads(f.read_text())
    data["limits"] = limits.published_limits(8, None, 30 * 86400, 10)
    pub.write_published(data, f)
    return f


def forecast(basic: Path, *extra: str) -> subprocess.CompletedProcess:
    return run("forecast", "--published", str(basic), "--source", str(BASIC), "-u", "carol", *extra)


def one_line_exit_2(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fscontrol: error: "), r.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.parametrize("plan,words", [
    ("8cpus:2000w", ("lasts 14,000 days", "at most 30 days")),  # before: 2 GB, then MemoryError
    ("1000000000000000000000000000000cpus:1d", ("1e+30 CPUs", "the cluster's size, 8 CPUs")),  # before: 34 digits
    ("9cpus:1h", ("9 CPUs", "the cluster's size, 8 CPUs")),
    (",".join(["1cpus:1h"] * 11), ("11 steps", "at most 10")),
    ("1cpus:1h," * 3000, ("characters long",)),
])
def test_plan_beyond_the_caps_is_one_line_and_exit_2(basic, plan, words):
    one_line_exit_2(forecast(basic, "--plan", plan), *words)


def test_run_steps_and_horizon_are_capped_too(basic):
    one_line_exit_2(forecast(basic, *(["--run", "1cpus:1h"] * 11)), "11 --run/--idle steps", "at most 10")
    one_line_exit_2(forecast(basic, "--run", "8cpus:20d", "--idle", "11d"), "lasts 31 days", "at most 30 days")
    one_line_exit_2(forecast(basic, "--horizon", "400d"), "at most 366 days")


def test_within_the_caps_it_forecasts(basic):
    r = forecast(basic, "--plan", "8cpus:20d,idle:5d,8cpus:5d", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["plan_days"] == 30


def test_web_planner_beyond_the_caps_is_a_400_with_the_line(basic):
    from test_web import call

    app = make_app(published=str(basic), source=str(BASIC), identity="remote_user")
    status, _, body = call(app, "/api/forecast", "cpus=1e30&length=1&unit=d&runs=1&gap=0")
    assert status == "400 Bad Request" and "CPUs: more than the cluster's size, 8 CPUs" in json.loads(body)["error"]
    # 20 one-year runs (before: 864 MB held for a minute) are more steps than the cap
    status, _, body = call(app, "/api/forecast", "cpus=8&length=365&unit=d&runs=20&gap=0")
    assert status == "400 Bad Request" and json.loads(body)["error"] == "--plan has 20 steps: at most 10 are forecast in one request"
    status, _, body = call(app, "/api/forecast", "cpus=8&length=365&unit=d&runs=5&gap=0")
    assert status == "400 Bad Request" and "lasts 1,825 days: at most 30 days are forecast" in json.loads(body)["error"]
    status, _, body = call(app, "/", "cpus=8&length=365&unit=d&runs=5&gap=0")  # the page: the forecast and the line
    assert status == "200 OK" and "at most 30 days are forecast" in body and 'role="alert"' in body


def test_config_forecast_section_is_validated_and_published(tmp_path):
    cfg = config.from_dict({"forecast": {"max_horizon": "14d", "max_cpus": 512, "max_plan_steps": 6}})
    assert cfg.forecast == {"max_horizon_s": 14 * 86400, "max_cpus": 512, "max_plan_steps": 6}
    assert config.AgentConfig().forecast["max_horizon_s"] == limits.DEFAULT_MAX_HORIZON_S
    for bad, msg in [({"max_horizon": "2000w"}, "'forecast.max_horizon' must be between 1 h and 366 d"),
                     ({"max_cpus": 0}, "'forecast.max_cpus' must be between 1"),
                     ({"max_cpu": 4}, "unknown key 'forecast.max_cpu'"),
                     ({"max_plan_steps": True}, "'forecast.max_plan_steps' must be int")]:
        with pytest.raises(ConfigError, match=msg):
            config.from_dict({"forecast": bad})
    # `fscontrol publish --config` puts the caps in the published file; the forecast reads them there
    db = tmp_path / "h.db"
    assert run("collect", "--source", str(BASIC), "--db", str(db)).returncode == 0
    (tmp_path / "c.toml").write_text('[forecast]\nmax_horizon = "2d"\nmax_cpus = 4\n')
    r = run("publish", "--db", str(db), "--out", str(tmp_path / "p.json"), "--config", str(tmp_path / "c.toml"))
    assert r.returncode == 0, r.stderr
    got = json.loads((tmp_path / "p.json").read_text())["limits"]
    assert got == {"cluster_cpus": None, "max_cpus": 4, "max_horizon_s": 2 * 86400.0, "max_plan_steps": 40}
    r = run("forecast", "--published", str(tmp_path / "p.json"), "--source", str(BASIC), "-u", "carol", "--plan", "5cpus:1h")
    one_line_exit_2(r, "5 CPUs", "the site's limit, 4 CPUs")


def test_sinfo_cpu_total_is_read():
    from fscontrol.slurm.parse import parse_cpu_total

    assert parse_cpu_total("3/5/0/8\n") == 8
    assert parse_cpu_total("CLUSTER: tb\n0/16/4/20\n") == 20
    assert parse_cpu_total("garbage\n") is None


def test_published_rows_are_read_for_the_asker_only(basic):
    whole = json.loads(basic.read_text())  # still one JSON document
    data, _ = pub.read_published(basic, users={"carol"})
    assert {a["user"] for a in data["associations"]} == {"carol", ""}
    assert [a for a in whole["associations"] if a["user"] in ("carol", "")] == data["associations"]
    for k in ("row_index", pub.INDEX_KEY):  # the file's row index: not part of the data read
        del whole[k]
    assert runsorted.as_read(whole, data["associations"]) == data  # and the running lists of carol's rows only
    whole.pop(runsorted.KEY)  # (the running jobs sorted: the layout's, not the data's)
    assert pub.read_published(basic)[0] == whole


# ---------------------------------------------------------------------------- the bound, measured
def _synthetic(tmp: Path, users: int, jobs: int) -> tuple[Path, Path, str]:
    sample = tmp / f"syn{users}"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_synthetic.py"), "--users", str(users), "--jobs", str(jobs),
                    "--seed", "1", "--out", str(sample)], check=True, capture_output=True, timeout=300)
    out = wf.publish(sample, tmp / f"pub{users}", cluster="agave-synth") / "agave-synth.json"
    line = next(ln for ln in (sample / "sshare.txt").read_text().splitlines()[3:] if ln.split("|")[1])
    return out, sample, line.split("|")[1]


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("synthetic")
    return {"2500 users": _synthetic(tmp, 2500, 5000), "100k associations": _synthetic(tmp, 93_000, 20_000)}


# the console script's own entry, in a process that reports its peak RSS (VmHWM: this process's
# own memory since exec; a child's ru_maxrss on Linux also counts the parent it was forked from)
PEAK = ("import atexit, sys\n"
        "def peak():\n"
        "    hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM:')][0]\n"
        "    sys.stderr.write('PEAK ' + hwm.split()[1] + '\\n')\n"
        "atexit.register(peak)\n"
        "from fscontrol.cli.main import main\n"
        "sys.argv = ['fscontrol'] + sys.argv[1:]\n"
        "sys.exit(main())\n")


def measure(argv: list[str], cpu_limit_s: int | None = None) -> tuple[int, float, float, str]:
    """(exit code, CPU seconds, peak RSS in MiB, stderr) of one fresh process: CPU from its own
    rusage (os.wait4), the peak RSS from its VmHWM (inf when RLIMIT_CPU ended it first)."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit_s, cpu_limit_s + 1))

    p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         preexec_fn=limit if cpu_limit_s else None)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    peak = [ln for ln in err.splitlines() if ln.startswith("PEAK ")]
    assert peak or p.returncode < 0, err
    return p.returncode, ru.ru_utime + ru.ru_stime, int(peak[-1].split()[1]) / 1024 if peak else float("inf"), err


def request(published: Path, user: str, *extra: str) -> list[str]:
    return [sys.executable, "-c", PEAK, "forecast", "--published", str(published), "--source", "published",
            "-u", user, "--stale-ok", *extra]


def test_a_synthetic_cluster_has_the_size_asked(clusters):
    assert len(json.loads(clusters["100k associations"][0].read_text())["associations"]) >= 99_000


@pytest.mark.parametrize("size", ["2500 users", "100k associations"])
@pytest.mark.parametrize("extra", [(), ("--plan", "16cpus:2000w"), ("--plan", "1000000cpus:1d"),
                                   ("--plan", "16cpus:1d")], ids=["no-plan", "2000w", "1e6cpus", "1d"])
def test_one_request_is_bounded(clusters, size, extra):
    published, _, user = clusters[size]
    code, cpu, rss, err = measure(request(published, user, *extra))
    assert code in (0, 2), err
    assert rss < 100, f"{size} {extra}: peak RSS {rss:.0f} MiB"
    assert cpu < 1.5, f"{size} {extra}: {cpu:.2f} s of CPU"


@pytest.mark.parametrize("size", ["2500 users", "100k associations"])
def test_the_longest_plan_allowed_is_bounded(clusters, size):
    """The longest plan the default caps allow, the widest CPUs: within the bound in memory and CPU.
    Run under RLIMIT_CPU (5 s: SIGXCPU ends it) so that the suite does not wait for today's projection."""
    published, _, user = clusters[size]
    plan = f"16cpus:{limits.DEFAULT_MAX_HORIZON_S / 86400:g}d"
    code, cpu, rss, err = measure(request(published, user, "--plan", plan), cpu_limit_s=5)
    assert code == 0, f"{size}: exit {code} after {cpu:.1f} s of CPU"
    assert rss < 100, f"{size}: peak RSS {rss:.0f} MiB"
    assert cpu < 1.5, f"{size}: {cpu:.2f} s of CPU"


# ---------------------------------------------------------------------------- the web page at size (issue #31 item 2)
def _web_users(sample: Path, n: int) -> list[str]:
    names = sorted({ln.split("|")[1] for ln in (sample / "sshare.txt").read_text().splitlines()[3:] if ln.split("|")[1]})
    return names[:: max(1, len(names) // n)][:n]


def _get(app, query: str, path: str = "/") -> tuple[str, bytes]:
    got: list[str] = []
    body = b"".join(app({"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": query}, lambda s, h: got.append(s)))
    return got[0], body


def _taken(published: Path) -> float:
    return float(pub.read_published(published, users=set())[0]["taken_at"])


@pytest.mark.parametrize("size", ["2500 users", "100k associations"])
def test_the_web_page_answers_as_a_fresh_read_of_the_file(clusters, size):
    """The page's per-snapshot index (export.published_index) gives every user the forecast a fresh
    read_published gives (the CLI's path), for many users in turn, and scans the file once."""
    from fscontrol.forecast.request import ForecastRequest
    from fscontrol.forecast.request import forecast as run_request

    published, sample, _ = clusters[size]
    now = _taken(published) + 600
    app = make_app(published=str(published), source="published", now=now)
    for user in _web_users(sample, 12):
        status, body = _get(app, f"user={user}&cpus=16&length=7&unit=d&runs=2&gap=3&target=0.5", "/api/forecast")
        assert status == "200 OK", body[:300]
        fresh = run_request(ForecastRequest(published=published, source="published", now=now, user=user,
                                            plan="16cpus:7d,idle:3d,16cpus:7d", target=0.5))
        assert json.loads(body)["forecast"] == json.loads(json.dumps(fresh)), user


def test_the_web_page_at_100k_associations_is_cheap(clusters):
    """CPU per page (both forecasts, the default plan) at ~100,000 associations, distinct users in
    turn: under 200 ms median once the snapshot is indexed (before: ~380 ms, the file scanned twice
    and the cluster's running jobs sorted three times a page). Quiet, a page is ~40 ms (bench/
    bench_web_cpu.py has the figures); the bound leaves room for a CI machine at load 15, where CPU
    time per page doubles (100.45 ms measured there against a 100 ms bound), and still fails the
    old code by ~2x."""
    import statistics
    import time

    published, sample, _ = clusters["100k associations"]
    app = make_app(published=str(published), source="published", now=_taken(published) + 600)
    users = _web_users(sample, 25)
    assert _get(app, f"user={users[0]}")[0] == "200 OK"
    cpu = []
    for user in users[1:]:
        t = time.process_time()
        status, body = _get(app, f"user={user}")
        cpu.append(time.process_time() - t)
        assert status == "200 OK" and b"Plan a campaign" in body
    assert statistics.median(cpu) < 0.2, f"median {statistics.median(cpu) * 1000:.0f} ms of CPU a page"


def test_a_new_snapshot_is_indexed_anew(basic, tmp_path):
    """The index follows the file: the agent's atomic replace is seen at the next request."""
    from fscontrol.export.published_index import PublishedIndex

    f = tmp_path / "tbcluster.json"
    data = json.loads(basic.read_text())
    pub.write_published(data, f)
    index = PublishedIndex()
    first, _ = index.read(f, users={"carol"})
    assert index.read(f, users={"carol"})[0] == first and index.builds == 1
    fresh = pub.read_published(f, users={"carol"}, ancestors=True)[0]
    assert {k: v for k, v in first.items() if k != "associations"} == {k: v for k, v in fresh.items() if k != "associations"}
    mine = [a for a in fresh["associations"] if a["user"] == "carol"]
    assert mine and [a for a in first["associations"] if a["user"]] == mine
    path = {a["account"] for a in first["associations"] if not a["user"]}  # the accounts on carol's path, to the root
    assert "root" in path and {a["account"] for a in mine} <= path
    assert [a for a in first["associations"] if not a["user"]] == [a for a in fresh["associations"] if a["account"] in path and not a["user"]]
    data["total_usage"] = float(data["total_usage"]) * 2
    pub.write_published(data, f)
    again, _ = index.read(f, users={"carol"})
    assert index.builds == 2 and again["total_usage"] == data["total_usage"]
    f.write_text(json.dumps(data))  # one line: not in the rows-a-line layout, read as read_published does
    assert index.read(f, users={"carol"})[0] == pub.read_published(f, users={"carol"})[0]


def test_web_workers_serve_and_end_together(basic):
    """`fscontrol web --workers 2`: forked workers answer on one port; a TERM ends them all."""
    import signal
    import time
    import urllib.request

    code = ("import sys\nfrom fscontrol.web.app import serve\n"
            "try:\n    serve('127.0.0.1', 0, published=sys.argv[1], source='samples/testbed-basic', token=None, workers=2,"
            " ready=lambda u: print(u, flush=True))\nexcept KeyboardInterrupt:\n    pass\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(basic)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        url = p.stdout.readline().strip()
        for _ in range(6):
            with urllib.request.urlopen(url + "?user=carol", timeout=60) as r:
                assert r.status == 200 and b"Plan a campaign" in r.read()
        kids = [int(x) for x in Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()]
        assert len(kids) == 2
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 0
        deadline = time.monotonic() + 10
        while any(Path(f"/proc/{k}").exists() for k in kids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(Path(f"/proc/{k}").exists() for k in kids)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def _held_by_the_forecast_caches() -> tuple[int, int]:
    """(the lists of running jobs, the elements of every list, tuple and dict) reachable from the
    state of the modules that cache across requests (forecast.loaded, forecast.projection): what a
    worker keeps between pages, counted by reference, not by RSS."""
    import gc
    import types
    from array import array

    from fscontrol.export import runsorted

    from fscontrol.forecast import loaded, projection

    skip = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType)
    seen: set[int] = set()
    stack: list = [vars(loaded), vars(projection)]
    job_lists = elements = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        if isinstance(obj, (list, tuple, dict, set, array)):
            elements += len(obj)
        if isinstance(obj, list) and len(obj) >= 100 and all(isinstance(e, list) and len(e) >= 2 for e in obj):
            job_lists += 1  # a snapshot's published running jobs ([time left, amount, id], ...), or their cut
        if isinstance(obj, runsorted.SortedRunning) and len(obj) >= 100:
            job_lists += 1  # ... or the same sorted into columns (export/runsorted.py)
        stack.extend(gc.get_referents(obj))
    return job_lists, elements


def test_a_worker_keeps_one_snapshots_caches_however_many_are_published(tmp_path):
    """Issue #31 item 2, bounded memory per worker: the forecast's per-snapshot caches (the cluster's
    job lists, their sorted charges, the total's track) hold the current snapshot's only. Before,
    module-wide memos of 8-32 entries kept the last ~16 snapshots' (at 1M jobs: +90 MiB a replaced
    snapshot, to ~1,060 MiB a worker). The same pages on each of 6 snapshots in turn: afterwards
    the caches reference what they did after the first snapshot, and no older snapshot."""
    import shutil

    published, sample, _ = _synthetic(tmp_path, 300, 3000)
    live = tmp_path / "live.json"
    shutil.copy(published, live)
    app = make_app(published=str(live), source="published", now=_taken(published) + 600)
    users = _web_users(sample, 3)

    def pages() -> list[bytes]:
        out = []
        for user in users:
            for query, path in ((f"user={user}", "/"),
                                (f"user={user}&cpus=16&length=7&unit=d&runs=2&gap=3&target=0.5", "/api/forecast")):
                status, body = _get(app, query, path)
                assert status == "200 OK", body[:300]
                out.append(body)
        return out

    first = pages()
    held = _held_by_the_forecast_caches()
    assert held[0] >= 1 and held[1] > 3000  # the snapshot's running jobs are cached: the check sees them
    for _ in range(5):  # the agent replaces the file (a new inode: the index reads it anew)
        tmp = live.with_suffix(".tmp")
        shutil.copy(published, tmp)
        os.replace(tmp, live)
        assert pages() == first  # the same snapshot's content: the same answers
    assert _held_by_the_forecast_caches() == held
