"""Scale-out of one crawl job: the same job over 1, 2 and 4 host-partitioned crawler processes.

A static site of many hosts (bench/crawl/make_site.py: 200 nginx ports on loopback by default,
pages linking across hosts so that partitions hand URLs to each other) is crawled by
``python -m crawler --processes N`` (crawler/partitioned_run.py: one job, hosts split over N
processes, URLs handed between them, outputs merged), politeness off so that the crawler and
not the site's delays sets the pace. For each process count: URLs/s (wall) and URLs per
CPU-second (user + system of the whole process tree, ``wait4``), the medians of rounds whose
order rotates. The peer is the same crawler in one process, same run: the ratio printed is
``rate(N processes) / rate(1 process)`` (target for 2 processes on 2 cores: ≥ 1.7).

The run fails (exit 1 and a message) when a crawl exits non-zero, does not end complete, or
fetches another URL set than the site holds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench" / "crawl"))

from nginx_site import (  # noqa: E402  (bench/crawl's helpers: the site, nginx, URL sets)
    HF_COMMON,
    PY,
    BenchFailed,
    free_ports,
    hf_urls,
    norm,
    start_nginx,
)


def crawl(out: Path, seeds: list[str], processes: int) -> dict[str, float | set[str]]:
    """One crawl: wall seconds, CPU seconds of the process tree, the URLs fetched."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [PY, "-m", "crawler", "--out", str(out), *HF_COMMON, "--processes", str(processes)]
    for seed in seeds:
        cmd += ["--seed", seed]
    log = out.with_suffix(".log")
    start = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise BenchFailed(f"benchmark FAILED: crawl x{processes} exited {code} (see {log})")
    summary = json.loads((out / "summary.json").read_text())
    if summary["status"] != "complete":
        raise BenchFailed(f"benchmark FAILED: crawl x{processes} ended {summary['status']!r}")
    urls = norm(hf_urls(out))
    # the fetching phase: first to last crawl.log line (start-up, the end's merge, reports and
    # metadata WARC left out: fixed costs that a longer job spreads thinner)
    lines = (out / "logs" / "crawl.log").read_text().splitlines()
    first, last = (dt.datetime.fromisoformat(lines[i][:24].replace("Z", "+00:00")) for i in (0, -1))
    fetching = max((last - first).total_seconds(), 1e-3)
    # wait4's usage counts the crawler and every child it waited for (the partitions)
    return {"s": wall, "cpu": usage.ru_utime + usage.ru_stime, "set": urls, "fetch_s": fetching}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "scale")
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--pages", type=int, default=100, help="pages per host")
    ap.add_argument("--images", type=int, default=4, help="images per host")
    ap.add_argument("--processes", default="1,2,4", help="process counts, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    counts = [int(x) for x in args.processes.split(",")]
    if 1 not in counts:
        counts.insert(0, 1)  # the peer
    out: Path = args.out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    ports = free_ports(args.hosts)
    expected = int(
        subprocess.check_output(
            [
                PY,
                str(REPO / "bench" / "crawl" / "make_site.py"),
                str(out / "site"),
                "--hosts",
                str(args.hosts),
                "--pages",
                str(args.pages),
                "--images",
                str(args.images),
                "--ports",
                ",".join(map(str, ports)),
            ]
        )
    )
    nginx, ports = start_nginx(out, out / "site", ports)
    seeds = [f"http://127.0.0.1:{p}/" for p in ports]
    rounds: list[dict[int, dict[str, float | set[str]]]] = []
    loads = []
    try:
        for r in range(args.rounds):
            order = counts[r % len(counts) :] + counts[: r % len(counts)]
            results = {n: crawl(out / f"x{n}", seeds, n) for n in order}
            rounds.append(results)
            loads.append(os.getloadavg()[0])
            print(
                f"round {r + 1} (load {loads[-1]:.1f}): "
                + ", ".join(
                    f"x{n} {len(results[n]['set']) / float(results[n]['s']):.0f} URLs/s"  # type: ignore[arg-type]
                    for n in counts
                ),
                flush=True,
            )
    finally:
        nginx.terminate()
        nginx.wait()
    # every crawl fetched the same URL set, holding at least the site's files (the crawler also
    # asks for each host's /sitemap.xml and the like, which nginx answers 404)
    problems = []
    reference: set[str] = rounds[0][1]["set"]  # type: ignore[assignment]
    if len(reference) < expected:
        problems.append(f"x1 fetched {len(reference)} URLs, the site has {expected}")
    for r, results in enumerate(rounds, 1):
        for n, res in results.items():
            got: set[str] = res["set"]  # type: ignore[assignment]
            if got != reference:
                problems.append(
                    f"round {r} x{n}: {len(got - reference)} URLs more and"
                    f" {len(reference - got)} fewer than round 1 x1"
                )
    print(
        f"site: {args.hosts} hosts x ({args.pages} pages + {args.images} images + 3) = {expected} URLs"
    )
    print(
        f"{'processes':>9} {'URLs/s median':>14} {'URLs/CPU-s median':>18} {'x / x1 (rounds)':>30}"
    )
    summary = {}
    for n in counts:
        rates = [len(rd[n]["set"]) / float(rd[n]["s"]) for rd in rounds]  # type: ignore[arg-type]
        per_cpu = [len(rd[n]["set"]) / float(rd[n]["cpu"]) for rd in rounds]  # type: ignore[arg-type]
        ratio = [
            (len(rd[n]["set"]) / float(rd[n]["s"])) / (len(rd[1]["set"]) / float(rd[1]["s"]))  # type: ignore[arg-type]
            for rd in rounds
        ]
        fetch_ratio = [
            (len(rd[n]["set"]) / float(rd[n]["fetch_s"]))  # type: ignore[arg-type]
            / (len(rd[1]["set"]) / float(rd[1]["fetch_s"]))  # type: ignore[arg-type]
            for rd in rounds
        ]
        summary[n] = {
            "fetch_phase_ratio_vs_x1": statistics.median(fetch_ratio),
            "urls_per_s": statistics.median(rates),
            "urls_per_cpu_s": statistics.median(per_cpu),
            "ratio_vs_x1": statistics.median(ratio),
            "ratio_rounds": ratio,
        }
        print(
            f"{n:>9} {summary[n]['urls_per_s']:>14.0f} {summary[n]['urls_per_cpu_s']:>18.0f}"
            f" {summary[n]['ratio_vs_x1']:>8.2f} ({', '.join(f'{x:.2f}' for x in ratio)})"
            f"   fetching phase only: {summary[n]['fetch_phase_ratio_vs_x1']:.2f}"
        )
    for n in counts:
        if n > 1:
            print(f"RATIO crawl x{n} / x1 URLs/s: median {summary[n]['ratio_vs_x1']:.2f}")
    (out / "results.json").write_text(
        json.dumps({"summary": summary, "load_average_1min": loads, "problems": problems}, indent=1)
    )
    if problems:
        print("benchmark FAILED: " + "; ".join(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
