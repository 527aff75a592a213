"""The crawl benchmarks' site and URL sets: nginx serving make_site.py's hosts on loopback,
the crawler's command line, and the URL sets read from WARCs and crawl.log.

Why a module of its own: ``bench/run crawl`` (spec.py) and bench/scale/crawl_processes.py crawl
the same site the same way; one home for how it is served and how URL sets are compared.
"""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PY = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports below Linux's ephemeral range (32768+).

    Every socket stays bound until all are chosen: free_port in a loop can return the same port
    twice, and nginx then serves two hosts' roots on one port, one host silently missing from
    the site. Below the ephemeral range, because the crawlers' own outgoing connections take
    ephemeral ports and one of them can take a chosen port before nginx binds it.
    """
    socks: list[socket.socket] = []
    try:
        for port in random.sample(range(10000, 32000), 4 * count):
            if len(socks) == count:
                break
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            socks.append(s)
        if len(socks) < count:
            raise BenchFailed(f"benchmark FAILED: {count} free ports not found")
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def start_nginx(root: Path, site: Path, ports: list[int]) -> tuple[subprocess.Popen, list[int]]:
    servers = "".join(
        f"server {{ listen 127.0.0.1:{p}; root {site / f'h{h}'}; index index.html; }}\n"
        for h, p in enumerate(ports)
    )
    conf = root / "nginx.conf"
    conf.write_text(
        "worker_processes 1; pid nginx.pid; error_log error.log warn; user root;\n"
        "events { worker_connections 1024; }\n"
        "http { access_log off; include /etc/nginx/mime.types; sendfile on; keepalive_requests 100000;\n"
        f"client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp; uwsgi_temp_path tmp; scgi_temp_path tmp;\n{servers}}}\n"
    )
    (root / "tmp").mkdir(exist_ok=True)
    proc = subprocess.Popen(["nginx", "-p", str(root), "-c", str(conf), "-g", "daemon off;"])
    for p in ports:
        for _ in range(100):
            if proc.poll() is not None:
                raise BenchFailed(f"benchmark FAILED: nginx exited {proc.returncode} (see {root})")
            try:
                socket.create_connection(("127.0.0.1", p), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            proc.kill()
            raise BenchFailed(f"benchmark FAILED: nginx does not listen on port {p}")
    return proc, ports


class BenchFailed(SystemExit):
    """A peer that failed, did not complete, or covered other URLs: the figures mean nothing."""


def coverage_problems(sets: dict[str, set[str]], ref_name: str, expected: int) -> list[str]:
    """Why the peers' URL sets cannot be compared (empty when every set equals the reference's
    and the reference has the ``expected`` number of URLs)."""
    ref = sets[ref_name]
    problems = []
    if len(ref) != expected:
        problems.append(f"{ref_name} fetched {len(ref)} URLs, the site has {expected}")
    for name, got in sets.items():
        if name != ref_name and got != ref:
            only_here, only_ref = sorted(got - ref), sorted(ref - got)
            problems.append(
                f"{name}: {len(got & ref)} URLs common with {ref_name}, {len(only_here)} only"
                f" here {only_here[:3]}, {len(only_ref)} only in {ref_name} {only_ref[:3]}"
            )
    return problems


def hf_urls(out: Path) -> set[str]:
    urls = set()
    for line in (out / "logs" / "crawl.log").read_text().splitlines():
        f = line.split()
        if len(f) >= 12 and int(f[1]) > 0 and f[4] != "P":
            urls.add(f[3])
    return urls


def warc_urls(path: Path) -> set[str]:
    urls = set()
    with path.open("rb") as fh:
        for rec in ArchiveIterator(fh):
            if rec.rec_type == "response":
                urls.add(rec.rec_headers.get_header("WARC-Target-URI"))
    return urls


def norm(urls: set[str]) -> set[str]:
    """URLs as compared between the tools: robots.txt and the seed hosts' /sitemap.xml (asked
    for by ours only, both 404 here; the extra fetches stay in our timing) left out."""
    return {
        u.removesuffix("index.html")
        for u in urls
        if not u.endswith(("/robots.txt", "/sitemap.xml"))
    }


HF_COMMON = [
    # no browser: `crawl --seed` takes the selective template, which renders its seeds
    "--render",
    "none",
    "--no-politeness",
    "--ignore-robots",
    "--allow-private",
    "--max-hops",
    "100",
    "--progress-interval",
    "5",
]
