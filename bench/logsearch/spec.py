"""bench/run logsearch: the curators' crawl.log search against mawk applying the same filters.

Why this peer: a curator (or an operator at a shell) who wants the lines of a crawl.log with a
status, a MIME type or a pattern runs awk over the file. mawk (``LC_ALL=C awk``, one process,
as the search is one) prints the lines that have crawl.log's field count (12, or a 13th
``{...}`` object) and pass the same filters; our side is ``search_crawl_log`` as the
api-server runs it, with no page limit, in a child process (interpreter start and imports
included). Four query shapes whose matches are few, so that every line is read (the slow case
of the search): each a benchmark of its own (``logsearch-status``, ``-mime``, ``-all``,
``-pattern``) with its own results file.

Output check, every round: the matching lines, in file order, each read as its first 12 fields
joined by one space (the search shows 12 fields; awk prints the line as it is), counted and
hashed (SHA-256) on both sides; the count must be above zero. The log is
bench/qa/gen_crawllog.py's (v3: odd lines to reject, non-ASCII URLs, MIME parameters), 1,000,000
lines (``--quick`` 20,000), generated once under ``$TMPDIR/hf-bench/logsearch-log``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.qa.gen_crawllog import generate, truth_path
from bench.runner.spec import Benchmark, Side

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).resolve().with_name("search_child.py")
FIELD_COUNT = "NF == 12 || (NF == 13 && $13 ~ /^\\{.*\\}$/)"
# (benchmark suffix, words, the search's arguments, awk's condition on a line)
QUERIES = [
    ("status", "a status (-61)", {"status": "-61"}, "$2 == -61"),
    ("mime", "a MIME prefix (audio/)", {"mime": "audio/"}, 'index($7, "audio/") == 1'),
    (
        "all",
        "all three (site1\\., 404, text/html)",
        {"pattern": "site1\\.", "status": "404", "mime": "text/html"},
        '$2 == 404 && $7 == "text/html" && /site1\\./',
    ),
    ("pattern", "a pattern (actualit)", {"pattern": "actualit"}, "/actualit/"),
]


def line_digest(path: Path) -> dict[str, Any]:
    """Count and SHA-256 of the lines of ``path``, each as its first 12 fields, space-joined."""
    digest = hashlib.sha256()
    n = 0
    with path.open("rb") as handle:
        for raw in handle:
            digest.update(b" ".join(raw.split()[:12]) + b"\n")
            n += 1
    return {"lines": n, "sha256": digest.hexdigest()}


class LogSearchBenchmark(Benchmark):
    output_check = (
        "the matching lines in file order (each as its first 12 fields): count and SHA-256,"
        " equal between the sides, at least one"
    )
    unit = "log lines"

    def __init__(self, suffix: str, words: str, args: dict[str, str], condition: str) -> None:
        self.name = f"logsearch-{suffix}"
        self.title = f"curator crawl.log search, {words}, over a whole log vs mawk"
        self.args, self.condition = args, condition
        self.log = Path()
        self.lines = 0

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        self.lines = 20_000 if quick else 1_000_000
        folder = work.parent / "logsearch-log"
        folder.mkdir(parents=True, exist_ok=True)
        self.log = folder / f"crawl-{self.lines}-v3.log"
        if not self.log.exists() or not truth_path(self.log).exists():
            generate(self.log, self.lines)
        subprocess.run(["cat", str(self.log)], check=True, stdout=subprocess.DEVNULL)
        return {
            "lines": self.lines,
            "mb": round(self.log.stat().st_size / 1e6, 1),
            "query": self.args,
            "awk": os.path.realpath(shutil.which("awk") or "awk"),
            "source": "bench/qa/gen_crawllog.py (v3): 50,000 Zipf-sized hosts, MIME parameters,"
            " non-ASCII URLs, odd lines to reject",
        }

    def sides(self) -> tuple[Side, Side]:
        flags = [part for key, value in self.args.items() for part in (f"--{key}", value)]
        ours = Side(
            "search",
            [sys.executable, str(CHILD), str(self.log), "{out}", *flags],
            1,
            "app.curator.crawllog_search.search_crawl_log as the api-server runs it (RE2,"
            " the one crawl.log parser's checks on every line), no page limit, every match"
            " written; interpreter start and imports included",
            shown=f"python bench/logsearch/search_child.py <log> <out> {' '.join(flags)}",
        )
        program = f"({FIELD_COUNT}) && ({self.condition})"
        peer = Side(
            "mawk",
            ["sh", "-c", 'exec awk "$1" "$2" > "$0/lines"', "{out}", program, str(self.log)],
            1,
            "LC_ALL=C awk (mawk) printing the lines with crawl.log's field count that pass the"
            " same filters, one process over the whole file",
            env={"LC_ALL": "C"},
            shown=f"LC_ALL=C awk '{program}' <log> > lines",
        )
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        return line_digest(out / "lines")

    def problems(self, figures: Any) -> list[str]:
        return [] if figures["lines"] else ["no line matched: the query shows nothing"]

    def units(self, figures: Any) -> int | None:
        return self.lines


BENCHMARKS = [LogSearchBenchmark(*query) for query in QUERIES]
