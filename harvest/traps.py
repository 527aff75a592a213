"""Global crawler-trap lists (NetarchiveSuite's global_crawler_trap_lists) from files.

Why: operators maintain lists of URL regexes that every harvest must avoid (calendars, session
loops); an active list goes into every job generated afterwards, beside the domains' and the
definition's own traps. A list is replaced whole when loaded again (idempotent), and every
expression is checked to compile first, so one bad line cannot reach a crawler.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harvest.common import engine_or_default

log = logging.getLogger(__name__)


def read_trap_file(path: Path) -> list[str]:
    """Expressions of a trap file (one regex a line, # comments); errors name the line."""
    traps: list[str] = []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        expr = line.strip()
        if not expr or expr.startswith("#"):
            continue
        try:
            re.compile(expr)
        except re.error as exc:
            raise ValueError(
                f"{path} line {lineno}: {expr!r} is not a valid regex ({exc})"
            ) from None
        traps.append(expr)
    return list(dict.fromkeys(traps))


def load_global_trap_list(
    name: str,
    path: Path,
    *,
    description: str | None = None,
    active: bool = True,
    engine: Engine | None = None,
) -> int:
    """Create or replace the global trap list ``name`` from ``path``; returns its size."""
    traps = read_trap_file(path)
    engine = engine_or_default(engine)
    with engine.begin() as conn:
        list_id = conn.execute(
            sa.text(
                "INSERT INTO global_crawler_trap_lists (name, description, isactive)"
                " VALUES (:n, :d, :a) ON CONFLICT (name) DO UPDATE SET"
                " description = COALESCE(EXCLUDED.description,"
                " global_crawler_trap_lists.description), isactive = EXCLUDED.isactive"
                " RETURNING id"
            ),
            {"n": name, "d": description, "a": active},
        ).scalar_one()
        conn.execute(
            sa.text("DELETE FROM global_crawler_trap_expressions WHERE crawler_trap_list_id = :i"),
            {"i": list_id},
        )
        if traps:
            conn.execute(
                sa.text(
                    "INSERT INTO global_crawler_trap_expressions"
                    " (crawler_trap_list_id, trap_expression)"
                    " SELECT :i, unnest(CAST(:t AS text[]))"
                ),
                {"i": list_id, "t": traps},
            )
    log.info(
        "global crawler-trap list %s: %d expressions (%s)",
        name,
        len(traps),
        "active" if active else "inactive",
    )
    return len(traps)


def add_trap(
    expr: str,
    *,
    domain: str | None = None,
    harvest_id: int | None = None,
    engine: Engine | None = None,
) -> bool:
    """Add a crawler-trap regex to a domain's traps or a harvest definition's (one of them);
    the next jobs generated start with it. False when it was there already.

    Why checked with Python's ``re`` too: job specs are checked with it (crawler/jobspec.py),
    so an expression saved here must never make a future job spec invalid.
    """
    if (domain is None) == (harvest_id is None):
        raise ValueError("a trap is saved to a domain or to a harvest definition")
    try:
        re.compile(expr)
    except re.error as exc:
        raise ValueError(f"{expr!r} is not a valid crawler-trap regex ({exc})") from None
    table, key, value = (
        ("domains", "name", domain.lower()) if domain is not None else
        ("harvestdefinitions", "harvest_id", harvest_id)
    )  # fmt: skip
    with engine_or_default(engine).begin() as conn:
        found = conn.execute(
            sa.text(f"SELECT crawlertraps FROM {table} WHERE {key} = :v FOR UPDATE"), {"v": value}
        ).first()
        if found is None:
            what = "domain" if domain is not None else "harvest definition"
            raise LookupError(f"no {what} {value!r} in the harvest database")
        if expr in (found.crawlertraps or []):
            return False
        conn.execute(
            sa.text(
                f"UPDATE {table} SET crawlertraps = array_append(crawlertraps, :t) WHERE {key} = :v"
            ),
            {"t": expr, "v": value},
        )
    log.info("crawler trap %r saved to %s %s", expr, table, value)
    return True
