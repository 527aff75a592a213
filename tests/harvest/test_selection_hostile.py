"""Careless and hostile selection files: the bad records are named (file, line or feed item,
reason) and written to the rejects file, the good ones are imported, the exit code says
whether anything was refused; the one-off trigger form refuses the same seeds with the same
code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.cli.main import main
from harvest.oneoff import OneOffError, validate_params

pytestmark = pytest.mark.services

HEADER = "collection,title,seed_url,budget,frequency,depth,theme,start_date,end_date\n"
GOOD = "News,{title},http://{host}/,small,daily,page,politics,,\n"
BIG = "a" * (130 * 1024)

# CSV line number -> (row, words expected in the reason)
BAD_CSV = {
    3: ("News,js,javascript:alert(1),small,daily,page,politics,,\n", "scheme 'javascript'"),
    4: ("News,v6,http://[::1,small,daily,page,politics,,\n", "Invalid IPv6 URL"),
    5: ("News,port,http://x.invalid:99999/,small,daily,page,politics,,\n", "Port out of range"),
    6: (f"News,big,http://big.test/{BIG},small,daily,page,politics,,\n", "longer than 128 KiB"),
    7: ("News,space,http://a b.invalid/,small,daily,page,politics,,\n", "a space"),
    8: ("News,date,http://d.test/,small,daily,page,politics,not-a-date,\n", "start_date"),
    9: ("News,nul,http://n.test/\x00,small,daily,page,politics,,\n", "NUL"),
    10: ("News,ff,http://f.test/\udcff,small,daily,page,politics,,\n", "not UTF-8 (byte 0xff"),
    11: ("News,ftp,ftp://f.test/,small,daily,page,politics,,\n", "scheme 'ftp'"),
    12: (
        "News,ends,http://e.test/,small,daily,page,politics,2026-05-01,2026-01-01\n",
        "before start_date",
    ),
}


def _titles(engine: sa.Engine) -> set[str]:
    with engine.connect() as conn:
        return set(conn.execute(sa.text("SELECT title FROM selection_records")).scalars())


def test_csv_import_names_bad_lines_and_keeps_the_good_ones(
    hdb: sa.Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = HEADER + GOOD.format(title="first", host="good.test")
    text += "".join(row for row, _ in BAD_CSV.values())
    text += GOOD.format(title="last", host="www.other.test")  # line 13
    path = tmp_path / "records.csv"
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    rejects = tmp_path / "rejects.tsv"
    code = main(["selection", "import", "--no-url-check", "--rejects", str(rejects), str(path)])
    out = capsys.readouterr().out
    assert code == 1, out
    for line, (_, words) in BAD_CSV.items():
        message = next(m for m in out.splitlines() if f"REFUSED records.csv line {line}:" in m)
        assert words in message, (line, message)
    assert "12 rows, 2 new" in out
    assert _titles(hdb) == {"first", "last"}
    rows = rejects.read_text(encoding="utf-8").splitlines()
    assert rows[0] == "source\twhere\treason\ttext"
    assert all(len(r.split("\t")) == 4 for r in rows)
    assert [r.split("\t")[1] for r in rows[1:]] == [f"records.csv line {n}" for n in BAD_CSV]
    assert "\\x00" in rows[7] and "\\xff" in rows[8]  # the bytes as read, escaped
    # a clean file is exit 0 (and empties the rejects file); an unreadable one is 2
    path.write_text(HEADER + GOOD.format(title="first", host="good.test"))
    assert (
        main(["selection", "import", "--no-url-check", "--rejects", str(rejects), str(path)]) == 0
    )
    assert rejects.read_text().splitlines() == ["source\twhere\treason\ttext"]
    path.write_text("seed_url\nhttp://a.test/\n")
    assert main(["selection", "import", "--no-url-check", str(path)]) == 2
    assert "missing columns" in capsys.readouterr().err


def _target(number: int, **changes: object) -> dict[str, object]:
    target: dict[str, object] = {
        "id": number,
        "title": f"target {number}",
        "seeds": [f"http://t{number}.test/"],
        "schedules": [{"frequency": "DAILY", "startDate": None, "endDate": None}],
        "scope": "root",
        "depth": "CAPPED",
    }
    target.update(changes)
    return target


def test_feed_import_names_bad_items_and_keeps_the_good_ones(
    hdb: sa.Engine, tmp_path: Path
) -> None:
    from harvest.selection.importer import import_file

    items = [
        _target(1),
        _target(2, seeds=["javascript:alert(1)"]),
        _target(3, seeds="http://t3.test/"),  # a string, not a list
        _target(4, schedules=[{"frequency": "DAILY", "startDate": "not-a-date"}]),
        _target(5, title="nul \u0000 here"),
        _target(6, title="OXFF_HERE"),
        _target(7, title=BIG),
        _target(8, seeds=["http://[::1"]),
        _target(9, schedules=["DAILY"]),
        _target(10),
    ]
    raw = json.dumps(items).encode().replace(b"OXFF_HERE", b"\xff")
    path = tmp_path / "feed.json"
    path.write_bytes(raw)
    rejects = tmp_path / "feed.rejects.tsv"
    report = import_file(path, check_urls=False, engine=hdb, theme="web", rejects_path=rejects)
    refused = {where.split(" (")[0]: reason for where, reason in report.errors}
    assert set(refused) == {f"feed.json item {n}" for n in range(2, 10)}
    assert "scheme 'javascript'" in refused["feed.json item 2"]
    assert "seeds must be a list" in refused["feed.json item 3"]
    assert "startDate 'not-a-date'" in refused["feed.json item 4"]
    assert "NUL" in refused["feed.json item 5"]
    assert "not UTF-8 (byte 0xff" in refused["feed.json item 6"]
    assert "128 KiB" in refused["feed.json item 7"]
    assert "Invalid IPv6 URL" in refused["feed.json item 8"]
    assert "schedules must be a list of objects" in refused["feed.json item 9"]
    assert report.inserted == 2 and _titles(hdb) == {"target 1", "target 10"}
    lines = rejects.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 9 and all(len(r.split("\t")) == 4 for r in lines)


def test_feed_budgets_past_any_crawl_are_refused_in_words(hdb: sa.Engine, tmp_path: Path) -> None:
    """maxObjects/maxBytes beyond what a crawl could reach (and past the bigint columns) are
    the item's refusal, not a database error that ends the import."""
    from harvest.selection.importer import import_file

    items = [
        {**_target(1), "maxObjects": 10**40},
        {**_target(2), "maxBytes": 2**63},
        {**_target(3), "maxObjects": 5000, "maxBytes": -1},
    ]
    path = tmp_path / "feed.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    report = import_file(path, check_urls=False, engine=hdb, theme="web")
    refused = {where.split(" (")[0]: reason for where, reason in report.errors}
    assert (
        "max_objects a number of 41 digits: at most 1,000,000,000,000"
        in refused["feed.json item 1"]
    )
    assert "max_bytes 9223372036854775808: at most" in refused["feed.json item 2"]
    assert report.inserted == 1 and _titles(hdb) == {"target 3"}


