"""The jobgen benchmark's data and its own side (``bench/run jobgen``, bench/jobgen/spec.py).

:func:`load` puts N domain configurations (3,000,000 for the full run) with synthetic harvest
history into a harvest database (sizes after the BnF's 2011 figures: 57 % of domains under 10
URLs, 42 % between 10 and 10,000, 1 % above; some never harvested; mixed stop reasons) and a
snapshot definition over them; bench/scale/simulate.py loads its jobs the same way.

Run as a script it is our side: ``harvest.planning.plan_jobs`` over that definition (the
generator's query through a server-side cursor, configurations parsed, expectations computed,
chunks sorted and split into jobs; nothing written to the database), every planned
configuration's row written as COPY would print it (``rows.tsv``), so the runner checks the
planned rows against the peer's ``COPY (query) TO STDOUT``:

    python bench/jobgen/bench_jobgen.py --out DIR
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harvest.jobgen.model import ConfigInfo  # noqa: E402

BENCH_NAME = "bench-snapshot"


def _engine() -> Any:
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


# COPY's text format: these bytes stand for themselves escaped (PostgreSQL's CopyAttributeOutText)
_COPY_ESCAPES = str.maketrans(
    {"\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
     "\v": "\\v"}
)  # fmt: skip


def copy_field(value: object) -> str:
    """One field as ``COPY ... TO STDOUT`` (text format) writes it: NULL is ``\\N``."""
    if value is None:
        return "\\N"
    return str(value).translate(_COPY_ESCAPES)


def copy_line(config: ConfigInfo) -> str:
    """The row of the generator's query that ``config`` was made from, as COPY writes it.

    The columns of harvest.jobgen.source's query: config_id, domain_id, domain name, template,
    attributes, maxobjects, maxbytes, and the best earlier harvest's object count, byte count
    and stop reason (NULL when none), configuration name.
    """
    best = config.history[0] if config.history else None
    fields = (
        config.config_id, config.domain_id, config.domain, config.template, config.attributes,
        config.max_objects, config.max_bytes, best and best.objects, best and best.bytes,
        best and int(best.stop_reason), config.name,
    )  # fmt: skip
    return "\t".join(map(copy_field, fields)) + "\n"


def plan(out: Path) -> dict[str, Any]:
    """Our side: the default generator's plans of the snapshot definition (nothing written to
    the database); every planned configuration's row into ``out/rows.tsv`` as COPY would print
    it, so the runner can compare the planned rows with the peer's COPY."""
    from harvest.planning import plan_jobs

    hid, _, _ = _definition()
    engine = _engine()
    jobs = configs = largest = 0
    started = time.monotonic()
    with engine.connect() as conn, open(out / "rows.tsv", "w", encoding="utf-8") as fh:
        for job in plan_jobs(conn, hid, progress_interval_s=3600):
            jobs += 1
            configs += len(job.configs)
            largest = max(largest, len(job.configs))
            fh.writelines(copy_line(c) for c in job.configs)
    result = {
        "plan_s": time.monotonic() - started,
        "jobs": jobs,
        "configs": configs,
        "largest_job": largest,
        "client_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    (out / "plan.json").write_text(json.dumps(result) + "\n")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description="the jobgen benchmark's own side (bench/run)")
    parser.add_argument("--out", type=Path, required=True, help="rows.tsv and plan.json go here")
    args = parser.parse_args()
    plan(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
