"""The one sanitiser of server-controlled values and the crawl.log field rule (core formats)."""

from __future__ import annotations

from harvestflow.formats.crawllog import CrawlLogLine, split_line
from harvestflow.formats.fields import MAX_FIELD_CHARS, clean_field, tsv_field
from tests.support.crawllog_samples import EXTRA_INFO, FORGED, GOOD, HOSTILE_CHARS


def test_clean_field_escapes_every_separator_and_caps_length() -> None:
    clean = "http://a.test/p?q=1&r=%20"
    assert clean_field(clean) is clean  # the fast path: the same object, untouched
    assert clean_field("") == "-" and clean_field(None) == "-"
    for char in HOSTILE_CHARS:
        out = clean_field(f"text/html{char}forged sha1:X")
        assert len(out.split()) == 1 and len(out.splitlines()) == 1, repr(char)
        assert out.isprintable() and out.startswith("text/html%"), (repr(char), out)
    assert clean_field("text/html\tx") == "text/html%09x"
    assert clean_field("a\u2028b") == "a%E2%80%A8b"
    assert clean_field("caf\u00e9") == "caf\u00e9"  # printable non-ASCII is kept
    assert clean_field("a,b", extra=",") == "a%2Cb"
    long = clean_field("x" * 10_000 + "\t")
    assert len(long) == MAX_FIELD_CHARS
    cut = clean_field("\t" * 10_000, 100)  # escapes are never cut in half
    assert cut == "%09" * 33


def test_the_field_rule_names_forged_lines() -> None:
    assert split_line(GOOD)[1] == ""
    assert split_line(EXTRA_INFO)[1] == ""  # Heritrix's -extraInfo 13th field is accepted
    assert "14 fields" in split_line(FORGED)[1]
    assert "13 fields" in split_line(GOOD + " extra")[1]
    assert "11 fields" in split_line(GOOD.rsplit(" ", 1)[0])[1]
    assert CrawlLogLine.parse(FORGED) is None


def test_tsv_field_keeps_one_column_and_one_line() -> None:
    assert tsv_field("a b,c") == "a b,c"  # spaces and commas are data in a TSV column
    assert tsv_field("a\tb\nc\rd") == "a\\tb\\nc\\rd"
    assert tsv_field("a\\tb") == "a\\\\tb"  # a literal backslash cannot fake an escape
    assert tsv_field("a\x00\x7f\x85b") == "a\\x00\\x7f\\x85b"
    assert tsv_field("a\u2028b\u2029") == "a\\u2028b\\u2029"
    assert tsv_field(b"caf\xe9".decode("utf-8", "surrogateescape")) == "caf\\xe9"
    assert tsv_field("caf\u00e9") == "caf\u00e9"
