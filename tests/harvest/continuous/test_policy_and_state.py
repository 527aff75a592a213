"""The revisit policy and the per-visit state transition, with a given clock."""

from __future__ import annotations

import datetime as dt

import pytest

from harvest.continuous.noise import NoiseFilter, NoiseRule
from harvest.continuous.policy import HOUR, RevisitPolicy, content_class, policy_from_settings
from harvest.continuous.urlstate import Visit, apply_visit, dedup_line, judge, new_state

T0 = dt.datetime(2026, 11, 22, 6, 0, tzinfo=dt.UTC)


def test_initial_wait_orders_content_types_and_depth() -> None:
    p = RevisitPolicy()
    html, image, pdf, video = (
        p.initial_wait(m, 0) for m in ("text/html", "image/png", "application/pdf", "video/mp4")
    )
    assert html < image <= pdf < video
    assert p.initial_wait("text/html", 0) < p.initial_wait("text/html", 2)
    assert content_class("text/html; charset=utf-8") == "html"
    assert content_class("application/vnd.ms-excel") == "document"


def test_wait_shrinks_on_change_grows_without_and_is_clamped() -> None:
    p = RevisitPolicy(min_wait_s=HOUR, max_wait_s=10 * HOUR)
    assert p.next_wait(4 * HOUR, changed=True) == 2 * HOUR
    assert p.next_wait(4 * HOUR, changed=False) == 6 * HOUR
    assert p.next_wait(1.5 * HOUR, changed=True) == HOUR
    assert p.next_wait(9 * HOUR, changed=False) == 10 * HOUR
    elapsed = RevisitPolicy(use_elapsed=True, min_wait_s=HOUR, max_wait_s=100 * HOUR)
    assert elapsed.next_wait(4 * HOUR, changed=False, elapsed_s=8 * HOUR) == 12 * HOUR


def test_overrides_merge_and_reject_unknown_keys() -> None:
    p = RevisitPolicy().merged({"initial_wait_s": {"html": 60.0}, "min_wait_s": 30.0})
    assert p.initial_wait_s["html"] == 60.0 and p.initial_wait_s["av"] > 0
    with pytest.raises(ValueError, match="max_wiat_s"):
        RevisitPolicy().merged({"max_wiat_s": 1})
    tpl = policy_from_settings({"min_wait_s": 10.0, "news": {"max_wait_s": 7200.0}}, "news")
    assert (tpl.min_wait_s, tpl.max_wait_s) == (10.0, 7200.0)


def _visit(minutes: int, status: int = 200, digest: str = "sha1:A", **kw) -> Visit:
    return Visit(
        url="http://a.test/x",
        fetched_at=T0 + dt.timedelta(minutes=minutes),
        status=status,
        mime="text/html",
        digest=digest,
        warc_file="f.warc.gz",
        warc_offset=minutes,
        record_id=f"<urn:uuid:{minutes}>",
        warc_date="2026-11-22T06:00:00Z",
        **kw,
    )


def test_state_learns_from_visits_and_failures_get_fixed_wait() -> None:
    p = RevisitPolicy(min_wait_s=600, max_wait_s=100 * HOUR, fixed_wait_s=5 * HOUR)
    s = new_state("http://a.test/x", "a.test", "http://a.test/", 1, T0, p)
    s, verdict = apply_visit(s, _visit(0, etag='"e1"'), p)
    assert verdict is None and s.wait_s == p.initial_wait("text/html", 1)
    first_wait = s.wait_s
    s, verdict = apply_visit(s, _visit(60, digest="sha1:B"), p)
    assert verdict is True and s.wait_s == first_wait / 2 and s.changes == 1
    assert s.capture_offset == 60
    s, verdict = apply_visit(
        s, _visit(120, status=304, digest="sha1:B", revisit_profile="server-not-modified"), p
    )
    assert verdict is False and s.wait_s == first_wait / 2 * 1.5 and s.revisits == 1
    assert s.capture_offset == 60, "a revisit keeps pointing at the full capture"
    s, verdict = apply_visit(s, _visit(180, status=-6, digest=None), p)
    assert verdict is None and s.wait_s == 5 * HOUR and s.failures == 1
    assert s.next_due == T0 + dt.timedelta(minutes=180, hours=5)
    assert s.status == 200 and s.digest == "sha1:B"
    line = dedup_line(s)
    assert line is not None and line.split("\t")[:5] == [
        "http://a.test/x",
        "sha1:B",
        "2026-11-22T06:00:00Z",
        "f.warc.gz",
        "60",
    ]


