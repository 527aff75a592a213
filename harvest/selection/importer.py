"""``harvestflow selection import FILE``: validate curators' records and store them (UPSERT).

Why this order: every record is validated before anything is written (encoding, NUL, field
sizes, URL syntax, scheme, host and port, dates, the mapping: see ``records`` and ``seeds``);
rows that cannot be read or are refused are reported with their file, line (or feed item)
and reason, written to a rejects file, and left out — the good ones are still imported, in
one transaction per batch of ``BATCH`` records; the URLs not yet known anywhere are checked
online (refused on 4xx/5xx or no DNS, reported on 3xx with the target); duplicates of a URL,
host or domain already present are flagged but kept (the same URL may be in several
collections). The rest is written with UPSERTs keyed by the feed id, else by (collection,
seed URL), so re-importing a file updates records and never duplicates them.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from harvest.common import engine_or_default
from harvest.selection import urlcheck
from harvest.selection.annotations import annotate
from harvest.selection.feed import read_ukwa_feed
from harvest.selection.mapping import SelectionMapping, load_mapping
from harvest.selection.records import RecordError, SelectionRecord, read_csv
from harvest.selection.urlcheck import Resolver, UrlCheck
from harvestflow.atomic import atomic_open
from harvestflow.formats.domains import registrable_domain
from harvestflow.formats.fields import tsv_field
from harvestflow.formats.urls import host_of

log = logging.getLogger(__name__)

BATCH = 500  # records written per transaction
REJECTS_HEADER = "source\twhere\treason\ttext\n"


@dataclass
class ImportReport:
    """What an import did, row by row where something is to be said."""

    source: str
    rows: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)  # (row, reason): not imported
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (row, flag): imported
    rejects_path: str = ""  # the refused rows as read, with their reasons (TSV)

    def as_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "rows": self.rows,
            "inserted": self.inserted,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "errors": [f"{w}: {r}" for w, r in self.errors],
            "warnings": [f"{w}: {r}" for w, r in self.warnings],
            "rejects_path": self.rejects_path,
        }

    def text(self) -> str:
        lines = [
            f"{self.source}: {self.rows} rows, {self.inserted} new, {self.updated} updated, "
            f"{self.unchanged} unchanged, {len(self.errors)} refused, "
            f"{len(self.warnings)} warnings"
        ]
        lines += [f"  REFUSED {w}: {tsv_field(r)}" for w, r in self.errors]
        lines += [f"  warning {w}: {tsv_field(r)}" for w, r in self.warnings]
        if self.errors and self.rejects_path:
            lines.append(f"  refused rows written to {self.rejects_path}")
        return "\n".join(lines)


def record_key(external_id: str | None, collection: str, seed_url: str) -> str:
    """What identifies a record across imports: the feed id, else (collection, seed URL)."""
    return f"id:{external_id}" if external_id else f"{collection}\x00{seed_url}"


class KnownUrls:
    """URLs, hosts and domains already present (in the DB, then earlier rows of the file).

    Each URL remembers which records hold it, so that a record re-imported with a changed seed
    URL or collection is not flagged as a duplicate of its own earlier version.
    """

    def __init__(self, conn: Connection) -> None:
        self.urls: dict[str, dict[str, str]] = defaultdict(dict)  # url -> {record key: collection}
        self.hosts: dict[str, set[str]] = defaultdict(set)  # host -> urls
        self.domains: dict[str, set[str]] = defaultdict(set)  # domain -> urls
        rows = conn.execute(
            sa.text(
                "SELECT external_id, collection, seed_url, supplementary_urls"
                " FROM selection_records"
            )
        )
        for row in rows:
            key = record_key(row.external_id, row.collection, row.seed_url)
            for url in [row.seed_url, *(row.supplementary_urls or [])]:
                self.add(url, row.collection, key)

    def forget(self, urls: list[str], key: str) -> None:
        """Leave out record ``key``'s own URLs (a record edited is no duplicate of itself)."""
        for url in urls:
            self.urls.get(url, {}).pop(key, None)

    def unknown(self, urls: Iterable[str]) -> list[str]:
        """The URLs no record holds yet: the ones to check online."""
        return [u for u in urls if not self.urls.get(u)]

    def add(self, url: str, collection: str, key: str) -> None:
        self.urls[url][key] = collection
        self.hosts[host_of(url)].add(url)
        self.domains[registrable_domain(url)].add(url)

    def _others(self, url: str, key: str) -> bool:
        """Whether a record other than ``key`` holds ``url``."""
        return any(k != key for k in self.urls.get(url, {}))

    def flags(self, rec: SelectionRecord) -> list[str]:
        """Why a curator should look again (the record itself is not a duplicate of itself)."""
        url = rec.seed_url
        key = record_key(rec.external_id, rec.collection, rec.seed_url)
        others = {c for k, c in self.urls.get(url, {}).items() if k != key} - {rec.collection}
        if others:
            return [f"same URL already in collection(s) {', '.join(sorted(others))}"]
        own = set(rec.all_urls)
        host, domain = host_of(url), registrable_domain(url)
        same_host = sorted(u for u in self.hosts.get(host, set()) - own if self._others(u, key))
        if same_host:
            return [f"host {host} already present ({same_host[0]})"]
        same_domain = sorted(
            u for u in self.domains.get(domain, set()) - own if self._others(u, key)
        )
        if same_domain:
            return [f"domain {domain} already present ({same_domain[0]})"]
        return []


