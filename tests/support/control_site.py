"""A slow loopback site with an endless trap, and the steps of a live-control test: a real job
of the demo definition pointed at it, the crawler child crawling it, the CLI, the answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from warcio.archiveiterator import ArchiveIterator

from app.demo.definition import create_demo_definition
from tests.support.crawl import ORACLE_BIN, REPO

PAUSE_S = 3.0  # how long the paused crawl is watched for requests
DELAY_S = 0.2  # every page of the slow site takes this long


class SlowSite:
    """/ links /p/1 and /t/1; /p/N links /p/N+1 and a trap page; /t/X links /t/Xa and /t/Xb
    (an endless, doubling trap). Every page answers after DELAY_S; each request is recorded."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.hosts: list[str] = []  # the Host header of each request, in order
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with site.lock:
                    site.requests.append(self.path)
                    site.hosts.append(self.headers.get("Host", "").split(":")[0])
                if self.path == "/robots.txt":
                    body, status = b"User-agent: *\nDisallow:\n", 200
                else:
                    time.sleep(DELAY_S)
                    body, status = site.page(self.path).encode(), 200
                self.send_response(status)
                self.send_header("Content-Type", "text/html" if self.path != "/robots.txt"
                                 else "text/plain")  # fmt: skip
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def page(path: str) -> str:
        if path.startswith("/p/"):
            n = int(path[3:] or 0)
            links = [f"/p/{n + 1}", f"/t/{n}"]
        elif path.startswith("/t/"):
            links = [path + "a", path + "b"]
        else:
            links = ["/p/1", "/t/0"]
        return "<html><body>" + " ".join(f'<a href="{u}">{u}</a>' for u in links) + "</body></html>"

    def count(self, pred: Callable[[str], bool] = lambda p: True) -> int:
        with self.lock:
            return sum(1 for p in self.requests if pred(p))

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_until(what: str, cond: Callable[[], bool], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"waited {timeout}s for: {what}"
        time.sleep(0.1)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", "jobs", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
        env=env,
    )


def prepared_job(engine: sa.Engine, site: SlowSite, tmp_path: Path) -> tuple[int, Path]:
    """A real job of the demo definition, its spec pointed at the slow site."""
    from harvest import pipeline as p

    hid = create_demo_definition(site.port, engine=engine)
    job_id = p.generate_jobs(hid, datetime(2026, 11, 22, 3, tzinfo=UTC), engine=engine)[0]
    job_json = Path(p.prepare_job(job_id, tmp_path, engine=engine))
    spec = json.loads(job_json.read_text())
    assert spec["job_control"] is True  # what build_spec gives every job of the harvest DB
    spec["seeds"] = [f"http://www.example-a.test:{site.port}/"]
    spec["template"].update(
        max_hops=500, connections_per_host=1, concurrent_requests=1, min_delay_ms=0,
        delay_factor=0, max_delay_ms=0, retries=0,
    )  # fmt: skip
    spec["job_control_interval_s"] = 0.5
    job_json.write_text(json.dumps(spec))
    return job_id, job_json


def stop_from_cli(job_id: int, proc: subprocess.Popen[bytes], output: Path) -> None:
    """`harvestflow jobs stop` as carol, waiting for it: answered "stopped by operator", and the
    crawler (``proc``, its output in ``output``) exits 0."""
    stopped = cli("stop", str(job_id), "--user", "carol", "--wait", "90")
    print("stop:", stopped.stdout, stopped.stderr)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "stopped by operator" in stopped.stdout
    assert proc.wait(timeout=120) == 0, output.read_text()[-3000:]


def crawl_log_lines(out: Path) -> list[list[str]]:
    path = out / "logs" / "crawl.log"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def checked_actions_log(out: Path) -> list[dict[str, Any]]:
    """The lines of operator-actions.log in the job's one metadata WARC, after every WARC of
    the job passed ``warcio check``."""
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    check = subprocess.run(
        [str(ORACLE_BIN / "warcio"), "check", "-v", *map(str, warcs)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    (meta,) = [w for w in warcs if "metadata" in w.name]
    with meta.open("rb") as fh:
        return [
            json.loads(line)
            for r in ArchiveIterator(fh)
            if r.rec_type == "metadata"
            and "operator-actions.log" in r.rec_headers.get_header("WARC-Target-URI")
            for line in r.content_stream().read().decode().splitlines()
        ]


class FlatSite(SlowSite):
    """/ links /p/1 … /p/PAGES (no other links): a finite crawl whose frontier holds many URLs
    at once, so the engine hands a host's slot more requests than its politeness delay lets
    out (they wait in the downloader's queue for their turn)."""

    # more than the crawl of tests/crawler/test_control_gates.py hands its downloader (8) once
    # the 3 it waits for are fetched: requests still wait for their turn when it pauses
    PAGES = 12

    @staticmethod
    def page(path: str) -> str:
        links = [f"/p/{n}" for n in range(1, FlatSite.PAGES + 1)] if path == "/" else ["/"]
        return "<html><body>" + " ".join(f'<a href="{u}">{u}</a>' for u in links) + "</body></html>"


@contextmanager
def crawler_process(job_json: Path, out: Path, log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The crawler child crawling ``job_json`` into ``out`` (output in ``log_path``); killed
    on the way out if it is still running."""
    with log_path.open("w") as log_fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "crawler", "--job", str(job_json), "--out", str(out),
             "--progress-interval", "1"],
            stdout=log_fh, stderr=subprocess.STDOUT, cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def ends_cleanly(proc: subprocess.Popen[bytes], log_path: Path, timeout: float = 120) -> None:
    """The crawler exits 0 within ``timeout`` (only its own end can end these crawls)."""
    assert proc.wait(timeout=timeout) == 0, log_path.read_text()[-3000:]
