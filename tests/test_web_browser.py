"""The web pages in a real headless Chromium (Debian's `chromium`, driven over the DevTools
protocol: tests/browser.py). No Slurm: the pages read snapshots published from recorded samples.

Checks: the user page shows the numbers `fscontrol forecast --json` prints for that user; the
campaign planner redraws the curve from the JSON endpoint without reloading the page; under
PrivateData no other user's name reaches the browser; no request leaves the page (every request
is to the page's own origin, and name resolution maps every other host to nothing); the public
page carries the published JSON's numbers. Screenshots go to tests/artifacts/web/ (or
$FSCONTROL_TEST_ARTIFACTS). Chromium missing: skipped on a laptop, a failure in CI (CI=true or
FSCONTROL_REQUIRE_SLURM=1; scripts/test.sh installs it)."""

from __future__ import annotations

import json
import math
import os
import socketserver
import threading
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest

import webfixtures as wf
from browser import Browser, find_chromium
from fscontrol.web.app import make_app

REQUIRE = os.environ.get("FSCONTROL_REQUIRE_SLURM") == "1" or os.environ.get("CI") == "true"
ARTIFACTS = Path(os.environ.get("FSCONTROL_TEST_ARTIFACTS") or wf.ROOT / "tests" / "artifacts" / "web")
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    binary = find_chromium()
    if binary is None:
        msg = "Chromium is not installed (apt-get install chromium; scripts/test.sh does)"
        if REQUIRE:
            pytest.fail(f"the browser tests must run here: {msg}", pytrace=False)
        pytest.skip(msg)
    b = Browser(binary)
    yield b
    b.close()


class _Quiet(WSGIRequestHandler):
    def log_message(self, *a):
        pass


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class Site:
    """The page mounted as a site would: a web server that authenticates the user and sets
    REMOTE_USER (here: a front end that says `user`), the app in identity "remote_user"."""

    def __init__(self, user: str, **settings):
        app = make_app(identity="remote_user", **settings)

        def front(environ, start_response):
            environ["REMOTE_USER"] = user
            return app(environ, start_response)

        self.httpd = make_server("127.0.0.1", 0, front, server_class=_Server, handler_class=_Quiet)
        self.origin = f"http://127.0.0.1:{self.httpd.server_port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def classic(tmp_path_factory):
    pub = wf.publish(wf.SAMPLES / "testbed-basic", tmp_path_factory.mktemp("classic"))
    site = Site("carol", published=str(pub), source=str(wf.SAMPLES / "testbed-basic"))
    yield pub, site
    site.close()


@pytest.fixture(scope="module")
def private(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("private")
    agent, carol = wf.private_samples(tmp)
    pub = wf.publish(agent, tmp / "agent")
    site = Site("carol", published=str(pub), source=str(carol))
    yield pub, carol, site
    site.close()


def _local_only(page, origin: str) -> None:
    """Every request the page made went to its own origin (or was inline data)."""
    outside = [u for u in page.requests if not (u.startswith(origin + "/") or u.startswith("data:"))]
    assert outside == [], f"requests left the page: {outside}"
    assert page.failed == [], f"failed requests: {page.failed}"
    assert not [c for c in page.console if c.startswith(("error", "exception"))], page.console


def _values(page, scope: str) -> dict:
    return page.eval(f"Object.fromEntries([...document.querySelectorAll({json.dumps(scope + ' [data-k]')})]"
                     ".map(e => [e.dataset.k, e.dataset.v]))")


def _close(a, b) -> bool:
    if a in (None, "", "None") or b is None:
        return a in (None, "", "None") and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)


def _shot(page, name: str) -> Path:
    path = page.screenshot(ARTIFACTS / name)
    print(f"screenshot: {path}")
    return path


