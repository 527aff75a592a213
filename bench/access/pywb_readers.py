"""pywb's own index readers side by side, in one process: where a ZipNum lookup's time goes.

Why: through the CDX API (``bench_access.py``) a lookup is ~2 ms on both sides, of which the
index is a tenth; this times the readers alone, on the same files, to say what the ZipNum
costs that the flat file does not when both are in memory: the summary's two binary searches
(``compute_page_range``), then a shard opened, a block inflated and scanned.

pywb is GPL-3.0 and is never imported by the platform: this script runs only in the replay
service's own virtualenv, as a separate program, like the service itself:

    .replay-venv/bin/python bench/access/pywb_readers.py SUMMARY.idx FLAT.cdxj
        [--queries 400] [--rounds 3] [--prefix] [--cold] [--counter FILE] [--json]

(``bench_access.py --keep DIR`` leaves both: ``DIR/data/access/zipnum/all/all.idx`` and
``DIR/data/index/cdx/big.cdxj``.) Queries are the URLs of random lines of the flat file (host
front pages with ``--prefix``), ``limit=100``; the two readers' answers are compared; the
figures are the medians of the rounds, in microseconds per lookup. The shards are read from the
summary's folder (by the file names its ``.loc`` gives), so a copy or a mount of that folder
is read where it is.

``--cold`` times only the two readers' ``load_index``, each lookup after the pages of the flat
file, the summary and the shards were dropped from the page cache (``posix_fadvise``), p50 of
the lookups; with ``--counter`` (``bench/access/slowfs.py``'s), the storage reads a lookup.
``bench_cold_storage.py`` runs it on storage of a chosen latency.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from itertools import islice
from pathlib import Path

from pagecache import drop_cache  # beside this file
from pywb.utils.binsearch import iter_range
from pywb.warcserver.index.indexsource import FileIndexSource
from pywb.warcserver.index.query import CDXQuery
from pywb.warcserver.index.zipnum import ZipNumIndexSource
from slowfs import read_counter  # beside this file (standard library at import)

LIMIT = 100


def sample_urls(flat: str, n: int, prefix: bool, seed: int = 1) -> list[str]:
    """URLs of random captures whose key is the one pywb computes for them."""
    rnd = random.Random(seed)
    size = os.path.getsize(flat)
    urls: list[str] = []
    with open(flat, "rb") as fh:
        while len(urls) < n:
            fh.seek(rnd.randrange(size))
            fh.readline()
            line = fh.readline()
            if not line:
                continue
            url = json.loads(line.split(b" ", 2)[2])["url"]
            if prefix:
                urls.append("/".join(url.split("/")[:3]) + "/")
                continue
            params = {"url": url, "matchType": "exact"}
            CDXQuery(params)
            if params["key"] == line.split(b" ")[0]:
                urls.append(url)
    return urls


def shards_beside(summary: str, work: str) -> str:
    """A ``.loc`` file in ``work`` naming each shard by its path in the summary's folder."""
    folder = os.path.dirname(os.path.abspath(summary))
    lines = []
    with open(os.path.splitext(summary)[0] + ".loc") as fh:
        for line in fh:
            part, *paths = line.rstrip("\n").split("\t")
            lines.append(f"{part}\t{os.path.join(folder, os.path.basename(paths[0]))}\n")
    loc = os.path.join(work, "beside.loc")
    with open(loc, "w") as out:
        out.writelines(lines)
    return loc


def storage_reads(counter: str | None) -> int:
    """Reads slowfs has served so far (0 without its counter)."""
    return read_counter(Path(counter))[0] if counter else 0


