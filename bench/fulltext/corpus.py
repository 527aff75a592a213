"""The extraction benchmark's WARCs: our crawler's crawl of the generated news site.

Why a crawl: the figure must be the chain's cost on the WARCs production hands it, with every
record our crawler writes (warcinfo, request, response, metadata with outlinks, robots.txt,
404s, images, the metadata WARC). The site (``newssite.NewsSite``) is served on 127.0.0.1 under
virtual host names (``--resolve``); ``harvestflow crawl`` runs as a subprocess, politeness off,
robots.txt obeyed as the site serves it, no browser. The page count is chosen from the size
asked for (``BYTES_PER_PAGE``, measured); if the crawl's WARCs fall short, another crawl of new
hosts, sized from the bytes per page just measured, adds the rest. The files are cached in the
work directory with a marker naming the parameters; every WARC passes ``warcio check``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.fulltext import newssite  # noqa: E402

# gzipped WARC bytes per article of the site, its share of PDFs, copies, images, sections and
# the crawler's request/metadata records included (measured: 4,850 at 22 MB, 4,480 at 100 MB:
# fewer new images per article on a larger site)
BYTES_PER_PAGE = 4_400
MARKER_VERSION = 1
HOST_NAMES = (("www.dailynews{k}.test", "en"), ("www.lequotidien{k}.test", "fr"),
              ("www.thecourier{k}.test", "en"), ("www.lejournal{k}.test", "fr"))  # fmt: skip


class BenchFailed(SystemExit):
    """A crawl or WARC the figures cannot stand on (exit 1 with the message)."""


def _warcio() -> str:
    oracle = ROOT / ".oracle-venv" / "bin" / "warcio"
    return str(oracle if oracle.exists() else Path(sys.executable).parent / "warcio")


def check_warcs(files: list[Path]) -> None:
    """``warcio check`` (warcio's own reader: digests, lengths) over every file, or fail."""
    for start in range(0, len(files), 50):
        chunk = [str(p) for p in files[start : start + 50]]
        got = subprocess.run([_warcio(), "check", *chunk], capture_output=True, text=True)
        if got.returncode != 0:
            raise BenchFailed(
                f"benchmark FAILED: warcio check exited {got.returncode} on the crawled WARCs:\n"
                + (got.stdout + got.stderr)[-3000:]
            )


def _crawl(site: newssite.NewsSite, port: int, k: int, out: Path, processes: int) -> list[Path]:
    hosts = [name.format(k=k) for name, _ in HOST_NAMES]
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(Path(sys.executable).parent / "harvestflow"), "crawl", "--out", str(out)]
    cmd += ["--template", "default_selective", "--render", "none", "--no-politeness"]
    cmd += ["--max-hops", "100", "--job-id", str(k), "--processes", str(processes)]
    cmd += ["--progress-interval", "30"]
    for host in hosts:
        cmd += ["--seed", f"http://{host}:{port}/", "--resolve", f"{host}:127.0.0.1"]
    log = out.with_suffix(".log")
    with log.open("w") as fh:
        code = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    if code != 0:
        raise BenchFailed(f"benchmark FAILED: the crawl exited {code} (output in {log})")
    status = json.loads((out / "summary.json").read_text()).get("status")
    if status != "complete":
        raise BenchFailed(f"benchmark FAILED: the crawl ended {status!r}, not complete ({log})")
    files = sorted((out / "warcs").glob("*.warc.gz"))
    if not files:
        raise BenchFailed(f"benchmark FAILED: the crawl wrote no WARC ({out / 'warcs'})")
    return files


def crawl_corpus(workdir: Path, mb: int, processes: int = 2) -> list[Path]:
    """At least ``mb`` MB of gzipped WARCs crawled by ``harvestflow crawl`` (cached)."""
    from tests.support.environment import free_port
    from tests.support.minisite import MiniSite

    params = {"version": MARKER_VERSION, "mb": mb, "bytes_per_page": BYTES_PER_PAGE}
    workdir.mkdir(parents=True, exist_ok=True)
    marker = workdir / "crawl-corpus.json"
    if marker.exists():
        done = json.loads(marker.read_text())
        cached = [Path(p) for p in done["files"]]
        if done["params"] == params and all(p.exists() for p in cached):
            print(f"reusing the crawl of {done['crawled']} ({marker})")
            return cached
    marker.unlink(missing_ok=True)
    for old in workdir.glob("crawl-*"):
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    target, per_page = mb * 1_000_000, float(BYTES_PER_PAGE)
    files: list[Path] = []
    crawled: list[str] = []
    site = newssite.NewsSite({}, 0)
    server = MiniSite(site.handle, (), port=free_port(), keep=False)
    try:
        k = 0
        while (size := sum(p.stat().st_size for p in files)) < target:
            k += 1
            per_host = max(50, math.ceil((target - size) * 1.03 / per_page / len(HOST_NAMES)))
            site.hosts.update({name.format(k=k): lang for name, lang in HOST_NAMES})
            site.pages = per_host  # the earlier jobs' hosts are crawled already
            started = time.monotonic()
            got = _crawl(site, server.port, k, workdir / f"crawl-{k}", processes)
            got_size = sum(p.stat().st_size for p in got)
            per_page = got_size / (per_host * len(HOST_NAMES))
            files += got
            crawled.append(
                f"job {k}: {len(HOST_NAMES)} hosts x {per_host} articles, {len(got)} WARCs,"
                f" {got_size / 1e6:.1f} MB in {time.monotonic() - started:.0f} s"
            )
            print(f"crawled {crawled[-1]}; load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        server.stop()
    check_warcs(files)
    marker.write_text(
        json.dumps({"params": params, "crawled": crawled, "files": [str(p) for p in files]})
    )
    return files
