"""Crawl benchmark: harvestflow crawl vs bare Scrapy vs ``wget -r --warc-file``, in one run.

A static site (make_site.py: ≥5,000 pages with images and CSS) is served by nginx on loopback,
one port per "host"; politeness off. Prints URLs/s and peak RSS of each, the coverage of each
(URL sets compared), and these ratios:
  archiving overhead = 1 − rate(harvestflow, 1 process) / rate(bare Scrapy)   (target ≤ 10%)
  rate(harvestflow, host-partitioned processes) / rate(wget)                 (target ≥ 0.35)
Not a timed test: numbers vary with the machine's load; ratios are taken within a round (the
tools run back to back, order rotating between rounds) and their medians over rounds printed.
The bare-Scrapy peer has the crawler's Scrapy tuning (bare_scrapy.py), so the overhead measures
archiving. The run fails (exit 1, or SystemExit with a message) when a tool exits non-zero, a
crawl does not end complete, or the tools' URL sets differ (or miss some of the site's URLs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
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


def run_group(cmds: list[list[str]], log: Path) -> tuple[float, int]:
    """Run commands in parallel; (wall seconds, sum of their peak RSS in KB).

    Any exit code but 0 fails the benchmark (the crawler exits 3 for an unfinished crawl).
    """
    start = time.time()
    with log.open("w") as fh:
        procs = [subprocess.Popen(c, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO) for c in cmds]
        rss = 0
        failed = []
        for p, cmd in zip(procs, cmds, strict=True):
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            if p.returncode != 0:
                failed.append(f"{' '.join(cmd[:4])} ... exited {p.returncode}")
            rss += usage.ru_maxrss
    if failed:
        raise BenchFailed("benchmark FAILED: " + "; ".join(failed) + f" (output in {log})")
    return time.time() - start, rss


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


def run_bare(out: Path, seeds: list[str]) -> dict:
    """(b) bare Scrapy following the same links, archiving nothing (tuned as our crawler)."""
    result_file = out / "bare.json"
    result_file.unlink(missing_ok=True)
    wall, rss = run_group(
        [[PY, str(HERE / "bare_scrapy.py"), str(result_file), *seeds]], out / "bare.log"
    )
    result = json.loads(result_file.read_text())
    if result["reason"] != "finished" or result["errors"]:
        raise BenchFailed(
            f"benchmark FAILED: bare Scrapy did not complete (finish reason {result['reason']!r},"
            f" {result['errors']} errors logged; see {out / 'bare.log'})"
        )
    got = norm(set(result["urls"]))
    return {"urls": len(got), "s": wall, "rss_kb": rss, "set": got}


def run_harvestflow(job_out: Path, seeds: list[str], processes: int) -> dict:
    """(a) harvestflow crawl, one process or the same job over host-partitioned processes
    (crawler/partitioned_run.py: one command, the parent hands URLs between its children and merges
    their output)."""
    shutil.rmtree(job_out, ignore_errors=True)
    cmd = [PY, "-m", "crawler", "--out", str(job_out), *HF_COMMON]
    if processes > 1:
        cmd += ["--processes", str(processes)]
    for s in seeds:
        cmd += ["--seed", s]
    wall, rss = run_group([cmd], job_out.with_suffix(".log"))
    summary = json.loads((job_out / "summary.json").read_text())
    if summary["status"] != "complete":
        raise BenchFailed(
            f"benchmark FAILED: harvestflow x{processes} crawl status {summary['status']!r},"
            f" not complete (see {job_out.with_suffix('.log')})"
        )
    got = norm(hf_urls(job_out))
    if processes > 1:  # the children's peak RSS (the parent's is in rss)
        rss += summary["peak_rss_kb"]
    return {"urls": len(got), "s": wall, "rss_kb": rss, "set": got}


def run_wget(out: Path, seeds: list[str]) -> dict:
    """(c) wget -r --warc-file."""
    shutil.rmtree(out / "wget", ignore_errors=True)
    (out / "wget").mkdir()
    cmd = ["wget", "-r", "-l", "inf", "-p", "-nv", "-e", "robots=off"]
    cmd += ["--warc-file", str(out / "wget" / "crawl"), "-P", str(out / "wget" / "files"), *seeds]
    wall, rss = run_group([cmd], out / "wget.log")
    got = norm(warc_urls(out / "wget" / "crawl.warc.gz"))
    return {"urls": len(got), "s": wall, "rss_kb": rss, "set": got}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "crawl")
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--pages", type=int, default=1300)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="rounds, tool order rotating; medians")
    args = ap.parse_args()
    out = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    site = out / "site"
    ports = free_ports(args.hosts)
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
    tools = {
        "bare scrapy": lambda: run_bare(out, seeds),
        "harvestflow x1": lambda: run_harvestflow(out / "hf1", seeds, 1),
        f"harvestflow x{args.processes}": lambda: run_harvestflow(
            out / "hfp", seeds, args.processes
        ),
        "wget": lambda: run_wget(out, seeds),
    }
    rounds: list[dict[str, dict]] = []
    loads: list[float] = []
    try:
        for r in range(args.rounds):
            # the order rotates, so no tool always runs first (cold caches) or last
            names = list(tools)
            names = names[r % len(names) :] + names[: r % len(names)]
            results = {name: tools[name]() for name in names}
            rounds.append({name: results[name] for name in tools})
            loads.append(os.getloadavg()[0])
            print(
                f"round {r + 1}: "
                + ", ".join(f"{n} {v['urls'] / v['s']:.0f}/s" for n, v in rounds[-1].items()),
                flush=True,
            )
    finally:
        nginx.terminate()
        nginx.wait()
    print(f"site: {args.hosts} hosts x {args.pages} pages = {expected} URLs (+ seeds)")
    px = f"harvestflow x{args.processes}"
    per_round = []
    coverage: list[str] = []
    for r, results in enumerate(rounds, 1):
        print(f"round {r} (load average {loads[r - 1]:.1f} at its end)")
        print(f"{'tool':<16} {'URLs':>6} {'seconds':>8} {'URLs/s':>8} {'peak RSS MB':>12}")
        for name, res in results.items():
            res["rate"] = res["urls"] / res["s"]
            print(
                f"{name:<16} {res['urls']:>6} {res['s']:>8.1f} {res['rate']:>8.1f} {res['rss_kb'] / 1024:>12.0f}"
            )
        problems = coverage_problems({n: v["set"] for n, v in results.items()}, "wget", expected)
        coverage += [f"round {r}: {p}" for p in problems]
        hf1, bare, wget = results["harvestflow x1"], results["bare scrapy"], results["wget"]
        per_round.append(
            {
                "archiving overhead vs bare Scrapy (1 - rate ratio)": 1
                - hf1["rate"] / bare["rate"],
                f"harvestflow x{args.processes} / wget URLs/s": results[px]["rate"] / wget["rate"],
                "harvestflow x1 / wget URLs/s": hf1["rate"] / wget["rate"],
                "peak RSS harvestflow x1 / bare Scrapy": hf1["rss_kb"] / bare["rss_kb"],
            }
        )
    ratios = {}
    for key in per_round[0]:
        values = [pr[key] for pr in per_round]
        ratios[key] = statistics.median(values)
        print(
            f"RATIO {key}: median {ratios[key]:.2f} over {len(values)} rounds "
            f"({', '.join(f'{v:.2f}' for v in values)})"
        )
    (out / "results.json").write_text(
        json.dumps(
            {
                "ratios": ratios,
                "coverage_problems": coverage,
                "load_average_1min": loads,
                "per_round": per_round,
                "rounds": [
                    {k: {kk: vv for kk, vv in v.items() if kk != "set"} for k, v in rd.items()}
                    for rd in rounds
                ],
            },
            indent=1,
        )
    )
    if coverage:
        print(
            "benchmark FAILED: the peers did not crawl the same URLs:\n  " + "\n  ".join(coverage)
        )
        return 1
    print(f"coverage: every tool fetched the same {expected} URLs in every round")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
