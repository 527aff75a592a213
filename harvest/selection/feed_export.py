"""The selection records written as a crawl feed (JSON), with their annotations and QA feedback.

Why the feed's own shape: the file ``harvestflow selection import`` reads back (UK Web Archive
targets: ``id``, ``seeds``, ``schedules``, ``scope``, ``depth``...) is the one exchange format
curators' tools already share, so an export can be re-imported here or elsewhere. Ours adds
``maxObjects`` / ``maxBytes`` (a record's own limits), ``annotations`` (scope evidence, licence,
notes: read back by the import) and ``qa`` (the QA comments of the record's jobs: for readers;
the import leaves them, as they belong to jobs of this database).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvest.common import engine_or_default
from harvest.selection import qa_feedback
from harvest.selection.annotations import current as current_annotations
from harvest.selection.mapping import SelectionMapping, load_mapping
from harvestflow.atomic import atomic_open

log = logging.getLogger(__name__)

_DEPTH_NOTE = re.compile(r"UKWA depth (\w+)")


def _first_key(table: dict[str, str], value: str) -> str | None:
    return next((k for k, v in table.items() if v == value), None)


def _item(row: Any, mapping: SelectionMapping) -> dict[str, Any]:
    """One record as a feed target (ValueError naming the field the feed cannot say)."""
    scope = row.scope if row.scope in mapping.ukwa_scope else None
    scope = scope or _first_key(mapping.ukwa_scope, row.depth)
    if scope is None or mapping.ukwa_scope[scope] != row.depth:
        raise ValueError(f"depth {row.depth!r} has no crawl-feed scope")
    noted = _DEPTH_NOTE.search(row.technical_notes or "")
    depth = noted.group(1) if noted else None
    if mapping.ukwa_depth.get(depth or "") != row.budget:
        depth = _first_key(mapping.ukwa_depth, row.budget)
    if depth is None:
        raise ValueError(f"budget {row.budget!r} has no crawl-feed depth")
    external = row.external_id or f"record-{row.record_id}"
    return {
        "id": external.removeprefix("ukwa:"),
        "title": row.title,
        "collection": row.collection,
        "theme": row.theme,
        "keywords": list(row.keywords or []),
        "seeds": [row.seed_url, *(row.supplementary_urls or [])],
        "schedules": list(row.schedules or [])
        or [{"frequency": row.frequency.upper(), "startDate": None, "endDate": None}],
        "scope": scope,
        "depth": depth,
        "ignoreRobotsTxt": row.ignore_robots,
        "inactive": not row.active,
        "loginPageUrl": row.login_page_url,
        "logoutUrl": row.logout_url,
        "secretId": row.secret_id,
        "maxObjects": row.max_objects,
        "maxBytes": row.max_bytes,
        "watched": row.watched,
        "documentUrlScheme": row.document_url_scheme,
    }


def feed_items(
    conn: Connection, mapping: SelectionMapping, *, collection: str | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The records (of one collection, or all) as feed targets, and the records left out
    with the reason (a budget or depth the feed's words cannot say)."""
    rows = conn.execute(
        sa.text(
            "SELECT * FROM selection_records WHERE CAST(:c AS text) IS NULL OR collection = :c"
            " ORDER BY record_id"
        ),
        {"c": collection},
    ).all()
    ids = [row.record_id for row in rows]
    notes = current_annotations(conn, ids)
    feedback: dict[int, list[dict[str, Any]]] = {}
    for comment in qa_feedback.comments(conn, record_ids=ids):
        if comment.record_id is not None:
            feedback.setdefault(comment.record_id, []).append(comment.as_feed())
    items, errors = [], []
    for row in rows:
        try:
            item = _item(row, mapping)
        except ValueError as exc:
            errors.append(f"record {row.record_id} ({row.seed_url}): {exc}; left out")
            continue
        item["annotations"] = notes[row.record_id].as_feed()
        item["qa"] = feedback.get(row.record_id, [])
        items.append(item)
    return items, errors


def export_feed(
    path: Path | str,
    *,
    collection: str | None = None,
    engine: Engine | None = None,
    mapping: SelectionMapping | None = None,
) -> tuple[int, list[str]]:
    """Write the feed to ``path`` (whole or not at all); (targets written, records left out)."""
    mapping = mapping or load_mapping()
    with engine_or_default(engine).connect() as conn:
        items, errors = feed_items(conn, mapping, collection=collection)
    with atomic_open(Path(path), "w") as handle:
        json.dump(items, handle, indent=1, ensure_ascii=False, default=str)
        handle.write("\n")
    log.info("crawl feed %s: %d targets, %d left out", path, len(items), len(errors))
    return len(items), errors
