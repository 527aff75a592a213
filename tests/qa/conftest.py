"""Fixtures of the QA tests: the golden jobs (hand-written crawl logs) as JobInfo objects, and a
harvest DB of three days' jobs made from them."""

from __future__ import annotations

import shutil
from datetime import UTC, date, datetime
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from qa.inputs import JobInfo

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def golden_jobs() -> list[JobInfo]:
    """Job 1: selective, clean log with one unpadded line; job 2: broad, two bad lines;
    job 3: broad, crawl log missing."""
    return [
        JobInfo(1, 1, "demo-daily", "partial", 1, 3,
                datetime(2026, 11, 22, 10, 0, tzinfo=UTC),
                datetime(2026, 11, 22, 10, 30, tzinfo=UTC), str(DATA / "jobs" / "1")),
        JobInfo(2, 2, "broad-2026", "full", 1, 3,
                datetime(2026, 11, 22, 9, 0, tzinfo=UTC),
                datetime(2026, 11, 22, 10, 0, tzinfo=UTC), str(DATA / "jobs" / "2")),
        JobInfo(3, 2, "broad-2026", "full", 1, 4, None, None, str(DATA / "jobs" / "3")),
    ]  # fmt: skip


@pytest.fixture
def golden_history() -> pd.DataFrame:
    rows = [
        (1, "example-a.test", 0, 6, 10100),
        (1, "example-b.test", 1, 3, 19000),
        (2, "site.fr", 0, 3, 54600),
        (2, "example.com", 4, 2, 1500),
    ]
    return pd.DataFrame(rows, columns=["job_id", "domain", "stopreason", "objects", "bytes"])


DAYS = [date(2026, 11, 20), date(2026, 11, 21), date(2026, 11, 22)]


def _ts(day: date, hour: int) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def seed_qa_db(engine: sa.Engine, root: Path) -> None:
    """Two definitions, four jobs over three days (+ one last year), history, origins, DNS."""
    with engine.begin() as conn:
        x = conn.execute
        tpl = x(sa.text("INSERT INTO templates (name) VALUES ('t') RETURNING template_id")).scalar()
        sel = x(sa.text("INSERT INTO harvestdefinitions (name, kind) VALUES ('demo-daily',"
                        " 'partial') RETURNING harvest_id")).scalar()  # fmt: skip
        broad = x(sa.text("INSERT INTO harvestdefinitions (name, kind) VALUES ('broad-2026',"
                          " 'full') RETURNING harvest_id")).scalar()  # fmt: skip
        configs = {}
        for name in ("example-a.test", "example-b.test", "site.fr", "example.com"):
            did = x(sa.text("INSERT INTO domains (name) VALUES (:n) RETURNING domain_id"),
                    {"n": name}).scalar()  # fmt: skip
            configs[name] = x(
                sa.text("INSERT INTO configurations (name, domain_id, template_id)"
                        " VALUES ('default', :d, :t) RETURNING config_id"),
                {"d": did, "t": tpl},
            ).scalar()  # fmt: skip

        def job(hid: int, num: int, day: date, golden: str | None, status: int = 3) -> int:
            job_dir = root / "jobs" / f"{hid}-{num}"
            if golden:
                shutil.copytree(DATA / "jobs" / golden, job_dir)
            else:
                (job_dir / "logs").mkdir(parents=True)
            return x(
                sa.text("INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                        " template_name, template, seedlist, startdate, enddate, job_dir)"
                        " VALUES (:h, :n, 0, :s, 'C', 't', '{}', '', :a, :b, :d)"
                        " RETURNING job_id"),
                {"h": hid, "n": num, "s": status, "a": _ts(day, 8), "b": _ts(day, 9),
                 "d": str(job_dir)},
            ).scalar()  # fmt: skip

        j1 = job(sel, 1, DAYS[0], "1")
        j2 = job(broad, 1, DAYS[1], "2")
        job(broad, 2, DAYS[2], None, status=4)  # crawl log missing
        j4 = job(sel, 2, DAYS[2], "1")
        job(sel, 0, date(2025, 11, 20), "1")  # last year's run, for the year comparison

        def hist(job_id: int, hid: int, domain: str, reason: int, objects: int) -> None:
            x(sa.text("INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id,"
                      " harvest_id, job_id) VALUES (:r, :o, :o * 100, :c, :h, :j)"),
              {"r": reason, "o": objects, "c": configs[domain], "h": hid, "j": job_id})  # fmt: skip

        hist(j1, sel, "example-a.test", 0, 6)
        hist(j1, sel, "example-b.test", 0, 3)
        hist(j4, sel, "example-a.test", 0, 12)  # grew
        hist(j4, sel, "example-b.test", 1, 3)  # hit the object limit
        hist(j2, broad, "site.fr", 0, 3)
        x(sa.text("INSERT INTO preload_runs (run_id) VALUES ('r1')"))
        x(
            sa.text(
                "INSERT INTO preload_sources (run_id, source_name, kind) VALUES"
                " ('r1', 'afnic', 'registry'), ('r1', 'bnf-selection', 'curators')"
            )
        )
        x(
            sa.text(
                "INSERT INTO domain_origins (domain, origin, run_id) VALUES"
                " ('site.fr', 'afnic', 'r1'), ('example.com', 'bnf-selection', 'r1')"
            )
        )
        x(sa.text("INSERT INTO dns_checks (run_id, domain, class, checked_at) VALUES"
                  " ('r1', 'site.fr', 'active', :t), ('r1', 'gone.fr', 'failed', :t)"),
          {"t": _ts(DAYS[1], 3)})  # fmt: skip


def tree_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}  # fmt: skip
