"""CSV cells for spreadsheets: formulas escaped with an apostrophe (OWASP), numbers left as
they are, and every text read back as it was written, through the csv module."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from harvestflow.formats.csvcells import read_cell, safe_cell, safe_row

TEXTS = [
    '=HYPERLINK("http://evil.test","x")',
    "+cmd",
    "-x",
    "@SUM(A1)",
    "\tlead tab",
    "\rlead CR",
    "'=already escaped by hand",
    "''-twice",
    "'a hand-written apostrophe",
    "'",
    "-",
    "plain",
    "",
    "a=b",
]
NUMBERS = ["-1", "+2.5", "-.5", "1e5", "-3E-2", "42"]


def test_formula_cells_are_text_to_a_spreadsheet_and_numbers_stay_numbers() -> None:
    for text in TEXTS:
        cell = safe_cell(text)
        assert isinstance(cell, str)
        assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r"), text
    for number in NUMBERS:
        assert safe_cell(number) == number
    assert safe_row([-1, 2.5, None, "=1"]) == [-1, 2.5, None, "'=1"]


def test_every_cell_is_read_back_as_it_was_written() -> None:
    out = io.StringIO()
    csv.writer(out).writerow(safe_row(TEXTS + NUMBERS))
    (row,) = csv.reader(io.StringIO(out.getvalue(), newline=""))
    assert [read_cell(c) for c in row] == TEXTS + NUMBERS
    # a hand-made file's apostrophe before a letter is kept
    assert read_cell("'Allo 'Allo") == "'Allo 'Allo"


def test_the_qa_report_and_the_qa_cli_write_their_csv_through_it(tmp_path: Path) -> None:
    """The QA CSVs hold hosts and domains taken from crawl logs: a host a site chose to look
    like a formula is escaped, the figures stay numbers."""
    import pandas as pd

    from app.cli.qa import _emit
    from qa.report import _csv

    assert _csv([["=evil.test", -4, -44.44]], ["host", "urls", "pct"]) == (
        "host,urls,pct\n'=evil.test,-4,-44.44\n"
    )
    out = tmp_path / "compare.csv"
    _emit(pd.DataFrame({"host": ["@evil.test", "a.test"], "delta": [-1, 2]}), str(out), "t")
    assert out.read_text() == "host,delta\n'@evil.test,-1\na.test,2\n"