def judge(
    rec: SelectionRecord, verdicts: dict[str, UrlCheck], known: KnownUrls
) -> tuple[str | None, list[str]]:
    """(why the record is refused, or None; what a curator should look at again): a URL
    answering 4xx/5xx or without DNS refuses it; redirects and duplicates are flags."""
    problems = [verdicts[u] for u in rec.all_urls if u in verdicts]
    invalid = [v for v in problems if v.verdict == "invalid"]
    if invalid:
        return "; ".join(v.message for v in invalid), []
    flags = [v.message for v in problems if v.verdict == "redirect"]
    return None, flags + known.flags(rec)


def validation_status(flags: list[str], checked: bool) -> str:
    """The record's validation_status column."""
    return "warning" if flags else ("valid" if checked else "unchecked")


# what each constraint of selection_records (sql/001) means to a curator
_CONSTRAINT_WORDS = {
    "selection_records_collection_seed_url_key": "conflicts with another record: its"
    " collection already has a record for this seed URL",
    "selection_records_external_id_key": "conflicts with another record: another record has"
    " this id",
    "selection_records_budget_check": "the budget is not small, medium or large",
}


def conflict_reason(exc: IntegrityError) -> str:
    """Why the database refused a record, in a curator's words: never the constraint's name
    or the database's message (they are logged for the operators)."""
    diag = getattr(exc.orig, "diag", None)
    name = getattr(diag, "constraint_name", None) or ""
    first = str(exc.orig).splitlines()[0] if exc.orig else str(exc).splitlines()[0]
    log.info("selection record refused by the database (%s): %s", name or "?", first)
    return _CONSTRAINT_WORDS.get(
        name, "conflicts with another record or a rule of the records (the log says which)"
    )


