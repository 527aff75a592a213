"""Harvest channels: the two priorities that route a crawl, and the channels harvestflow names.

Why: NetarchiveSuite's channels are rows of ``harvestchannel`` (their names are settings:
``[harvest] high_priority_channel`` / ``low_priority_channel``, CIBLEE and LARGE by default),
and each routes by its priority (``issnapshot``). The priority words key the job split the DAGs
receive; the two fixed channels are written by harvestflow itself into ``jobs.channel`` for jobs
that no harvest definition's channel covers. Both are stored or passed as text, so StrEnum.
"""

from __future__ import annotations

from enum import StrEnum


class ChannelPriority(StrEnum):
    """Where a job's crawl runs: the pool and queue of its channel's priority."""

    HIGH = "high"
    """Selective harvests (``issnapshot`` false): ``[airflow] high_priority_pool``."""
    LOW = "low"
    """Snapshot (broad) harvests (``issnapshot`` true): ``[airflow] low_priority_pool``."""


class Channel(StrEnum):
    """Channel names harvestflow writes itself into ``jobs.channel`` (not configurable)."""

    CONTINUOUS = "CONTINUOUS"
    """A bounded run of the continuous crawl recorded as a job."""
    DELIVERY = "DELIVERY"
    """A retrospective delivery of WARC/ARC files registered as one job (never crawled)."""
