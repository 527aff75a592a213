"""bench/run index: ``harvestflow index cdx`` against cdxj-indexer run as its users run it.

Why this peer: cdxj-indexer has no parallel mode; its users index many WARCs one process per
file, several at a time (``xargs -P``). Ours indexes with 2 worker processes, so the peer runs 2
at a time too, and the headline is records per CPU-second (CPU of each side's whole process
tree), which the number of processes does not flatter; the wall-clock ratio is shown beside it
because both sides work 2 at a time. Lines must be identical (ours prints the files' lines in
input order, record order within a file; the peer's per-file outputs are read in the same order).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.runner.spec import Benchmark, Side, Target

REPO = Path(__file__).resolve().parents[2]
ORACLE = REPO / ".oracle-venv" / "bin" / "cdxj-indexer"
PROCESSES = 2
# one cdxj-indexer per WARC, its lines into <out>/<WARC name>.cdxj ($0 = out dir, $1 = WARC)
PER_FILE = 'exec "$CDXJ_INDEXER" -o "$0/${1##*/}.cdxj" "$1"'


class IndexBenchmark(Benchmark):
    name = "index"
    title = "CDXJ indexing: harvestflow index cdx vs cdxj-indexer"
    output_check = "the CDXJ lines, byte for byte, in input order (count and SHA-256)"
    unit = "records"
    targets = (Target("≥ 3 × cdxj-indexer per CPU-second, lines identical", "cpu", 3.0),)

    def __init__(self) -> None:
        self.warcs: list[Path] = []
        self.list_file = Path()

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        if not ORACLE.exists():
            raise SystemExit(f"bench/run index: {ORACLE} missing (scripts/setup-oracles.sh)")
        gb, file_mb = (0.004, 2) if quick else (0.6, 100)
        warc_dir = work / f"warcs-{gb}-{file_mb}"
        gen = [sys.executable, str(REPO / "bench" / "index" / "gen_warcs.py"), str(warc_dir)]
        gen += ["--gb", str(gb), "--file-mb", str(file_mb)]
        subprocess.run(gen, check=True, stdout=subprocess.DEVNULL)
        self.warcs = sorted(warc_dir.glob("*.warc.gz"))
        self.list_file = work / "warcs.txt"
        self.list_file.write_text("".join(f"{p}\n" for p in self.warcs))
        for p in self.warcs:  # both sides read from the page cache
            subprocess.run(["cat", str(p)], check=True, stdout=subprocess.DEVNULL)
        return {
            "warcs": len(self.warcs),
            "mb": round(sum(p.stat().st_size for p in self.warcs) / 1e6, 1),
            "source": "bench/index/gen_warcs.py: gzipped WARCs in our crawler's layout"
            " (warcinfo; response, request, metadata per URL; revisits), BnF-like object mix",
        }

    def sides(self) -> tuple[Side, Side]:
        ours = Side(
            "ours",
            [
                sys.executable,
                "-m",
                "app.cli.index",
                "index",
                "cdx",
                *map(str, self.warcs),
                "--processes",
                str(PROCESSES),
            ],
            PROCESSES,
            "the chain's defaults: verify on (every gzip member inflated, its CRC checked),"
            f" {PROCESSES} worker processes; the parent writes the lines in input order",
            shown=f"python -m app.cli.index index cdx <{len(self.warcs)} WARCs>"
            f" --processes {PROCESSES}",
        )
        peer = Side(
            "peer",
            [
                "xargs",
                "-a",
                str(self.list_file),
                "-P",
                str(PROCESSES),
                "-n",
                "1",
                "sh",
                "-c",
                PER_FILE,
                "{out}",
            ],
            PROCESSES,
            "cdxj-indexer from .oracle-venv as its users run it on many WARCs: one process per"
            f" WARC, {PROCESSES} at a time, each writing its file's lines with -o (no sort)",
            env={"CDXJ_INDEXER": str(ORACLE)},
            shown=f"xargs -P{PROCESSES} -n1 cdxj-indexer -o <WARC>.cdxj <WARC>",
        )
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        digest = hashlib.sha256()
        lines = 0
        if side.name == "peer":  # one file per WARC, read in input order
            paths = [out / f"{w.name}.cdxj" for w in self.warcs]
        else:  # ours, or ours at two commits (new, old): one stream in input order
            paths = [out / "stdout"]
        for path in paths:
            data = path.read_bytes() if path.exists() else b""
            digest.update(data)
            lines += data.count(b"\n")
        return {"lines": lines, "sha256": digest.hexdigest()}

    def problems(self, figures: Any) -> list[str]:
        return [] if figures["lines"] else ["no CDXJ line at all"]

    def units(self, figures: Any) -> int | None:
        return int(figures["lines"])


BENCHMARK = IndexBenchmark()
