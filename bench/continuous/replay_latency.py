"""Fetch-to-replayable on the loopback: a bounded continuous run, its live index, pywb.

Does what ``run_batch`` does after its database query (job spec with the due URLs, the crawler
as a child process with the production politeness defaults and the run's time bound, each data
WARC into the live collection by a ``LiveWatcher`` as soon as it closes — ``--warc-size`` small
so files close during the run) and, *while the crawl runs*, asks a running pywb (test oracle
venv) for every capture already in crawl.log, exactly (``id_`` at its timestamp). The latency
of a capture is the time from its fetch (crawl.log) to the first 200 from pywb.
"""

from __future__ import annotations

import datetime as dt
import json
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from crawler.launch import crawl_in_subprocess
from harvest.continuous.run import FORCED_TEMPLATE
from harvestflow.contracts.summary import JobSummary
from indexing.nrt import LiveWatcher, pywb_config

REPO = Path(__file__).resolve().parents[2]
WAYBACK = REPO / ".oracle-venv" / "bin" / "wayback"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = f"<html><body><h1>{self.headers['Host']}{self.path}</h1>{time.time_ns()}</body>"
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            resp.read()
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def measure(n_pages: int, n_hosts: int, warc_size: int = 20_000) -> None:
    if not WAYBACK.exists():
        print("replay: pywb oracle missing (bash scripts/setup-oracles.sh); skipped")
        return
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    hosts = [f"h{i:02d}.test" for i in range(n_hosts)]
    seeds = [f"http://{hosts[i % n_hosts]}:{port}/p{i}" for i in range(n_pages)]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        live = base / "live"
        pywb_config(live)
        wport = _free_port()
        pywb = subprocess.Popen(
            [str(WAYBACK), "-p", str(wport), "-b", "127.0.0.1"],
            cwd=live,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            job = {
                "job_id": 1,
                "seeds": seeds,
                # politeness: settings [crawler] defaults; small files close during the run
                "template": {**FORCED_TEMPLATE, "warc_max_size": warc_size},
                "resolve": {h: "127.0.0.1" for h in hosts},
                "warc_prefix": "1-1",
                "max_running_time_s": 240,
            }
            job_path = base / "job.json"
            job_path.write_text(json.dumps(job))
            started = time.time()
            watcher = LiveWatcher(base / "crawl" / "warcs", live, interval_s=2.0).start()
            fetched: dict[str, dt.datetime] = {}
            latencies: list[float] = []
            done: set[str] = set()
            crawl_done = threading.Event()
            box: dict[str, object] = {}

            def run_crawl() -> None:
                try:
                    box["summary"] = crawl_in_subprocess(job_path, base / "crawl")
                except Exception as exc:  # reported by the main thread
                    box["error"] = exc
                finally:
                    crawl_done.set()

            threading.Thread(target=run_crawl, daemon=True).start()
            log_path = base / "crawl" / "logs" / "crawl.log"
            deadline = None
            while True:
                if log_path.exists():
                    for line in log_path.read_text().splitlines():
                        f = line.split()
                        if len(f) > 8 and f[1] == "200" and f[4] == "-" and f[3] not in fetched:
                            fetched[f[3]] = dt.datetime.strptime(
                                f[8][:17], "%Y%m%d%H%M%S%f"
                            ).replace(tzinfo=dt.UTC)
                for url, when in list(fetched.items()):
                    if url in done:
                        continue
                    ts = when.strftime("%Y%m%d%H%M%S")
                    if _status(f"http://127.0.0.1:{wport}/live/{ts}id_/{url}") == 200:
                        latencies.append((dt.datetime.now(dt.UTC) - when).total_seconds())
                        done.add(url)
                if pywb.poll() is not None:
                    raise SystemExit(f"benchmark FAILED: pywb exited {pywb.returncode}")
                if crawl_done.is_set():
                    if "error" in box:
                        raise SystemExit(f"benchmark FAILED: the crawl failed: {box['error']}")
                    if deadline is None:
                        crawled = time.time()
                        watcher.stop()  # the last file, closed when the crawl ends
                        deadline = time.time() + 120
                    if len(done) == len(fetched) or time.time() > deadline:
                        break
                time.sleep(0.5)
            summary = box["summary"]
            if not isinstance(summary, JobSummary) or summary.status != "complete":
                raise SystemExit(f"benchmark FAILED: the crawl did not complete: {summary}")
            during = sum(1 for t in watcher.indexed_at.values() if t.timestamp() < crawled)
            pending = set(fetched) - done
        finally:
            pywb.terminate()
            pywb.wait(timeout=10)
            server.shutdown()
    print(
        f"replay: {len(fetched)} pages on {n_hosts} hosts, crawl {crawled - started:.0f} s "
        f"({summary.status}), {len(watcher.indexed_at)} WARCs of {warc_size} B "
        f"({during} made live before the crawl ended), "
        f"{len(latencies)} replayed, {len(pending)} never"
    )
    if latencies:
        print(
            f"replay: fetch-to-replayable median {statistics.median(latencies):.0f} s, "
            f"max {max(latencies):.0f} s (target <= 300 s)"
        )
