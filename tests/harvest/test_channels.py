"""A job's harvest channel, not the DAG that made it, decides its crawl pool and queue."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from harvest.bootstrap import ensure_reference_data
from harvest.channels import queue_names, split_by_channel


def _job(conn: sa.Connection, index: int, channel: str, snapshot: bool) -> int:
    return int(
        conn.execute(
            sa.text(
                "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel, snapshot,"
                " template_name, template, seedlist) VALUES (1, 1, :i, 1, :c, :s, 't', '{}', '')"
                " RETURNING job_id"
            ),
            {"i": index, "c": channel, "s": snapshot},
        ).scalar_one()
    )


def test_jobs_route_by_their_channel_not_their_kind(db_engine, caplog) -> None:
    ensure_reference_data(db_engine)
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO harvestdefinitions (harvest_id, name, kind) VALUES (1, 'h', 'partial')"
            )
        )
        # a channel added in the database: a snapshot channel for selective one-offs
        conn.execute(
            sa.text(
                "INSERT INTO harvestchannel (name, issnapshot, comments)"
                " VALUES ('SNAPSHOT_EXTRA', true, 'added by an operator')"
            )
        )
        selective = _job(conn, 0, "CIBLEE", snapshot=False)
        broad = _job(conn, 1, "LARGE", snapshot=True)
        oneoff_on_snapshot = _job(conn, 2, "SNAPSHOT_EXTRA", snapshot=False)
        selective_kind_on_high = _job(conn, 3, "CIBLEE", snapshot=True)
        unknown = _job(conn, 4, "GONE", snapshot=True)
    split = split_by_channel(
        [selective, broad, oneoff_on_snapshot, selective_kind_on_high, unknown], db_engine
    )
    assert split == {
        "high": [selective, selective_kind_on_high],
        "low": [broad, oneoff_on_snapshot, unknown],
    }
    assert f"job {unknown}: channel 'GONE' is not in harvestchannel" in caplog.text
    assert split_by_channel([], db_engine) == {"high": [], "low": []}
    with pytest.raises(LookupError, match=r"\[999999\]"):
        split_by_channel([selective, 999999], db_engine)
    assert queue_names() == {"high": "crawl_high", "low": "crawl_low"}
