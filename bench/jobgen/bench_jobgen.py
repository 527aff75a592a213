"""Benchmark: the default job generator over millions of domain configurations.

Loads N domain configurations (default 3,000,000) with synthetic harvest history into an
embedded PostgreSQL (sizes after the BnF's 2011 figures: 57% of domains under 10 URLs, 42%
between 10 and 10,000, 1% above; some never harvested; mixed stop reasons), makes a snapshot
definition over them, then measures in separate processes (so each peak RSS is its own):

- ``scan``: PostgreSQL alone streaming the generator's query (``COPY (query) TO STDOUT`` into
  a null sink: the server's work plus the bytes on the socket, no per-row client work);
- ``generate``: harvest.planning.plan_jobs — the same query streamed through a server-side
  cursor, configurations parsed, expectations computed, chunks sorted and split into jobs.

Prints seconds, seconds per million configurations, peak RSS, and the ratio generate / scan.
Run:  .venv/bin/python bench/jobgen/bench_jobgen.py [--configs 3000000] [--keep DIR]
(--keep reuses/keeps the loaded database in DIR, so a second run skips the loading.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

BENCH_NAME = "bench-snapshot"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _engine():  # type: ignore[no-untyped-def]
    from harvestflow.db import get_engine

    return get_engine()


LOAD_SQL = [
    # domains and their default configuration (FK to defaultconfig is deferred to commit)
    """INSERT INTO domains (domain_id, name, defaultconfig)
       SELECT g, 'd' || g || '.fr', g FROM generate_series(1, :n) g""",
    """INSERT INTO configurations (config_id, name, domain_id, template_id, maxobjects, maxbytes)
       SELECT g, 'defaultconfig', g, :tid, -1, 1000000000 FROM generate_series(1, :n) g""",
    """INSERT INTO seedlists (seedlist_id, name, domain_id, seeds)
       SELECT g, 'defaultseeds', g, 'http://www.d' || g || '.fr' || chr(10) || 'http://d' || g
              || '.fr' FROM generate_series(1, :n) g""",
    """INSERT INTO config_seedlists (config_id, seedlist_id) SELECT g, g FROM generate_series(1, :n) g""",
]

# history of three earlier snapshots: ~80% of configurations harvested each time
HISTORY_SQL = """
INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id, harvest_id, harvest_time)
SELECT CASE WHEN r2 < 0.80 THEN 0 WHEN r2 < 0.90 THEN 1 WHEN r2 < 0.95 THEN 2 ELSE 4 END,
       objs, objs * (15000 + (r2 * 50000)::bigint), g, :hid, :t
FROM (SELECT g, random() AS r1, random() AS r2,
             CASE WHEN random() < 0.57 THEN (random() * 9)::bigint + 1
                  WHEN random() < 0.977 THEN (random() * 9990)::bigint + 10
                  ELSE (random() * 90000)::bigint + 10000 END AS objs
      FROM generate_series(1, :n) g) s
