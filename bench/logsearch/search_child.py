"""One side of ``bench/run logsearch``: the curators' crawl.log search over a whole log.

Why a child process: the runner measures each side's whole process tree, so our side is the
search as the api-server runs it (``app.curator.crawllog_search.search_crawl_log``), started
with its imports, with no page limit so that every matching line is written (``OUT/lines``,
the 12 fields as the search shows them, space-separated) for the output check.

    python bench/logsearch/search_child.py LOG OUT [--pattern P] [--status S] [--mime M]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--pattern", default="")
    ap.add_argument("--status", default="")
    ap.add_argument("--mime", default="")
    opts = ap.parse_args()
    from app.curator.crawllog_search import search_crawl_log

    result = search_crawl_log(
        opts.log, opts.pattern, opts.status, opts.mime,
        limit=10**12, max_scan=10**12, time_budget_s=1e9,
    )  # fmt: skip
    if result.stopped:
        print(f"search stopped early: {result.stopped}", file=sys.stderr)
        return 1
    with (opts.out / "lines").open("w", encoding="utf-8") as handle:
        for fields in result.lines:
            handle.write(" ".join(fields) + "\n")
    print(json.dumps({"matched": result.matched, "scanned": result.scanned,
                      "bad_lines": result.bad_lines}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
