"""The PostgreSQL search backend (the embedded default), over the tables of sql/017_fulltext.sql.

Why PostgreSQL full text and not a search server: the archive already runs PostgreSQL, and
``tsvector`` with a GIN index per yearly partition answers word, phrase and exclusion queries
(``websearch_to_tsquery``) with ranking and highlighting (``ts_headline``) at the scale of a
national archive's selective collections. Each document is parsed with its language's text
configuration (french, english, simple), and a query is parsed once per configuration, so that
"bibliothèques" finds "bibliothèque" in a French page. Every value is a bound parameter.

Results collapse identical payloads: the hit of a digest is its most recent visible capture,
with the number of other visible captures; facets count payloads (a facet value's count is the
number of hits its filter would give). Access rules are part of the WHERE clause.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from search.model import (
    HIT_END,
    HIT_START,
    CaptureRecord,
    Document,
    FileProgress,
    Hit,
    Query,
    SearchResult,
)
from search.pg_query import (
    PHRASE_CANDIDATES,
    SEARCH_SQL,
    TSQUERIES,
    estimate_count,
    facet_counts,
    round2,
    visible_captures,
)

log = logging.getLogger(__name__)

CONFIGS = {"fr": "french", "en": "english"}  # other languages: "simple" (no stemming)
MAX_TSV_CHARS = 300_000  # body characters indexed (tsvector positions stop at 16,383 anyway)
COUNT_LIMIT = 2_000  # matching captures read per search: past it, counts are estimates
_HEADLINE = (
    f"StartSel={HIT_START}, StopSel={HIT_END}, MaxWords=30, MinWords=12, "
    'MaxFragments=2, FragmentDelimiter=" … "'
)


def config_of(lang: str) -> str:
    return CONFIGS.get(lang, "simple")


class PgSearchBackend:
    """:class:`search.model.SearchBackend` on the harvest database."""

    def __init__(self, engine: Engine, count_limit: int = COUNT_LIMIT) -> None:
        self.engine = engine
        self.count_limit = max(1, count_limit)

    # --- writing ---------------------------------------------------------------------------
    def known_digests(self, digests: list[str]) -> set[str]:
        if not digests:
            return set()
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT DISTINCT digest FROM fulltext_docs WHERE digest = ANY(:d)"),
                {"d": list(set(digests))},
            )
            return {r[0] for r in rows}

    def add(
        self, documents: list[Document], captures: list[CaptureRecord], progress: FileProgress
    ) -> None:
        with self.engine.begin() as conn:
            if captures:
                self._add(conn, documents, captures)
            conn.execute(
                sa.text(
                    "INSERT INTO fulltext_files (file_name, status, next_offset, extracted,"
                    " duplicates, skipped, failed, errors, finished_at) VALUES (:f, :s, :o, :e,"
                    " :d, :k, :x, CAST(:errors AS jsonb), CASE WHEN :done THEN now() END)"
                    " ON CONFLICT (file_name) DO UPDATE SET status = EXCLUDED.status,"
                    " next_offset = EXCLUDED.next_offset, extracted = EXCLUDED.extracted,"
                    " duplicates = EXCLUDED.duplicates, skipped = EXCLUDED.skipped,"
                    " failed = EXCLUDED.failed, errors = EXCLUDED.errors,"
                    " finished_at = EXCLUDED.finished_at"
                ),
                {
                    "f": progress.file_name,
                    "s": "done" if progress.done else "running",
                    "o": progress.resume_offset,
                    "e": progress.extracted,
                    "d": progress.duplicates,
                    "k": progress.skipped,
                    "x": progress.failed,
                    "errors": json.dumps(progress.errors),
                    "done": progress.done,
                },
            )

    def progress(self, file_name: str) -> FileProgress | None:
        with self.engine.connect() as conn:
            row = (
                conn.execute(
                    sa.text(
                        "SELECT status, next_offset, extracted, duplicates, skipped, failed,"
                        " errors FROM fulltext_files WHERE file_name = :f"
                    ),
                    {"f": file_name},
                )
                .mappings()
                .first()
            )
        if row is None:
            return None
        return FileProgress(
            file_name,
            int(row["next_offset"]),
            row["extracted"],
            row["duplicates"],
            row["skipped"],
            row["failed"],
            list(row["errors"]),
            row["status"] == "done",
        )

    def files_done(self, file_names: list[str]) -> set[str]:
        """The files among ``file_names`` whose extraction finished."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT file_name FROM fulltext_files WHERE status = 'done'"
                    " AND file_name = ANY(:f)"
                ),
                {"f": file_names},
            )
            return {r[0] for r in rows}

    def day_counts(self, day: date) -> dict[str, int]:
        """Files finished on ``day`` (UTC) and their documents extracted, skipped, failed."""
        with self.engine.connect() as conn:
            row = (
                conn.execute(
                    sa.text(
                        "SELECT count(*) AS files, coalesce(sum(extracted), 0) AS extracted,"
                        " coalesce(sum(duplicates), 0) AS duplicates,"
                        " coalesce(sum(skipped), 0) AS skipped, coalesce(sum(failed), 0) AS failed"
                        " FROM fulltext_files WHERE finished_at >= :a AND finished_at < :b"
                    ),
                    {
                        "a": datetime.combine(day, time(), UTC),
                        "b": datetime.combine(day + timedelta(days=1), time(), UTC),
                    },
                )
                .mappings()
                .one()
            )
        return {k: int(v) for k, v in row.items()}

    def _add(
        self, conn: Connection, documents: list[Document], captures: list[CaptureRecord]
    ) -> None:
        for year in sorted({c.captured_at.year for c in captures}):
            conn.execute(sa.text("SELECT fulltext_ensure_year(:y)"), {"y": year})
        conn.execute(
            sa.text(
                "INSERT INTO fulltext_captures (year, file_name, file_offset, url, surt, host,"
                " domain, captured_at, status, mime, digest, record_type, collection, harvest_id,"
                " job_id) VALUES (:year, :file_name, :offset, :url, :surt, :host, :domain,"
                " :captured_at, :status, :mime, :digest, :record_type, :collection, :harvest_id,"
                " :job_id) ON CONFLICT DO NOTHING"
            ),
            [{"year": c.captured_at.year, **c.__dict__} for c in captures],
        )
        by_digest = {d.digest: d for d in documents}
        years = {(c.captured_at.year, c.digest) for c in captures if c.digest in by_digest}
        if years:
            conn.execute(
                sa.text(
                    "INSERT INTO fulltext_docs (year, digest, title, body, lang, cfg, outlinks,"
                    " tsv) VALUES (:year, :digest, :title, :body, :lang, CAST(:cfg AS regconfig),"
                    " :outlinks, setweight(to_tsvector(CAST(:cfg AS regconfig), :title), 'A')"
                    " || setweight(to_tsvector(CAST(:cfg AS regconfig), :body), 'D'))"
                    " ON CONFLICT DO NOTHING"
                ),
                [_doc_params(year, by_digest[digest]) for year, digest in sorted(years)],
            )
        # a payload seen in another year (a revisit, a later capture) or captured before its
        # text arrived: copy the text into every year that has a capture of it
        conn.execute(
            sa.text(
                "INSERT INTO fulltext_docs (year, digest, title, body, lang, cfg, outlinks, tsv,"
                " extracted_at) SELECT DISTINCT ON (c.year, c.digest) c.year, d.digest, d.title,"
                " d.body, d.lang, d.cfg, d.outlinks, d.tsv, d.extracted_at"
                " FROM fulltext_captures c JOIN fulltext_docs d ON d.digest = c.digest"
                " WHERE c.digest = ANY(:digests)"
                " AND NOT EXISTS (SELECT 1 FROM fulltext_docs x"
                "                 WHERE x.year = c.year AND x.digest = c.digest)"
                " ORDER BY c.year, c.digest, d.year ON CONFLICT DO NOTHING"
            ),
            {"digests": sorted({c.digest for c in captures})},
        )

    def delete_files(self, file_names: list[str]) -> int:
        if not file_names:
            return 0
        with self.engine.begin() as conn:
            conn.execute(
                sa.text("DELETE FROM fulltext_files WHERE file_name = ANY(:f)"), {"f": file_names}
            )
            gone = conn.execute(
                sa.text(
                    "DELETE FROM fulltext_captures WHERE file_name = ANY(:f) RETURNING year, digest"
                ),
                {"f": file_names},
            ).all()
            pairs = sorted({(r[0], r[1]) for r in gone})
            if pairs:
                conn.execute(
                    sa.text(
                        "DELETE FROM fulltext_docs d USING unnest(CAST(:y AS smallint[]),"
                        " CAST(:d AS text[])) AS x(year, digest)"
                        " WHERE d.year = x.year AND d.digest = x.digest AND NOT EXISTS"
                        " (SELECT 1 FROM fulltext_captures c"
                        "  WHERE c.year = d.year AND c.digest = d.digest)"
                    ),
                    {"y": [p[0] for p in pairs], "d": [p[1] for p in pairs]},
                )
        return len(gone)

    def count(self) -> tuple[int, int]:
        with self.engine.connect() as conn:
            docs = conn.execute(sa.text("SELECT count(DISTINCT digest) FROM fulltext_docs"))
            caps = conn.execute(sa.text("SELECT count(*) FROM fulltext_captures"))
            return int(docs.scalar_one()), int(caps.scalar_one())

    # --- searching -------------------------------------------------------------------------
    def search(self, query: Query) -> SearchResult:
        """One statement: the first ``count_limit`` visible matching captures, read once; the
        total, the ranked page (with snippets) and the facets all come from them. The query's
        parse, that statement and any estimate share one read-only transaction (one connection).

        Why bounded: a frequent word matches most of the index, and ranking, collapsing and
        faceting every match costs seconds at a million documents. Under the bound everything is
        exact; past it the page says "about N" (the planner's estimate of all matches), the
        ranking is the best among the captures read and the facets count those captures. The
        scan is a single ordered one (no parallel workers, no synchronized scans), so paging
        through an approximate result stays stable.
        """
        # with no filter on captures but the access rules (which hide few), the bound is on
        # matching texts, read first; a filter on hosts, types or collections may keep few of
        # them, so the bound is then on the visible captures, and the planner starts from the
        # filter's index when it is the selective side
        texts_first = not (
            query.sites or query.hosts or query.domains or query.mimes or query.collections
        )
        per_page = max(1, min(query.per_page, 100))
        page = max(1, query.page)
        with self.engine.connect() as conn:
            conn.execute(sa.text("SET TRANSACTION READ ONLY"))
            conn.execute(sa.text("SET LOCAL max_parallel_workers_per_gather = 0"))
            conn.execute(sa.text("SET LOCAL synchronize_seqscans = off"))
            row = conn.execute(TSQUERIES, {"q": query.text}).one()
            tsqueries = {"tq_fr": row[0], "tq_en": row[1], "tq_si": row[2]}
            cte, params = visible_captures(query, tsqueries, texts_first=texts_first)
            params |= {
                "limit": per_page,
                "offset": (page - 1) * per_page,
                "opts": _HEADLINE,
                "cap": self.count_limit + 1,
                "cand": PHRASE_CANDIDATES * (self.count_limit + 1),
            }
            sql = SEARCH_SQL.format(
                s="SELECT * FROM v" if texts_first else "SELECT * FROM v LIMIT :cap",
                # candidates cut short: more may match than were read
                read="(SELECT CASE WHEN (SELECT n FROM cand) >= :cand THEN :cap"
                " ELSE (SELECT count(*) FROM m) END)"
                if texts_first
                else "(SELECT count(*) FROM s)",
            )
            row = conn.execute(sa.text(cte + sql), params).one()
            read, payloads, hit_rows, facet_rows = int(row[0]), int(row[1]), row[2], row[3]
            exact = read <= self.count_limit
            total = payloads
            if not exact:
                total = max(payloads + 1, round2(estimate_count(conn, query, tsqueries)))
        hits = [
            Hit(
                digest=r["digest"],
                title=r["title"],
                url=r["url"],
                captured_at=datetime.fromisoformat(r["captured_at"]),
                mime=r["mime"],
                collection=r["collection"],
                lang=r["lang"],
                snippet=" ".join((r["snippet"] or "").split()),
                other_captures=int(r["n"]) - 1,
                score=float(r["score"]),
            )
            for r in hit_rows
        ]
        facets = facet_counts(facet_rows)  # no rows, each facet empty, when nothing matched
        return SearchResult(query, total, hits, facets, exact=exact, counted=payloads)


def _doc_params(year: int, doc: Document) -> dict[str, Any]:
    cfg = config_of(doc.lang)
    return {
        "year": year,
        "digest": doc.digest,
        "title": doc.title[:2000],
        "body": doc.text[:MAX_TSV_CHARS],
        "lang": doc.lang,
        "cfg": cfg,
        "outlinks": doc.outlinks,
    }