WHERE r1 < 0.8
"""


HISTORY_INDEXES_DROP = [
    "ALTER TABLE historyinfo DROP CONSTRAINT historyinfo_config_id_harvest_id_job_id_key",
    "DROP INDEX historyinfo_config_idx",
    "DROP INDEX historyinfo_job_idx",
]
HISTORY_INDEXES_CREATE = [
    "ALTER TABLE historyinfo ADD CONSTRAINT historyinfo_config_id_harvest_id_job_id_key"
    " UNIQUE (config_id, harvest_id, job_id)",
    "CREATE INDEX historyinfo_config_idx ON historyinfo (config_id, harvest_time DESC)",
    "CREATE INDEX historyinfo_job_idx ON historyinfo (job_id)",
]


def load(n: int) -> None:
    import sqlalchemy as sa

    from harvest.bootstrap import ensure_reference_data
    from harvest.definitions import ensure_snapshot_definition
    from harvest.snapshot import create_snapshot_definition

    engine = _engine()
    ensure_reference_data(engine)
    started = time.monotonic()
    with engine.begin() as conn:
        if conn.execute(sa.text("SELECT count(*) FROM configurations")).scalar() == n:
            print(f"database already holds {n} configurations: loading skipped")
            return
        tid = conn.execute(
            sa.text("SELECT template_id FROM templates WHERE name = 'default_snapshot'")
        ).scalar_one()
        # bulk load: FK triggers off for this session (the generated rows are consistent)
        conn.execute(sa.text("SET LOCAL session_replication_role = replica"))
        for sql in LOAD_SQL:
            conn.execute(sa.text(sql), {"n": n, "tid": tid})
        for seq, table, col in (
            ("domains_domain_id_seq", "domains", "domain_id"),
            ("configurations_config_id_seq", "configurations", "config_id"),
            ("seedlists_seedlist_id_seq", "seedlists", "seedlist_id"),
        ):
            conn.execute(sa.text(f"SELECT setval('{seq}', (SELECT max({col}) FROM {table}))"))
    print(f"domains/configurations/seeds loaded in {time.monotonic() - started:.0f} s")
    with engine.begin() as conn:
        # bulk load: indexes built once afterwards instead of maintained row by row
        conn.execute(sa.text("SET LOCAL session_replication_role = replica"))
        conn.execute(sa.text("SET LOCAL maintenance_work_mem = '512MB'"))
        for stmt in HISTORY_INDEXES_DROP:
            conn.execute(sa.text(stmt))
        for year in (2023, 2024, 2025):
            hid = ensure_snapshot_definition(conn, f"bench-history-{year}")
            conn.execute(sa.text(HISTORY_SQL), {"n": n, "hid": hid, "t": f"{year}-10-01"})
        for stmt in HISTORY_INDEXES_CREATE:
            conn.execute(sa.text(stmt))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text("VACUUM ANALYZE"))
    create_snapshot_definition(BENCH_NAME, max_objects=10_000, engine=engine)
    print(f"history loaded in {time.monotonic() - started:.0f} s in all")


def _definition() -> tuple[int, str, dict]:
    import sqlalchemy as sa

    from harvest.jobgen.source import config_query, definition_limits, query_params

    engine = _engine()
    with engine.connect() as conn:
        hid = conn.execute(
            sa.text("SELECT harvest_id FROM harvestdefinitions WHERE name = :n"), {"n": BENCH_NAME}
        ).scalar_one()
        kind, _, prev = definition_limits(conn, hid)
    return hid, config_query(kind, prev), query_params(hid, prev)


def phase_scan() -> dict:
    """PostgreSQL alone: COPY (the generator's query) TO STDOUT into a null sink."""
    import psycopg2

    from harvest.jobgen.source import BULK_WORK_MEM
    from harvestflow.settings import get_settings

    _hid, sql, params = _definition()
    settings = get_settings()
    pg = settings["postgres"]
    conn = psycopg2.connect(
        host=pg["host"], port=int(pg["port"]), user=pg["user"], dbname=pg["harvest_db"]
    )
    # bind the parameters client-side (COPY takes no parameters)
    with conn.cursor() as cur:
        query = cur.mogrify(sql, params).decode()

    class Sink:
        size = 0

        def write(self, data: bytes) -> int:
            Sink.size += len(data)
            return len(data)

    started = time.monotonic()
    with conn.cursor() as cur:
        cur.execute(f"SET work_mem = '{BULK_WORK_MEM}'")  # as the generator's transaction
        cur.copy_expert(f"COPY ({query}) TO STDOUT", Sink())
    elapsed = time.monotonic() - started
    conn.close()
    return {"seconds": elapsed, "bytes": Sink.size, "peak_rss_mib": peak_rss_mib()}


def phase_generate() -> dict:
    """The default generator over the same query (plans only, nothing written)."""
    from harvest.planning import plan_jobs

    hid, _, _ = _definition()
    engine = _engine()
    jobs = configs = 0
    largest = 0
    started = time.monotonic()
    with engine.connect() as conn:
        for plan in plan_jobs(conn, hid, progress_interval_s=30):
            jobs += 1
            configs += len(plan.configs)
            largest = max(largest, len(plan.configs))
    elapsed = time.monotonic() - started
    return {
        "seconds": elapsed,
        "jobs": jobs,
        "configs": configs,
        "largest_job": largest,
        "peak_rss_mib": peak_rss_mib(),
    }


def phase_persist() -> dict:
    """generate_jobs: the same generation, plus jobs, job_configs and frozen seed lists written."""
    import sqlalchemy as sa

    from harvest.planning import generate_jobs

    hid, _, _ = _definition()
    engine = _engine()
    from datetime import UTC, datetime

    started = time.monotonic()
    # a new logical date each time: a new run (the same date would return the same jobs)
    jobs = generate_jobs(hid, datetime.now(UTC), engine)
    elapsed = time.monotonic() - started
    with engine.connect() as conn:
        configs = conn.execute(
            sa.text("SELECT count(*) FROM job_configs WHERE job_id = ANY(:j)"), {"j": jobs}
        ).scalar_one()
    return {
        "seconds": elapsed,
        "jobs": len(jobs),
        "configs": configs,
        "peak_rss_mib": peak_rss_mib(),
    }


def run_phase(name: str, env: dict[str, str]) -> dict:
    """Run one phase in a child process; its result, with the child's CPU seconds (``cpu``:
    the client's own work — PostgreSQL's server processes are not its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, __file__, "--phase", name],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"phase {name} failed:\n{out.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=3_000_000)
    parser.add_argument("--keep", type=Path, default=None, help="data dir to keep/reuse")
    parser.add_argument(
        "--persist", action="store_true", help="also time generate_jobs (jobs written)"
    )
    parser.add_argument("--phase", choices=["scan", "generate", "persist"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        phases = {"scan": phase_scan, "generate": phase_generate, "persist": phase_persist}
        result = phases[args.phase]()
        print(json.dumps(result))
        return 0

    from bench.runner.embedded import embedded_data_dir

    data_dir = embedded_data_dir("hv-bench-jobgen-", args.keep)
    env = dict(os.environ)
    from harvestflow import db, services
    from harvestflow.settings import get_settings, reset

    reset()
    settings = get_settings()
    pg = services.postgres_for(settings)
    pg.start()
    try:
        db.ensure_database(settings.harvest_db_url)
        db.migrate(db.get_engine(settings.harvest_db_url))
        t0 = time.monotonic()
        load(args.configs)
        print(f"load: {time.monotonic() - t0:.0f} s")
        scan = run_phase("scan", env)
        gen = run_phase("generate", env)
        run_phase("scan", env)  # warm-cache check: scan again after the generator
        scan2 = run_phase("scan", env)
        bare = min(scan["seconds"], scan2["seconds"])
        per_m = gen["seconds"] / (gen["configs"] / 1e6)
        print(
            f"configurations: {gen['configs']:,} -> {gen['jobs']:,} jobs "
            f"(largest {gen['largest_job']:,} configurations)"
        )
        print(
            f"PostgreSQL alone (COPY of the query): {bare:.1f} s "
            f"({scan['bytes'] / 1e6:.0f} MB), {bare / (gen['configs'] / 1e6):.1f} s/M"
        )
        print(
            f"default generator: {gen['seconds']:.1f} s, {per_m:.1f} s per million "
            f"configurations, peak RSS {gen['peak_rss_mib']:.0f} MiB; the generator process"
            f" {gen['cpu']:.1f} CPU-s (the bare scan's client {min(scan['cpu'], scan2['cpu']):.1f})"
        )
        print(f"ratio generator / bare scan: {gen['seconds'] / bare:.2f}")
        if args.persist:
            per = run_phase("persist", env)
            print(
                f"generate_jobs (jobs, job_configs, seed lists written): {per['seconds']:.1f} s"
                f" for {per['jobs']:,} jobs / {per['configs']:,} configurations, peak RSS"
                f" {per['peak_rss_mib']:.0f} MiB"
            )
    finally:
        db.dispose_engines()
        pg.stop()
        if args.keep is None:
            shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
