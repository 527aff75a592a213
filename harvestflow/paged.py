"""Read-only, paginated queries: what every stage's views for the curator pages share.

Why in the core: each stage owns the queries on its own tables (harvest.views, qa.views,
preservation.views...), and they all page and refuse writes the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa


@dataclass
class Page:
    """One page of rows and where it sits in the whole list."""

    rows: list[dict[str, Any]]
    total: int
    page: int
    size: int

    @property
    def pages(self) -> int:
        return max((self.total + self.size - 1) // self.size, 1)


@contextmanager
def read_only(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A connection whose transactions are READ ONLY (PostgreSQL refuses any write in them).

    The option is set before the first statement and undone when the pool takes the
    connection back, so the engine can be shared with code that writes.
    """
    with engine.connect() as conn:
        yield conn.execution_options(postgresql_readonly=True)


def rows_of(conn: sa.Connection, sql: str, **params: Any) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute(sa.text(sql), params).mappings()]


def page_of(
    conn: sa.Connection, count_sql: str, sql: str, page: int, size: int, **params: Any
) -> Page:
    page = max(page, 1)
    total = int(conn.execute(sa.text(count_sql), params).scalar_one())
    rows = rows_of(conn, sql + " LIMIT :lim OFFSET :off", lim=size, off=(page - 1) * size, **params)
    return Page(rows, total, page, size)
