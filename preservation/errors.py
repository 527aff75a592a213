"""The two kinds of failure of a preservation ingest, and why they are told apart.

SPAR's model: minor errors are handled by an automatic process, serious ones by people. Here a
*transient* error (the object store unreachable, a 5xx, a timeout) is retried with back-off and,
if it outlasts the retries, fails the task so that Airflow retries it later: nothing is lost, the
package stays ``ingesting``. A *serious* error (a checksum that does not match, a missing file, an
invalid bag, an object already stored with other content) can never heal by retrying: the job goes
to the manual queue with the reason.
"""

from __future__ import annotations

from harvestflow.errors import HarvestflowError


class PreservationError(HarvestflowError):
    """Base class of preservation failures (under the project's base)."""


class TransientError(PreservationError):
    """May succeed if tried again later (network, 5xx, timeouts)."""


class SeriousError(PreservationError):
    """Needs a person: the job goes to the manual queue with :attr:`reason`."""

    kind = "serious"

    def __init__(self, reason: str, *, file_name: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.file_name = file_name


class ChecksumMismatch(SeriousError):
    kind = "checksum_mismatch"


class MissingFile(SeriousError):
    kind = "missing_file"


class InvalidBag(SeriousError):
    kind = "invalid_bag"


class StorageConflict(SeriousError):
    """An object is already stored under the key with other content: never overwrite it."""

    kind = "storage_conflict"
