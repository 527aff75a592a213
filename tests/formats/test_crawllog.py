"""The crawl.log model against Heritrix's own lines.

tests/formats/data/heritrix-crawl.log holds lines written by Heritrix itself, copied from
public sources: the National Library of Australia's test log of crawl-log2xml (Heritrix 3,
2019), the British Library's crawl-log tail shown in ukwa-monitor's documentation (Heritrix 3,
2017, with ``-extraInfo`` JSON objects), the Archive-It line quoted in warcprox's source
(Heritrix 3, 2015) and lines of crawl logs stored in NetarchiveSuite's test metadata ARCs
(Heritrix 1.14, same 12 fields; the -61 robots-prerequisite failure). Our writer must give each
back byte for byte, and our parser must read each.
"""

from __future__ import annotations

import datetime as dt

import pytest

from harvestflow.formats.crawllog import CrawlLogLine, fetch_field, iso_ms
from tests.support.crawllog_samples import HOSTILE_LINES, SAMPLES


def _samples() -> list[str]:
    return SAMPLES.read_text(encoding="utf-8").splitlines()


def test_every_heritrix_line_is_read_and_written_back_byte_for_byte() -> None:
    lines = _samples()
    assert len(lines) == 15
    for line in lines:
        entry, why = CrawlLogLine.read(line)
        assert entry is not None, (why, line)
        assert entry.format() == line
        assert " ".join(entry.fields()) == " ".join(line.split()[:12])


def test_fields_of_heritrix_lines() -> None:
    by_status = {}
    for line in _samples():
        entry = CrawlLogLine.parse(line)
        assert entry is not None
        by_status.setdefault(entry.status, entry)
    robots = by_status[-9998]
    assert robots.size is None and robots.fetch is None and robots.digest is None
    assert robots.hops == "LELL" and robots.seed == "http://www.HU17.net"
    assert robots.annotations == ("2t",) and robots.extra_info == "{}"
    assert robots.mime == "unknown" and robots.thread == "#021"
    prereq = by_status[-61]
    assert (prereq.mime, prereq.seed, prereq.annotations) == ("no-type", None, ("2t",))
    dup = CrawlLogLine.parse(_samples()[6])
    assert dup is not None and dup.annotations == ("ip:174.137.176.100", "duplicate:digest")
    assert dup.extra_info is not None and '"warcFileOffset":2821627' in dup.extra_info
    seed = CrawlLogLine.parse(_samples()[2])
    assert seed is not None and seed.hops == "" and seed.via is None and seed.size == 12762
    assert seed.fetched_at() == dt.datetime(2019, 4, 3, 11, 15, 56, 775000, tzinfo=dt.UTC)


@pytest.mark.parametrize(("why", "line"), HOSTILE_LINES)
def test_hostile_lines_are_named_not_read(why: str, line: str) -> None:
    entry, reason = CrawlLogLine.read(line)
    assert entry is None and why in reason
    assert CrawlLogLine.parse(line) is None


def test_tolerated_spacing_and_negative_codes() -> None:
    """Any whitespace between fields reads (hand-edited or unpadded logs), and Heritrix's
    negative codes (-6 DNS failed, -61 robots prerequisite failed, -9998 robots.txt)."""
    line = "2026-11-22T10:15:02.123Z\t-6\t-  dns:a.test P http://a.test/ unknown #003 - - - -"
    entry = CrawlLogLine.parse(line)
    assert entry is not None and entry.status == -6 and entry.size is None
    assert entry.format() == (
        "2026-11-22T10:15:02.123Z    -6          - dns:a.test P http://a.test/ unknown #003 - - - -"
    )


def test_the_writer_escapes_what_a_server_chose() -> None:
    when = dt.datetime(2026, 11, 22, 10, 15, 2, 123456, tzinfo=dt.UTC)
    entry = CrawlLogLine(
        time=iso_ms(when),
        status=200,
        size=5,
        url="http://a.test/a b",
        hops="L",
        via="http://a.test/",
        mime="text/html x\ny",
        thread="#001",
        fetch=fetch_field(when, 20),
        digest="sha1:X",
        seed="http://a.test/",
        annotations=("err=a,b c", "lenTrunc"),
    )
    line = entry.format()
    assert line == (
        "2026-11-22T10:15:02.123Z   200          5 http://a.test/a%20b L http://a.test/"
        " text/html%20x%0Ay #001 20261122101502123+20 sha1:X http://a.test/"
        " err=a%2Cb%20c,lenTrunc"
    )
    back = CrawlLogLine.parse(line)
    assert back is not None and back.annotations == ("err=a%2Cb%20c", "lenTrunc")
