"""A small Chrome DevTools Protocol client: Debian's headless Chromium driven over one WebSocket.

Why our own and not selenium/pyppeteer/playwright: the crawl needs a dozen commands (open and
close a tab, navigate, evaluate, screenshot) and a few events (requests in flight, a crashed
tab), inside the crawl's own asyncio loop (Scrapy runs on the asyncio reactor); a downloaded
browser build is not allowed, and WebDriver would add chromedriver and a second process per
browser. ``websockets`` is already installed. Sessions are "flattened" (one socket, each
command tagged with its tab's ``sessionId``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import shutil
import signal
import subprocess
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import websockets

from crawler import CrawlerError
from crawler.rendering.chromium_user import (
    NO_SANDBOX_ENV,
    browser_user,
    make_profile,
    sandbox_disabled,
)
from harvestflow.services.process import die_with_parent

log = logging.getLogger(__name__)

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "chromium")

# The browser window's own WebUI surfaces, which a headless browser never shows: Chromium 156
# preloads its omnibox popups (chrome://omnibox-popup.top-chrome/, plain and "AI mode") at
# start, each in a renderer process of its own, ~1.6 CPU-s apiece: half of a browser start's
# CPU on the test VM (7.5 -> 3.3 CPU-s for a start, four pages and a close). Pages are
# rendered exactly as before; the tests' WebDriver browsers (tests/support/browser.py) use it too.
HEADLESS_UNUSED_FEATURES = ("WebUIOmniboxPopup", "WebUIOmniboxAimPopup")


class CdpError(CrawlerError, RuntimeError):
    """A DevTools command that failed, the browser gone, or a tab that crashed."""


def find_chromium() -> str:
    """Path of Debian's Chromium (``HARVESTFLOW_CHROMIUM`` overrides); a clear error if none."""
    override = os.environ.get("HARVESTFLOW_CHROMIUM")
    for candidate in (override,) if override else CHROMIUM_CANDIDATES:
        path = shutil.which(candidate)
        if path:
            return path
    raise CdpError("Chromium not found (apt-get install chromium, or set HARVESTFLOW_CHROMIUM)")