def test_noise_digest_decides_when_a_rule_applies() -> None:
    rules = NoiseFilter([NoiseRule(r"a\.test/x", r'<span class="ts">[^<]*</span>')])
    d1 = rules.digest("http://a.test/x", b'<p>news</p><span class="ts">10:00</span>')
    d2 = rules.digest("http://a.test/x", b'<p>news</p><span class="ts">10:05</span>')
    d3 = rules.digest("http://a.test/x", b'<p>NEWS</p><span class="ts">10:05</span>')
    assert d1 == d2 != d3
    assert rules.digest("http://b.test/x", b"anything") is None
    p = RevisitPolicy()
    s = new_state("http://a.test/x", "a.test", "http://a.test/", 0, T0, p)
    s, _ = apply_visit(s, _visit(0, digest="sha1:S1", noise_digest=d1), p)
    assert judge(s, _visit(60, digest="sha1:S2", noise_digest=d2)) is False
    assert judge(s, _visit(60, digest="sha1:S3", noise_digest=d3)) is True
    assert judge(s, _visit(60, status=404, digest="sha1:S1", noise_digest=d1)) is True


def test_a_304_whose_validators_disagree_is_not_trusted() -> None:
    p = RevisitPolicy(min_wait_s=600)
    s = new_state("http://a.test/x", "a.test", "http://a.test/", 0, T0, p)
    s, _ = apply_visit(s, _visit(0, etag='"v1"', last_modified="Mon, 02 Nov 2026 10:00:00 GMT"), p)
    agree = _visit(60, status=304, etag='"v1"', revisit_profile="server-not-modified")
    assert judge(s, agree) is False
    moved = _visit(
        60,
        status=304,
        etag='"v1"',
        last_modified="Sun, 22 Nov 2026 05:00:00 GMT",
        revisit_profile="server-not-modified",
    )
    assert judge(s, moved) is None
    after, verdict = apply_visit(s, moved, p)
    assert verdict is None and after.etag is None and after.last_modified is None
    assert after.wait_s == 600 and after.changes == 0 and after.digest == s.digest
    assert dedup_line(after).split("\t")[6:] == ["-", "-"], "next visit: no conditional headers"


LM1 = "Mon, 02 Nov 2026 10:00:00 GMT"
LM2 = "Sun, 22 Nov 2026 05:00:00 GMT"


def _conditional(state) -> list[str]:
    """The (If-None-Match, If-Modified-Since) values the next visit sends ('-': none)."""
    return dedup_line(state).split("\t")[6:]


def test_a_validator_that_said_unchanged_while_the_other_said_changed_is_not_sent() -> None:
    p = RevisitPolicy()
    s = new_state("http://a.test/x", "a.test", "http://a.test/", 0, T0, p)
    s, _ = apply_visit(s, _visit(0, digest="sha1:A", etag='"v1"', last_modified=LM1), p)
    assert _conditional(s) == ['"v1"', LM1], "both trusted: both conditional headers sent"
    # ETag says unchanged, Last-Modified says changed (same bytes): the ETag would skip
    s2, verdict = apply_visit(s, _visit(60, digest="sha1:A", etag='"v1"', last_modified=LM2), p)
    assert verdict is False
    assert (s2.etag_trusted, s2.lm_trusted) == (False, True)
    assert _conditional(s2) == ["-", LM2]
    # the reverse: Last-Modified stays, ETag moves -> Last-Modified not sent
    r, _ = apply_visit(s, _visit(60, digest="sha1:A", etag='"v2"', last_modified=LM1), p)
    assert (r.etag_trusted, r.lm_trusted) == (True, False)
    assert _conditional(r) == ['"v2"', "-"]
    # distrust is for good, even when both agree later
    s3, _ = apply_visit(s2, _visit(120, digest="sha1:A", etag='"v1"', last_modified=LM2), p)
    assert _conditional(s3) == ["-", LM2]


def test_validators_unchanged_while_the_content_changed_are_both_dropped() -> None:
    p = RevisitPolicy()
    s = new_state("http://a.test/x", "a.test", "http://a.test/", 0, T0, p)
    s, _ = apply_visit(s, _visit(0, digest="sha1:A", etag='"v1"', last_modified=LM1), p)
    s, verdict = apply_visit(s, _visit(60, digest="sha1:B", etag='"v1"', last_modified=LM1), p)
    assert verdict is True and _conditional(s) == ["-", "-"]
    # validators that change with unchanged bytes only cost a download: still trusted
    t = new_state("http://a.test/y", "a.test", "http://a.test/", 0, T0, p)
    t, _ = apply_visit(t, _visit(0, digest="sha1:A", etag='"v1"', last_modified=LM1), p)
    t, _ = apply_visit(t, _visit(60, digest="sha1:A", etag='"v2"', last_modified=LM2), p)
    assert _conditional(t) == ['"v2"', LM2]


