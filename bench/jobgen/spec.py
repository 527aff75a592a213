"""bench/run jobgen: the default job generator over a 3,000,000-domain snapshot, against
PostgreSQL's ``COPY (query) TO STDOUT`` of the generator's own query through psql.

Why this peer: the generator's floor is the database streaming the rows it plans from; a user
who wanted them without our code would run the same query through psql and COPY, as fast as
PostgreSQL can hand them out. Much of both sides' work happens inside PostgreSQL, so each side
starts a PostgreSQL of its own on the same (kept) data directory (``with_postgres.sh``): the
postmaster and its backends are in the side's process tree and their CPU is counted for the
side that used them, a start and a stop on both sides.

Both sides write the rows: the peer COPY's text output, ours the row each planned
configuration was made from, in COPY's text format (``bench_jobgen.copy_line``). The runner
compares their sorted lines (count and SHA-256) in every round, and the count must be the
number of configurations loaded: a configuration lost, doubled or changed in planning fails the
run. The full run loads 3,000,000 configurations once into ``$TMPDIR/hf-bench/jobgen`` (kept
between runs); ``--quick`` 5,000.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from bench.runner.spec import Benchmark, Side, Target

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
WITH_POSTGRES = HERE / "with_postgres.sh"
# $0 psql, $1 the COPY script, $2 the port, $3 user, $4 database, $5 the side's output folder
PSQL = (
    'exec "$0" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$2" -U "$3" -d "$4" -f "$1"'
    ' > "$5/rows.tsv"'
)


class JobgenBenchmark(Benchmark):
    name = "jobgen"
    title = "the default job generator over a 3,000,000-domain snapshot vs COPY of its query"
    output_check = (
        "the rows: every planned configuration's row against the rows COPY wrote (sorted lines,"
        " count and SHA-256), as many as configurations loaded"
    )
    unit = "configurations"
    targets = (
        Target("CPU-seconds ≤ 3 × COPY's, PostgreSQL's CPU counted on both sides", "cpu", 1 / 3),
        Target("3,000,000 configurations planned in ≤ 3 min (median, s)", "observed:plan_s",
               0.0, maximum=180.0),
        Target("the generator's peak RSS ≤ 1 GiB (median, MB)", "observed:client_rss_mb", 0.0,
               maximum=1024.0),
    )  # fmt: skip

    def __init__(self) -> None:
        self.configs = 0
        self.env: dict[str, str] = {}
        self.pgdata = Path()
        self.port = 0
        self.copy_sql = Path()
        self.user = self.database = ""

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        self.configs = 5_000 if quick else 3_000_000
        from bench.runner.embedded import embedded_data_dir

        data = embedded_data_dir("unused", work / f"data-{self.configs}")
        self.env = {
            "HARVESTFLOW_DATA_DIR": str(data),
            "HARVESTFLOW_POSTGRES__PORT": os.environ["HARVESTFLOW_POSTGRES__PORT"],
            "HARVESTFLOW_POSTGRES__URL": "",
        }
        from harvestflow import db, services
        from harvestflow import settings as settings_mod

        settings_mod.reset()
        settings = settings_mod.get_settings()
        pg = settings["postgres"]
        self.pgdata = settings.path(pg["data_subdir"])
        self.port, self.user, self.database = int(pg["port"]), pg["user"], pg["harvest_db"]
        postgres = services.postgres_for(settings)
        postgres.start()
        try:
            db.ensure_database(settings.harvest_db_url)
            db.migrate(db.get_engine(settings.harvest_db_url))
            sys.path.insert(0, str(HERE))
            import bench_jobgen

            bench_jobgen.load(self.configs)
            self.copy_sql = work / f"copy-{self.configs}.sql"
            self.copy_sql.write_text(_copy_script(bench_jobgen))
        finally:
            db.dispose_engines()
            postgres.stop()
        return {
            "configurations": self.configs,
            "source": "bench/jobgen/bench_jobgen.py load(): domains with default configurations"
            " and seeds, three earlier snapshots of history (~80 % harvested each; BnF 2011 size"
            " classes; mixed stop reasons), a snapshot definition with a 10,000-object budget",
        }

    def sides(self) -> tuple[Side, Side]:
        from harvestflow.services.postgres import _bin_dir

        bin_dir = str(_bin_dir())
        own_pg = [str(WITH_POSTGRES), bin_dir, str(self.pgdata), str(self.port), "--"]
        ours = Side(
            "generator",
            [*own_pg, sys.executable, str(HERE / "bench_jobgen.py"), "--out", "{out}"],
            2,
            "harvest.planning.plan_jobs with the [jobgen] defaults (NetarchiveSuite's default"
            " generator): the query through a server-side cursor, batches of 10,000 prefetched"
            " in a thread, expectations computed, chunks sorted and split into jobs; each"
            " planned configuration's row written; interpreter start and imports included;"
            " its own PostgreSQL started and stopped in the side (backends' CPU counted)",
            env=self.env,
            shown="with_postgres.sh python bench/jobgen/bench_jobgen.py --out <out>",
        )
        peer = Side(
            "copy",
            [*own_pg, "sh", "-c", PSQL, str(Path(bin_dir) / "psql"), str(self.copy_sql),
             str(self.port), self.user, self.database, "{out}"],
            2,
            "psql -f of the generator's own query (parameters bound), COPY (query) TO STDOUT"
            " into a file, the generator's work_mem (SET work_mem = 256MB); its own PostgreSQL"
            " started and stopped in the side (backends' CPU counted)",
            shown="with_postgres.sh psql -f copy.sql > rows.tsv",
        )  # fmt: skip
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        lines = (out / "rows.tsv").read_bytes().splitlines(keepends=True)
        lines.sort()
        digest = hashlib.sha256()
        for line in lines:
            digest.update(line)
        return {"rows": len(lines), "sha256": digest.hexdigest()}

    def problems(self, figures: Any) -> list[str]:
        if figures["rows"] != self.configs:
            return [f"{figures['rows']} rows for {self.configs} configurations loaded"]
        return []

    def units(self, figures: Any) -> int | None:
        return int(figures["rows"])

    def observe(self, side: Side, out: Path) -> dict[str, float]:
        planned = out / "plan.json"
        if not planned.exists():
            return {}
        data = json.loads(planned.read_text())
        return {k: float(data[k]) for k in ("plan_s", "jobs", "client_rss_mb")}


def _copy_script(bench_jobgen: Any) -> str:
    """The psql script of the peer: the generator's query with its parameters bound."""
    from harvest.jobgen.source import BULK_WORK_MEM
    from harvestflow.db import get_engine

    _, sql, params = bench_jobgen._definition()
    raw = get_engine().raw_connection()
    try:
        cur: Any = raw.cursor()  # psycopg2's: COPY takes no parameters, so they are bound here
        query = cur.mogrify(sql, params).decode()
        cur.close()
    finally:
        raw.close()
    return f"SET work_mem = '{BULK_WORK_MEM}';\nCOPY ({query}) TO STDOUT;\n"


BENCHMARK = JobgenBenchmark()
