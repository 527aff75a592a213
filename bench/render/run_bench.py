"""Rendering benchmark: harvestflow crawl --render html vs Chromium recording through pywb's
recording proxy, same run, same pages.

A generated loopback site (jssite.py: N script-built pages, ~7 URLs each, built by script: JSON
API, thumbnails, a scroll-loaded second list, a lazy image) is served by a threaded server in
this process. Each round runs, back to back (order rotating):

- **ours**: ``harvestflow crawl --job JOB --out DIR --render html`` over the N pages as seeds
  (``--resolve``-style host map, robots ignored, politeness off) with ``render_tabs`` 1, 2, 4;
- **peer**: ``wayback --record`` (pywb, oracle venv) in proxy-recording mode into a collection,
  and peer.py: Chromium via chromedriver through that proxy loading each page with the same
  behaviours (network idle, dwell, scroll until the page stops growing) and page timeout.

Figures: rendered pages per minute (ours: crawl.log lines annotated ``rendered`` over the
crawl's wall time; peer: pages loaded over its wall time, pywb and browser start included, as
ours includes its start), pages per CPU-minute (user+sys of every process of the side, from
``getrusage(RUSAGE_CHILDREN)``), peak memory (sum of RSS of all processes of the side — the
crawler and its Chromiums, or pywb + chromedriver + Chromium — sampled every 0.2 s with psutil).
Medians over the rounds; the ratio ours/peer is the median of the rounds' ratios.

Fails (exit 1 with a message) when a command exits non-zero, our crawl does not end complete,
a page is not rendered, or either side's WARCs miss a URL of the site (URL sets compared with
warcio). Not a timed test: figures vary with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from warcio.archiveiterator import ArchiveIterator

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
from jssite import Site  # noqa: E402  (bench/render/jssite.py)

PY = sys.executable
ORACLE = REPO / ".oracle-venv" / "bin"
HOST = "localhost"  # resolved by the system for pywb; mapped with resolve for ours


class BenchFailed(SystemExit):
    """A side that failed or missed URLs: the figures mean nothing."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sampler:
    """Peaks of the summed RSS and of the summed PSS of every descendant of this process (the
    site is a thread here). The RSS sum counts a page shared by several processes (Chromium's
    browser, renderer, GPU and utility processes share their libraries) once per process, so it
    overstates the memory used; the PSS sum divides each shared page among its sharers."""

    def __init__(self) -> None:
        self.peak = 0
        self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            total = pss = 0
            for p in me.children(recursive=True):
                try:
                    full = p.memory_full_info()
                except psutil.Error:
                    continue
                total += full.rss
                pss += full.pss
            self.peak = max(self.peak, total)
            self.peak_pss = max(self.peak_pss, pss)
            self._stop.wait(0.2)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def warc_urls(paths: list[Path]) -> list[str]:
    """Target URIs of the response records (every capture, duplicates kept)."""
    out = []
    for path in paths:
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    out.append(rec.rec_headers.get_header("WARC-Target-URI"))
    return out


def check_coverage(side: str, got: list[str], expected: set[str]) -> dict[str, int]:
    have = set(got)
    missing = sorted(expected - have)
    if missing:
        raise BenchFailed(
            f"benchmark FAILED: {side} missed {len(missing)} of the site's {len(expected)} URLs,"
            f" e.g. {missing[:5]}"
        )
    return {"records": len(got), "extra": len(have - expected)}


