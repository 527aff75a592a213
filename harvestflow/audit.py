"""The audit of every write made through the curator pages (``audit_log``, sql/030).

Why one table and one function in the core: selection records (harvest), job actions
(harvestflow.job_actions) and annotations are written by different stages, but a person asking
"who changed what, when" wants one answer. Every writer calls :func:`record_audit` inside the
transaction of its own write, so the audit row exists exactly when the write does.
"""

from __future__ import annotations

import json
import logging
from datetime import date, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

log = logging.getLogger(__name__)


def _plain(value: Any) -> Any:
    """JSON for what a detail may hold (dates as ISO text; anything else as its text)."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def record_audit(
    conn: Connection, user: str, action: str, target: str, detail: dict[str, Any] | None = None
) -> int:
    """Record one write: ``user`` did ``action`` (``record.edit``, ``job.pause``…) on
    ``target`` (``record 12``, ``job 7``); ``detail`` holds before/after or the arguments.
    Returns the audit row's id."""
    row = conn.execute(
        sa.text(
            "INSERT INTO audit_log (username, action, target, detail)"
            " VALUES (:u, :a, :t, CAST(:d AS jsonb)) RETURNING audit_id"
        ),
        {
            "u": user,
            "a": action,
            "t": target,
            "d": json.dumps(detail or {}, default=_plain, sort_keys=True),
        },
    ).one()
    log.info("audit: %s %s %s", user, action, target)
    return int(row.audit_id)


def audit_entries(
    conn: Connection, *, target: str | None = None, limit: int = 100
) -> list[dict[str, Any]]:
    """The latest audit rows, newest first (of one target, or all)."""
    rows = conn.execute(
        sa.text(
            "SELECT audit_id, at, username, action, target, detail FROM audit_log"
            " WHERE CAST(:t AS text) IS NULL OR target = :t"
            " ORDER BY audit_id DESC LIMIT :n"
        ),
        {"t": target, "n": limit},
    )
    return [dict(r._mapping) for r in rows]