class Browser:
    """One headless Chromium process and its DevTools connection."""

    def __init__(
        self,
        proxy: str | None,
        *,
        user_agent: str = "",
        window: tuple[int, int] = (1280, 900),
        profile_root: Path | None = None,
    ) -> None:
        self.proxy = proxy
        self.profile_root = profile_root
        self.user_agent = user_agent
        self.window = window
        self.proc: subprocess.Popen[bytes] | None = None
        self.profile: Path | None = None
        self.ws: Any = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._listeners: dict[str | None, list[Callable[[str, dict[str, Any]], None]]] = (
            defaultdict(list)
        )
        self._reader: asyncio.Task[None] | None = None

    async def start(self, timeout: float = 30.0) -> None:
        """Start Chromium with every request sent to the recording proxy, then connect."""
        user = browser_user()  # as root: an unprivileged user, so the sandbox can start
        self.profile = make_profile(self.profile_root)
        args = [
            find_chromium(),
            "--headless=new",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-client-side-phishing-detection",
            "--disable-default-apps",
            "--disable-domain-reliability",
            "--no-pings",
            "--no-service-autorun",
            "--disable-extensions",
            "--disable-features=Translate,MediaRouter,OptimizationHints,InterestFeedContentSuggestions"
            # every frame in its page's process, so the tab's one DevTools session reaches a
            # cross-site iframe's document too (consent dialogs: crawler/rendering/behaviours/run.py)
            ",IsolateOrigins,site-per-process," + ",".join(HEADLESS_UNUSED_FEATURES),
            "--disable-site-isolation-trials",
            "--mute-audio",
            "--hide-scrollbars",
            "--metrics-recording-only",
            "--password-store=basic",
            f"--window-size={self.window[0]},{self.window[1]}",
            f"--user-data-dir={self.profile}",
            "--remote-debugging-port=0",
            "about:blank",
        ]
        if self.proxy:
            # the browser's own traffic (component updates, time checks) goes to this proxy,
            # loopback included (Chromium bypasses a proxy for loopback unless told not to)
            args[-1:-1] = [f"--proxy-server={self.proxy}", "--proxy-bypass-list=<-loopback>"]
        if self.proxy is not None:
            # its only peer is the crawl's recording proxy, whose certificates come from the
            # job's own CA (crawler/rendering/tls.py); the crawl's fetch is what reaches a site
            args.insert(-1, "--ignore-certificate-errors")
        if self.user_agent:  # the job's, as on every other request of the crawl
            args.insert(-1, f"--user-agent={self.user_agent}")
        env = None
        if sandbox_disabled():
            log.warning("Chromium runs without its sandbox (%s is set)", NO_SANDBOX_ENV)
            args.insert(2, "--no-sandbox")
        elif user is not None:  # its own home: root's is not its to write
            home = str(self.profile)
            env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=home, XDG_CACHE_HOME=home)
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            user=None if user is None else user.pw_uid,
            group=None if user is None else user.pw_gid,
            extra_groups=None if user is None else [],
            start_new_session=True,  # its helper processes are killed with its group
            # a crawler killed -9 leaves no browser behind
            preexec_fn=die_with_parent,
        )
        port_file = self.profile / "DevToolsActivePort"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not port_file.exists() or len(port_file.read_text().splitlines()) < 2:
            if self.proc.poll() is not None:
                raise CdpError(
                    f"Chromium exited at start (status {self.proc.returncode}); a host whose"
                    f" kernel gives it no sandbox (user namespaces) may set {NO_SANDBOX_ENV}=1"
                )
            if loop.time() > deadline:
                await self.close()
                raise CdpError("Chromium did not open its DevTools port in time")
            await asyncio.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self.ws = await websockets.connect(
            f"ws://127.0.0.1:{port}{path}", max_size=None, ping_interval=None
        )
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                msg = json.loads(raw)
                if "id" in msg:
                    fut = self._waiting.pop(msg["id"], None)
                    if fut is not None and not fut.done():
                        if "error" in msg:
                            fut.set_exception(CdpError(str(msg["error"].get("message"))))
                        else:
                            fut.set_result(msg.get("result", {}))
                else:
                    for listener in list(self._listeners.get(msg.get("sessionId"), ())):
                        listener(msg.get("method", ""), msg.get("params", {}))
        except Exception as exc:  # the browser went away: every waiting command fails
            log.debug("DevTools connection closed: %s", exc)
        finally:
            for fut in self._waiting.values():
                if not fut.done():
                    fut.set_exception(CdpError("browser connection lost"))
            self._waiting.clear()
            for listeners in list(self._listeners.values()):
                for listener in list(listeners):
                    listener("Inspector.detached", {"reason": "browser connection lost"})

    @property
    def alive(self) -> bool:
        return (
            self.proc is not None
            and self.proc.poll() is None
            and self._reader is not None
            and not self._reader.done()
        )

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30.0,
    ) -> Any:
        """One command; its result, or CdpError."""
        if not self.alive:
            raise CdpError("browser is not running")
        ident = next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = fut
        await self.ws.send(json.dumps(message))
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError as exc:
            self._waiting.pop(ident, None)
            raise CdpError(f"{method}: no answer in {timeout:.0f} s") from exc

    async def open_tab(self, context_id: str | None = None) -> str:
        """A blank tab (in browser context ``context_id``, else the default one), attached
        flat: its session id, for :meth:`send` and :meth:`listen`."""
        params: dict[str, Any] = {"url": "about:blank"}
        if context_id:
            params["browserContextId"] = context_id
        target = await self.send("Target.createTarget", params)
        attached = await self.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        return str(attached["sessionId"])

    def listen(self, session: str, callback: Callable[[str, dict[str, Any]], None]) -> None:
        self._listeners[session].append(callback)

    def forget(self, session: str) -> None:
        self._listeners.pop(session, None)

    async def memory_kb(self) -> int:
        """Memory of the browser's process group (kB): the sum of each process's PSS.

        Why PSS and not RSS: Chromium's processes share most of their pages (the binary, fonts,
        shared memory between renderer and GPU); an RSS sum counts them once per process and
        reads ~1.2 GiB for an idle browser, so a ``render_max_memory_mb`` of 1 GiB restarted
        the tab's browser every few pages (bench/render). PSS shares each page out among the
        processes using it, so the sum is what the browser really holds. Read off the event
        loop: ``smaps_rollup`` walks the page tables.
        """
        if self.proc is None:
            return 0
        return await asyncio.get_running_loop().run_in_executor(
            None, process_group_pss_kb, self.proc.pid
        )

    async def close(self) -> None:
        """Close the connection and kill the browser's whole process group."""
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                await asyncio.get_running_loop().run_in_executor(None, self.proc.wait, 10)
        if self.profile is not None:
            shutil.rmtree(self.profile, ignore_errors=True)


def process_group_pss_kb(pgid: int) -> int:
    """Sum of the proportional set size (kB) of the processes of group ``pgid``, from /proc
    (a process without ``smaps_rollup``, e.g. on an older kernel, counts its RSS)."""
    total = 0
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    for status in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = status.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # field 5 of stat: the process group
                continue
            try:
                rollup = (status.parent / "smaps_rollup").read_text()
            except OSError:
                total += int(fields[21]) * page_kb  # field 24: resident pages
                continue
            for line in rollup.splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
    return total
