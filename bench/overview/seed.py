"""The overview benchmark's database: an archive of N definitions and M jobs over three years.

Shapes from the curator overview's test at scale: 2 % of jobs failed, one in 20,000 running, a
history row per job. Every end date sits 30 minutes off a whole day before the seeding, so a
"last 7 days" window opened by either side within the next 23 hours counts the same jobs.
"""

from __future__ import annotations

import sqlalchemy as sa

from harvest.bootstrap import ensure_reference_data
from harvest.definitions import ensure_selective_definition
from harvest.domains import ensure_config


def seed(engine: sa.Engine, definitions: int, jobs: int) -> dict[str, int]:
    """Fill an empty, migrated harvest database; its row counts."""
    ensure_reference_data(engine)
    with engine.begin() as conn:
        config = ensure_config(conn, "a.test").config_id
        ensure_selective_definition(conn, "sel", frequency=None)
        conn.execute(
            sa.text(
                "INSERT INTO harvestdefinitions (name, kind) SELECT 'def-' || g, 'partial'"
                " FROM generate_series(1, :n) g;"
                " INSERT INTO partialharvests (harvest_id, schedule_id, nextdate)"
                " SELECT h.harvest_id, (SELECT min(schedule_id) FROM schedules),"
                " date_trunc('hour', now()) + make_interval(hours => h.harvest_id % 500 + 1)"
                " FROM harvestdefinitions h WHERE h.name LIKE 'def-%'"
            ),
            {"n": definitions},
        )
        conn.execute(
            sa.text(
                "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                " template_name, template, seedlist, startdate, enddate)"
                " SELECT h.harvest_id, g, 0, CASE WHEN g % 50 = 0 THEN 4"
                " WHEN g % 20000 = 1 THEN 2 ELSE 3 END, 'CIBLEE', 't', '{}'::jsonb, '',"
                " now() - make_interval(days => g % 1095, hours => 1),"
                " CASE WHEN g % 20000 = 1 THEN NULL"
                " ELSE now() - make_interval(days => g % 1095, mins => 30) END"
                " FROM generate_series(1, :m) g"
                " JOIN harvestdefinitions h ON h.name = 'def-' || (g % :n + 1)"
            ),
            {"n": definitions, "m": jobs},
        )
        conn.execute(
            sa.text(
                "INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id,"
                " harvest_id, job_id, harvest_time)"
                " SELECT 0, 10, 1000, :c, j.harvest_id, j.job_id, coalesce(j.enddate, now())"
                " FROM jobs j"
            ),
            {"c": config},
        )
    with engine.connect() as conn:
        conn.execute(sa.text("ANALYZE"))
        counts = {
            table: int(conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one())
            for table in ("harvestdefinitions", "jobs", "historyinfo")
        }
    return counts
