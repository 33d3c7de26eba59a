"""The web pages without a browser: the WSGI app's identity, access and input rules, `fscontrol
web` (loopback, token), the Open OnDemand entry, and the public page `fscontrol publish` writes."""

from __future__ import annotations

import json
import os
import runpy
import signal
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from wsgiref.util import setup_testing_defaults

import pytest

import webfixtures as wf
from fscontrol.web.app import make_app
from fscontrol.export.public_page import html_path, render_public

BASIC = wf.SAMPLES / "testbed-basic"


@pytest.fixture(scope="module")
def pub(tmp_path_factory):
    return wf.publish(BASIC, tmp_path_factory.mktemp("web"))


def call(app, path="/", query="", user="carol", method="GET"):
    env = {"PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": method}
    if user is not None:
        env["REMOTE_USER"] = user
    setup_testing_defaults(env)
    got = {}

    def start(status, headers):
        got["status"], got["headers"] = status, dict(headers)

    body = b"".join(app(env, start)).decode()
    return got["status"], got["headers"], body


def test_page_is_the_users_own_and_private(pub):
    app = make_app(published=str(pub), source=str(BASIC), identity="remote_user")
    status, headers, body = call(app)
    assert status == "200 OK"
    assert headers["Cache-Control"] == "no-store"
    assert "default-src 'none'" in headers["Content-Security-Policy"] and "connect-src 'self'" in headers["Content-Security-Policy"]
    bare = body.replace('xmlns="http://www.w3.org/2000/svg"', "")  # a namespace name, never fetched
    assert "http://" not in bare and "https://" not in bare and "//" not in bare.replace("://", "")
    for name in ("alice", "bob", "dave"):
        assert name not in body
    status, _, body = call(app, query="user=bob")
    assert status == "403 Forbidden" and "may only ask for your own forecast" in body and "data-k" not in body


def test_api_is_the_cli_forecast(pub):
    app = make_app(published=str(pub), source=str(BASIC), identity="remote_user")
    status, headers, body = call(app, "/api/forecast", "cpus=8&length=2&unit=h&runs=2&gap=30&target=0.6")
    assert status == "200 OK" and headers["Content-Type"] == "application/json"
    got = json.loads(body)["forecast"]
    want = wf.cli_forecast(pub, BASIC, "carol", "--plan", "8cpus:2h,idle:30h,8cpus:2h", "--target", "0.6")
    assert got["plan_text"] == want["plan_text"]
    for k in ("user", "requester"):
        want.pop(k), got.pop(k)
    assert got == want


@pytest.mark.parametrize("query,message", [
    ("cpus=0", "CPUs per run must be at least 1 (idle:<duration> for none), got '0'"),
    ("cpus=abc", "CPUs per run must be a number, got 'abc'"),
    ("unit=y", "lengths are in m, h or d, not 'y'"),
    ("target=1.5", "target F must be at least 0.01 and at most 0.99, got 1.5"),
    ("runs=50", "runs must be at least 1 and at most 20, got 50"),
])
def test_bad_planner_input_is_one_clear_line(pub, query, message):
    app = make_app(published=str(pub), source=str(BASIC), identity="remote_user")
    status, _, body = call(app, "/api/forecast", query)
    assert status == "400 Bad Request" and json.loads(body) == {"error": message}
    status, _, body = call(app, "/", query)  # the page still shows the forecast, and the line
    assert status == "200 OK" and __import__("html").escape(message) in body


def test_refusals(pub):
    app = make_app(published=str(pub), source=str(BASIC), identity="remote_user")
    assert call(app, user=None)[0] == "401 Unauthorized"
    assert call(app, method="POST")[0] == "405 Method Not Allowed"
    assert call(app, "/etc/passwd")[0] == "404 Not Found"
    status, _, body = call(app, user="mallory")
    assert status == "404 Not Found" and "unknown user &#x27;mallory&#x27;" in body
    # a web login is never root, even when the server runs as root and the snapshot is root's
    assert os.stat(pub / "tbcluster.json").st_uid != 0 or call(app, user="root", query="user=carol")[0] == "403 Forbidden"
    missing = make_app(published=str(pub / "nope.json"), source=str(BASIC), identity="remote_user")
    status, _, body = call(missing)
    assert status == "404 Not Found" and "no published snapshot yet" in body
    with pytest.raises(ValueError):
        make_app(identity="anyone")


def test_ood_entry_runs_as_the_process_user(pub, monkeypatch):
    monkeypatch.setenv("FSCONTROL_PUBLISHED", str(pub))
    monkeypatch.setenv("FSCONTROL_SOURCE", str(BASIC))
    app = runpy.run_path(str(wf.ROOT / "ood" / "fscontrol" / "passenger_wsgi.py"))["application"]
    import pwd

    me = pwd.getpwuid(os.getuid()).pw_name
    # REMOTE_USER is ignored: the Unix user the app runs as is who asks
    status, _, body = call(app, user="carol")
    assert f"unknown user &#x27;{me}&#x27;" in body or f'<span id="who">{me}</span>' in body
    if os.getuid() == 0:  # root may ask for anyone, as with `fscontrol forecast --user`
        status, _, body = call(app, query="user=carol")
        assert status == "200 OK" and '<span id="who">carol</span>' in body
    manifest = (wf.ROOT / "ood" / "fscontrol" / "manifest.yml").read_text()
    assert manifest.startswith("---\nname: ") and "role:" not in manifest  # no role: a Passenger app
    assert os.access(wf.ROOT / "ood" / "fscontrol" / "bin" / "python", os.X_OK)


