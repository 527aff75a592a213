"""Fixtures of the preservation tests (defined in tests/support/preservation_jobs.py)."""

from tests.support.preservation_jobs import make_job, pres_settings, replica_client

__all__ = ["make_job", "pres_settings", "replica_client"]