def run_ours(out: Path, seeds: list[str], tabs: int, a: argparse.Namespace) -> dict[str, Any]:
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    job = {
        "job_id": 1,
        "harvest_id": 0,
        "seeds": seeds,
        "template": {
            "name": "bench_render",
            "scope": "host",
            "obey_robots": False,
            "delay_factor": 0.0,
            "min_delay_ms": 0,
            "max_delay_ms": 0,
            "connections_per_host": 8,
            "render": "html",
            "render_tabs": tabs,
            "render_page_timeout_s": a.page_timeout,
            "render_min_wait_s": a.min_wait,
            "render_max_scrolls": a.max_scrolls,
        },
        "resolve": {HOST: "127.0.0.1"},
    }
    if a.max_memory_mb is not None:  # else the template's default (render_max_memory_mb)
        job["template"]["render_max_memory_mb"] = a.max_memory_mb
    job_path = out.with_name(out.name + "-job.json")
    job_path.write_text(json.dumps(job))
    cmd = [str(REPO / ".venv" / "bin" / "harvestflow"), "crawl", "--job", str(job_path)]
    cmd += ["--out", str(out), "--render", "html", "--progress-interval", "5"]
    log = out.with_suffix(".log")
    cpu0, t0 = cpu_children(), time.monotonic()
    with Sampler() as mem, log.open("w") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO)
    wall, cpu = time.monotonic() - t0, cpu_children() - cpu0
    if proc.returncode != 0:
        raise BenchFailed(
            f"benchmark FAILED: ours ({tabs} tabs) exited {proc.returncode}, see {log}"
        )
    summary = json.loads((out / "summary.json").read_text())
    if summary.get("status") != "complete":
        raise BenchFailed(f"benchmark FAILED: ours ({tabs} tabs) status {summary.get('status')!r}")
    rendered = failed = 0
    for line in (out / "logs" / "crawl.log").read_text().splitlines():
        notes = line.split()[11].split(",") if len(line.split()) > 11 else []
        rendered += "rendered" in notes
        failed += any(n.startswith("render-failed") for n in notes)
    if rendered != len(seeds) or failed:
        raise BenchFailed(
            f"benchmark FAILED: ours ({tabs} tabs) rendered {rendered} of {len(seeds)} pages,"
            f" {failed} render-failed (see {out}/logs/crawl.log)"
        )
    warcs = sorted(p for p in (out / "warcs").glob("*.warc.gz") if "metadata" not in p.name)
    return {
        "pages": rendered,
        "s": wall,
        "cpu": cpu,
        "rss": mem.peak,
        "pss": mem.peak_pss,
        "urls": warc_urls(warcs),
    }


