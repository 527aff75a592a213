"""Aligned plain-text tables, as in the report's text files and the comparisons.

Why its own module: qa.report (the day's files) and qa.daily_compare (the run comparisons it
includes) both print tables this way; kept here, neither imports the other for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.3f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _pct(value: Any) -> str:
    return f"{100 * float(value):.2f}%"


def table_text(df: pd.DataFrame, columns: list[str], pct: Iterable[str] = ()) -> str:
    """Aligned plain-text table: numbers right-aligned with thousands separators."""
    pct_cols = set(pct)
    cells = [[c for c in columns]]
    for row in df[columns].itertuples(index=False):
        cells.append(
            [_pct(v) if c in pct_cols else _fmt(v) for c, v in zip(columns, row, strict=True)]
        )
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    numeric = [_numeric(df[c]) or c in pct_cols for c in columns]
    lines = []
    for r in cells:
        parts = [
            cell.rjust(widths[i]) if numeric[i] else cell.ljust(widths[i])
            for i, cell in enumerate(r)
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines) + "\n"


def _numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