def test_feed_as_json_lines_names_the_line(hdb: sa.Engine, tmp_path: Path) -> None:
    from harvest.selection.importer import import_file

    path = tmp_path / "feed.jsonl"
    lines = [json.dumps(_target(1)), "{not json", json.dumps(_target(3, seeds=["http://a b/"]))]
    path.write_text("\n".join(lines) + "\n")
    report = import_file(path, check_urls=False, engine=hdb, theme="web")
    (w2, r2), (w3, r3) = report.errors
    assert (w2, w3) == ("feed.jsonl line 2", "feed.jsonl line 3 (id 3)")
    assert r2.startswith("invalid JSON") and r3.startswith("'http://a b/': a space")
    assert report.inserted == 1


@pytest.mark.parametrize(
    ("seed", "words"),
    [
        ("http://a.test/\x00", "NUL"),
        ("javascript:alert(1)", "scheme 'javascript'"),
        ("http://x.test:99999/", "Port out of range"),
        ("http://a b.test/", "a space"),
    ],
)
def test_oneoff_form_refuses_the_same_seeds(hdb: sa.Engine, seed: str, words: str) -> None:
    with pytest.raises(OneOffError, match="seeds line 2") as info:
        validate_params({"seeds": ["http://ok.test/", seed]}, hdb)
    assert words in str(info.value)
