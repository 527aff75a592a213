"""Crawl benchmark: harvestflow crawl vs bare Scrapy vs ``wget -r --warc-file``, one run.

A static site (make_site.py: ≥5,000 pages with images and CSS) is served by nginx on loopback,
one port per "host"; politeness off. Prints URLs/s and peak RSS of each, the coverage of each
(URL sets compared), and the ratios the issue asks for:
  archiving overhead = 1 − rate(harvestflow, 1 process) / rate(bare Scrapy)   (target ≤ 10%)
  rate(harvestflow, host-partitioned processes) / rate(wget)                 (target ≥ 0.35)
Not a timed test: numbers vary with the machine's load; ratios from one run are comparable.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
            try:
                socket.create_connection(("127.0.0.1", p), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
    return proc, ports


def run_group(cmds: list[list[str]], log: Path) -> tuple[float, int]:
    """Run commands in parallel; (wall seconds, sum of their peak RSS in KB)."""
    start = time.time()
    with log.open("w") as fh:
        procs = [subprocess.Popen(c, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO) for c in cmds]
        rss = 0
        for p in procs:
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            if p.returncode not in (0, 3):
                raise SystemExit(f"{cmds[procs.index(p)][:4]} failed ({p.returncode}), see {log}")
            rss += usage.ru_maxrss
    return time.time() - start, rss


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
    return {u.removesuffix("index.html") for u in urls if not u.endswith("/robots.txt")}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "crawl")
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--pages", type=int, default=1300)
    ap.add_argument("--processes", type=int, default=2)
    args = ap.parse_args()
    out = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    site = out / "site"
    ports = [free_port() for _ in range(args.hosts)]
    expected = int(
        subprocess.check_output(
            [
                PY,
                str(HERE / "make_site.py"),
                str(site),
                "--hosts",
                str(args.hosts),
                "--pages",
                str(args.pages),
                "--ports",
                ",".join(map(str, ports)),
            ]
        )
    )
    nginx, ports = start_nginx(out, site, ports)
    seeds = [f"http://127.0.0.1:{p}/" for p in ports]
    results: dict[str, dict] = {}
    try:
        hf_common = [
            "--no-politeness",
            "--ignore-robots",
            "--allow-private",
            "--max-hops",
            "100",
            "--progress-interval",
            "5",
        ]
        # (b) bare Scrapy
        wall, rss = run_group(
            [[PY, str(HERE / "bare_scrapy.py"), str(out / "bare.urls"), *seeds]], out / "bare.log"
        )
        bare = norm(set((out / "bare.urls").read_text().split()))
        results["bare scrapy"] = {"urls": len(bare), "s": wall, "rss_kb": rss, "set": bare}
        # (a) harvestflow, one process
        cmd = [PY, "-m", "crawler", "--out", str(out / "hf1"), *hf_common]
        for s in seeds:
            cmd += ["--seed", s]
        wall, rss = run_group([cmd], out / "hf1.log")
        got = norm(hf_urls(out / "hf1"))
        results["harvestflow x1"] = {"urls": len(got), "s": wall, "rss_kb": rss, "set": got}
        # (a') the same job crawled by host-partitioned processes (crawler/partition.py):
        # one command, the parent hands URLs between its children and merges their output
        cmd = [PY, "-m", "crawler", "--out", str(out / "hfp"), "--processes", str(args.processes)]
        cmd += hf_common
        for s in seeds:
            cmd += ["--seed", s]
        wall, rss = run_group([cmd], out / "hfp.log")
        got = norm(hf_urls(out / "hfp"))
        rss += json.loads((out / "hfp" / "summary.json").read_text())["peak_rss_kb"]
        results[f"harvestflow x{args.processes}"] = {
            "urls": len(got),
            "s": wall,
            "rss_kb": rss,
            "set": got,
        }
        # (c) wget
        (out / "wget").mkdir()
        wall, rss = run_group(
            [
                [
                    "wget",
                    "-r",
                    "-l",
                    "inf",
                    "-p",
                    "-nv",
                    "-e",
                    "robots=off",
                    "--warc-file",
                    str(out / "wget" / "crawl"),
                    "-P",
                    str(out / "wget" / "files"),
                    *seeds,
                ]
            ],
            out / "wget.log",
        )
        got = norm(warc_urls(out / "wget" / "crawl.warc.gz"))
        results["wget"] = {"urls": len(got), "s": wall, "rss_kb": rss, "set": got}
    finally:
        nginx.terminate()
        nginx.wait()
    print(f"site: {args.hosts} hosts x {args.pages} pages = {expected} URLs (+ seeds)")
    print(f"{'tool':<16} {'URLs':>6} {'seconds':>8} {'URLs/s':>8} {'peak RSS MB':>12}")
    for name, r in results.items():
        r["rate"] = r["urls"] / r["s"]
        print(
            f"{name:<16} {r['urls']:>6} {r['s']:>8.1f} {r['rate']:>8.1f} {r['rss_kb'] / 1024:>12.0f}"
        )
    ref = results["wget"]["set"]
    for name, r in results.items():
        print(
            f"coverage {name}: {len(r['set'] & ref)} common with wget, "
            f"{len(r['set'] - ref)} only here, {len(ref - r['set'])} only in wget"
        )
    hf1, bare, wget = results["harvestflow x1"], results["bare scrapy"], results["wget"]
    hfp = results[f"harvestflow x{args.processes}"]
    ratios = {
        "archiving overhead vs bare Scrapy (1 - rate ratio)": 1 - hf1["rate"] / bare["rate"],
        f"harvestflow x{args.processes} / wget URLs/s": hfp["rate"] / wget["rate"],
        "harvestflow x1 / wget URLs/s": hf1["rate"] / wget["rate"],
        "peak RSS harvestflow x1 / bare Scrapy": hf1["rss_kb"] / bare["rss_kb"],
    }
    for k, v in ratios.items():
        print(f"RATIO {k}: {v:.2f}")
    (out / "results.json").write_text(
        json.dumps(
            {
                "ratios": ratios,
                **{k: {kk: vv for kk, vv in v.items() if kk != "set"} for k, v in results.items()},
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
