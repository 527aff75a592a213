"""Harvest channels → crawl queues and pools: where a job's crawl runs is its channel's business.

NetarchiveSuite sends a job to the harvesters of its channel: HIGHPRIORITY for selective
channels, LOWPRIORITY for snapshot channels (``harvestchannel.issnapshot``), whatever created the
job. Here the two priorities are Airflow pools that are also Celery queues (``[airflow]
high_priority_pool`` / ``low_priority_pool``), so a crawl machine is dedicated to a channel
kind by the queues its worker listens to. A channel added in the database routes by its
``issnapshot`` flag; a job whose channel is unknown routes by its own ``snapshot`` flag, with a
warning naming the job and the channel.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import sqlalchemy as sa

from harvestflow.db import get_engine
from harvestflow.formats.harvest_channels import ChannelPriority
from harvestflow.settings import get_settings

log = logging.getLogger(__name__)


def queue_names() -> dict[str, str]:
    """{"high": pool/queue of selective channels, "low": of snapshot channels}."""
    high, low = get_settings().crawl_pools
    return {ChannelPriority.HIGH.value: high, ChannelPriority.LOW.value: low}


def split_by_channel(
    job_ids: Iterable[int], engine: sa.Engine | None = None
) -> dict[str, list[int]]:
    """The jobs split by their channel's priority, in the given order: {"high": [...], "low": [...]}.

    A job id that is not in the database is refused with its id (a DAG bug, not data).
    """
    ids = [int(j) for j in job_ids]
    split: dict[str, list[int]] = {p.value: [] for p in ChannelPriority}
    if not ids:
        return split
    with (engine or get_engine()).connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT j.job_id, j.channel, j.snapshot, c.issnapshot FROM jobs j"
                " LEFT JOIN harvestchannel c ON c.name = j.channel"
                " WHERE j.job_id = ANY(:ids)"
            ),
            {"ids": ids},
        ).all()
    by_id = {int(r.job_id): r for r in rows}
    missing = [j for j in ids if j not in by_id]
    if missing:
        raise LookupError(f"job(s) {missing} are not in the harvest database")
    for job_id in ids:
        row = by_id[job_id]
        snapshot = row.issnapshot
        if snapshot is None:
            log.warning(
                "job %s: channel %r is not in harvestchannel; routed by the job's snapshot flag",
                job_id,
                row.channel,
            )
            snapshot = row.snapshot
        split[(ChannelPriority.LOW if snapshot else ChannelPriority.HIGH).value].append(job_id)
    return split
