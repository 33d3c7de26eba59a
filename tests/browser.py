"""A real headless Chromium (Debian's `chromium` package) driven over the DevTools protocol
through --remote-debugging-pipe: JSON messages on fds 3 (to the browser) and 4 (from it), so
no WebSocket client, no driver binary and no browser download are needed. Standard library only.

Every network request a page makes is recorded (Network.requestWillBeSent), and name resolution
maps every host but 127.0.0.1 to nothing, so a page that needed the internet would show it."""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--remote-debugging-pipe"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    def __init__(self, binary: str, timeout: float = 30.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="fscontrol-chromium-")
        to_r, self._to_w = os.pipe()  # we write commands; the browser reads fd 3
        self._from_r, from_w = os.pipe()  # the browser writes fd 4; we read

        def fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     preexec_fn=fds, pass_fds=(3, 4), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self._id = 0
        self._lock = threading.Lock()
        self._replies: dict[int, queue.Queue] = {}
        self.events: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buf = b""
        with os.fdopen(self._from_r, "rb", buffering=0) as f:
            while True:
                chunk = f.read(1 << 16)
                if not chunk:
                    return
                buf += chunk
                while b"\0" in buf:
                    raw, buf = buf.split(b"\0", 1)
                    msg = json.loads(raw)
                    if "id" in msg:
                        with self._lock:
                            q = self._replies.get(msg["id"])
                        if q is not None:
                            q.put(msg)
                    else:
                        self.events.put(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        with self._lock:
            self._id += 1
            mid = self._id
            q: queue.Queue = queue.Queue()
            self._replies[mid] = q
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        try:
            reply = q.get(timeout=self.timeout)
        except queue.Empty:
            raise BrowserError(f"no reply to {method} within {self.timeout:g} s") from None
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def new_page(self, width: int = 1000, height: int = 900, mobile: bool = False) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, target)
        for m in ("Page.enable", "Network.enable", "Runtime.enable", "Log.enable"):
            self.send(m, session=session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": mobile}, session=session)
        return page

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_w)
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser: Browser, session: str, target: str):
        self.b, self.session, self.target = browser, session, target
        self.requests: list[str] = []  # every URL the page asked for
        self.failed: list[str] = []
        self.console: list[str] = []
        self._pending: list[dict] = []

    def _pump(self, until=None, timeout: float = 15.0) -> dict | None:
        """Take events for this page; return the first for which `until(event)` is true."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            try:
                ev = self.b.events.get(timeout=min(left, 0.2))
            except queue.Empty:
                continue
            if ev.get("sessionId") != self.session:
                self.b.events.put(ev) if ev.get("sessionId") else None
                continue
            method, params = ev["method"], ev.get("params", {})
            if method == "Network.requestWillBeSent":
                self.requests.append(params["request"]["url"])
            elif method == "Network.loadingFailed":
                self.failed.append(f"{params.get('errorText')} {params.get('requestId')}")
            elif method == "Runtime.consoleAPICalled":
                self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                self.console.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Log.entryAdded":
                self.console.append(f"{params['entry'].get('level')}: {params['entry'].get('text')}")
            if until is not None and until(ev):
                return ev

    def goto(self, url: str, timeout: float = 20.0) -> None:
        self.b.send("Page.navigate", {"url": url}, session=self.session)
        if self._pump(lambda e: e["method"] == "Page.loadEventFired", timeout) is None:
            raise BrowserError(f"{url} did not load within {timeout:g} s")

    def eval(self, expr: str):
        r = self.b.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True},
                        session=self.session)
        if "exceptionDetails" in r:
            raise BrowserError(f"{expr[:80]}: {r['exceptionDetails'].get('text')} {r['exceptionDetails'].get('exception', {}).get('description', '')}")
        self._pump(timeout=0.01)
        return r["result"].get("value")

    def wait_for(self, expr: str, timeout: float = 10.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = self.eval(expr)
            if v:
                return v
            self._pump(timeout=0.1)
        raise BrowserError(f"timed out waiting for {expr}")

    def type_into(self, selector: str, text: str) -> None:
        """Focus the field, select its text and type over it (real key input events)."""
        self.eval(f"(function(e){{e.focus(); e.select();}})(document.querySelector({json.dumps(selector)}))")
        self.b.send("Input.insertText", {"text": text}, session=self.session)

    def press(self, key: str, code: str, keycode: int) -> None:
        for kind in ("keyDown", "keyUp"):
            self.b.send("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code,
                                                   "windowsVirtualKeyCode": keycode}, session=self.session)

    def screenshot(self, path: Path, full: bool = True) -> Path:
        params: dict = {"format": "png", "captureBeyondViewport": full}
        if full:
            w, h = self.eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}
        data = self.b.send("Page.captureScreenshot", params, session=self.session)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.b.send("Target.closeTarget", {"targetId": self.target})
        except BrowserError:
            pass
