"""Our side of ``bench/run dedup``: the captures a job on the given domains de-duplicates
against, read from a sorted merged CDX by :func:`indexing.dedup_merged.select` (what
``indexing.dedup_index.write_index`` reads before joining the sidecars' ETags), written as CDX
lines to OUT/lines.cdx; its counts and the seconds from reading the domain list to the last line
written (the index's assembly, without the interpreter's start) in OUT/assembled.json and on
stdout.

    .venv/bin/python bench/dedup/bench_dedup.py CDX DOMAINS OUT
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(cdx: Path, domains_file: Path, out: Path) -> None:
    from indexing.dedup_merged import select

    start = time.perf_counter()
    domains = domains_file.read_text().split()
    n = 0
    with open(out / "lines.cdx", "wb", buffering=1 << 20) as fh:
        for line in select([cdx], domains):
            fh.write(line + b"\n")
            n += 1
    figures = {"lines": n, "domains": len(domains), "s": time.perf_counter() - start}
    (out / "assembled.json").write_text(json.dumps(figures))
    print(json.dumps(figures))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
