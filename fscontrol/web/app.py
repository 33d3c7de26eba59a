"""The user's forecast page as a WSGI application (PEP 3333; runs under wsgiref, Passenger,
mod_wsgi, CGI).

Who the page is for:
* identity "process" (Open OnDemand, where Passenger runs the app as the logged-in user, and
  `fscontrol web` run by the user): the process's own Unix user, exactly as `fscontrol forecast`;
* identity "remote_user" (a site's web server that authenticates users and mounts this app,
  possibly as one service account): the REMOTE_USER the server sets; no REMOTE_USER is refused.
Either way the page shows only that user's own forecast; `?user=NAME` works only for those
`fscontrol forecast --user` allows (root, or an admin listed in a root-owned snapshot).

It calls the forecast service the CLI calls (forecast.request.forecast on a ForecastRequest: the
same options, sources and checks), so the page and its JSON endpoint show the numbers
`fscontrol forecast --json` prints.

Routes: GET /  the page (the planner's fields in the query string work without JavaScript);
GET /api/forecast?cpus=&days=&runs=&gap=&target=[&account=]  the planner's forecast as JSON
{"forecast": <forecast --json>, "html": <the planner's panel>}; the page's inline script calls it.
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Callable, Iterable
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qs

from ..errors import FscontrolError
from ..export.published_index import PublishedIndex
from . import userpage

CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
       "img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'self'")
STATUS = {2: "400 Bad Request", 6: "404 Not Found", 7: "403 Forbidden", 3: "502 Bad Gateway"}
COOKIE = "fscontrol_token"


def _headers(ctype: str, extra: Iterable[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    return [("Content-Type", ctype), ("Cache-Control", "no-store"), ("Content-Security-Policy", CSP),
            ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), *extra]


def make_app(published: str | None = None, source: str | None = None, cluster: str | None = None,
             identity: str = "process", token: str | None = None, now: float | None = None,
             admins: tuple[str, ...] = ()) -> Callable:
    """A WSGI app. `published`/`source`/`cluster` as `fscontrol forecast --published/--source/-M`;
    unset, they come from the request's environ or the process's environment (FSCONTROL_PUBLISHED,
    FSCONTROL_SOURCE, FSCONTROL_CLUSTER), else the CLI's defaults. `token`: required (as ?token=,
    then a cookie) on every request, so other users on a shared login node cannot read a page served
    on its loopback. `now`: pretend it is this POSIX time (as `forecast --now`: tests, demos of old samples).
    `admins` (identity "remote_user" only): the REMOTE_USERs who may ask for anyone (`?user=`), as the
    site mounts the app (wsgi.py: $FSCONTROL_WEB_ADMINS of the server process, never of a request).
    A service account cannot read a user's own file, where `forecast` finds an admin's token
    (fscontrol.export.privacy)."""
    if identity not in ("process", "remote_user"):
        raise ValueError(f"identity must be 'process' or 'remote_user', not {identity!r}")

    index = PublishedIndex()  # the published file read once per snapshot, not once per request

    def setting(environ: dict, name: str, given: str | None) -> str | None:
        return given if given is not None else (environ.get(name) or os.environ.get(name) or None)

    def app(environ: dict, start_response: Callable):
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO") or "/"
        query = {k: v[-1] for k, v in parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True).items()}
        is_api = path.rstrip("/") == "/api/forecast"

        def reply(status: str, body: str, ctype: str, extra: Iterable[tuple[str, str]] = ()):
            raw = body.encode()
            start_response(status, _headers(ctype, extra) + [("Content-Length", str(len(raw)))])
            return [b"" if method == "HEAD" else raw]

        def fail(status: str, message: str):
            if is_api:
                return reply(status, json.dumps({"error": message}), "application/json")
            return reply(status, userpage.render_error(message, status), "text/html; charset=utf-8")

        if method not in ("GET", "HEAD"):
            return fail("405 Method Not Allowed", f"method {method} is not allowed: this page only reads")
        extra: list[tuple[str, str]] = []
        if token is not None:
            jar = SimpleCookie(environ.get("HTTP_COOKIE", ""))
            given = query.pop("token", None)
            have = jar[COOKIE].value if COOKIE in jar else None
            if given is not None and hmac.compare_digest(given, token):
                extra.append(("Set-Cookie", f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"))
            elif have is None or not hmac.compare_digest(have, token):
                return fail("403 Forbidden", "this page needs the address `fscontrol web` printed (with its ?token=)")
        if path not in ("/", "") and not is_api:
            return fail("404 Not Found", f"no page {path}")
        if identity == "remote_user":
            name = environ.get("REMOTE_USER")
            if not name:
                return fail("401 Unauthorized", "no REMOTE_USER: the web server must authenticate users before this page")
            asker: tuple | None = (name, -1, name in admins)  # never root: a web login is not a uid
        else:
            asker = None
        pub = setting(environ, "FSCONTROL_PUBLISHED", published)
        base = {"source": setting(environ, "FSCONTROL_SOURCE", source) or "live",
                "published": Path(pub) if pub else None, "cluster": setting(environ, "FSCONTROL_CLUSTER", cluster) or None,
                "now": now, "user": query.get("user") or None, "account": query.get("account") or None,
                "reader": index.read}
        part = (query.get("partition") or "").strip() or None  # the planner's: whose weights bill the plan
        try:
            plan, target = userpage.plan_from(query)
            plan_error = None
        except ValueError as e:
            plan, target, plan_error = None, 0.5, str(e)
        try:
            if is_api:
                if plan_error:
                    return fail("400 Bad Request", plan_error)
                data = forecast({**base, "plan": plan, "target": target, "partition": part}, asker)
                body = json.dumps({"forecast": data, "html": userpage.render_plan(data)}, allow_nan=False)
                return reply("200 OK", body, "application/json", extra)
            # the page: only the projections whose answers it says (the API's JSON has them all)
            data = forecast({**base, "said_only": True}, asker)
            plan_data = None
            if data.get("priority_mode") != "fair_tree" and plan is not None:
                try:
                    plan_data = forecast({**base, "plan": plan, "target": target, "said_only": True, "partition": part}, asker)
                except FscontrolError as e:
                    plan_error = str(e)
            api = (environ.get("SCRIPT_NAME") or "").rstrip("/") + "/api/forecast"
            starts = None
            if identity == "process" and base["source"] == "live" and not base["user"]:
                starts = start_estimates(base["cluster"], now)  # the page runs as the user: their own jobs
            html = userpage.render_page(data, plan_data, query, api_url=api, plan_error=plan_error, starts=starts)
            return reply("200 OK", html, "text/html; charset=utf-8", extra)
        except FscontrolError as e:
            return fail(STATUS.get(e.exit_code, "500 Internal Server Error"), str(e))

    return app


# the page's start estimates stay a page's cost (docs/start.md: what one costs by queue length;
# one user's estimate: 0.67 s of CPU and 28 MiB at 10,000 pending on bench_start's queue)
START_MAX_PENDING = 10_000


def start_estimates(cluster: str | None, now: float | None) -> dict:
    """`fscontrol start`'s estimates of this process's user's pending jobs (the page runs as them:
    Open OnDemand, `fscontrol web`), or {"error": why not} in one line."""
    import time

    from fscontrol.forecast import start as startmod
    from fscontrol.forecast.service import invoker
    from fscontrol.slurm.source import LiveSlurm

    me, _ = invoker()
    try:
        return startmod.read_live(LiveSlurm(cluster=cluster), now=time.time() if now is None else now, users={me},
                                  me=me, max_pending=START_MAX_PENDING)
    except FscontrolError as e:
        return {"error": f"no start estimate: {e}"}


def forecast(options: dict, asker: tuple | None) -> dict:
    """The forecast the page asks for (the same service `fscontrol forecast` calls), asked by `asker`
    (None: the process's user); `options`: ForecastRequest's fields."""
    from fscontrol.forecast.request import ForecastRequest
    from fscontrol.forecast.request import forecast as run_request

    return run_request(ForecastRequest(**options), asker)


def serve(host: str = "127.0.0.1", port: int = 8080, *, published: str | None = None, source: str | None = None,
          cluster: str | None = None, token: str | None = None, ready: Callable[[str], None] | None = None,
          workers: int = 1, now: float | None = None) -> None:
    """Serve the page as the process's user with wsgiref until interrupted (`fscontrol web`).

    `workers` > 1: that many forked processes accept on the one listening socket, each with its
    threads and its own per-snapshot index (a page is CPU-bound Python: threads of one process
    share one core). `now`: as make_app's (benches and demos of old samples)."""
    import socketserver
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    class Quiet(WSGIRequestHandler):
        def log_message(self, fmt, *args):  # no access log on stderr: the query string names nobody, but keep quiet
            pass

    class Server(socketserver.ThreadingMixIn, WSGIServer):
        daemon_threads = True

        def get_request(self):
            conn, addr = super().get_request()
            conn.setblocking(True)  # (accepted from a non-blocking socket with workers > 1, it would be too)
            return conn, addr

    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    try:  # the port taken, an address not ours, a socket refused, a file unreadable: one named error
        app = make_app(published, source, cluster, identity="process", token=token, now=now)
        with make_server(host, port, app, server_class=Server, handler_class=Quiet) as httpd:
            shown = f"[{host}]" if ":" in host else host
            url = f"http://{shown}:{httpd.server_port}/" + (f"?token={token}" if token else "")
            (ready or print)(url)
            if workers == 1:
                httpd.serve_forever()
                return
            httpd.socket.setblocking(False)  # every worker wakes for a connection; those that lose the accept go on
            _prefork(httpd, workers)
    except OSError as e:
        raise FscontrolError(f"cannot serve on {host}:{port}: {e.strerror or e}") from None


def _prefork(httpd, workers: int) -> None:
    """Run httpd.serve_forever in `workers` forked children until one ends or this process is
    interrupted; then end the others (by their pids) and reap them."""
    import signal

    children = []
    parent = os.getpid()

    def orphaned() -> None:  # a worker whose parent died (SIGKILL) ends at its next poll
        if os.getppid() != parent:
            raise KeyboardInterrupt

    def stop(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)  # a TERM ends the workers too (finally below)
    httpd.service_actions = orphaned
    try:
        for _ in range(workers):
            pid = os.fork()
            if pid == 0:  # pragma: no cover (a child: ends by os._exit, coverage never sees it)
                signal.signal(signal.SIGTERM, stop)
                code = 0
                try:
                    httpd.serve_forever()
                except KeyboardInterrupt:
                    pass
                except BaseException:
                    code = 1
                os._exit(code)
            children.append(pid)
        os.wait()  # one ended (or a signal interrupts the wait): stop them all
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        signal.signal(signal.SIGTERM, previous)
