"""Names of the codes the QA reports show (Heritrix statuses, NetarchiveSuite enumerations).

Why: curators read "DNS lookup failed" faster than "-6"; keeping the names beside the numbers,
exactly as Heritrix and NetarchiveSuite name them, lets people who know Heritrix and NetarchiveSuite recognise
their own vocabulary.
"""

from __future__ import annotations

from harvestflow.formats import stop_reasons

HERITRIX_STATUS = {
    1: "DNS lookup ok",
    0: "not attempted",
    -1: "DNS unresolvable",
    -2: "connect failed",
    -3: "connection lost",
    -4: "timeout",
    -5: "unexpected runtime error",
    -6: "prerequisite (DNS) failed",
    -7: "unfetchable URI",
    -8: "too many retries",
    -50: "deferred",
    -61: "robots prerequisite failed",
    -404: "empty response",
    -4000: "chaff (crawler trap)",
    -4001: "too many link hops",
    -4002: "too many embed hops",
    -5000: "out of scope",
    -5001: "blocked by operator",
    -5002: "blocked by custom processor",
    -5003: "blocked by quota (budget)",
    -5004: "blocked by runtime limit",
    -6000: "deleted by operator",
    -7000: "processing thread killed",
    -9998: "robots.txt precluded",
}

HTTP_CLASSES = {1: "1xx informational", 2: "2xx success", 3: "3xx redirect", 4: "4xx client error",
                5: "5xx server error"}  # fmt: skip

STOP_REASONS = stop_reasons.TEXT
LIMIT_STOP_REASONS = stop_reasons.LIMITS

JOB_STATUS = {
    0: "NEW",
    1: "SUBMITTED",
    2: "STARTED",
    3: "DONE",
    4: "FAILED",
    5: "RESUBMITTED",
    6: "FAILED_REJECTED",
}

# Statuses that mean a domain's name did not resolve, a crawler trap, a robots refusal.
DNS_FAILURE_CODES = frozenset({-1, -6})
TRAP_CODES = frozenset({-4000})
ROBOTS_CODES = frozenset({-9998, -61})
BUDGET_CODES = frozenset({-5003})

MIME_FAMILIES = ("text", "image", "application", "audio", "video")


def status_label(code: int) -> str:
    if code in HERITRIX_STATUS:
        return HERITRIX_STATUS[code]
    if 100 <= code <= 599:
        return HTTP_CLASSES.get(code // 100, "HTTP")
    return "unknown code"


def mime_family(mime: str) -> str:
    """text, image, application, audio, video or other (parameters and case ignored)."""
    major = (mime or "").split(";", 1)[0].strip().lower().split("/", 1)[0]
    return major if major in MIME_FAMILIES else "other"
