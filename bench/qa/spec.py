"""bench/run qa: the daily QA computation against awk counting the same figures.

Why this peer: awk (mawk here) counting status codes and MIME types in one pass is the least a
reader of a crawl.log can do. It applies the same rejection rules as QA (12 fields, a status
that is an integer in the 32-bit range), so both sides produce the same figures: status counts,
MIME counts, lines read and lines rejected, compared equal in every round and with what the
generator wrote (``<log>.truth.json``). Our QA scans the log in as many threads as the machine's
cores (C scanner), so the peer runs awk over the log split in as many parts, all at once, and
sums the parts' counts with one more awk; the split is done before the rounds (untimed, the
peer's best case). Headline: CPU seconds of each side's whole process tree; the wall ratio is
shown beside it since both sides work in as many pieces at once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.qa.gen_crawllog import generate, truth_path
from bench.runner.spec import Benchmark, Side, Target

REPO = Path(__file__).resolve().parents[2]
# a line QA accepts: crawl.log's 12 fields, a status that is an integer in the 32-bit range
COUNT = (
    "NF == 12 && $2 ~ /^-?[0-9]+$/ && length($2) <= 11"
    " && $2 + 0 >= -2147483648 && $2 + 0 <= 2147483647 { s[$2]++; m[$7]++; next }"
    " { bad++ }"
    ' END { for (k in s) print "S", k, s[k]; for (k in m) print "M", k, m[k];'
    ' print "N", "lines", NR; print "N", "bad", bad + 0 }'
)
MERGE = '{ c[$1 " " $2] += $3 } END { for (k in c) print k, c[k] }'
# $0 = output directory, then the parts: one awk per part at once, their sums merged
PEER = (
    'out=$0; i=0; pids=""; for p; do i=$((i + 1));'
    ' awk "$AWK_COUNT" "$p" > "$out/part$i.counts" & pids="$pids $!"; done;'
    " for p in $pids; do wait $p || exit 1; done;"
    ' exec awk "$AWK_MERGE" "$out"/part*.counts'
)


def qa_threads(log: Path) -> int:
    """How many threads QA's crawl.log pass uses for ``log`` (the rule of aggregate_crawl_log)."""
    from qa.crawllog_aggregate import CHUNK_BYTES

    size = log.stat().st_size
    return min(os.cpu_count() or 1, 4) if size >= 4 * CHUNK_BYTES else 1


class QaBenchmark(Benchmark):
    name = "qa"
    title = "daily QA over a generated crawl.log vs awk counting the same figures"
    output_check = (
        "status counts, MIME counts, lines read and lines rejected; equal between the sides and"
        " to the generator's truth file"
    )
    unit = "lines"
    targets = (
        Target("CPU-seconds ≤ 1.0 × awk's for the same figures", "cpu", 1.0),
        Target("wall ≤ 1.0 × awk over the log split in as many parts as our threads", "wall", 1.0),
    )

    def __init__(self) -> None:
        self.log = Path()
        self.parts: list[Path] = []
        self.threads = 1

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        lines = 20_000 if quick else 10_000_000
        self.log = work / f"crawl-{lines}-v3.log"
        if not self.log.exists() or not truth_path(self.log).exists():
            generate(self.log, lines)
        self.threads = qa_threads(self.log)
        split = work / f"parts-{lines}-{self.threads}"
        self.parts = sorted(split.glob("part*"))
        if len(self.parts) != self.threads:
            shutil.rmtree(split, ignore_errors=True)
            split.mkdir()
            subprocess.run(
                ["split", "-n", f"l/{self.threads}", "-d", str(self.log), str(split / "part")],
                check=True,
            )
            self.parts = sorted(split.glob("part*"))
        for p in [self.log, *self.parts]:  # both sides read from the page cache
            subprocess.run(["cat", str(p)], check=True, stdout=subprocess.DEVNULL)
        truth = self._truth()
        return {
            "lines": truth["lines"],
            "mb": round(self.log.stat().st_size / 1e6, 1),
            "to_reject": truth["rejected"],
            "parts_for_the_peer": len(self.parts),
            "awk": os.path.realpath(shutil.which("awk") or "awk"),
            "source": "bench/qa/gen_crawllog.py (v3): 50,000 Zipf-sized hosts, MIME parameters,"
            " non-ASCII URLs, odd lines to reject",
        }

    def _truth(self) -> dict[str, Any]:
        truth: dict[str, Any] = json.loads(truth_path(self.log).read_text(encoding="utf-8"))
        return truth

    def sides(self) -> tuple[Side, Side]:
        child = [sys.executable, str(REPO / "bench" / "qa" / "bench_qa.py"), "--child"]
        ours = Side(
            "ours",
            [*child, str(self.log), "{out}"],
            self.threads,
            "the whole daily computation without the DB (qa.daily.compute_day: crawl.log pass"
            f" in the C scanner's {self.threads} thread(s), host → domain/TLD, every metric"
            " family; qa.report.write_report: text, CSV, HTML, 6 SVG charts), interpreter"
            " start and imports included",
            shown=f"python bench/qa/bench_qa.py --child <log> <out> ({self.threads} threads)",
        )
        peer = Side(
            "peer",
            ["sh", "-c", PEER, "{out}", *map(str, self.parts)],
            len(self.parts),
            f"LC_ALL=C awk over the log split in {len(self.parts)} part(s) at line boundaries"
            " (split -n l/N, before the rounds), one awk per part at once, then one awk summing"
            " the parts' counts",
            env={"LC_ALL": "C", "AWK_COUNT": COUNT, "AWK_MERGE": MERGE},
            shown=f"awk '<count>' part & … ({len(self.parts)} parts); awk '<sum>' part*.counts",
        )
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        text = (out / "stdout").read_text(encoding="utf-8", errors="replace")
        if side.name != "peer":  # ours, or ours at two commits (new, old)
            got = json.loads(text.strip().splitlines()[-1])
            return {"S": got["S"], "M": got["M"], "lines": got["lines"], "bad": got["bad"]}
        figures: dict[str, Any] = {"S": {}, "M": {}, "lines": 0, "bad": 0}
        for line in text.splitlines():
            kind, key, n = line.rsplit(" ", 2)
            if kind == "N":
                figures[key] = int(n)
            else:
                figures[kind][key] = int(n)
        return figures

    def problems(self, figures: Any) -> list[str]:
        truth = self._truth()
        want = {"S": truth["S"], "M": truth["M"], "lines": truth["lines"], "bad": truth["rejected"]}
        return [
            f"{key} differ from the truth file's: {figures[key]!r:.200} != {want[key]!r:.200}"
            for key in want
            if figures[key] != want[key]
        ]

    def units(self, figures: Any) -> int | None:
        return int(figures["lines"])


BENCHMARK = QaBenchmark()
