"""Why a domain's harvest in a job stopped: NetarchiveSuite's StopReason, plus the operator's.

Why one home: the crawler writes these codes in summary.json, the harvest DB keeps them in
``historyinfo.stopreason`` (job generation reads them back), the curator pages and QA show
them. Codes 0-6 are NetarchiveSuite's (its ``StopReason`` enum, same names and numbers);
:attr:`StopReason.STOPPED_BY_OPERATOR` (7) is harvestflow's: the job was stopped by an operator
(``harvestflow jobs stop``) while the domain still had URLs queued.
"""

from __future__ import annotations

from harvestflow.formats.codes import StoredCode


class StopReason(StoredCode):
    """A domain's stop reason in one job, stored as its number (``historyinfo.stopreason``)."""

    DOWNLOAD_COMPLETE = 0
    """The crawl ran out of URLs for the domain: the site's end."""
    OBJECT_LIMIT = 1
    """The harvest's (job's) object limit was reached."""
    SIZE_LIMIT = 2
    """The harvest's (job's) byte limit was reached."""
    CONFIG_SIZE_LIMIT = 3
    """The domain configuration's byte limit was reached."""
    DOWNLOAD_UNFINISHED = 4
    """URLs were left (a failure, a killed crawl, a domain missing from the summary)."""
    CONFIG_OBJECT_LIMIT = 5
    """The domain configuration's object limit was reached."""
    TIME_LIMIT = 6
    """The job's running-time limit ended the crawl."""
    STOPPED_BY_OPERATOR = 7
    """harvestflow's: an operator stopped the job while the domain had URLs queued."""

    @property
    def text(self) -> str:
        """Words for reports and pages ("object limit")."""
        return _TEXT[self]

    @classmethod
    def text_of(cls, code: int, default: str) -> str:
        """The words for ``code``, or ``default`` for a value outside the enum (old data)."""
        try:
            return cls(code).text
        except ValueError:
            return default


_TEXT = {
    StopReason.DOWNLOAD_COMPLETE: "complete",
    StopReason.OBJECT_LIMIT: "object limit",
    StopReason.SIZE_LIMIT: "size limit",
    StopReason.CONFIG_SIZE_LIMIT: "config size limit",
    StopReason.DOWNLOAD_UNFINISHED: "unfinished",
    StopReason.CONFIG_OBJECT_LIMIT: "config object limit",
    StopReason.TIME_LIMIT: "time limit",
    StopReason.STOPPED_BY_OPERATOR: "stopped by operator",
}

LIMITS = frozenset(
    {
        StopReason.OBJECT_LIMIT,
        StopReason.SIZE_LIMIT,
        StopReason.CONFIG_SIZE_LIMIT,
        StopReason.CONFIG_OBJECT_LIMIT,
        StopReason.TIME_LIMIT,
    }
)
"""A limit (not the site's end, a failure or an operator) ended the domain's harvest."""
