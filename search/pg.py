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
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from harvestflow.formats.surt import surt_or_url
from search.model import (
    FACETS,
    HIT_END,
    HIT_START,
    AccessRules,
    CaptureRecord,
    Document,
    FileProgress,
    Hit,
    Query,
    SearchResult,
)

log = logging.getLogger(__name__)

CONFIGS = {"fr": "french", "en": "english"}  # other languages: "simple" (no stemming)
MAX_TSV_CHARS = 300_000  # body characters indexed (tsvector positions stop at 16,383 anyway)
SNIPPET_CHARS = 100_000  # body characters ts_headline reads
FACET_LIMIT = 20
COUNT_LIMIT = 2_000  # matching captures read per search: past it, counts are estimates
PHRASE_CANDIDATES = 5  # texts holding a phrase's words read per search, x the count limit
ESTIMATE_SAMPLE = 2_000  # texts in the block sample that estimates a count past the limit
_HEADLINE = (
    f"StartSel={HIT_START}, StopSel={HIT_END}, MaxWords=30, MinWords=12, "
    'MaxFragments=2, FragmentDelimiter=" … "'
)
_QUERY_OF_CFG = (
    "CASE d.cfg WHEN 'french'::regconfig THEN CAST(:tq_fr AS tsquery)"
    " WHEN 'english'::regconfig THEN CAST(:tq_en AS tsquery) ELSE CAST(:tq_si AS tsquery) END"
)


