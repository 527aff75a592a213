"""Replay index benchmark: pywb on our ZipNum index against pywb on the flat CDXJ file.

Why: at broad-crawl scale a flat CDXJ is too slow and too large for pywb; the access service
builds a ZipNum index instead (``access.zipnum``). This measures it against the peer, the same
pywb (the replay venv's) serving the flat file, in the same run:

- build: ``access.index.reindex(force=True)`` (our ZipNum of the big CDXJ, what
  ``harvestflow access reindex --force`` starts with) against ``gzip -6`` of the same bytes;
  sizes on disk (summary + loc + shards against the flat file); then, timed apart, the
  per-definition ZipNum indexes (``access.definition_index``: 97 jobs over 10 definitions);
- lookups through pywb's CDX API, one at a time, a connection each: exact URLs and prefix
  queries (a host's URLs), both ``limit=100``, **cold** (every lookup after the index files'
  cached pages were dropped with ``posix_fadvise(DONTNEED)``: an index far larger than memory)
  then **warm** (the same queries again after an untimed pass of them, nothing dropped): p50 /
  p95 latency, lookups per second and the pywb process's CPU milliseconds per lookup (one
  process, one core: the per-core figure), ZipNum / flat ratios. Every answer is compared
  between the two servers; an empty answer (every query comes from a capture) stops the run.
- the block device's read requests and bytes per lookup (``/sys/dev/block``), and from them and
  the warm gap, the device read latency above which the ZipNum is the faster cold (a VM's disk
  cached by its host reads in microseconds: what "cold" costs is the storage's).
- ``--rounds`` rounds, the side that goes first alternating; the figures printed are the medians
  of the rounds' figures (and of their ratios).

The CDXJ is generated: ``--captures`` lines over ``--hosts`` hosts (Zipf-like sizes: a few very
large sites, a long tail of small ones; subdomains; several captures per URL), SURT keys as
pywb computes them for these URLs, sorted in byte order. Usage:

    .venv/bin/python bench/access/bench_access.py [--captures 2000000] [--hosts 20000]
        [--queries 1000] [--rounds 3] [--block-lines N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psutil
from pagecache import drop_cache  # beside this file

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

TLDS = ["fr", "fr", "fr", "com", "org", "net", "eu", "re"]
SUBS = ["", "www.", "www.", "news.", "blog.", "shop."]


def host_name(i: int) -> tuple[str, str]:
    """(host, SURT host part) of host number ``i``; ``www.`` is dropped by SURT."""
    rnd = random.Random(i)
    sub = rnd.choice(SUBS)
    base, tld = f"site{i:06d}", rnd.choice(TLDS)
    surt = f"{tld},{base}" + (f",{sub[:-1]}" if sub and sub != "www." else "")
    return f"{sub}{base}.{tld}", surt


def generate(path: Path, captures: int, hosts: int, seed: int = 20) -> None:
    """``captures`` CDXJ lines over ``hosts`` hosts, sorted in byte order (LC_ALL=C sort)."""
    rnd = random.Random(seed)
    weights = [1.0 / (k + 1) ** 0.9 for k in range(hosts)]  # Zipf-like site sizes
    names = [host_name(i) for i in range(hosts)]
    raw = path.with_suffix(".unsorted")
    with open(raw, "w", encoding="utf-8") as out:
        done = 0
        while done < captures:
            batch = min(100_000, captures - done)
            for h in rnd.choices(range(hosts), weights, k=batch):
                host, surt = names[h]
                path_part = rnd.choice(
                    [
                        "/",
                        f"/article/{rnd.randrange(5000)}.html",
                        f"/img/{rnd.randrange(2000)}.jpg",
                        f"/section{rnd.randrange(30)}/",
                        f"/css/s{rnd.randrange(5)}.css",
                    ]
                )
                ts = (
                    f"20{rnd.randrange(10, 26)}{rnd.randrange(1, 13):02d}{rnd.randrange(1, 29):02d}"
                )
                ts += f"{rnd.randrange(24):02d}{rnd.randrange(60):02d}{rnd.randrange(60):02d}"
                fields = {
                    "url": f"http://{host}{path_part}",
                    "mime": "text/html",
                    "status": "200",
                    "digest": f"sha1:{rnd.getrandbits(160):040X}"[:37],
                    "length": str(rnd.randrange(300, 90_000)),
                    "offset": str(rnd.randrange(0, 1_000_000_000)),
                    "filename": f"{h % 97 + 1}-3-{ts}000-{rnd.randrange(100):05d}-crawler.warc.gz",
                }
                # pywb's SURT drops a path's trailing slash (``/section5/`` -> ``/section5``)
                key_path = path_part if path_part == "/" else path_part.rstrip("/")
                out.write(f"{surt}){key_path} {ts} {json.dumps(fields)}\n")
            done += batch
    env = {**os.environ, "LC_ALL": "C"}
    subprocess.run(["sort", "-u", "-S", "25%", "-o", str(path), str(raw)], env=env, check=True)
    raw.unlink()


class Client:
    """CDX API client of one pywb: a connection per lookup (with keep-alive, gevent's separate
    writes of headers and body meet Nagle and delayed ACKs: +40 ms a lookup, on both sides)."""

    def __init__(self, base: str, coll: str) -> None:
        host, port = base.split("//")[1].strip("/").split(":")
        self.host, self.port = host, int(port)
        self.coll = coll

    def query(self, params: dict[str, str]) -> tuple[float, bytes]:
        q = urlencode({**params, "output": "json", "fl": "urlkey,timestamp,url,digest,offset"})
        t0 = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        conn.request("GET", f"/{self.coll}/cdx?{q}", headers={"Connection": "close"})
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        elapsed = time.perf_counter() - t0
        if resp.status != 200:
            raise RuntimeError(f"{params}: HTTP {resp.status} {body[:200]!r}")
        return elapsed, body


def device_reads(path: Path) -> tuple[int, int] | None:
    """(read requests completed, bytes read) so far by the block device holding ``path``, from
    ``/sys/dev/block/<major>:<minor>/stat``; None where there is none (tmpfs, overlay)."""
    st = os.stat(path)
    stat = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/stat")
    try:
        fields = stat.read_text().split()
    except OSError:
        return None
    return int(fields[0]), int(fields[2]) * 512


def json_lines(body: bytes) -> list[bytes]:
    """The captures of a CDX API answer with ``output=json`` (one JSON object a line)."""
    return [line for line in body.splitlines() if line.strip()]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def wait_up(base: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    import urllib.request

    for _ in range(600):
        try:
            with urllib.request.urlopen(base, timeout=2):
                return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError("flat pywb exited") from None
            time.sleep(0.2)
    raise RuntimeError(f"{base} did not start")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def timed_python(code: str) -> float:
    """Seconds of ``python -c code`` in a fresh process (imports included, as the CLI's)."""
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return time.perf_counter() - t0


def definitions(engine: object) -> None:
    """Jobs 1-97 (the generated WARC names' job ids) over 10 harvest definitions."""
    import sqlalchemy as sa

    assert isinstance(engine, sa.Engine)
    with engine.begin() as conn:
        if conn.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one():
            return
        hids = [
            int(
                conn.execute(
                    sa.text(
                        "INSERT INTO harvestdefinitions (name, kind) VALUES (:n, 'partial')"
                        " RETURNING harvest_id"
                    ),
                    {"n": f"bench {i}"},
                ).scalar_one()
            )
            for i in range(10)
        ]
        for job in range(1, 98):
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (job_id, harvest_id, harvest_num, job_index, status,"
                    " channel, template_name, template, seedlist) VALUES (:j, :h, 1, :j, 3,"
                    " 'CIBLEE', 'default', CAST('{}' AS jsonb), 'http://example.com/')"
                ),
                {"j": job, "h": hids[job % 10]},
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--captures", type=int, default=2_000_000)
    ap.add_argument("--hosts", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--block-lines", type=int, help="ZipNum block size (default: the setting)")
    ap.add_argument("--keep", type=Path, help="work directory kept (and reused) between runs")
    args = ap.parse_args()

    from tests.support.environment import free_port

    work = args.keep or Path(tempfile.mkdtemp(prefix="hf-bench-access-"))
    data = work / "data"
    os.environ.update(
        {
            "HARVESTFLOW_DATA_DIR": str(data),
            "HARVESTFLOW_ACCESS__URL": f"http://127.0.0.1:{free_port()}/",
            "HARVESTFLOW_ACCESS__RESOLVER_PORT": str(free_port()),
            "HARVESTFLOW_ACCESS__PYWB_PORT": str(free_port()),
            "HARVESTFLOW_ACCESS__REFRESH_INTERVAL_S": "3600",
            # the service reads its access rules from a harvest DB: an embedded one of its own
            "HARVESTFLOW_POSTGRES__PORT": str(free_port()),
        }
    )
    if args.block_lines:
        os.environ["HARVESTFLOW_ACCESS__ZIPNUM_BLOCK_LINES"] = str(args.block_lines)
    from access.config import AccessConfig
    from access.service import ReplayService
    from harvestflow.settings import get_settings
    from indexing.layout import Layout

    settings = get_settings()
    cfg = AccessConfig.from_settings(settings)
    flat = Layout.from_settings(settings).big_cdx("cdxj")
    flat.parent.mkdir(parents=True, exist_ok=True)
    # v2: keys of /sectionN/ without the trailing slash, as pywb computes them
    marker = work / f"generated-v2-{args.captures}-{args.hosts}"
    if not marker.exists():
        t0 = time.perf_counter()
        generate(flat, args.captures, args.hosts)
        marker.touch()
        print(f"generated {flat} in {time.perf_counter() - t0:.0f}s")
    lines = int(
        subprocess.run(
            ["wc", "-l", str(flat)], capture_output=True, text=True, check=True
        ).stdout.split()[0]
    )
    flat_size = flat.stat().st_size

    from harvestflow import db
    from harvestflow.services import postgres_for

    # the harvest DB first: the per-definition indexes read the jobs, the service the rules
    postgres = postgres_for(settings)
    postgres.start()
    db.ensure_database(settings.harvest_db_url)
    engine = db.get_engine(settings.harvest_db_url)
    db.migrate(engine)
    definitions(engine)

    # --- build: gzip of the same bytes (peer) vs our ZipNum (reindex --force)
    t0 = time.perf_counter()
    with open(flat, "rb") as src:
        subprocess.run(["gzip", "-6", "-c"], stdin=src, stdout=subprocess.DEVNULL, check=True)
    gzip_s = time.perf_counter() - t0
    build_s = timed_python("from access.index import reindex; reindex(force=True)")
    defs_s = timed_python(
        "from access import definition_index; definition_index.reindex(force=True)"
    )
    zdir = cfg.zipnum_dir("all")
    current = {zdir / "all.idx", zdir / "all.loc"} | {
        zdir / line.split("\t")[1].strip() for line in (zdir / "all.loc").read_text().splitlines()
    }
    zsize = sum(p.stat().st_size for p in current)

    # --- queries: exact URLs of random captures, prefix queries of random hosts
    rnd = random.Random(7)
    sample = []
    with open(flat, "rb") as fh:
        for _ in range(args.queries):
            fh.seek(rnd.randrange(flat_size))
            fh.readline()
            line = fh.readline() or fh.readline()
            if line:
                sample.append(json.loads(line.split(b" ", 2)[2])["url"])
    shapes = {
        # answers capped as a replay's lookup needs them (the largest sites' front pages have
        # tens of thousands of captures: without a cap both sides time the JSON, not the lookup)
        "exact": [{"url": u, "limit": "100"} for u in sample],
        "prefix": [
            {
                "url": u.split("/", 3)[0] + "//" + u.split("/", 3)[2] + "/",
                "matchType": "prefix",
                "limit": "100",
            }
            for u in sample
        ],
    }

    service = ReplayService(settings)
    service.start()
    flat_dir = work / "flat-pywb"
    flat_dir.mkdir(exist_ok=True)
    # the peer reads the same ACL file as the service (pywb checks each capture against it:
    # ~1.4 x a lookup's time) and logs its requests to a file as the service does, so that
    # only the index differs
    acl = cfg.root / "acl" / "rules.aclj"
    (flat_dir / "config.yaml").write_text(
        f"collections:\n  flat:\n    index: {flat}\n    acl_paths: [{acl}]\n"
    )
    flat_port = free_port()
    with open(flat_dir / "access.log", "ab") as flat_log:
        flat_proc = subprocess.Popen(
            [str(cfg.wayback), "-p", str(flat_port), "-b", "127.0.0.1"],
            cwd=flat_dir,
            stdout=subprocess.DEVNULL,
            stderr=flat_log,
        )
    flat_base = f"http://127.0.0.1:{flat_port}/"
    # per round: (shape, cache, side) -> (latencies s, pywb CPU s, device reads, bytes read)
    rounds: list[dict[tuple[str, str, str], tuple[list[float], float, int, int]]] = []
    try:
        wait_up(flat_base, flat_proc)
        assert service.proc is not None
        # pywb itself on both sides (not through our gateway): the index is what is compared
        sides = {
            "zipnum": (Client(cfg.pywb_url, "all"), psutil.Process(service.proc.pid), current),
            "flat": (Client(flat_base, "flat"), psutil.Process(flat_proc.pid), {flat}),
        }
        for round_no in range(args.rounds):
            order = ["flat", "zipnum"] if round_no % 2 == 0 else ["zipnum", "flat"]
            results: dict[tuple[str, str, str], tuple[list[float], float, int, int]] = {}
            for shape, queries in shapes.items():
                for temp in ("cold", "warm"):
                    answers: dict[str, list[bytes]] = {}
                    for name in order:
                        client, proc, files = sides[name]
                        times, bodies = [], []
                        if temp == "warm":
                            # the cold pass left nothing cached: one untimed pass first, or
                            # each query's first reads of its own part of the index are timed
                            for params in queries:
                                client.query(params)
                        cpu0 = sum(proc.cpu_times()[:2])
                        io0 = device_reads(flat) or (0, 0)
                        for params in queries:
                            if temp == "cold":
                                drop_cache(sorted(files))
                            elapsed, body = client.query(params)
                            times.append(elapsed)
                            bodies.append(body)
                        io1 = device_reads(flat) or (0, 0)
                        results[(shape, temp, name)] = (
                            times,
                            sum(proc.cpu_times()[:2]) - cpu0,
                            io1[0] - io0[0],
                            io1[1] - io0[1],
                        )
                        answers[name] = bodies
                    # every query comes from a capture of the index: an empty answer is a
                    # benchmark that times misses (keys not as pywb computes them), not lookups
                    empty = sum(not json_lines(b) for b in answers["flat"])
                    if empty:
                        raise SystemExit(
                            f"{shape}/{temp}: {empty} empty answers from the flat file"
                        )
                    bad = sum(
                        a != b for a, b in zip(answers["flat"], answers["zipnum"], strict=True)
                    )
                    if bad:
                        raise SystemExit(
                            f"{shape}/{temp}: {bad} answers differ between flat and ZipNum"
                        )
            rounds.append(results)
            print(f"round {round_no + 1} done (first: {order[0]}); load {_load()}", flush=True)
    finally:
        flat_proc.terminate()
        flat_proc.wait(15)
        service.stop()
        db.dispose_engines()
        postgres.stop()
    if flat_proc.returncode not in (0, -15):
        raise SystemExit(f"flat pywb exited {flat_proc.returncode}")

    print(
        f"\nindex: {lines:,} captures over {args.hosts:,} hosts, flat CDXJ {flat_size / 1e6:.1f} MB"
    )
    print(
        f"ZipNum on disk {zsize / 1e6:.1f} MB = {zsize / flat_size:.1%} of the flat file"
        f" (target <= 25%)"
    )
    print(
        f"build: ZipNum {build_s:.1f}s, gzip -6 {gzip_s:.1f}s, ratio {build_s / gzip_s:.2f}"
        f" (target <= 1.5)"
    )
    print(
        f"per-definition ZipNum indexes (10 definitions, one more pass): {defs_s:.1f}s,"
        f" {defs_s / gzip_s:.2f} x gzip"
    )
    print(
        f"lookups ({len(sample)} per shape, sequential, pywb CDX API, identical answers),"
        f" median of {len(rounds)} rounds:"
    )
    print(
        f"{'shape':<7} {'cache':<5} {'index':<7} {'p50 ms':>8} {'p95 ms':>8} {'per s':>7}"
        f" {'CPU ms/lookup':>14} {'reads/lookup':>13} {'KB read/lookup':>15}"
    )

    def med(key: tuple[str, str, str], fig: Any) -> float:
        return statistics.median(fig(*r[key]) for r in rounds)

    def p50(t: list[float], *_: float) -> float:
        return statistics.median(t)

    def p95(t: list[float], *_: float) -> float:
        return pct(t, 95)

    def reads(t: list[float], _cpu: float, n: int, _b: int) -> float:
        return n / len(t)

    for key in rounds[0]:
        print(
            f"{key[0]:<7} {key[1]:<5} {key[2]:<7} {1000 * med(key, p50):8.1f}"
            f" {1000 * med(key, p95):8.1f} {med(key, lambda t, *_: len(t) / sum(t)):7.0f}"
            f" {med(key, lambda t, c, *_: 1000 * c / len(t)):14.2f}"
            f" {med(key, reads):13.1f} {med(key, lambda t, c, n, b: b / 1024 / len(t)):15.1f}"
        )
    for shape in shapes:
        for temp in ("cold", "warm"):
            z, f = (shape, temp, "zipnum"), (shape, temp, "flat")
            ratios = {
                name: [fig(*r[z]) / fig(*r[f]) for r in rounds]
                for name, fig in (("p50", p50), ("p95", p95))
            }
            print(
                f"{shape} {temp}: ZipNum/flat p50 {statistics.median(ratios['p50']):.2f}"
                f" (rounds {', '.join(f'{x:.2f}' for x in ratios['p50'])}),"
                f" p95 {statistics.median(ratios['p95']):.2f}"
            )
        # cold lookups read the device; what one read costs is the storage's, not the index's:
        # from the reads each side needs and the warm gap, the read latency above which the
        # ZipNum's fewer reads make it the faster (this VM's disk is cached by its host)
        saved = med((shape, "cold", "flat"), reads) - med((shape, "cold", "zipnum"), reads)
        gap = med((shape, "warm", "zipnum"), p50) - med((shape, "warm", "flat"), p50)
        if saved > 0:
            print(
                f"{shape}: ZipNum needs {saved:.1f} fewer device reads a cold lookup; warm gap"
                f" {1000 * gap:+.2f} ms: ZipNum is the faster cold once a read costs more than"
                f" {max(gap, 0) / saved * 1e6:.0f} us"
            )
        else:
            print(f"{shape}: ZipNum needs {-saved:.1f} more device reads a cold lookup")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
