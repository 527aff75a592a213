"""``with_store.py [--postgres] -- COMMAND...``: COMMAND with an S3 store (and a PostgreSQL) of
its own, started from harvestflow's settings (the environment) and stopped after it.

Why: most of an upload's CPU is spent in the store (SeaweedFS hashes, writes and serves the
bytes), and our side's bookkeeping in PostgreSQL. Started here, inside the side's process
tree, their CPU is counted for the side that used them (the runner's subreaper collects the
postmaster; SeaweedFS is this process's child), a start and a stop on each side. The data
folders are the benchmark's, kept between the sides: each side writes into buckets of its own.
"""

from __future__ import annotations

import subprocess
import sys

from harvestflow import services
from harvestflow.settings import get_settings


def main(argv: list[str]) -> int:
    sep = argv.index("--")
    postgres = "--postgres" in argv[:sep]
    settings = get_settings()
    store = services.seaweedfs_for(settings)
    pg = services.postgres_for(settings) if postgres else None
    if pg is not None:
        pg.start()
    try:
        store.start()
        try:
            return subprocess.run(argv[sep + 1 :], check=False).returncode
        finally:
            store.stop()
    finally:
        if pg is not None:
            pg.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