def test_user_page_shows_the_cli_forecast(browser, classic):
    pub, site = classic
    want = wf.cli_forecast(pub, wf.SAMPLES / "testbed-basic", "carol")
    page = browser.new_page()
    page.goto(site.origin + "/")
    assert page.eval("document.getElementById('who').textContent") == "carol"
    assert page.eval("document.title") == "Fair-share: carol on tbcluster"
    for i, a in enumerate(want["associations"]):
        scope = f"section[aria-labelledby=acct{i}]"
        assert page.eval(f"document.getElementById('acct{i}').textContent") == f"Account {a['account']}"
        got = _values(page, scope)
        for k in ("fairshare", "core_hours_to_halve", "halving_core_hours", "effective_usage_core_hours",
                  "core_hours_to_target", "idle_days_to_target", "norm_shares", "usage_core_hours"):
            assert _close(got[k], a[k]), (a["account"], k, got[k], a[k])
        assert page.eval(f"document.querySelector('{scope} .big').textContent") == f"{a['fairshare']:.4f}"
        # the recovery curve: one point per trajectory point
        n = page.eval(f"document.querySelector('#recovery{i} polyline').getAttribute('points').split(' ').length")
        assert n == len(a["trajectory"])
    # every form field has a visible label
    assert page.eval("[...document.querySelectorAll('form input, form select')].every("
                     "e => document.querySelector('label[for=' + e.id + ']'))")
    _local_only(page, site.origin)
    _shot(page, "user-page-desktop.png")
    page.close()


def test_user_page_is_readable_on_a_phone(browser, classic):
    _, site = classic
    page = browser.new_page(width=390, height=844, mobile=True)
    page.goto(site.origin + "/")
    assert page.eval("document.documentElement.scrollWidth <= window.innerWidth + 1"), "the page scrolls sideways"
    assert page.eval("parseFloat(getComputedStyle(document.body).fontSize)") >= 16
    _local_only(page, site.origin)
    _shot(page, "user-page-phone.png")
    page.close()


def test_planner_redraws_the_curve_without_a_reload(browser, classic):
    pub, site = classic
    page = browser.new_page()
    page.goto(site.origin + "/")
    page.eval("window.__sameDocument = 'yes'")
    before = page.eval("document.querySelector('#plan0 polyline').getAttribute('points')")
    runs_before = page.eval("document.querySelectorAll('#plan0 rect.run').length")
    # typed with real key input: 64 CPUs, runs of 10 minutes, 1 minute apart, 3 runs
    page.type_into("#f-cpus", "64")
    page.type_into("#f-length", "10")
    page.type_into("#f-gap", "1")
    page.type_into("#f-runs", "3")
    page.eval("(s => { s.focus(); })(document.getElementById('f-unit'))")
    page.press("ArrowUp", "ArrowUp", 38)  # days -> hours
    page.press("ArrowUp", "ArrowUp", 38)  # hours -> minutes
    assert page.eval("document.getElementById('f-unit').value") == "m"
    page.wait_for("document.getElementById('plan-cmd').textContent.includes('64cpus:10m,idle:1m,64cpus:10m,idle:1m,64cpus:10m')")
    assert page.eval("window.__sameDocument") == "yes", "the page reloaded"
    after = page.eval("document.querySelector('#plan0 polyline').getAttribute('points')")
    assert after != before
    assert page.eval("document.querySelectorAll('#plan0 rect.run').length") == 3 != runs_before
    assert "64cpus:10m" in page.eval("location.search.replace(/%3A/g, ':')") or page.eval("location.search").count("cpus=64")
    want = wf.cli_forecast(pub, wf.SAMPLES / "testbed-basic", "carol", "--plan", "64cpus:10m,idle:1m,64cpus:10m,idle:1m,64cpus:10m")
    for i, a in enumerate(want["associations"]):
        got = page.eval(f"Object.fromEntries([...document.querySelectorAll('#plan-result .card')[{i}].querySelectorAll('[data-k]')]"
                        ".map(e => [e.dataset.k, e.dataset.v]))")
        assert _close(got["after_fairshare"], a["after_plan"]["fairshare"])
        assert _close(got["lowest_fairshare"], a["after_plan"]["lowest_fairshare"])
        assert _close(got["after_idle_days_to_target"], a["after_plan"]["idle_days_to_target"])
        n = page.eval(f"document.querySelector('#plan{i} polyline').getAttribute('points').split(' ').length")
        assert n == len(a["trajectory"])
    # a bad value: one clear line, the last good forecast stays
    page.type_into("#f-cpus", "0")
    page.wait_for("document.querySelector('#plan-status .error') !== null")
    assert page.eval("document.querySelector('#plan0 polyline').getAttribute('points')") == after
    _local_only(page, site.origin)
    # beyond the caps (issue 28): a plan longer than the site's max_horizon (60 days) is the CLI's one line
    page.type_into("#f-cpus", "64")
    page.type_into("#f-length", "30")
    page.eval("(s => { s.value = 'd'; s.dispatchEvent(new Event('input', {bubbles: true})); })(document.getElementById('f-unit'))")
    page.wait_for("(e => e !== null && e.textContent.includes('at most 60 days are forecast'))"
                  "(document.querySelector('#plan-status .error'))", timeout=30)
    assert "lasts 92 days" in page.eval("document.querySelector('#plan-status .error').textContent")
    page.type_into("#f-length", "10")
    page.eval("(s => { s.value = 'm'; s.dispatchEvent(new Event('input', {bubbles: true})); })(document.getElementById('f-unit'))")
    page.wait_for("document.getElementById('plan-status').textContent.includes('64cpus:10m,idle:1m')", timeout=30)
    page.eval("document.getElementById('planner').scrollIntoView()")
    _shot(page, "user-page-planned.png")
    page.close()