_UPSERT = """
INSERT INTO selection_records AS s (external_id, collection, title, seed_url, supplementary_urls,
    budget, frequency, depth, scope, ignore_robots, schedules, active, theme, keywords,
    content_notes, technical_notes, creator, curator, created_by, modified_by,
    validation_status, validation_detail, login_page_url, logout_url, secret_id, max_objects,
    max_bytes, watched, document_url_scheme)
VALUES (:external_id, :collection, :title, :seed_url, CAST(:supplementary_urls AS text[]),
    :budget, :frequency, :depth, :scope, :ignore_robots, CAST(:schedules AS jsonb), :active,
    :theme, CAST(:keywords AS text[]), :content_notes, :technical_notes, :creator, :curator,
    :user, :user, :validation_status, :validation_detail, :login_page_url, :logout_url,
    :secret_id, :max_objects, :max_bytes, :watched, :document_url_scheme)
ON CONFLICT ({key}) DO UPDATE SET
    collection = EXCLUDED.collection, title = EXCLUDED.title, seed_url = EXCLUDED.seed_url,
    supplementary_urls = EXCLUDED.supplementary_urls, budget = EXCLUDED.budget,
    frequency = EXCLUDED.frequency, depth = EXCLUDED.depth, scope = EXCLUDED.scope,
    ignore_robots = EXCLUDED.ignore_robots, schedules = EXCLUDED.schedules,
    active = EXCLUDED.active, theme = EXCLUDED.theme, keywords = EXCLUDED.keywords,
    content_notes = EXCLUDED.content_notes, technical_notes = EXCLUDED.technical_notes,
    curator = COALESCE(EXCLUDED.curator, s.curator),
    creator = COALESCE(s.creator, EXCLUDED.creator),
    validation_status = EXCLUDED.validation_status,
    validation_detail = EXCLUDED.validation_detail,
    login_page_url = EXCLUDED.login_page_url, logout_url = EXCLUDED.logout_url,
    secret_id = EXCLUDED.secret_id,
    max_objects = COALESCE(EXCLUDED.max_objects, s.max_objects),
    max_bytes = COALESCE(EXCLUDED.max_bytes, s.max_bytes),
    watched = EXCLUDED.watched, document_url_scheme = EXCLUDED.document_url_scheme,
    modified_at = now(), modified_by = EXCLUDED.modified_by, transferred_at = NULL
WHERE (s.collection, s.title, s.seed_url, s.supplementary_urls, s.budget, s.frequency, s.depth,
       s.scope, s.ignore_robots, s.schedules, s.active, s.theme, s.keywords, s.content_notes,
       s.technical_notes, s.login_page_url, s.logout_url, s.secret_id, s.max_objects,
       s.max_bytes, s.watched, s.document_url_scheme)
   IS DISTINCT FROM
      (EXCLUDED.collection, EXCLUDED.title, EXCLUDED.seed_url, EXCLUDED.supplementary_urls,
       EXCLUDED.budget, EXCLUDED.frequency, EXCLUDED.depth, EXCLUDED.scope,
       EXCLUDED.ignore_robots, EXCLUDED.schedules, EXCLUDED.active, EXCLUDED.theme,
       EXCLUDED.keywords, EXCLUDED.content_notes, EXCLUDED.technical_notes,
       EXCLUDED.login_page_url, EXCLUDED.logout_url, EXCLUDED.secret_id,
       COALESCE(EXCLUDED.max_objects, s.max_objects), COALESCE(EXCLUDED.max_bytes, s.max_bytes),
       EXCLUDED.watched, EXCLUDED.document_url_scheme)
RETURNING record_id, (xmax = 0) AS inserted
"""


def record_params(rec: SelectionRecord, user: str | None, status: str, detail: str | None) -> dict:
    return {
        "external_id": rec.external_id,
        "collection": rec.collection,
        "title": rec.title,
        "seed_url": rec.seed_url,
        "supplementary_urls": rec.supplementary_urls,
        "budget": rec.budget,
        "frequency": rec.frequency,
        "depth": rec.depth,
        "scope": rec.scope,
        "ignore_robots": rec.ignore_robots,
        "schedules": json.dumps(rec.schedules, sort_keys=True),
        "active": rec.active,
        "theme": rec.theme,
        "keywords": rec.keywords,
        "content_notes": rec.content_notes,
        "technical_notes": rec.technical_notes,
        "creator": rec.creator or user,
        "curator": rec.curator,
        "user": user,
        "validation_status": status,
        "validation_detail": detail,
        "login_page_url": rec.login_page_url,
        "logout_url": rec.logout_url,
        "secret_id": rec.secret_id,
        "max_objects": rec.max_objects,
        "max_bytes": rec.max_bytes,
        "watched": rec.watched,
        "document_url_scheme": rec.document_url_scheme,
    }


def _store_annotations(conn: Connection, rec: SelectionRecord, row: Any, user: str | None) -> None:
    """A feed item's annotations made the record's (a new version only when they differ)."""
    if row is not None:
        record_id = row.record_id
    elif rec.external_id:
        record_id = conn.execute(
            sa.text("SELECT record_id FROM selection_records WHERE external_id = :e"),
            {"e": rec.external_id},
        ).scalar_one()
    else:
        record_id = conn.execute(
            sa.text(
                "SELECT record_id FROM selection_records WHERE collection = :c AND seed_url = :s"
            ),
            {"c": rec.collection, "s": rec.seed_url},
        ).scalar_one()
    annotate(conn, record_id, user or "crawl feed import", **(rec.annotations or {}))