def query(url: str, match: str) -> tuple[dict[str, object], CDXQuery]:
    params: dict[str, object] = {"url": url, "matchType": match, "limit": str(LIMIT)}
    return params, CDXQuery(params)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("summary")
    ap.add_argument("flat")
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prefix", action="store_true")
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--counter", help="bench/access/slowfs.py's counter file")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    match = "prefix" if args.prefix else "exact"
    work = tempfile.mkdtemp(prefix="pywb-readers-")
    loc = shards_beside(args.summary, work)
    flat = FileIndexSource(args.flat)
    zipnum = ZipNumIndexSource(args.summary, {"max_blocks": 300, "shard_index_loc": loc})
    shards = [path for paths in zipnum.loc_resolver.loc_map.values() for path in paths]
    every_file = [args.flat, args.summary, *shards]
    urls = sample_urls(args.flat, args.queries, args.prefix)

    def answer(source: FileIndexSource | ZipNumIndexSource, url: str) -> list[str]:
        params, _ = query(url, match)
        return [str(c) for c in islice(source.load_index(params), LIMIT)]

    for url in urls:
        if answer(flat, url) != answer(zipnum, url):
            raise SystemExit(f"{url}: the two readers answer differently")

    if args.cold:
        return cold(args, match, urls, every_file, answer, {"flat": flat, "zipnum": zipnum})

    def flat_raw(url: str) -> None:
        _, q = query(url, match)
        with open(args.flat, "rb") as fh:
            for _ in islice(iter_range(fh, q.key, q.end_key), LIMIT):
                pass

    def zipnum_range(url: str) -> list[bytes]:
        _, q = query(url, match)
        with open(args.summary, "rb") as fh:
            return list(zipnum.compute_page_range(fh, q))

    def zipnum_raw(url: str) -> None:
        _, q = query(url, match)
        with open(args.summary, "rb") as fh:
            blocks = zipnum.idx_to_cdx(list(zipnum.compute_page_range(fh, q)), q)
            for _ in islice((line for block in blocks for line in block), LIMIT):
                pass

    cases: dict[str, Callable[[str], Iterable[object] | None]] = {
        "flat: binary search + lines": flat_raw,
        "zipnum: summary range only": zipnum_range,
        "zipnum: range + blocks + lines": zipnum_raw,
        "flat: load_index (CDX objects)": lambda u: answer(flat, u),
        "zipnum: load_index (CDX objects)": lambda u: answer(zipnum, u),
    }
    figures: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, case in cases.items():
            t0 = time.perf_counter()
            for url in urls:
                case(url)
            figures[name].append((time.perf_counter() - t0) / len(urls) * 1e6)
    if args.json:
        print(json.dumps({name: statistics.median(v) for name, v in figures.items()}))
        return 0
    print(f"{match} lookups, {len(urls)} queries, limit {LIMIT}, median of {args.rounds} rounds")
    for name, values in figures.items():
        print(f"{name:<34} {statistics.median(values):8.1f} us")
    return 0


def cold(
    args: argparse.Namespace,
    match: str,
    urls: list[str],
    every_file: list[str],
    answer: Callable[[FileIndexSource | ZipNumIndexSource, str], list[str]],
    sources: dict[str, FileIndexSource | ZipNumIndexSource],
) -> int:
    """Each lookup after every index file's pages were dropped: p50 µs and storage reads a
    lookup per side, medians of the rounds (the side that goes first alternating)."""
    p50: dict[str, list[float]] = {name: [] for name in sources}
    reads: dict[str, list[float]] = {name: [] for name in sources}
    for round_no in range(args.rounds):
        order = list(sources) if round_no % 2 == 0 else list(reversed(sources))
        for name in order:
            times = []
            before = storage_reads(args.counter)
            for url in urls:
                drop_cache(every_file)
                t0 = time.perf_counter()
                answer(sources[name], url)
                times.append(time.perf_counter() - t0)
            reads[name].append((storage_reads(args.counter) - before) / len(urls))
            p50[name].append(statistics.median(times) * 1e6)
    figures = {
        f"{name} {what}": statistics.median(values[name])
        for name in sources
        for what, values in (("p50 us", p50), ("reads", reads))
    }
    if args.json:
        print(json.dumps(figures))
        return 0
    print(f"{match} cold lookups, {len(urls)} queries, median of {args.rounds} rounds")
    for name, value in figures.items():
        print(f"{name:<20} {value:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