def test_private_data_no_other_user_reaches_the_browser(browser, private):
    pub, carol_view, site = private
    want = wf.cli_forecast(pub, carol_view, "carol")
    page = browser.new_page()
    page.goto(site.origin + "/")
    got = _values(page, "section[aria-labelledby=acct0]")
    assert _close(got["fairshare"], want["associations"][0]["fairshare"])
    page.type_into("#f-cpus", "32")
    page.wait_for("document.getElementById('plan-status').textContent.startsWith('Updated')")
    api = page.eval(f"fetch('/api/forecast?cpus=8&length=1&unit=h').then(r => r.text())")
    html = page.eval("document.documentElement.outerHTML")
    for name in wf.OTHER_USERS:
        assert name not in html and name not in api, f"{name} appears on carol's page"
    _local_only(page, site.origin)
    # asking for another user's page is refused (403) with one line, and shows nothing of theirs
    page.goto(site.origin + "/?user=bob")
    assert page.eval("document.querySelector('.error').textContent").startswith("refused: you (carol) may only ask")
    assert page.eval("document.querySelectorAll('[data-k]').length") == 0
    assert all(u.startswith(site.origin + "/") for u in page.requests)
    page.close()
    # the public page of a private cluster names no one
    public = browser.new_page()
    public.goto((pub / "tbcluster.html").as_uri())
    text = public.eval("document.documentElement.outerHTML")
    for name in (*wf.OTHER_USERS, "carol"):
        assert name not in text
    assert public.eval("document.getElementById('private') !== null && document.getElementById('associations') === null")
    assert public.requests == [(pub / "tbcluster.html").as_uri()]
    public.close()


