"""How the QA reports group and label status codes (the codes themselves: harvestflow.formats).

Why: curators read "DNS lookup failed" faster than "-6"; the labels live with the enums in
``harvestflow/formats/`` (fetch status, job status, stop reasons), so QA and the curator pages
show the same words. Here are only QA's own groupings: HTTP classes, the status families the
daily report counts, MIME families.
"""

from __future__ import annotations

from harvestflow.formats.fetch_status import FetchStatus

HTTP_CLASSES = {1: "1xx informational", 2: "2xx success", 3: "3xx redirect", 4: "4xx client error",
                5: "5xx server error"}  # fmt: skip

# Statuses that mean a domain's name did not resolve, a crawler trap, a robots refusal, a budget.
DNS_FAILURE_CODES = frozenset(
    {FetchStatus.DOMAIN_UNRESOLVABLE, FetchStatus.DOMAIN_PREREQUISITE_FAILURE}
)
TRAP_CODES = frozenset({FetchStatus.DEEMED_CHAFF})
ROBOTS_CODES = frozenset({FetchStatus.ROBOTS_PRECLUDED, FetchStatus.ROBOTS_PREREQUISITE_FAILURE})
BUDGET_CODES = frozenset({FetchStatus.BLOCKED_BY_QUOTA})

MIME_FAMILIES = ("text", "image", "application", "audio", "video")


def status_label(code: int) -> str:
    try:
        return FetchStatus(code).label
    except ValueError:
        pass
    if 100 <= code <= 599:
        return HTTP_CLASSES.get(code // 100, "HTTP")
    return "unknown code"


def mime_family(mime: str) -> str:
    """text, image, application, audio, video or other (parameters and case ignored)."""
    major = (mime or "").split(";", 1)[0].strip().lower().split("/", 1)[0]
    return major if major in MIME_FAMILIES else "other"
