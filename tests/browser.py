"""A headless Chromium driven over the DevTools protocol on a pipe (test helper).

`--remote-debugging-pipe` makes Chromium read protocol commands on fd 3 and write replies
and events on fd 4, NUL-separated JSON. That needs nothing but the standard library (no
websocket client, no WebDriver, no npm), so the CI step only installs Debian's `chromium`.
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(Exception):
    pass


class Browser:
    """One headless Chromium with one page; `events` keeps every event received."""

    def __init__(self, program: str, width: int = 1400, height: int = 900):
        self.profile = tempfile.mkdtemp(prefix="hloc-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire_fds():      # runs in the child: the pipe ends become fds 3 and 4
            r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)    # out of the way first
            w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        args = [program, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-extensions",
                "--disable-dev-shm-usage", f"--user-data-dir={self.profile}",
                "--remote-debugging-pipe", f"--window-size={width},{height}", "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     preexec_fn=wire_fds, pass_fds=(3, 4))
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict] = []
        self.session = None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    # -- protocol -----------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise BrowserError("Chromium closed the pipe: "
                                       + self.proc.stderr.read().decode(errors="replace")[-2000:])
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, timeout: float = 60, **params) -> dict:
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 60) -> dict:
        for ev in self.events:
            if ev["method"] == method:
                return ev
        deadline = time.monotonic() + timeout
        while True:
            ev = self._read_message(deadline)
            if "method" in ev:
                self.events.append(ev)
                if ev["method"] == method:
                    return ev

    # -- conveniences -------------------------------------------------------------------
    def navigate(self, url: str, timeout: float = 60) -> None:
        self.events = [e for e in self.events if e["method"] != "Page.loadEventFired"]
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", timeout)

    def evaluate(self, expression: str, timeout: float = 60):
        res = self.call("Runtime.evaluate", timeout=timeout, expression=expression,
                        returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise BrowserError(f"script failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression}")
            time.sleep(0.1)

    def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)

    def type_text(self, text: str) -> None:
        self.call("Input.insertText", text=text)

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries (CSP, loads)."""
        out = []
        for ev in self.events:
            m, p = ev["method"], ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(json.dumps(p["exceptionDetails"])[:500])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description")))
                                    for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(p["entry"].get("text", ""))
        return out

    def requests(self) -> list[str]:
        return [ev["params"]["request"]["url"] for ev in self.events
                if ev["method"] == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self.proc.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