def test_public_page_carries_the_published_numbers(browser, classic):
    pub, _ = classic
    data = json.loads((pub / "tbcluster.json").read_text())
    page = browser.new_page()
    page.goto((pub / "tbcluster.html").as_uri())
    got = _values(page, "body")
    assert _close(got["halving_core_hours"], data["halving_core_hours"])
    assert _close(got["half_life_s"], data["config"]["half_life_s"])
    assert _close(got["damping_factor"], data["config"]["damping_factor"])
    assert _close(got["total_usage_core_hours"], data["total_usage_core_hours"])
    assert got["control_method"] == (data["control_method"] or "none")
    rows = page.eval("[...document.querySelectorAll('#associations tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
    shown = [a for a in data["associations"] if a["depth"] > 0]
    assert len(rows) == len(shown)
    for r, a in zip(rows, shown):
        assert r[0].startswith(a["user"] or a["account"])
        assert r[5] == ("-" if a["fairshare"] is None else f"{a['fairshare']:.4f}")
    assert page.requests == [(pub / "tbcluster.html").as_uri()], page.requests  # nothing but the file itself
    assert page.failed == []
    _shot(page, "public-page.png")
    page.close()


def test_fair_tree_page_shows_the_cli_forecast(browser, tmp_path):
    pub = wf.publish(wf.SAMPLES / "testbed-fairtree", tmp_path)
    taken = json.loads((pub / "tbcluster.json").read_text())["taken_at"]
    want = wf.cli_forecast(pub, "published", "carol", f"--now={taken!r}")
    site = Site("carol", published=str(pub), source="published", now=taken)
    try:
        page = browser.new_page()
        page.goto(site.origin + "/")
        for i, a in enumerate(want["associations"]):
            got = _values(page, f"section[aria-labelledby=acct{i}]")
            assert int(got["rank"]) == a["rank"] and int(got["of"]) == a["of"]
            words = page.eval(f"document.querySelector('section[aria-labelledby=acct{i}] .big + p strong').textContent")
            assert words == a["place_text"] and words.endswith(f"of {a['of']}" + (" (lowest)" if a["rank"] == 1 else ""))
            assert _close(got["fairshare"], a["fairshare"])
            assert _close(got.get("budget_core_hours"), a["budget_core_hours"])
            levels = page.eval(f"document.querySelectorAll('section[aria-labelledby=acct{i}] table.path tbody tr').length")
            assert levels == len(a["path"])
            if a["projection"]:
                assert page.eval(f"document.querySelector('#proj{i} polyline') !== null")
        assert page.eval("document.getElementById('planner') === null")  # no halving to plan under Fair Tree
        _local_only(page, site.origin)
        _shot(page, "user-page-fairtree.png")
        page.close()
    finally:
        site.close()


def test_user_page_shows_the_users_limits_as_the_cli_prints_them(browser, tmp_path):
    """`fscontrol web` / Open OnDemand (identity "process"): the page reads the process user's own
    file, as `fscontrol forecast` does, and shows "how much can I still run?" in the same words.
    The limits: the 22.05 testbed's read (tests/test_limits.py) with root's own association given
    GrpTRESMins cpu=6000 and MaxJobs=3 (the tests run as root, whose own file the page reads)."""
    import pwd

    from test_limits import DATA, _parent, _read

    from fscontrol.agent import config, pipeline, publishing
    from fscontrol.model import quota
    from fscontrol.slurm.source import RecordedSlurm
    from fscontrol.store import history as store
    from fscontrol.store import quota as store_quota

    if pwd.getpwuid(os.geteuid()).pw_name != "root":
        pytest.skip("the sample's tree has an association for root only among this machine's users")
    db = store.open_db(tmp_path / "h.db")
    res = pipeline.collect(RecordedSlurm(wf.SAMPLES / "testbed-basic"), db)
    read = _read((DATA / "assoc.txt").read_text().replace("tbcluster|root|root|||||||||normal",
                                                          "tbcluster|root|root||cpu=6000|||||3||normal"))
    with store.transaction(db):
        store_quota.write_limits(db, res.snapshot.cluster, res.snapshot_id, read.read_at, quota.entries(read), _parent(read))
    (tmp_path / "pub").mkdir()
    path, _ = publishing.publish_latest(db, config.from_dict({}), None, out=tmp_path / "pub" / "tbcluster.json")
    db.close()
    want = [e["text"] for e in wf.cli_forecast(Path(path), wf.SAMPLES / "testbed-basic", "root")["tres_limits"]["entries"]]
    assert "you in account root: 100 of 100 CPU-hours left (GrpTRESMins cpu=6000)" in want  # used: 0 (sshare)
    assert "you in account root: 0 of 3 jobs running at once, 3 more (MaxJobs=3)" in want
    app = make_app(identity="process", published=str(path), source=str(wf.SAMPLES / "testbed-basic"))
    httpd = make_server("127.0.0.1", 0, app, server_class=_Server, handler_class=_Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        page = browser.new_page()
        origin = f"http://127.0.0.1:{httpd.server_port}"
        page.goto(origin + "/")
        assert page.eval("document.querySelector('#limits h2').textContent") == "How much can I still run?"
        assert page.eval("[...document.querySelectorAll('#limits li')].map(e => e.textContent)") == want
        _local_only(page, origin)
        _shot(page, "user-page-limits.png")
        page.close()
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_planner_bills_gpus_under_the_published_weights(browser, tmp_path):
    """The planner's GPUs field: 4 CPUs + 2 GPUs a run, billed under the default partition's
    CPU=1.0,GRES/gpu=8.0 (as the agent publishes them) at 20 a run, times the UsageFactor 2 of carol's
    DefaultQOS (issue #33 D6: the planner has no QOS field), the line that says so (the CLI's), and the
    same F as `fscontrol forecast --plan 4cpus+2gpus:...`; more GPUs than the partition has: the
    CLI's one line."""
    from fscontrol.export import publish as pub

    out = wf.publish(wf.SAMPLES / "testbed-basic", tmp_path / "gpu")
    path = out / "tbcluster.json"
    data = json.loads(path.read_text())
    data["billing"].update(default_partition="normal", cluster_gpus=4, partitions={
        "normal": {"weights": "CPU=1.0,GRES/gpu=8.0", "default": True, "cpus": 64, "gpus": 4},
        "big": {"weights": "CPU=0.5,GRES/gpu=4.0", "default": False, "cpus": 64, "gpus": 8}})
    # issue #33 D6: carol's default account chem has DefaultQOS gpux2 (UsageFactor 2), as the agent
    # publishes it from sacctmgr (export.jobqos): the planner bills it without a QOS field, as the CLI
    data["billing"]["qos_usage_factor"]["gpux2"] = 2.0
    for r in data["associations"]:
        if r["user"] == "carol":
            r["job_qos"] = ({"qos": "gpux2", "from": "DefaultQOS", "default": True} if r["account"] == "chem"
                            else {"qos": "normal", "from": "only QOS", "default": False})
    pub.write_published(data, path)  # what the agent's publish stage writes from `scontrol show partition`
    uf = " x UsageFactor 2 (QOS gpux2: the DefaultQOS of carol@chem (carol's default account)) per run"
    site = Site("carol", published=str(out), source=str(wf.SAMPLES / "testbed-basic"))
    try:
        page = browser.new_page()
        page.goto(site.origin + "/")
        page.type_into("#f-cpus", "4")
        page.type_into("#f-gpus", "2")
        page.type_into("#f-length", "10")
        page.type_into("#f-gap", "1")
        page.type_into("#f-runs", "2")
        page.eval("(s => { s.value = 'm'; s.dispatchEvent(new Event('input', {bubbles: true})); })(document.getElementById('f-unit'))")
        page.wait_for("document.getElementById('plan-cmd').textContent.includes('4cpus+2gpus:10m,idle:1m,4cpus+2gpus:10m')",
                      timeout=30)
        line = page.eval("document.querySelector('#plan-result [data-k=billing]').textContent")
        assert line == f"billed under partition normal: CPU=1.0,GRES/gpu=8.0: 4cpus+2gpus -> 20{uf} = 40", line
        want = wf.cli_forecast(out, wf.SAMPLES / "testbed-basic", "carol", "--plan", "4cpus+2gpus:10m,idle:1m,4cpus+2gpus:10m")
        assert want["billing"]["runs"][0]["billing"] == 20.0 and want["billing"]["runs"][0]["rate"] == 40.0
        assert want["billing"]["lines"] == [line]  # the CLI's line
        for i, a in enumerate(want["associations"]):
            got = page.eval(f"Object.fromEntries([...document.querySelectorAll('#plan-result .card')[{i}].querySelectorAll('[data-k]')]"
                            ".map(e => [e.dataset.k, e.dataset.v]))")
            assert _close(got["after_fairshare"], a["after_plan"]["fairshare"])
        _local_only(page, site.origin)
        # the partition field: another partition's weights, as `-p big`
        page.type_into("#f-partition", "big")
        page.wait_for("document.getElementById('plan-cmd').textContent.includes('-p big')", timeout=30)
        line = page.eval("document.querySelector('#plan-result [data-k=billing]').textContent")
        assert line == f"billed under partition big: CPU=0.5,GRES/gpu=4.0: 4cpus+2gpus -> 10{uf} = 20", line
        want = wf.cli_forecast(out, wf.SAMPLES / "testbed-basic", "carol", "--plan", "4cpus+2gpus:10m,idle:1m,4cpus+2gpus:10m",
                               "-p", "big")
        got = page.eval("Object.fromEntries([...document.querySelectorAll('#plan-result .card')[0].querySelectorAll('[data-k]')]"
                        ".map(e => [e.dataset.k, e.dataset.v]))")
        assert _close(got["after_fairshare"], want["associations"][0]["after_plan"]["fairshare"])
        _local_only(page, site.origin)
        page.type_into("#f-partition", "normal")
        page.type_into("#f-gpus", "5")
        page.wait_for("(e => e !== null && e.textContent.includes('asks for 5 GPUs'))(document.querySelector('#plan-status .error'))",
                      timeout=30)
        assert "more than partition normal's, 4 GPUs" in page.eval("document.querySelector('#plan-status .error').textContent")
        page.eval("document.getElementById('planner').scrollIntoView()")
        _shot(page, "user-page-gpu-plan.png")
        page.close()
    finally:
        site.close()
