"""One URL's revisit history and the pure transition applied after each visit.

Why pure: the database layer, the tests and the simulated-clock benchmark move a URL's state
the same way, with ``now`` given, so the benchmark measures the policy the crawl runs.
"Unchanged" is a 304 whose validators agree, or an equal payload digest (noise-stripped when a
rule applies); a validator that once said "unchanged" wrongly is distrusted for good, and every
``verify_every``-th visit sends none so the digest can check them (see :func:`apply_visit`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace

from harvest.continuous.policy import RevisitPolicy, content_class

# Heritrix codes after which the content cannot be judged (crawl.log's negative statuses)
UNJUDGEABLE_MAX = 0  # every status <= 0 is a failure or a refusal


@dataclass
class Visit:
    """What one fetch of a URL saw (from the run's crawl.log and WARC records)."""

    url: str
    fetched_at: dt.datetime
    status: int
    mime: str | None = None
    digest: str | None = None  # strict payload digest; for a 304 the earlier capture's
    noise_digest: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    revisit_profile: str | None = None  # "identical-payload-digest" | "server-not-modified"
    warc_file: str | None = None
    warc_offset: int | None = None
    record_id: str | None = None
    warc_date: str | None = None
    hops: str = ""
    seed: str | None = None


@dataclass
class UrlState:
    url: str
    host: str
    seed_url: str
    depth: int
    wait_s: float
    next_due: dt.datetime
    content_class: str | None = None
    mime: str | None = None
    status: int | None = None
    last_fetch: dt.datetime | None = None
    last_change: dt.datetime | None = None
    digest: str | None = None
    noise_digest: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    capture_date: str | None = None
    capture_file: str | None = None
    capture_offset: int | None = None
    capture_record_id: str | None = None
    visits: int = 0
    changes: int = 0
    revisits: int = 0
    failures: int = 0
    etag_trusted: bool = True
    lm_trusted: bool = True
    extra: dict[str, object] = field(default_factory=dict)


def new_state(
    url: str, host: str, seed_url: str, depth: int, now: dt.datetime, policy: RevisitPolicy
) -> UrlState:
    """A URL never visited: due now, its first wait from the policy's HTML default."""
    return UrlState(
        url=url,
        host=host,
        seed_url=seed_url,
        depth=depth,
        wait_s=policy.initial_wait("text/html", depth),
        next_due=now,
    )


def judge(state: UrlState, visit: Visit) -> bool | None:
    """True changed, False unchanged, None cannot be judged (first visit or failure)."""
    if visit.status <= UNJUDGEABLE_MAX:
        return None
    if visit.status == 304:
        return False if state.digest and not validators_disagree(state, visit) else None
    if state.status is None or state.digest is None or state.status <= 0:
        return None
    if visit.status != state.status:
        return True
    if visit.revisit_profile is not None:
        return False
    if visit.noise_digest and state.noise_digest:
        return visit.noise_digest != state.noise_digest
    return visit.digest != state.digest


def validators_disagree(state: UrlState, visit: Visit) -> bool:
    """A 304 whose ETag or Last-Modified differs from the ones we asked with: the two
    indicators do not agree, so "not modified" is not trusted."""
    return bool(
        (visit.etag and state.etag and visit.etag != state.etag)
        or (
            visit.last_modified
            and state.last_modified
            and visit.last_modified != state.last_modified
        )
    )


def _same(old: str | None, new: str | None) -> bool | None:
    """Does a validator say "unchanged"? None when either side has none."""
    return None if not (old and new) else old == new


def validator_trust(state: UrlState, visit: Visit) -> tuple[bool, bool]:
    """(etag_trusted, lm_trusted) after ``visit``; see the module doc (distrust is for good)."""
    etag_ok, lm_ok = state.etag_trusted, state.lm_trusted
    etag_same = _same(state.etag, visit.etag)
    lm_same = _same(state.last_modified, visit.last_modified)
    if visit.status == 304:
        content_changed = False  # unknown: only the validators can contradict each other
    elif visit.status > 0 and visit.status == state.status and state.digest and visit.digest:
        content_changed = visit.digest != state.digest
    else:
        return etag_ok, lm_ok
    if etag_same and (content_changed or lm_same is False):
        etag_ok = False
    if lm_same and (content_changed or etag_same is False):
        lm_ok = False
    return etag_ok, lm_ok


def apply_visit(
    state: UrlState, visit: Visit, policy: RevisitPolicy, now: dt.datetime | None = None
) -> tuple[UrlState, bool | None]:
    """The state after ``visit`` and the verdict (changed / unchanged / None)."""
    now = now or visit.fetched_at
    verdict = judge(state, visit)
    s = replace(state)
    s.visits += 1
    s.etag_trusted, s.lm_trusted = validator_trust(state, visit)
    elapsed = (visit.fetched_at - state.last_fetch).total_seconds() if state.last_fetch else None
    if verdict is None and visit.status <= UNJUDGEABLE_MAX:
        s.failures += 1
        s.wait_s = policy.fixed_wait_s
        s.status = visit.status if state.status is None or state.status <= 0 else state.status
        s.next_due = visit.fetched_at + dt.timedelta(seconds=s.wait_s)
        s.last_fetch = visit.fetched_at
        return s, None
    if verdict is None and visit.status == 304:
        # untrusted 304: forget the validators, fetch in full at the shortest wait
        s.last_fetch = visit.fetched_at
        s.etag = s.last_modified = None
        s.revisits += 1 if visit.revisit_profile else 0
        s.wait_s = policy.min_wait_s
        s.next_due = visit.fetched_at + dt.timedelta(seconds=s.wait_s)
        return s, None
    if verdict is None:
        s.wait_s = policy.initial_wait(visit.mime or state.mime, state.depth)
    else:
        s.wait_s = policy.next_wait(state.wait_s, verdict, elapsed)
    if verdict:
        s.changes += 1
        s.last_change = visit.fetched_at
    if visit.revisit_profile is not None:
        s.revisits += 1
    s.last_fetch = visit.fetched_at
    s.next_due = visit.fetched_at + dt.timedelta(seconds=s.wait_s)
    if visit.status != 304:
        s.status = visit.status
        if visit.mime:
            s.mime = visit.mime
            s.content_class = content_class(visit.mime)
        if visit.digest:
            s.digest = visit.digest
        # keep the noise digest only while a rule applies (a removed rule stops using it); an
        # identical-payload revisit has no body to strip, but its payload is the one the
        # previous noise digest was taken from, so that digest still holds
        if visit.noise_digest or visit.revisit_profile is None:
            s.noise_digest = visit.noise_digest
    if visit.etag or visit.status != 304:
        s.etag = visit.etag
    if visit.last_modified or visit.status != 304:
        s.last_modified = visit.last_modified
    if visit.revisit_profile is None and visit.warc_file and visit.status != 304:
        # a full response: later revisit records and the dedup index point at it
        s.capture_file = visit.warc_file
        s.capture_offset = visit.warc_offset
        s.capture_record_id = visit.record_id
        s.capture_date = visit.warc_date
    return s, verdict


def dedup_line(state: UrlState, verify_every: int = 0) -> str | None:
    """The crawler's dedup index line of the URL's last full capture (None if there is none).

    Its ETag / Last-Modified become the next visit's conditional headers: only trusted ones,
    and none at all when the next visit is a ``verify_every``-th one (see the module doc).
    """
    if not (state.digest and state.capture_file and state.capture_date):
        return None
    verify = verify_every > 0 and (state.visits + 1) % verify_every == 0
    fields = [
        state.url,
        state.digest,
        state.capture_date,
        state.capture_file,
        str(state.capture_offset or 0),
        state.capture_record_id or "-",
        _clean(state.etag if state.etag_trusted and not verify else None),
        _clean(state.last_modified if state.lm_trusted and not verify else None),
    ]
    return "\t".join(fields)


def _clean(value: str | None) -> str:
    if not value:
        return "-"
    return value.replace("\t", " ").replace("\n", " ").strip() or "-"
