"""One job crawled by host-partitioned processes (``--processes 2``): same coverage as one
process, every URL captured once, valid WARCs, right per-domain summary, and a kill -9 of the
parent mid-crawl followed by a restart that captures nothing twice.

The site: four virtual hosts on one loopback port, pages linking across hosts (so URLs are
handed off between partitions), with images and a stylesheet whose ``url()`` names an image.
``www.other.test`` has a domain budget (so it is partitioned by domain), the ``site.test``
hosts none (partitioned by host).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.budget import Budgets
from crawler.jobspec import from_dict
from crawler.partitioning.handoff import owner_of, seed_assignment
from tests.support.crawl import FAST_TEMPLATE, ORACLE_BIN, REPO

HOSTS = ["a.site.test", "b.site.test", "c.site.test", "www.other.test"]
PAGES = 14


class Handler(BaseHTTPRequestHandler):
    delay = 0.0

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        host = (self.headers.get("Host") or "").split(":")[0]
        port = self.server.server_address[1]
        if host not in HOSTS:
            self.send_error(404)
            return
        h = HOSTS.index(host)
        path = self.path
        if self.delay:
            time.sleep(self.delay)
        if path == "/style.css":
            self._send(b"body { background: url(/bg.png) }", "text/css")
        elif path.endswith(".png"):
            self._send(b"\x89PNG\r\n\x1a\n" + path.encode() + host.encode(), "image/png")
        elif path == "/" or path.startswith("/p"):
            i = 0 if path == "/" else int(path[2:])
            if i >= PAGES:
                self.send_error(404)
                return
            other = HOSTS[(h + 1 + i) % len(HOSTS)]
            links = [f"/p{j}" for j in (2 * i + 1, 2 * i + 2) if j < PAGES]
            links.append(f"http://{other}:{port}/p{(i + 3) % PAGES}")
            body = (
                "<html><head><link rel=stylesheet href=/style.css></head><body>"
                + "".join(f'<a href="{u}">x</a>' for u in links)
                + f'<img src="/img{i % 3}.png"></body></html>'
            )
            self._send(body.encode(), "text/html")
        else:
            self.send_error(404)

    def _send(self, body: bytes, ctype: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadingHTTPServer]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def job_for(srv: ThreadingHTTPServer, job_id: int, **template: object) -> dict:
    port = srv.server_address[1]
    return {
        "job_id": job_id,
        "harvest_id": 3,
        "seeds": [f"http://a.site.test:{port}/", f"http://www.other.test:{port}/"],
        "template": {**FAST_TEMPLATE, "obey_robots": False, **template},
        "resolve": {h: "127.0.0.1" for h in HOSTS},
        "domains": [{"domain": "other.test", "config_id": 9, "max_objects": 10000}],
        "warc_prefix": f"{job_id}-3",
    }


def fetched(lines: list[str]) -> list[str]:
    """URLs fetched (positive status, not a prerequisite) in crawl.log lines."""
    out = []
    for line in lines:
        f = line.split()
        if len(f) == 12 and int(f[1]) > 0 and f[4] != "P":
            out.append(f[3])
    return out


def crawl_cmd(job_path: Path, out: Path, processes: int) -> list[str]:
    return [
        sys.executable, "-m", "crawler", "--job", str(job_path), "--out", str(out),
        "--processes", str(processes), "--progress-interval", "0.5",
    ]  # fmt: skip


def run(job: dict, out: Path, processes: int) -> subprocess.CompletedProcess[str]:
    job_path = out.parent / f"{out.name}-job.json"
    job_path.write_text(json.dumps(job))
    proc = subprocess.run(
        crawl_cmd(job_path, out, processes), capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    return proc


def captures(out: Path) -> Counter[str]:
    """Target URI of every response record in the job's data WARCs."""
    seen: Counter[str] = Counter()
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        if "metadata" in path.name:
            continue
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type in ("response", "revisit"):
                    seen[rec.rec_headers.get_header("WARC-Target-URI")] += 1
    return seen


