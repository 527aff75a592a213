"""What staging or ingesting one job came to: the ``status`` of the result a DAG task gets.

Why an enum: the preservation DAG fails the task of a job sent to the manual queue, and the CLI
sets its exit code from the same value; spelled as string literals on both sides, a typo is a
silent "not manual". A ``StrEnum``, so the result stays a JSON-able dict (Airflow's XCom keeps
an enum's value) and ``Outcome(result["status"])`` reads it back.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """The outcome of :func:`preservation.staging.stage_package` and
    :func:`preservation.ingest.ingest_job`."""

    STAGED = "staged"  # the bag is built and recorded, ready to ingest
    PRESERVED = "preserved"  # every file stored and verified (now, or already before)
    MANUAL = "manual"  # a serious error: in the manual queue, a person must act (see "error")
    NOT_READY = "not_ready"  # the job's files are not all in the repository yet
    BUSY = "busy"  # another worker holds the job

    @property
    def failed(self) -> bool:
        """True when a person must act (the DAG task fails, the CLI exits 1)."""
        return self is Outcome.MANUAL


def outcome_of(result: dict[str, object]) -> Outcome:
    """The outcome of a stage/ingest result dict (ValueError naming an unknown status)."""
    status = result.get("status")
    try:
        return Outcome(str(status))
    except ValueError:
        raise ValueError(
            f"job {result.get('job_id')}: unknown preservation outcome {status!r}"
            f" (expected one of {', '.join(o.value for o in Outcome)})"
        ) from None
