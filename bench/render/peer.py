"""The peer: Chromium (through chromedriver) loading each page through pywb's recording proxy,
driven by a plain loop with the crawler's behaviours (crawler/rendering/renderer.py): load, network idle
(no request in flight for IDLE_S, from the browser's own Network events in the performance
log), a dwell for timers, scrolling a screen at a time until the bottom is reached and the
page stops growing (bounded), idle again, back to the top, the rendered anchors read — all
within the same per-page time limit; a page that fails to load is tried once more, as the
crawler tries a hung tab's page twice. One tab, pages one after another (bench/render/spec.py
runs one loop per tab).

``python peer.py --proxy 127.0.0.1:PORT --timeout S --min-wait S --max-scrolls N URL...``
Exit 1 when a page fails to load.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

IDLE_S = 0.5  # crawler.rendering.renderer.IDLE_S
SCROLL_JS = """return (() => {
  window.scrollBy(0, Math.max(window.innerHeight - 40, 100));
  const h = Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0);
  return [Math.ceil(window.scrollY + window.innerHeight), h];
})()"""
HEIGHT_JS = "return Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)"
ANCHORS_JS = "return Array.from(document.querySelectorAll('a[href]'), a => a.href)"


class Network:
    """Requests in flight, from the performance log's Network events."""

    def __init__(self, driver: webdriver.Chrome) -> None:
        self.driver = driver
        self.open: set[str] = set()
        self.last = time.monotonic()

    def poll(self) -> None:
        for entry in self.driver.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            method, params = msg.get("method", ""), msg.get("params", {})
            if method == "Network.requestWillBeSent":
                if params.get("request", {}).get("url", "").startswith("http"):
                    self.open.add(params["requestId"])
                    self.last = time.monotonic()
            elif method in ("Network.loadingFinished", "Network.loadingFailed"):
                self.open.discard(params.get("requestId"))
                self.last = time.monotonic()

    def settle(self, deadline: float) -> None:
        since = time.monotonic()
        while time.monotonic() < deadline:
            self.poll()
            if not self.open and time.monotonic() - max(self.last, since) >= IDLE_S:
                return
            time.sleep(0.05)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--min-wait", type=float, default=0.5)
    ap.add_argument("--max-scrolls", type=int, default=40)
    ap.add_argument("urls", nargs="+")
    args = ap.parse_args()
    profile = tempfile.mkdtemp(prefix="peer-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--mute-audio",
        "--hide-scrollbars",
        "--window-size=1280,900",
        f"--user-data-dir={profile}",
        f"--proxy-server=http://{args.proxy}",
        "--proxy-bypass-list=<-loopback>",
    ):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver")))
    failed = 0
    try:
        driver.set_page_load_timeout(args.timeout)
        net = Network(driver)
        for url in args.urls:
            start = time.monotonic()
            deadline = start + args.timeout
            loaded = False
            for attempt in (1, 2):  # as the crawler tries a hung or crashed tab's page twice
                try:
                    driver.get(url)
                    loaded = True
                    break
                except Exception as exc:
                    print(f"peer: {url} (attempt {attempt}): {exc}", file=sys.stderr)
                    start = time.monotonic()
                    deadline = start + args.timeout
            if not loaded:
                failed += 1
                continue
            net.settle(deadline)
            dwell = min(start + args.min_wait, deadline) - time.monotonic()
            if dwell > 0:
                time.sleep(dwell)
            for _ in range(args.max_scrolls):
                if time.monotonic() >= deadline:
                    break
                bottom, height = driver.execute_script(SCROLL_JS)
                net.settle(deadline)
                if bottom >= height and driver.execute_script(HEIGHT_JS) <= height:
                    break
            net.settle(deadline)
            driver.execute_script("window.scrollTo(0, 0)")
            driver.execute_script(ANCHORS_JS)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    if failed:
        print(f"peer: {failed} page(s) failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