def run_peer(out: Path, seeds: list[str], a: argparse.Namespace) -> dict[str, Any]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    subprocess.run(
        [str(ORACLE / "wb-manager"), "init", "peer"], cwd=out, check=True, capture_output=True
    )
    (out / "config.yaml").write_text(
        "collections:\n  live: {index: $live}\n"
        "recorder:\n  source_coll: live\n"
        "proxy:\n  coll: peer\n  recording: true\n  enable_content_rewrite: false\n"
    )
    port = free_port()
    cpu0, t0 = cpu_children(), time.monotonic()
    with Sampler() as mem:
        pywb_log = (out / "wayback.log").open("w")
        pywb = subprocess.Popen(
            [str(ORACLE / "wayback"), "--record", "-b", "127.0.0.1", "-p", str(port)],
            cwd=out,
            stdout=pywb_log,
            stderr=subprocess.STDOUT,
        )
        try:
            for _ in range(300):
                if pywb.poll() is not None:
                    raise BenchFailed(
                        f"benchmark FAILED: wayback exited {pywb.returncode}, see {out}"
                    )
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            cmd = [
                PY,
                str(HERE / "peer.py"),
                "--proxy",
                f"127.0.0.1:{port}",
                "--timeout",
                str(a.page_timeout),
                "--min-wait",
                str(a.min_wait),
                "--max-scrolls",
                str(a.max_scrolls),
                *seeds,
            ]
            with (out / "peer.log").open("w") as fh:
                rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT).returncode
        finally:
            pywb.send_signal(signal.SIGINT)
            try:
                pywb.wait(20)
            except subprocess.TimeoutExpired:
                pywb.kill()
                pywb.wait()
            pywb_log.close()
    wall, cpu = time.monotonic() - t0, cpu_children() - cpu0
    if rc != 0:
        raise BenchFailed(f"benchmark FAILED: peer driver exited {rc}, see {out}/peer.log")
    warcs = sorted((out / "collections" / "peer" / "archive").glob("*.warc*"))
    if not warcs:
        raise BenchFailed(f"benchmark FAILED: pywb wrote no WARC, see {out}/wayback.log")
    return {
        "pages": len(seeds),
        "s": wall,
        "cpu": cpu,
        "rss": mem.peak,
        "pss": mem.peak_pss,
        "urls": warc_urls(warcs),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "render")
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tabs", default="1,2,4")
    ap.add_argument("--page-timeout", type=float, default=20.0)
    ap.add_argument("--min-wait", type=float, default=0.5)
    ap.add_argument("--max-scrolls", type=int, default=40)
    ap.add_argument(
        "--max-memory-mb",
        type=int,
        help="ours' render_max_memory_mb (default: the template's); the crawler compares it with"
        " the PSS sum of a tab's Chromium process group",
    )
    a = ap.parse_args()
    if not (ORACLE / "wayback").exists():
        raise BenchFailed(f"benchmark FAILED: no pywb at {ORACLE} (the test oracles' venv)")
    tabs = [int(t) for t in a.tabs.split(",")]
    site = Site(a.pages)
    base = f"http://{HOST}:{site.port}"
    seeds = [f"{base}/p/{n}.html" for n in range(a.pages)]
    expected = {base + path for path in site.routes}
    sides = [f"ours-{t}" for t in tabs] + ["peer"]
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    print(f"{a.pages} pages, {len(expected)} URLs; load average {os.getloadavg()}", flush=True)
    try:
        for r in range(a.rounds):
            order = sides[r % len(sides) :] + sides[: r % len(sides)]
            for side in order:
                out = a.out / f"r{r}-{side}"
                if side == "peer":
                    res = run_peer(out, seeds, a)
                else:
                    res = run_ours(out, seeds, int(side.split("-")[1]), a)
                res.update(check_coverage(side, res.pop("urls"), expected))
                res["ppm"] = res["pages"] / res["s"] * 60
                res["ppcpu"] = res["pages"] / res["cpu"] * 60
                results[side].append(res)
                print(
                    f"round {r + 1} {side:7s} {res['s']:7.1f} s  {res['ppm']:6.1f} pages/min"
                    f"  {res['ppcpu']:6.1f} pages/CPU-min  peak RSS {res['rss'] / 2**20:5.0f} MiB"
                    f" PSS {res['pss'] / 2**20:5.0f} MiB"
                    f"  {res['records']} response records ({res['extra']} outside the site)"
                    f"  load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
    finally:
        site.stop()
    print("\nmedians over", a.rounds, "rounds:")
    print(
        "| side | pages/min | pages/CPU-min | peak RSS sum MiB | peak PSS sum MiB |"
        " ratio ours/peer (pages/min) | ratio (pages/CPU-min) |"
    )
    print("|---|---|---|---|---|---|---|")
    peer = results["peer"]
    notes: list[str] = []
    for side in sides:
        rs = results[side]
        ratio = cpu_ratio = ""
        if side != "peer":
            pairs = list(zip(rs, peer, strict=True))
            ratio = f"{statistics.median(x['ppm'] / p['ppm'] for x, p in pairs):.2f}"
            cpu_ratio = f"{statistics.median(x['ppcpu'] / p['ppcpu'] for x, p in pairs):.2f}"
            if float(ratio) < 0.8:
                notes.append(f"target missed: {side} below 0.8 x the peer's pages/min")
        rss = statistics.median(x["rss"] for x in rs) / 2**20
        pss = statistics.median(x["pss"] for x in rs) / 2**20
        print(
            f"| {side} | {statistics.median(x['ppm'] for x in rs):.1f}"
            f" | {statistics.median(x['ppcpu'] for x in rs):.1f} | {rss:.0f} | {pss:.0f}"
            f" | {ratio} | {cpu_ratio} |"
        )
        if side == "ours-2" and max(x["pss"] for x in rs) > 1.5 * 2**30:
            notes.append("target missed: peak memory (PSS sum) above 1.5 GiB at 2 tabs")
    print("all sides captured every URL of the site; load average", os.getloadavg())
    for note in notes:
        print(note)
    return 2 if notes else 0


if __name__ == "__main__":
    sys.exit(main())
