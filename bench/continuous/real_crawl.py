"""Adaptive vs fixed-interval revisiting through the real crawler, on a loopback site, fake clock.

Why besides the simulation: the simulation runs only the policy's transition; here every fetch
goes through the crawler child process (job spec with the due URLs, dedup index from the state,
WARCs, crawl.log read back by ``read_run``), and the change verdicts come from the digests of the
WARC records, as in ``run_batch``. The URL state lives in memory (no PostgreSQL needed): the
same ``apply_visit`` transition ``run_batch`` applies after its database read.

The site: N pages on H hosts (one loopback server, ``resolve`` maps the host names); each page
changes as a Poisson process with a known mean interval (log-uniform 1 h - 7 days, 15% never),
its body is a function of the simulated clock, and the server records which version it served.
Every ``step`` simulated hours one bounded run fetches what is due. The fixed-interval peer is
given exactly the adaptive side's number of fetches, spread round-robin over every URL.
Printed: changes captured (a fetch that saw a version different from the URL's previous fetch)
over the changes that happened, both sides, and the ratio.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from crawler.launch import crawl_in_subprocess
from harvest.continuous.noise import NoiseFilter
from harvest.continuous.policy import HOUR, RevisitPolicy
from harvest.continuous.run import FORCED_TEMPLATE, write_dedup_index
from harvest.continuous.runread import read_run
from harvest.continuous.urlstate import UrlState, apply_visit, new_state

T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
FAST = {
    "delay_factor": 0.0,
    "min_delay_ms": 0,
    "max_delay_ms": 0,
    "connections_per_host": 4,
    "retries": 1,
    "download_timeout_s": 10,
    "obey_robots": False,
}


class Site:
    """Pages whose version at simulated time t is the number of change events up to t."""

    def __init__(self, n_pages: int, n_hosts: int, days: float, seed: int) -> None:
        rng = random.Random(seed)
        self.hosts = [f"h{i:02d}.test" for i in range(n_hosts)]
        self.paths = [f"/p{i}" for i in range(n_pages)]
        self.host_of = {p: self.hosts[i % n_hosts] for i, p in enumerate(self.paths)}
        end = days * 86400
        self.changes: dict[str, list[float]] = {}
        for p in self.paths:
            times: list[float] = []
            if rng.random() >= 0.15:
                mean = math.exp(rng.uniform(math.log(HOUR), math.log(7 * 86400)))
                t = rng.expovariate(1 / mean)
                while t <= end:
                    times.append(t)
                    t += rng.expovariate(1 / mean)
            self.changes[p] = times
        self.clock_s = 0.0
        self.served: list[tuple[str, int]] = []
        self.lock = threading.Lock()

    def version(self, path: str) -> int:
        return sum(1 for t in self.changes.get(path, []) if t <= self.clock_s)

    def serve(self) -> ThreadingHTTPServer:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path
                if path not in site.changes:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                v = site.version(path)
                with site.lock:
                    site.served.append((path, v))
                data = f"<html><body><h1>{path}</h1><p>version {v}</p></body></html>".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


def _crawl(
    site: Site, port: int, paths: list[str], states: dict[str, UrlState], work: Path, n: int
) -> list:
    """One bounded run of the real crawler over ``paths``; returns read_run's visits."""
    out = work / f"run{n:04d}"
    out.mkdir(parents=True)
    urls = [f"http://{site.host_of[p]}:{port}{p}" for p in paths]
    write_dedup_index([states[u] for u in urls if u in states], out / "dedup.tsv")
    job = {
        "job_id": n + 1,
        "seeds": urls,
        "template": {**FAST, **FORCED_TEMPLATE},
        "resolve": {h: "127.0.0.1" for h in site.hosts},
        "warc_prefix": f"{n + 1}-1",
        "dedup_index": str(out / "dedup.tsv"),
        "max_running_time_s": 600,
    }
    (out / "job.json").write_text(json.dumps(job))
    # raises CrawlFailed on a non-zero exit; a run cut short would skew the comparison too
    summary = crawl_in_subprocess(out / "job.json", out / "crawl")
    if summary.status != "complete":
        raise SystemExit(f"benchmark FAILED: crawl {out} ended {summary.status!r}")
    return read_run(out / "crawl", NoiseFilter([])).visits


def captured(served: list[tuple[str, int]]) -> tuple[int, int]:
    """(fetches, changes captured) from the server's log of versions served."""
    last: dict[str, int] = {}
    caught = 0
    for path, v in served:
        if path in last and last[path] != v:
            caught += 1
        last[path] = v
    return len(served), caught


def run_adaptive(site: Site, port: int, days: float, step_h: float, work: Path) -> int:
    policy = RevisitPolicy(min_wait_s=step_h * HOUR)
    states: dict[str, UrlState] = {}
    for p in site.paths:
        url = f"http://{site.host_of[p]}:{port}{p}"
        states[url] = new_state(url, site.host_of[p], url, 0, T0, policy)
    steps = int(days * 24 / step_h)
    for n in range(steps):
        now = T0 + dt.timedelta(hours=n * step_h)
        site.clock_s = n * step_h * HOUR
        due = [u for u, s in states.items() if s.next_due <= now]
        if not due:
            continue
        paths = ["/" + u.split("/", 3)[3] for u in due]
        for visit in _crawl(site, port, paths, states, work, n):
            visit.fetched_at = now
            if visit.url in states:
                states[visit.url], _ = apply_visit(states[visit.url], visit, policy)
    return steps


def run_fixed(site: Site, port: int, steps: int, step_h: float, fetches: int, work: Path) -> None:
    per_step = fetches / steps
    order = list(site.paths)
    pos = 0.0
    for n in range(steps):
        site.clock_s = n * step_h * HOUR
        start, pos = int(pos), pos + per_step
        paths = [order[i % len(order)] for i in range(start, int(pos))]
        if paths:
            _crawl(site, port, paths, {}, work, 10_000 + n)


def measure(n_pages: int, n_hosts: int, days: float, step_h: float, seed: int) -> None:
    site = Site(n_pages, n_hosts, days, seed)
    server = site.serve()
    port = server.server_address[1]
    end = days * 86400
    total = sum(sum(1 for t in ts if t <= end - step_h * HOUR) for ts in site.changes.values())
    try:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.time()
            steps = run_adaptive(site, port, days, step_h, Path(tmp) / "adaptive")
            a_fetches, a_caught = captured(site.served)
            adaptive_s = time.time() - started
            site.served = []
            started = time.time()
            run_fixed(site, port, steps, step_h, a_fetches, Path(tmp) / "fixed")
            f_fetches, f_caught = captured(site.served)
            fixed_s = time.time() - started
    finally:
        server.shutdown()
    print(
        f"real crawler: {n_pages} URLs on {n_hosts} hosts, {days:g} simulated days, "
        f"a run every {step_h:g} h ({steps} runs per side), {total} changes happened"
    )
    print(
        f"{'adaptive':>17}: {a_fetches} fetches, {a_caught} changes captured "
        f"({a_caught / max(total, 1):.1%}), {adaptive_s:.0f} s"
    )
    print(
        f"{'fixed interval':>17}: {f_fetches} fetches, {f_caught} changes captured "
        f"({f_caught / max(total, 1):.1%}), {fixed_s:.0f} s"
    )
    print(f"{'ratio':>17}: {a_caught / max(f_caught, 1):.2f}x the changes for the same fetches")
