"""The continuous crawl's test set-up: a fast template, a revisit policy with short waits, the
hour the tests start at, a selection record of a seed, and pywb serving the live index."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import sqlalchemy as sa

from harvest.continuous.policy import HOUR, RevisitPolicy
from indexing.nrt import pywb_config
from tests.support.environment import free_port, oracle

FAST = {
    "delay_factor": 0.0,
    "min_delay_ms": 0,
    "max_delay_ms": 0,
    "connections_per_host": 4,
    "retries": 1,
    "download_timeout_s": 10,
    "warc_max_size": 1500,  # files close during the run: each is made live as it closes
}
POLICY = RevisitPolicy(
    initial_wait_s={"html": HOUR, "image": 2 * HOUR, "document": 2 * HOUR, "av": 4 * HOUR},
    depth_factor=1.0,
    min_wait_s=25 * 60.0,
    max_wait_s=48 * HOUR,
    fixed_wait_s=6 * HOUR,
)
H0 = dt.datetime(2026, 11, 22, 6, 0, tzinfo=dt.UTC)


def add_record(engine: sa.Engine, seed: str, start: str = "2026-11-01 06:00:00") -> None:
    schedules = [{"frequency": "DAILY", "startDate": start, "endDate": None}]
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO selection_records (collection, seed_url, budget, frequency, depth,"
                " scope, schedules, theme) VALUES ('news', :s, 'small', 'daily', 'host', 'root',"
                " CAST(:sch AS jsonb), 'news')"
            ),
            {"s": seed, "sch": json.dumps(schedules)},
        )


def start_pywb(live: Path) -> subprocess.Popen[bytes]:
    pywb_config(live)
    port = free_port()
    proc = subprocess.Popen(
        [str(oracle("wayback")), "-p", str(port), "-b", "127.0.0.1"],
        cwd=live,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    proc.port = port  # type: ignore[attr-defined]
    return proc