def warcio_check(out: Path) -> None:
    warcs = [str(p) for p in (out / "warcs").glob("*.warc.gz")]
    assert warcs
    proc = subprocess.run([str(ORACLE_BIN / "warcio"), "check", *warcs], capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def expected_urls(port: int) -> set[str]:
    urls = {f"http://a.site.test:{port}/", f"http://www.other.test:{port}/"}  # the seeds
    for host in HOSTS:
        base = f"http://{host}:{port}"
        urls |= {f"{base}/style.css", f"{base}/bg.png"}
        urls |= {f"{base}/p{i}" for i in range(PAGES)}
        urls |= {f"{base}/img{i}.png" for i in range(3)}
    return urls


def test_two_processes_same_coverage_as_one(server: ThreadingHTTPServer, tmp_path: Path) -> None:
    port = server.server_address[1]
    run(job_for(server, 41), tmp_path / "x1", 1)
    # the partitions keep at most 2 requests in memory, the rest parked in their frontiers
    # (crawler/frontier.py): a child with parked URLs is not idle, the job ends when none is left
    proc = run(job_for(server, 42, max_queued_requests=2), tmp_path / "x2", 2)
    one, two = captures(tmp_path / "x1"), captures(tmp_path / "x2")
    assert set(one) == expected_urls(port)
    assert set(two) == set(one)
    assert max(two.values()) == 1, [u for u, n in two.items() if n > 1]
    warcio_check(tmp_path / "x2")

    # both partitions crawled, and URLs crossed between them
    parts = tmp_path / "x2" / "state" / "partitions"
    assert all((parts / f"inbox-{i}.jsonl").stat().st_size > 0 for i in range(2))
    names = [p.name for p in (tmp_path / "x2" / "warcs").glob("42-3-*.warc.gz")]
    assert any("-p0" in n for n in names) and any("-p1" in n for n in names)

    s1 = json.loads((tmp_path / "x1" / "summary.json").read_text())
    s2 = json.loads((tmp_path / "x2" / "summary.json").read_text())
    assert s2["status"] == "complete" and s2["urls"] == s1["urls"] == len(one)
    assert s2["bytes"] == s1["bytes"]
    assert s2["domains"] == s1["domains"]
    assert s2["domains"]["other.test"]["config_id"] == 9
    assert s2["metadata_warc"] == "42-metadata-1.warc.gz"
    assert sorted(s2["warcs"]) == sorted(names)

    # merged crawl.log: one line per URL, in time order; reports from the merged state
    lines = (tmp_path / "x2" / "logs" / "crawl.log").read_text().splitlines()
    assert Counter(line.split()[3] for line in lines) == Counter(
        line.split()[3]
        for line in (tmp_path / "x1" / "logs" / "crawl.log").read_text().splitlines()
    )
    assert [line[:24] for line in lines] == sorted(line[:24] for line in lines)
    hosts_report = (tmp_path / "x2" / "reports" / "hosts-report.txt").read_text()
    assert all(h in hosts_report for h in HOSTS)
    progress = [line for line in proc.stdout.splitlines() if line.startswith("PROGRESS ")]
    assert progress and "processes: p0:" in progress[-1]


def test_partition_key_keeps_a_limited_domain_together() -> None:
    spec = from_dict(
        {
            "job_id": 1,
            "seeds": ["http://a.x.test/"],
            "template": {},
            "domains": [{"domain": "lim.test", "max_objects": 5}],
        }
    )
    budgets = Budgets(spec)
    owners = {owner_of(f"http://h{i}.lim.test/", budgets, 4) for i in range(40)}
    assert len(owners) == 1  # one process counts all of lim.test's fetches
    spread = {owner_of(f"http://h{i}.free.test/", budgets, 4) for i in range(40)}
    assert len(spread) > 1  # an unlimited domain's hosts are spread


def test_seed_hosts_are_dealt_evenly_over_the_partitions() -> None:
    # 4 loopback ports: CRC-32 alone can put 3 of them in one partition of 2 (it did in the bench)
    seeds = [f"http://127.0.0.1:{port}/" for port in (41001, 41002, 41003, 41004)]
    seeds += ["http://a.lim.test/", "http://b.lim.test/x", "http://c.lim.test/y"]
    spec = from_dict(
        {
            "job_id": 1,
            "seeds": seeds,
            "template": {},
            "domains": [{"domain": "lim.test", "max_objects": 5}],
        }
    )
    budgets = Budgets(spec)
    pinned = seed_assignment(spec.seeds, budgets, 2)
    # the limited domain (3 seeds) is one key; the 4 hosts fill the other partition first
    assert pinned["lim.test"] == 0
    assert sorted(pinned[f"127.0.0.1:{p}"] for p in (41001, 41002, 41003, 41004)) == [0, 1, 1, 1]
    per_partition = [0, 0]
    for seed in seeds:
        per_partition[owner_of(seed, budgets, 2, pinned)] += 1
    assert per_partition == [4, 3]
    # the same seeds give the same assignment in every child and on every restart
    assert seed_assignment(list(reversed(spec.seeds)), budgets, 2) == pinned
    # a key no seed has goes by the hash, whatever the assignment
    other = "http://elsewhere.test/"
    assert owner_of(other, budgets, 2, pinned) == owner_of(other, budgets, 2)
    # without seed weights the 4 hosts alone split 2-2
    hosts_only = seed_assignment(seeds[:4], budgets, 2)
    assert sorted(hosts_only.values()) == [0, 0, 1, 1]


def test_kill_parent_then_restart_captures_nothing_twice(
    server: ThreadingHTTPServer, tmp_path: Path
) -> None:
    port = server.server_address[1]
    out = tmp_path / "job"
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job_for(server, 43, connections_per_host=1)))
    Handler.delay = 0.05  # slow enough to be killed mid-crawl
    try:
        proc = subprocess.Popen(crawl_cmd(job_path, out, 2), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=REPO)  # fmt: skip
        deadline = time.monotonic() + 60
        log_files = [out / "state" / f"part-{i}" / "logs" / "crawl.log" for i in range(2)]
        while time.monotonic() < deadline:
            done = sum(len(p.read_text().splitlines()) for p in log_files if p.exists())
            if done >= 25:
                break
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        Handler.delay = 0.0
    assert not (out / "summary.json").exists()
    before = {u for p in log_files for u in fetched(p.read_text().split("\n")[:-1])}
    assert 0 < len(before) < len(expected_urls(port)), "killed too late to prove a resume"
    # the children die with their parent (PR_SET_PDEATHSIG), before the restart
    time.sleep(0.5)
    run(json.loads(job_path.read_text()), out, 2)
    got = captures(out)
    assert set(got) == expected_urls(port)
    # nothing completed before the kill was fetched again; every URL is in crawl.log once
    logged = Counter(fetched((out / "logs" / "crawl.log").read_text().splitlines()))
    assert set(logged) == expected_urls(port) and max(logged.values()) == 1
    twice = {u for u, n in got.items() if n > 1}
    # a response written while its page was still being parsed at the kill (not yet done in
    # the frontier) is fetched again, as in a one-process resume; never a completed one
    assert not twice & before, sorted(twice & before)
    warcio_check(out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["urls"] == len(got)
