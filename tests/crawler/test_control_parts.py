"""Parts of the crawl control checked alone: operator filters (RE2 regex, SURT prefix as the
shared SURT writes it), the requests' checks (harvestflow.job_actions), the stop reason's one
home. The crawl itself: test_crawl_control.py."""

from __future__ import annotations

import pytest

from crawler.control_gates import OperatorFilter
from harvestflow.job_actions import ActionError, check_arguments


def test_surt_prefix_filter_matches_what_cdx_indexes_write():
    f = OperatorFilter("cal", "surt", "test,example)/calendar", 1, "dora")
    assert f.matches("http://www.example.test/calendar/2026/11/")
    assert f.matches("https://example.test/calendar")
    assert not f.matches("http://example.test/news/calendar/")
    assert not f.matches("http://other.test/calendar/")


def test_regex_filter_is_re2_searched():
    f = OperatorFilter("sid", "regex", r"[?&]sid=\d+", 2, "dora")
    assert f.matches("http://a.test/shop?x=1&sid=0001")
    assert not f.matches("http://a.test/shop?x=1")
    with pytest.raises(ActionError, match="RE2"):
        OperatorFilter("bad", "regex", r"(a)\1", 3, "dora")  # a backreference: not RE2


@pytest.mark.parametrize(
    ("action", "args", "message"),
    [
        ("jump", {}, "unknown action"),
        ("pause", {"now": True}, "takes no arguments"),
        ("filter", {"kind": "glob", "pattern": "*"}, "filter kind"),
        ("filter", {"kind": "surt", "pattern": "a b"}, "no spaces"),
        ("filter", {"kind": "regex", "pattern": "x", "name": "a b"}, "filter name"),
        ("filter", {"kind": "regex", "pattern": "x", "save": "domain"}, "domain's name"),
        ("limits", {"max_objects": "10"}, "an integer"),
        ("limits", {"max_pages": 10}, "unknown limit"),
        ("limits", {"max_bytes": -5}, "an integer, -1"),
    ],
)
def test_bad_requests_name_what_is_wrong(action, args, message):
    with pytest.raises(ActionError, match=message):
        check_arguments(action, args)


def test_stop_reason_vocabulary_has_one_home():
    from harvestflow.formats.stop_reasons import StopReason

    assert StopReason.STOPPED_BY_OPERATOR == 7
    assert StopReason(7).text == "stopped by operator"
    assert StopReason(7).name == "STOPPED_BY_OPERATOR"


def test_a_pause_takes_only_frontier_requests_from_the_hosts_send_queues():
    """crawler.internals.take_unsent_requests on Scrapy's own download slots (their private
    queue of (request, Deferred)): the frontier requests are taken, a browser's and a
    prerequisite's stay, in their order. A Scrapy release that changes the slots fails here."""
    from types import SimpleNamespace

    from scrapy import Request
    from scrapy.core.downloader import Slot
    from twisted.internet.defer import Deferred

    from crawler.control_gates import held_by_pause
    from crawler.internals import take_unsent_requests

    def req(path: str, **meta: object) -> Request:
        return Request(f"http://a.test{path}", meta=meta)

    hf = {"hf": {"key": "k"}}
    a, b = Slot(1, 1.0), Slot(1, 1.0)
    a.queue.extend((r, Deferred()) for r in [
        req("/1", **hf), req("/robots.txt"), req("/2", **hf),
        req("/img", **hf, hf_browser=object()), req("/3", **hf),
    ])  # fmt: skip
    b.queue.append((req("/4", **hf), Deferred()))
    taken = take_unsent_requests(SimpleNamespace(slots={"a": a, "b": b}), held_by_pause)
    assert [r.url[len("http://a.test") :] for r, _ in taken] == ["/1", "/2", "/3", "/4"]
    assert all(isinstance(d, Deferred) and not d.called for _, d in taken)
    assert [r.url[len("http://a.test") :] for r, _ in a.queue] == ["/robots.txt", "/img"]
    assert not b.queue