def config_of(lang: str) -> str:
    return CONFIGS.get(lang, "simple")


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


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
        total, the ranked page (with snippets) and the facets all come from them.

        Why bounded: a frequent word matches most of the index, and ranking, collapsing and
        faceting every match costs seconds at a million documents. Under the bound everything is
        exact; past it the page says "about N" (the planner's estimate of all matches), the
        ranking is the best among the captures read and the facets count those captures. The
        scan is a single ordered one (no parallel workers, no synchronized scans), so paging
        through an approximate result stays stable.
        """
        with self.engine.connect() as conn:
            row = conn.execute(_TSQUERIES, {"q": query.text}).one()
        tsqueries = {"tq_fr": row[0], "tq_en": row[1], "tq_si": row[2]}
        # with no filter on captures but the access rules (which hide few), the bound is on
        # matching texts, read first; a filter on hosts, types or collections may keep few of
        # them, so the bound is then on the visible captures, and the planner starts from the
        # filter's index when it is the selective side
        texts_first = not (
            query.sites or query.hosts or query.domains or query.mimes or query.collections
        )
        cte, params = _visible_captures(query, tsqueries, texts_first=texts_first)
        per_page = max(1, min(query.per_page, 100))
        page = max(1, query.page)
        params |= {
            "limit": per_page,
            "offset": (page - 1) * per_page,
            "opts": _HEADLINE,
            "cap": self.count_limit + 1,
            "cand": PHRASE_CANDIDATES * (self.count_limit + 1),
        }
        with self.engine.connect() as conn:
            conn.execute(sa.text("SET TRANSACTION READ ONLY"))
            conn.execute(sa.text("SET LOCAL max_parallel_workers_per_gather = 0"))
            conn.execute(sa.text("SET LOCAL synchronize_seqscans = off"))
            sql = _SEARCH_SQL.format(
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
                total = max(payloads + 1, _round2(_estimate(conn, query, tsqueries)))
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
        facets = _facets(facet_rows) if payloads else {f: [] for f in FACETS}
        return SearchResult(query, total, hits, facets, exact=exact, counted=payloads)


_TSQUERIES = sa.text(
    "SELECT websearch_to_tsquery('french', :q)::text, websearch_to_tsquery('english', :q)::text,"
    " websearch_to_tsquery('simple', :q)::text"
)


def _estimate(conn: Connection, query: Query, tsqueries: dict[str, str]) -> int:
    """The number of payloads the query matches, from a block sample of about
    ``ESTIMATE_SAMPLE`` texts (the same sample every time: an estimate that does not change
    between two pages)."""
    texts = conn.execute(_TEXTS).scalar_one()
    pct = min(100.0, 100.0 * ESTIMATE_SAMPLE / max(1.0, float(texts or 0)))
    cte, params = _visible_captures(query, tsqueries, sample=True)
    found = conn.execute(
        sa.text(cte + " SELECT count(DISTINCT digest) FROM v"), params | {"pct": pct}
    ).scalar_one()
    return int(found * 100.0 / pct)


_TEXTS = sa.text(
    "SELECT sum(greatest(c.reltuples, 0)) FROM pg_class c JOIN pg_inherits i"
    " ON i.inhrelid = c.oid WHERE i.inhparent = 'fulltext_docs'::regclass"
)


def _round2(n: int) -> int:
    """``n`` to two significant figures (an estimate shown as one: 12,345 -> 12,000)."""
    digits = len(str(abs(n)))
    return round(n, -(digits - 2)) if digits > 2 else n


_SEARCH_SQL = f"""
, s AS MATERIALIZED ({{s}})
, h AS (
    SELECT DISTINCT ON (digest) year, digest, url, captured_at, mime, collection, lang,
           score, count(*) OVER (PARTITION BY digest) AS n
    FROM s ORDER BY digest, captured_at DESC, url
)
, page AS (
    SELECT * FROM h ORDER BY score DESC, captured_at DESC, digest LIMIT :limit OFFSET :offset
)
SELECT
    {{read}},
    (SELECT count(*) FROM h),
    (SELECT coalesce(json_agg(x ORDER BY x.score DESC, x.captured_at DESC, x.digest), '[]')
     FROM (SELECT p.*, d.title,
                  ts_headline(d.cfg, left(d.body, {SNIPPET_CHARS}), {_QUERY_OF_CFG}, :opts)
                      AS snippet
           FROM page p JOIN fulltext_docs d ON d.year = p.year AND d.digest = p.digest) x),
    (SELECT coalesce(json_agg(json_build_array(year::text, host, domain, mime, collection, lang,
                                               n, g)), '[]')
     FROM (SELECT year, host, domain, mime, collection, lang, count(DISTINCT digest) AS n,
                  GROUPING(year, host, domain, mime, collection, lang) AS g
           FROM s GROUP BY GROUPING SETS ((year), (host), (domain), (mime), (collection), (lang))
          ) f)
"""


def _facets(rows: Iterable[Any]) -> dict[str, list[tuple[str, int]]]:
    facets: dict[str, list[tuple[str, int]]] = {f: [] for f in FACETS}
    for row in rows:
        values = row[:6]
        grouping = int(row[7])
        for i, name in enumerate(FACETS):
            if not grouping & (1 << (5 - i)):  # this facet is the grouped column
                facets[name].append((values[i] or "", int(row[6])))
    for name in facets:
        facets[name].sort(key=lambda vc: (-vc[1], vc[0]))
        del facets[name][FACET_LIMIT:]
    return facets


def _access_sql(rules: AccessRules, params: dict[str, Any]) -> list[str]:
    where = []
    exceptions = dict(rules.exceptions)

    def unless_longer(prefix: str, name: str) -> str:
        """A rule under this one decides for its own captures (the longest prefix decides)."""
        if prefix not in exceptions:
            return ""
        params[name] = [_like_prefix(p) for p in exceptions[prefix]]
        return f" AND NOT c.surt LIKE ANY(CAST(:{name} AS text[]))"

    plain = [p for p in rules.blocked if p not in exceptions]
    if plain:
        params["blocked"] = [_like_prefix(p) for p in plain]
        where.append("NOT (c.surt LIKE ANY(CAST(:blocked AS text[])))")
    for i, prefix in enumerate(p for p in rules.blocked if p in exceptions):
        params[f"blk_p{i}"] = _like_prefix(prefix)
        where.append(f"NOT (c.surt LIKE :blk_p{i}{unless_longer(prefix, f'blk_x{i}')})")
    now = rules.now or datetime.now(UTC)
    for i, (prefix, period) in enumerate(rules.embargoes):
        params[f"emb_p{i}"] = _like_prefix(prefix)
        params[f"emb_t{i}"] = now - period
        where.append(
            f"NOT (c.surt LIKE :emb_p{i} AND c.captured_at > :emb_t{i}"
            f"{unless_longer(prefix, f'emb_x{i}')})"
        )
    return where


def _visible_captures(
    query: Query, tsqueries: dict[str, str], *, sample: bool = False, texts_first: bool = False
) -> tuple[str, dict[str, Any]]:
    """The CTEs ``m`` (matching texts) and ``v`` (their visible captures).

    The query of each text configuration (``tsqueries``: tq_fr, tq_en, tq_si) comes in as a
    constant, so that the planner sees how common its words are: a frequent word is then read
    by a sequential scan that stops at the count limit, a rare one through the GIN index.
    ``sample``: the texts are a block sample of ``:pct`` percent (for an estimated count).
    ``texts_first``: ``m`` is the first ``:cap`` matching texts (materialized), else all of them.
    """
    params: dict[str, Any] = dict(tsqueries)
    doc_where = []
    # a phrase matched text by text from the texts holding all its words, and at most
    # PHRASE_CANDIDATES x the count limit of them: words often found side by side stop early,
    # words rarely side by side would otherwise have every text holding both re-read
    phrase = texts_first and any("<" in tq for tq in tsqueries.values())
    phrase_where = ""
    if query.text.strip():
        doc_where.append(_match_sql(tsqueries, "tq"))
        if phrase:
            for key, tq in tsqueries.items():
                params["all_" + key] = _PHRASE_OP.sub("&", tq)
            phrase_where, doc_where[0] = doc_where[0], _match_sql(tsqueries, "all_tq")
    if query.years:
        params["years"] = list(query.years)
        doc_where.append("d.year = ANY(:years)")
    if query.langs:
        params["langs"] = list(query.langs)
        doc_where.append("d.lang = ANY(:langs)")
    cap_where = _access_sql(query.access, params)
    for name, column in (
        ("mimes", "mime"),
        ("collections", "collection"),
        ("hosts", "host"),
        ("domains", "domain"),
    ):
        values = getattr(query, name)
        if values:
            params[name] = [v.lower() if name in ("hosts", "domains") else v for v in values]
            cap_where.append(f"c.{column} = ANY(:{name})")
    site_terms = []
    for i, site in enumerate(query.sites):
        host, _, path = site.lower().partition("/")
        params[f"site_h{i}"] = host
        # a subdomain's host ends with ".host": its reversed host starts with the reversed
        # ".host" (an index prefix, sql/027_fulltext_search_plans.sql)
        params[f"site_s{i}"] = _like_prefix(("." + host)[::-1])
        term = f"(c.host = :site_h{i} OR reverse(c.host) LIKE :site_s{i})"
        if path:
            key = surt_or_url(f"http://{host}/{path}")
            params[f"site_p{i}"] = _like_prefix(key.split(")", 1)[1] if ")" in key else key)
            term = f"({term} AND substr(c.surt, strpos(c.surt, ')') + 1) LIKE :site_p{i})"
        site_terms.append(term)
    if site_terms:
        cap_where.append("(" + " OR ".join(site_terms) + ")")
    # the first texts' captures are looked up text by text (LATERAL: a nested loop on the digest
    # index; OFFSET 0 keeps the planner from flattening it), never by hashing every capture
    join = (
        "m CROSS JOIN LATERAL (SELECT * FROM fulltext_captures x"
        " WHERE x.year = m.year AND x.digest = m.digest OFFSET 0) c"
        if texts_first
        else "fulltext_captures c JOIN m ON c.year = m.year AND c.digest = m.digest"
    )
    docs = "fulltext_docs d" + (" TABLESAMPLE SYSTEM (:pct) REPEATABLE (22)" if sample else "")
    where = " AND ".join(doc_where) or "TRUE"
    if phrase:
        candidates = f"SELECT d.year FROM {docs} WHERE {where} LIMIT :cand"
        texts = (
            f"(SELECT d.year, d.digest, d.lang, d.cfg, d.tsv FROM {docs} WHERE {where} LIMIT :cand)"
        )
    else:
        candidates = "SELECT 0 WHERE FALSE"
        texts = f"(SELECT d.year, d.digest, d.lang, d.cfg, d.tsv FROM {docs} WHERE {where})"
    cte = f"""
WITH m AS {"MATERIALIZED " if texts_first else ""}(
    SELECT d.year, d.digest, d.lang, ts_rank_cd(d.tsv, {_QUERY_OF_CFG}) AS score
    FROM {texts} d
    WHERE {phrase_where or "TRUE"}{" LIMIT :cap" if texts_first else ""}
), cand AS (
    SELECT count(*) AS n FROM ({candidates}) x
), v AS (
    SELECT c.year, c.digest, c.url, c.captured_at, c.mime, c.collection, c.host, c.domain,
           m.lang, m.score
    FROM {join} WHERE {" AND ".join(cap_where) or "TRUE"}
)"""
    return cte, params


_PHRASE_OP = re.compile(r"<(?:-|\d+)>")


def _match_sql(tsqueries: dict[str, str], prefix: str) -> str:
    """``d.tsv`` matches the query of its text configuration (params ``<prefix>_fr`` ...)."""
    if tsqueries["tq_fr"] == tsqueries["tq_en"] == tsqueries["tq_si"]:
        # no word stems differently in French or English: one index condition, not three
        return f"d.tsv @@ CAST(:{prefix}_si AS tsquery)"
    return (
        f"((d.cfg = 'french'::regconfig AND d.tsv @@ CAST(:{prefix}_fr AS tsquery))"
        f" OR (d.cfg = 'english'::regconfig AND d.tsv @@ CAST(:{prefix}_en AS tsquery))"
        f" OR (d.cfg = 'simple'::regconfig AND d.tsv @@ CAST(:{prefix}_si AS tsquery)))"
    )


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
