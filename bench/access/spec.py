"""bench/run access: building the replay index of a 2,000,000-capture CDXJ — our ZipNum
(``access.index.reindex(force=True)``, what ``harvestflow access reindex --force`` starts
with) against ``gzip -6`` of the same bytes.

Why this peer: a ZipNum index is the CDXJ compressed in blocks plus a summary of the blocks'
first keys; the plain way to make a CDXJ smaller is gzip of the whole file, which the access
section's target measures the build against (≤ 1.5 × gzip). Both outputs hold the same lines:
the output check inflates our shards in the order of the ``.loc`` file and the peer's
``.gz``, and compares both with the flat file (count and SHA-256). What the index costs on
disk beside the flat file is observed on our side (target ≤ 25 %).

The CDXJ is bench/access/bench_access.py's generator (Zipf-like site sizes over 20,000 hosts,
SURT keys as pywb computes them, byte-sorted), generated once into the work folder; ``--quick``:
20,000 captures over 500 hosts. The lookup latencies (pywb on the ZipNum against pywb on the
flat file) are the second benchmark of this folder, ``access-lookups`` (lookup_spec.py).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

from bench.access.lookup_spec import AccessLookupBenchmark
from bench.runner.spec import Benchmark, Side, Target

HERE = Path(__file__).resolve().parent
REINDEX = "from access.index import reindex; reindex(force=True)"


class AccessBuildBenchmark(Benchmark):
    name = "access"
    title = "the replay index of a 2,000,000-capture CDXJ: our ZipNum build vs gzip -6"
    output_check = (
        "the lines: our ZipNum's shards inflated in .loc order and the peer's .gz inflated,"
        " each equal to the flat CDXJ (count and SHA-256)"
    )
    unit = "captures"
    targets = (
        Target("build CPU-seconds ≤ 1.5 × gzip -6's", "cpu", 1 / 1.5),
        Target("index on disk ≤ 25 % of the flat CDXJ (%)", "observed:size %", 0.0,
               maximum=25.0),
    )  # fmt: skip

    def __init__(self) -> None:
        self.env: dict[str, str] = {}
        self.flat = Path()
        self.zipnum_dir = Path()
        self.truth: dict[str, Any] = {}

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        captures, hosts = (20_000, 500) if quick else (2_000_000, 20_000)
        data = work / f"data-{captures}-{hosts}"
        self.env = {"HARVESTFLOW_DATA_DIR": str(data)}
        os.environ.update(self.env)
        sys.path.insert(0, str(HERE))  # bench_access imports its neighbour pagecache
        import bench_access

        from access.config import AccessConfig
        from harvestflow import settings as settings_mod
        from indexing.layout import Layout

        settings_mod.reset()
        settings = settings_mod.get_settings()
        self.flat = Layout.from_settings(settings).big_cdx("cdxj")
        self.zipnum_dir = AccessConfig.from_settings(settings).zipnum_dir("all")
        marker = data / "generated-v2"
        if not marker.exists():
            self.flat.parent.mkdir(parents=True, exist_ok=True)
            bench_access.generate(self.flat, captures, hosts)
            marker.touch()
        self.truth = _lines_digest([self.flat.read_bytes()])  # also warms the page cache
        return {
            "captures": self.truth["lines"],
            "hosts": hosts,
            "flat_mb": round(self.flat.stat().st_size / 1e6, 1),
            "source": "bench/access/bench_access.py generate (seed 20): Zipf-like site sizes,"
            " subdomains, several captures per URL, SURT keys as pywb's, byte-sorted",
        }

    def sides(self) -> tuple[Side, Side]:
        ours = Side(
            "zipnum",
            [sys.executable, "-c", REINDEX],
            1,
            "access.index.reindex(force=True) with the [access] defaults (blocks of"
            " zipnum_block_lines, shards, summary and .loc written, state recorded, then the"
            " recent-files refresh); interpreter start and imports included",
            env=self.env,
            shown=f"python -c '{REINDEX}'",
        )
        peer = Side(
            "gzip",
            ["sh", "-c", 'exec gzip -6 -c "$0" > "$1/all.cdxj.gz"', str(self.flat), "{out}"],
            1,
            "gzip -6 (its default level) of the whole flat CDXJ, one process",
            shown="gzip -6 -c all.cdxj > all.cdxj.gz",
        )
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        if side.name == "gzip":
            with gzip.open(out / "all.cdxj.gz") as fh:
                return _lines_digest(iter(lambda: fh.read(1 << 22), b""))
        return _lines_digest(_read(p) for p in self._shards())

    def problems(self, figures: Any) -> list[str]:
        return [] if figures == self.truth else ["the lines are not the flat CDXJ's"]

    def units(self, figures: Any) -> int | None:
        return int(figures["lines"])

    def observe(self, side: Side, out: Path) -> dict[str, float]:
        if side.name != "zipnum":
            return {}
        files = [self.zipnum_dir / "all.idx", self.zipnum_dir / "all.loc", *self._shards()]
        size = sum(p.stat().st_size for p in files)
        return {"size %": round(100.0 * size / self.flat.stat().st_size, 2)}

    def _shards(self) -> list[Path]:
        loc = (self.zipnum_dir / "all.loc").read_text().splitlines()
        return [self.zipnum_dir / line.split("\t")[1].strip() for line in loc]


def _read(shard: Path) -> bytes:
    with gzip.open(shard) as fh:  # a shard is one gzip member per block
        return fh.read()


def _lines_digest(chunks: Any) -> dict[str, Any]:
    digest, lines = hashlib.sha256(), 0
    for chunk in chunks:
        digest.update(chunk)
        lines += chunk.count(b"\n")
    return {"lines": lines, "sha256": digest.hexdigest()}


BENCHMARK = AccessBuildBenchmark()
# `bench/run access` runs both; `access-lookups` is bench/access/lookup_spec.py's
BENCHMARKS = [BENCHMARK, AccessLookupBenchmark()]