def read_records(
    path: Path,
    mapping: SelectionMapping,
    fmt: str = "auto",
    *,
    collection: str = "ukwa",
    theme: str | None = None,
) -> tuple[list[SelectionRecord], list[RecordError]]:
    """Parsed, field-checked records of a file and the rows refused."""
    if fmt == "auto":
        fmt = "json" if path.suffix.lower() in (".json", ".jsonl", ".ndjson") else "csv"
    reader = (
        read_csv(path, mapping)
        if fmt == "csv"
        else read_ukwa_feed(path, mapping, collection=collection, theme=theme)
    )
    good: list[SelectionRecord] = []
    bad: list[RecordError] = []
    for item in reader:
        (bad if isinstance(item, RecordError) else good).append(item)  # type: ignore[arg-type]
    return good, bad


def default_rejects_path(path: Path) -> Path:
    """``<data_dir>/selection/rejects/<file name>.rejects.tsv`` (as the preload's run folder)."""
    from harvestflow.settings import get_settings

    return get_settings().path("selection", "rejects", f"{path.name}.rejects.tsv")


def write_rejects(target: Path, source: str, rejects: list[tuple[str, str, str]]) -> None:
    """The refused rows (where, reason, text as read), one escaped TSV line each.

    Written whole under a temporary name, then renamed; written even when empty, so that a
    rejects file never outlives the import it belongs to.
    """
    with atomic_open(target, "w") as handle:
        handle.write(REJECTS_HEADER)
        for where, reason, text in rejects:
            fields = (source, where, reason[:1000], text[:2000])
            handle.write("\t".join(tsv_field(f) for f in fields) + "\n")


def import_file(
    path: Path | str,
    *,
    fmt: str = "auto",
    check_urls: bool = True,
    user: str | None = None,
    collection: str = "ukwa",
    theme: str | None = None,
    resolver: Resolver | None = None,
    timeout: float | None = None,
    engine: Engine | None = None,
    mapping: SelectionMapping | None = None,
    rejects_path: Path | None = None,
) -> ImportReport:
    """Import a CSV export or a UKWA JSON crawl feed; returns the report (see module doc).

    The refused rows go to ``rejects_path`` (default :func:`default_rejects_path`).
    """
    path = Path(path)
    mapping = mapping or load_mapping()
    engine = engine_or_default(engine)
    report = ImportReport(source=str(path))
    records, refused = read_records(path, mapping, fmt, collection=collection, theme=theme)
    report.rows = len(records) + len(refused)
    report.errors += [(e.where, e.reason) for e in refused]
    rejects = [(e.where, e.reason, e.text) for e in refused]

    with engine.begin() as conn:
        known = KnownUrls(conn)
    new_urls = known.unknown(u for rec in records for u in rec.all_urls)
    verdicts: dict[str, UrlCheck] = {}
    if check_urls and new_urls:
        verdicts = urlcheck.check_urls(new_urls, resolver=resolver, timeout=timeout)

    seen_keys: dict[tuple[str, str], str] = {}

    def refuse(rec: SelectionRecord, reason: str) -> None:
        report.errors.append((rec.where, reason))
        rejects.append((rec.where, reason, rec.text))

    for start in range(0, len(records), BATCH):
        with engine.begin() as conn:
            for rec in records[start : start + BATCH]:
                key = (rec.external_id or "", rec.collection + "\x00" + rec.seed_url)
                first = seen_keys.get(key)
                if first is not None:
                    refuse(rec, f"same record as {first}; left out")
                    continue
                seen_keys[key] = rec.where
                invalid, flags = judge(rec, verdicts, known)
                if invalid:
                    refuse(rec, invalid)
                    continue
                for flag in flags:
                    report.warnings.append((rec.where, flag))
                status = validation_status(flags, check_urls)
                conflict = "external_id" if rec.external_id else "collection, seed_url"
                try:
                    with conn.begin_nested():
                        row = conn.execute(
                            sa.text(_UPSERT.format(key=conflict)),
                            record_params(rec, user, status, "; ".join(flags) or None),
                        ).first()
                except IntegrityError as exc:
                    refuse(rec, conflict_reason(exc))
                    continue
                if rec.annotations is not None:
                    _store_annotations(conn, rec, row, user)
                if row is None:
                    report.unchanged += 1
                elif row.inserted:
                    report.inserted += 1
                else:
                    report.updated += 1
                key_of = record_key(rec.external_id, rec.collection, rec.seed_url)
                for url in rec.all_urls:
                    known.add(url, rec.collection, key_of)
    target = rejects_path or default_rejects_path(path)
    write_rejects(target, path.name, rejects)
    report.rejects_path = str(target)
    log.info("%s", report.text().splitlines()[0])
    return report