def test_a_304_echoing_an_equal_etag_but_a_moved_last_modified_distrusts_the_etag() -> None:
    p = RevisitPolicy()
    s = new_state("http://a.test/x", "a.test", "http://a.test/", 0, T0, p)
    s, _ = apply_visit(s, _visit(0, etag='"v1"', last_modified=LM1), p)
    moved = _visit(60, status=304, etag='"v1"', last_modified=LM2, revisit_profile="x")
    after, verdict = apply_visit(s, moved, p)
    assert verdict is None and (after.etag_trusted, after.lm_trusted) == (False, True)
    full, _ = apply_visit(after, _visit(120, etag='"v1"', last_modified=LM2), p)
    assert _conditional(full) == ["-", LM2]


def test_live_watcher_indexes_a_warc_as_soon_as_it_closes(tmp_path) -> None:
    from crawler.warc import records
    from crawler.warc.files import RotatingWarcWriter
    from indexing.nrt import LiveWatcher

    def response(i: int):
        http = records.response_http_headers(200, "HTTP/1.1", [("Content-Type", "text/html")])
        date = records.warc_date(T0 + dt.timedelta(minutes=i))
        rid = records.new_record_id()
        body = b"<p>" + bytes(str(i), "ascii") * 3000 + b"</p>"
        return records.response_record(f"http://a.test/{i}", http, body, date, rid, None, None)

    warcs, live = tmp_path / "warcs", tmp_path / "live"
    writer = RotatingWarcWriter(warcs, "7-1", 10**9, {"software": "t"})
    watcher = LiveWatcher(warcs, live)
    writer.write(response(1))
    assert watcher.poll_once() == [], "a file still .open is not indexed"
    writer.close()
    writer.write(response(2))  # the crawl goes on in a new file
    (first,) = watcher.poll_once()
    assert (live / "index" / f"{first}.cdxj").read_text().count("\n") == 1
    assert (live / "warcs" / first).is_file() and watcher.poll_once() == []
    writer.close()
    watcher.stop()  # the last pass takes the file closed at the end of the run
    assert len(watcher.indexed_at) == 2 and watcher.lines == 2


def test_every_nth_visit_is_unconditional_so_a_lying_etag_is_caught() -> None:
    p = RevisitPolicy(verify_every=4)
    s = new_state("http://a.test/x", "a.test", "http://a.test/", 0, T0, p)
    s, _ = apply_visit(s, _visit(0, digest="sha1:A", etag='"v1"', last_modified=LM1), p)
    for n in (1, 2):  # the server answers 304 to the conditional requests
        assert dedup_line(s, p.verify_every).split("\t")[6:] == ['"v1"', LM1]
        not_modified = _visit(60 * n, status=304, etag='"v1"', revisit_profile="x")
        s, verdict = apply_visit(s, not_modified, p)
        assert verdict is False
    # visit 4: no conditional headers; the download shows the content changed under "v1"
    assert dedup_line(s, p.verify_every).split("\t")[6:] == ["-", "-"]
    assert dedup_line(s).split("\t")[6:] == ['"v1"', LM1], "verify_every 0: never"
    s, verdict = apply_visit(s, _visit(240, digest="sha1:B", etag='"v1"', last_modified=LM2), p)
    assert verdict is True and s.changes == 1
    assert dedup_line(s, p.verify_every).split("\t")[6:] == ["-", LM2], "the ETag lied: dropped"


def test_an_identical_payload_revisit_keeps_the_noise_digest_for_the_next_visit() -> None:
    rules = NoiseFilter([NoiseRule(r"a\.test/x", r'<span class="ts">[^<]*</span>')])
    d1 = rules.digest("http://a.test/x", b'<p>news</p><span class="ts">10:00</span>')
    p = RevisitPolicy()
    s = new_state("http://a.test/x", "a.test", "http://a.test/", 0, T0, p)
    s, _ = apply_visit(s, _visit(0, digest="sha1:S1", noise_digest=d1), p)
    # the same bytes again: the crawler wrote a revisit record (no body, no noise digest read)
    same = _visit(60, digest="sha1:S1", revisit_profile="identical-payload-digest")
    s, verdict = apply_visit(s, same, p)
    assert verdict is False and s.noise_digest == d1
    # then only the clock moved: still unchanged for the policy
    assert judge(s, _visit(120, digest="sha1:S2", noise_digest=d1)) is False
    # a response without a noise digest (the rule was removed) stops using it
    s, _ = apply_visit(s, _visit(180, digest="sha1:S3"), p)
    assert s.noise_digest is None
