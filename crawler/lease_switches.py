"""Whether a crawl takes leases, read without SQLAlchemy.

Why apart from :mod:`crawler.lease_tables`: the crawl's settings (crawler/runner.py) list the
lease components only when a lease is taken, and deciding that must not import SQLAlchemy (about
0.3 CPU-s at the start of every crawl process) for the many crawls that take none: a crawl
outside a crawl task (no job lease) with the host leases off (the default outside the celery
executor, and always for a crawl without politeness delays).
"""

from __future__ import annotations

import os

# the crawl task's job lease, handed to its crawler (harvest/joblease.py): "<job id>=<holder>"
JOB_LEASE_ENV = "HARVESTFLOW_JOB_LEASE"


def host_leases_enabled(polite: bool) -> bool:
    """``[crawler] host_leases``: true, false or "auto" (on with the celery executor)."""
    from harvestflow.settings import get_settings

    settings = get_settings()
    raw = settings.get("crawler", "host_leases", "auto")
    if not polite:
        return False
    if isinstance(raw, bool):
        return raw
    return str(raw).lower() == "auto" and settings.executor == "celery"


def job_lease_given() -> bool:
    """This process renews a job lease (the crawl task set :data:`JOB_LEASE_ENV`)."""
    return bool(os.environ.get(JOB_LEASE_ENV))
