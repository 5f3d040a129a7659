"""Headless Chromium driven over the DevTools protocol on a pipe (stdlib only), and a PNG reader.

`--remote-debugging-pipe` gives the protocol on file descriptors 3 (commands in) and 4 (replies
out), NUL-terminated JSON: no websocket client, no extra dependency. Enough of the protocol to
load a page, query boxes and colours with JavaScript, and take screenshots.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


def _high(fd: int) -> int:
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


def find_chromium() -> str | None:
    """The Chromium binary on PATH (Debian: chromium), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless Chromium with a fresh profile; one page at a time."""

    def __init__(self, binary: str, width: int = 1400, height: int = 900) -> None:
        self._profile = tempfile.mkdtemp(prefix="perfgate-chromium-")
        cmd_r, cmd_w = os.pipe()  # we write commands, the browser reads fd 3
        out_r, out_w = os.pipe()  # the browser writes fd 4, we read
        # Above 10, so the child's dup2 onto 3 and 4 cannot overwrite one with the other.
        cmd_r, out_w = (_high(fd) for fd in (cmd_r, out_w))
        self._proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=lambda: (os.dup2(cmd_r, 3), os.dup2(out_w, 4)),
        )
        os.close(cmd_r)
        os.close(out_w)
        self._w, self._r = os.fdopen(cmd_w, "wb", buffering=0), os.fdopen(out_r, "rb")
        self._next = 0
        self._buf = b""
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.call("Page.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def _read(self, deadline: float | None = None) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._r.fileno()], [], [], left)[0]:
                    raise TimeoutError("chromium sent nothing in time")
            chunk = os.read(self._r.fileno(), 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (events seen meanwhile go to .events)."""
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        self._w.write(json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def load(self, path: Path, timeout: float = 30, query: str = "") -> None:
        """Open a local file (with a query and fragment, e.g. '?rows=50#x') and wait for its
        load event (and the page's scripts)."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=Path(path).resolve().as_uri() + query)
        self.wait_for_load(str(path), timeout)

    def wait_for_load(self, what: str, timeout: float = 30) -> None:
        """Wait for a load event among the events since they were last cleared (a navigation
        the page started itself: clear, act, then wait)."""
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            try:
                self.events.append(self._read(deadline))
            except TimeoutError:
                raise TimeoutError(f"{what}: no load event in {timeout} s") from None

    def js(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its (JSON) value."""
        out = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in out:
            raise RuntimeError(f"{expression[:60]}: {out['exceptionDetails']}")
        return out["result"].get("value")

    def screenshot(self, clip: dict[str, float] | None = None) -> bytes:
        """A PNG of the whole page (beyond the viewport) or of a clip rectangle."""
        if clip is None:
            size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
            clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"]}
        out = self.call(
            "Page.captureScreenshot",
            session=True,
            format="png",
            captureBeyondViewport=True,
            clip={**clip, "scale": 1},
        )
        return base64.b64decode(out["data"])

    def renderer_peak_bytes(self) -> int:
        """The largest peak resident memory (VmHWM) of this browser's renderer processes: what
        a page cost at most. Linux /proc only; 0 where it cannot be read."""
        children: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            children.setdefault(ppid, []).append(int(stat.parent.name))
        todo, peak = [self._proc.pid], 0
        while todo:
            pid = todo.pop()
            todo += children.get(pid, [])
            try:
                if b"--type=renderer" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                    continue
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) * 1024)
        return peak

    def settled(self) -> None:
        """Wait until the page has drawn a frame after its load (its scripts' work shown)."""
        self.call(
            "Runtime.evaluate",
            session=True,
            expression="new Promise(r => requestAnimationFrame(() => setTimeout(r)))",
            awaitPromise=True,
        )

    def close(self) -> None:
        """End the browser (only the process this object started) and remove its profile."""
        try:
            self._w.close()
            self._proc.terminate()
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        finally:
            self._r.close()
            shutil.rmtree(self._profile, ignore_errors=True)


@contextmanager
def open_browser(
    width: int, height: int, require: Callable[[bool, str], None]
) -> Iterator[Browser]:
    """A Browser for a test, or `require`'s skip (or failure under CI) without Chromium."""
    binary = find_chromium()
    require(binary is not None, "Chromium (apt-get install chromium; scripts/install --full)")
    assert binary is not None
    b = Browser(binary, width=width, height=height)
    try:
        yield b
    finally:
        b.close()


def png_pixels(data: bytes) -> tuple[int, int, list[list[tuple[int, ...]]]]:
    """Width, height and RGB(A) rows of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and color in (2, 6), (depth, color, interlace)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        f, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append([tuple(line[x : x + channels]) for x in range(0, stride, channels)])
        prev = line
    return width, height, rows
