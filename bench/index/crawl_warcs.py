"""Crawl a synthetic site on loopback with our crawler into ~N GB of gzipped WARCs.

Why: the indexing benchmark must run on WARCs *from our crawler*, at least 1 GB of them, and the
bundled sample site is far too small. Here a threaded HTTP server on 127.0.0.1 serves four
virtual hosts of generated pages (links in a 12-ary tree), each embedding an image, every 25th
linking a PDF, with the BnF's object mix (about 60 % text by count on the page side, mean
object ~38 kB; bodies are random so gzip cannot shrink them much); then ``python -m crawler``
(the production crawler, 2 host-partitioned processes, politeness off, 100 MB WARC files) crawls
it. The WARCs hold everything our crawler writes: warcinfo, request + response + metadata per
URL, DNS-less loopback fetches, robots.txt 404s. Usage:

    .venv/bin/python bench/index/crawl_warcs.py OUT_DIR [--gb 1.0]

Prints the WARC files (``OUT_DIR/crawl/warcs/*.warc.gz``); reuses them when they are there.
"""

from __future__ import annotations

import argparse
import http.server
import json
import random
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOSTS = [f"h{i}.idxbench.test" for i in range(4)]
FANOUT = 12
WORDS = [f"{random.Random(i).getrandbits(24):06x}" for i in range(3000)]


def _page(host: str, n: int, pages: int) -> bytes:
    rnd = random.Random(f"{host}/{n}")
    words = " ".join(rnd.choice(WORDS) for _ in range(int(rnd.lognormvariate(8.0, 0.8))))
    links = "".join(
        f'<a href="/p/{k}.html">{k}</a> '
        for k in range(n * FANOUT + 1, n * FANOUT + FANOUT + 1)
        if k < pages
    )
    pdf = f'<a href="/d/{n}.pdf">pdf</a>' if n % 25 == 0 else ""
    return (
        f'<html><head><title>{host} {n}</title></head><body><img src="/i/{n}.jpg">'
        f"<p>{words}</p>{links}{pdf}</body></html>"
    ).encode()


def _blob(key: str, mu: float) -> bytes:
    rnd = random.Random(key)
    return rnd.randbytes(int(rnd.lognormvariate(mu, 0.9)))


def make_handler(pages: int) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            host = (self.headers.get("Host") or "").split(":")[0]
            path = self.path.split("?")[0]
            body: bytes | None = None
            mime = "text/html; charset=utf-8"
            try:
                if path in ("/", "/index.html"):
                    body = _page(host, 0, pages)
                elif path.startswith("/p/") and path.endswith(".html"):
                    n = int(path[3:-5])
                    body = _page(host, n, pages) if n < pages else None
                elif path.startswith("/i/") and path.endswith(".jpg"):
                    body, mime = _blob(f"{host}{path}", 10.1), "image/jpeg"
                elif path.startswith("/d/") and path.endswith(".pdf"):
                    body, mime = _blob(f"{host}{path}", 11.0), "application/pdf"
            except ValueError:
                body = None
            if body is None:
                body, status, mime = b"not found", 404, "text/plain"
            else:
                status = 200
            self.send_response(status)
            self.send_header("Content-Type", mime)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def crawl(out: Path, gb: float) -> list[Path]:
    warc_dir = out / "crawl" / "warcs"
    done = sorted(warc_dir.glob("*.warc.gz")) if warc_dir.is_dir() else []
    if done and (out / "crawl" / "summary.json").exists():
        return done
    # objects: a page (mean ~25 kB of text) and its image (~37 kB); a PDF every 25 pages
    pages = max(50, int(gb * 1e9 / 64_000 / len(HOSTS)))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(pages))
    server.daemon_threads = True
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        job = {
            "job_id": 101,
            "harvest_id": 7,
            "seeds": [f"http://{h}:{port}/" for h in HOSTS],
            "template": {
                "delay_factor": 0.0,
                "min_delay_ms": 0,
                "max_delay_ms": 0,
                "connections_per_host": 4,
                "retries": 1,
                "download_timeout_s": 30,
                "obey_robots": True,
                "scope": "host",
                "max_hops": 40,
                "warc_max_size": 100_000_000,
                "allow_private_addresses": True,
                "processes": 2,
            },
            "resolve": {h: "127.0.0.1" for h in HOSTS},
        }
        out.mkdir(parents=True, exist_ok=True)
        job_path = out / "crawl-job.json"
        job_path.write_text(json.dumps(job))
        subprocess.run(
            [sys.executable, "-m", "crawler", "--job", str(job_path), "--out", str(out / "crawl")],
            check=True,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
        )
        # exit code 0 also means a crawl stopped by its time limit: only a complete one counts
        status = json.loads((out / "crawl" / "summary.json").read_text())["status"]
        if status != "complete":
            raise SystemExit(f"crawl for the index benchmark ended {status!r}, not complete")
    finally:
        server.shutdown()
    return sorted(warc_dir.glob("*.warc.gz"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--gb", type=float, default=1.0)
    args = ap.parse_args()
    for path in crawl(args.out, args.gb):
        print(path)


if __name__ == "__main__":
    main()
