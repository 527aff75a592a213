"""Benchmark: the preload pipeline at scale on a real (embedded) PostgreSQL.

A registry file of N lines (a tenth garbage), collected, DNS-checked from a hosts file (static
answers: this measures the pipeline, not DNS — `bench/run preload` does that), transferred. Prints the
time of each step and lines/s, and checks that every valid line was imported and every garbage
line reported. Peer: ``sort -u`` of the same file (the floor for reading + de-duplicating it).

Run: .venv/bin/python bench/preload/bench_pipeline.py [--lines 3000000]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=3_000_000)
    args = parser.parse_args()
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    work = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    os.environ["HARVESTFLOW_DATA_DIR"] = str(work / "data")
    os.environ["HARVESTFLOW_POSTGRES__PORT"] = str(free_port())
    os.environ["HARVESTFLOW_PRELOAD__CHUNK_SIZE"] = "500000"

    from harvest.preload.dnstask import dns_check_chunk
    from harvest.preload.sources import collect_sources
    from harvest.preload.transfer import transfer
    from harvestflow import db, services
    from harvestflow.settings import get_settings

    settings = get_settings()
    rnd = random.Random(5)
    registry, hosts = work / "registry.txt", work / "hosts"
    garbage = ["*.wild.fr", "10.0.0.1", "bad_label.fr", "x" * 70 + ".fr", "nosuffix", "a..b.fr"]
    valid = bad = 0
    with registry.open("w") as out, hosts.open("w") as host_lines:
        for i in range(args.lines):
            if rnd.random() < 0.1:
                out.write(rnd.choice(garbage) + "\n")
                bad += 1
            else:
                name = f"site{i}.fr"
                out.write(("WWW." if i % 3 == 0 else "") + name + "\n")
                valid += 1
                if rnd.random() < 0.7:
                    host_lines.write(f"127.0.0.1 {name}\n")
    services.postgres_for(settings).init()
    services.postgres_for(settings).start()
    try:
        db.ensure_database(settings.harvest_db_url)
        db.migrate(db.get_engine(settings.harvest_db_url))
        t0 = time.monotonic()
        subprocess.run(
            ["sort", "-u", "-o", str(work / "sorted"), str(registry)],
            check=True,
            env=dict(os.environ, LC_ALL="C"),
        )
        t_sort = time.monotonic() - t0
        t0 = time.monotonic()
        collected = collect_sources(
            "bench", [{"name": "reg", "kind": "registry", "path": str(registry)}]
        )
        t_collect = time.monotonic() - t0
        stat = collected["sources"][0]
        if stat["valid"] != valid or stat["rejected"] != bad:
            raise SystemExit(
                f"benchmark FAILED: collect_sources counted {stat}, the file has {valid} valid"
                f" and {bad} garbage lines"
            )
        t0 = time.monotonic()
        for chunk in collected["chunks"]:
            dns_check_chunk("bench", chunk, hosts_file=str(hosts), static_only=True)
        t_dns = time.monotonic() - t0
        t0 = time.monotonic()
        report = transfer("bench")
        t_transfer = time.monotonic() - t0
    finally:
        db.dispose_engines()
        services.postgres_for(settings).stop()
    print(f"{args.lines:,} lines: {valid:,} valid, {bad:,} garbage (all reported)")
    print(f"sort -u (peer):  {t_sort:7.1f} s  {args.lines / t_sort:>10,.0f} lines/s")
    print(
        f"collect_sources: {t_collect:7.1f} s  {args.lines / t_collect:>10,.0f} lines/s"
        f"  (ratio to sort -u: {t_sort / t_collect:.2f})"
    )
    print(f"dns (static):    {t_dns:7.1f} s")
    print(
        f"transfer:        {t_transfer:7.1f} s  {report['domains_created']:,} domains created,"
        f" {report['seeds_transferred']:,} seeds"
    )


if __name__ == "__main__":
    main()