def test_fscontrol_web_serves_on_loopback_with_a_token(pub):
    proc = subprocess.Popen([sys.executable, "-m", "fscontrol", "web", "--port", "0", "--published", str(pub),
                             "--source", str(BASIC)], cwd=wf.ROOT, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert line.startswith("serving http://127.0.0.1:"), line
        url = line.split()[1]
        base = url.split("?")[0]
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base, timeout=10)
        assert e.value.code == 403
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "?token=wrong", timeout=10)
        assert e.value.code == 403
        r = urllib.request.urlopen(url + "&user=carol", timeout=30)
        cookie = r.headers["Set-Cookie"].split(";")[0]
        assert "HttpOnly" in r.headers["Set-Cookie"] and "SameSite=Strict" in r.headers["Set-Cookie"]
        req = urllib.request.Request(base + "api/forecast?user=carol&cpus=4&length=1&unit=h&runs=1", headers={"Cookie": cookie})
        data = json.loads(urllib.request.urlopen(req, timeout=30).read())
        assert data["forecast"]["user"] == "carol" and data["forecast"]["plan_text"] == "4cpus:1h"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_fscontrol_web_busy_port_is_one_line(pub):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = wf.fscontrol("web", "--port", str(s.getsockname()[1]), "--published", str(pub), check=False)
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and "cannot serve on 127.0.0.1" in r.stderr


def test_publish_writes_the_public_page_next_to_the_json(pub):
    page = pub / "tbcluster.html"
    assert page.is_file() and stat.S_IMODE(page.stat().st_mode) == 0o644
    assert not [p for p in pub.iterdir() if p.name.startswith(".")]  # no temporary file left
    data = json.loads((pub / "tbcluster.json").read_text())
    assert page.read_text() == render_public(data)
    text = page.read_text()
    assert "<script" not in text and "http-equiv=\"Content-Security-Policy\"" in text
    for a in data["associations"]:
        if a["user"]:
            assert f">{a['user']}" in text
    assert html_path("/x/c.json").name == "c.html" and html_path("/x/c.html").name == "c.html.html"


def test_public_page_names_no_one_under_private_data(tmp_path):
    agent, _ = wf.private_samples(tmp_path)
    pub = wf.publish(agent, tmp_path / "agent")
    text = (pub / "tbcluster.html").read_text()
    body = text.split("<body>", 1)[1]
    for name in ("alice", "bob", "carol", "dave", "fsdummy", "physics", "chem", "science"):
        assert name not in body
    assert "Not published: this cluster" in body and "PrivateData</dt><dd>usage" in body


def test_remote_user_admins_are_the_ones_the_site_mounts_the_app_with(pub):
    """A service account cannot read a user's own file (where `forecast` finds an admin's token,
    fscontrol.export.privacy): the site names the page's admins when it mounts it."""
    app = make_app(published=str(pub), source=str(BASIC), identity="remote_user", admins=("alice",))
    status, _, body = call(app, query="user=carol", user="alice")
    assert status == "200 OK", body
    status, _, body = call(app, query="user=alice", user="carol")
    assert status == "403 Forbidden" and "may only ask for your own forecast" in body


@pytest.mark.parametrize("cpus,ok", [("0", False), ("0.5", False), ("0.99", False), ("1", True), ("2.5", True), ("8", True)])
def test_the_cli_and_the_web_read_cpus_by_one_rule(pub, cpus, ok):
    """Issue #28 (an outside tester): `--plan 0cpus:1h` and `0.5cpus` were accepted by the CLI
    while the web refused them. One rule (forecast.classic.plan_cpus: a number of CPUs, at
    least 1: an average such as 2.5 is one) for `--plan`, `--run` and the planner's field: the
    same answer, the same words."""
    from typer.testing import CliRunner

    from fscontrol.cli.app import app as cli

    runs = [CliRunner().invoke(cli, ["forecast", "--published", str(pub), "--source", str(BASIC), "-u", "carol",
                                     *opt]) for opt in (["--plan", f"{cpus}cpus:1h"], ["--run", f"{cpus}cpus:1h"])]
    app = make_app(published=str(pub), source=str(BASIC), identity="remote_user")
    status, _, body = call(app, "/api/forecast", f"cpus={cpus}&length=1&unit=h&runs=1&gap=0")
    words = "CPUs per run must be at least 1"
    if ok:
        assert status == "200 OK" and all(r.exit_code == 0 for r in runs), [r.output for r in runs]
    else:
        assert status == "400 Bad Request" and words in json.loads(body)["error"]
        for r in runs:
            assert r.exit_code == 2 and words in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_a_plan_step_lasts_more_than_nothing(pub):
    from typer.testing import CliRunner

    from fscontrol.cli.app import app as cli

    r = CliRunner().invoke(cli, ["forecast", "--published", str(pub), "--source", str(BASIC), "-u", "carol",
                                 "--plan", "8cpus:0h"])
    assert r.exit_code == 2 and "lasts no time" in r.output, r.output


def test_a_stale_snapshot_on_the_web_names_no_cli_option(pub):
    """Issue #28: the web's error for a snapshot too old said "--stale-ok forecasts anyway", an
    option of the CLI's that a web user cannot give; the CLI still names it."""
    from typer.testing import CliRunner

    from fscontrol.cli.app import app as cli

    taken = json.loads((pub / "tbcluster.json").read_text())["taken_at"]
    later = taken + 3 * 86400
    app = make_app(published=str(pub), source="published", identity="remote_user", now=later)
    for path in ("/api/forecast", "/"):
        status, _, body = call(app, path)
        assert status == "404 Not Found" and "too old to forecast from" in body, body
        assert "--stale-ok" not in body and "ask your admin" in body.lower()
    r = CliRunner().invoke(cli, ["forecast", "--published", str(pub), "--source", "published", "-u", "carol",
                                 "--now", str(later)])
    assert r.exit_code == 6 and "too old to forecast from" in r.output and "--stale-ok" in r.output, r.output
