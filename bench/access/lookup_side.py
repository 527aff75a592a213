"""One side of ``bench/run access-lookups``: pywb serving one index, asked the same lookups.

Why a child process: the runner measures each side's whole process tree, so each side is the
replay venv's ``wayback`` (pywb) started on the side's ``config.yaml`` (our ZipNum, or the
flat CDXJ), one untimed pass of the queries (warm: every index page read once), then the
timed pass through pywb's CDX API, one lookup at a time, a connection each; pywb stopped.
Written to OUT: ``answers`` (every answer's body, in query order, for the output check) and
``latency.json`` (p50 and p95 in milliseconds per query shape).

    python bench/access/lookup_side.py WAYBACK CONFIG_DIR COLL PORT QUERIES OUT
"""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import sys
from pathlib import Path

from bench_access import Client, pct, wait_up  # beside this file


def main() -> int:
    wayback, config_dir, coll, port, queries_file, out = sys.argv[1:7]
    queries = [json.loads(line) for line in Path(queries_file).read_text().splitlines()]
    base = f"http://127.0.0.1:{port}/"
    with open(Path(out) / "pywb.log", "ab") as pywb_log:
        pywb = subprocess.Popen(
            [wayback, "-p", port, "-b", "127.0.0.1"],
            cwd=config_dir,
            stdout=subprocess.DEVNULL,
            stderr=pywb_log,
        )
    try:
        wait_up(base, pywb)
        client = Client(base, coll)
        for query in queries:  # untimed: the lookups are timed warm
            client.query(query["params"])
        times: dict[str, list[float]] = {}
        with open(Path(out) / "answers", "wb") as answers:
            for query in queries:
                elapsed, body = client.query(query["params"])
                times.setdefault(query["shape"], []).append(elapsed)
                answers.write(body.rstrip(b"\n") + b"\n\x00\n")
    finally:
        pywb.send_signal(signal.SIGTERM)
        code = pywb.wait(30)
    if code not in (0, -signal.SIGTERM):
        print(f"pywb exited {code}", file=sys.stderr)
        return 1
    latency = {}
    for shape, values in times.items():
        latency[f"{shape} p50 ms"] = round(1000 * statistics.median(values), 3)
        latency[f"{shape} p95 ms"] = round(1000 * pct(values, 95), 3)
    (Path(out) / "latency.json").write_text(json.dumps(latency))
    return 0


if __name__ == "__main__":
    sys.exit(main())
