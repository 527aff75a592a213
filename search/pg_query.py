"""The PostgreSQL search backend's query side: the SQL of one search, built from a parsed query.

Why apart from search/pg.py: the backend class there loads documents and runs a search; what a
search asks of PostgreSQL — the visible captures under the access rules, the bounded read of
matching texts, phrase candidates, facets, the count estimate past the bound — is this module's
one job. Every value is a bound parameter; only fixed SQL fragments are formatted in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvestflow.formats.surt import surt_or_url
from search.model import FACETS, AccessRules, Query

SNIPPET_CHARS = 100_000  # body characters ts_headline reads
FACET_LIMIT = 20
PHRASE_CANDIDATES = 5  # texts holding a phrase's words read per search, x the count limit
ESTIMATE_SAMPLE = 2_000  # texts in the block sample that estimates a count past the limit
_QUERY_OF_CFG = (
    "CASE d.cfg WHEN 'french'::regconfig THEN CAST(:tq_fr AS tsquery)"
    " WHEN 'english'::regconfig THEN CAST(:tq_en AS tsquery) ELSE CAST(:tq_si AS tsquery) END"
)


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


TSQUERIES = sa.text(
    "SELECT websearch_to_tsquery('french', :q)::text, websearch_to_tsquery('english', :q)::text,"
    " websearch_to_tsquery('simple', :q)::text"
)


def estimate_count(conn: Connection, query: Query, tsqueries: dict[str, str]) -> int:
    """The number of payloads the query matches, from a block sample of about
    ``ESTIMATE_SAMPLE`` texts (the same sample every time: an estimate that does not change
    between two pages)."""
    texts = conn.execute(_TEXTS).scalar_one()
    pct = min(100.0, 100.0 * ESTIMATE_SAMPLE / max(1.0, float(texts or 0)))
    cte, params = visible_captures(query, tsqueries, sample=True)
    found = conn.execute(
        sa.text(cte + " SELECT count(DISTINCT digest) FROM v"), params | {"pct": pct}
    ).scalar_one()
    return int(found * 100.0 / pct)


_TEXTS = sa.text(
    "SELECT sum(greatest(c.reltuples, 0)) FROM pg_class c JOIN pg_inherits i"
    " ON i.inhrelid = c.oid WHERE i.inhparent = 'fulltext_docs'::regclass"
)


def round2(n: int) -> int:
    """``n`` to two significant figures (an estimate shown as one: 12,345 -> 12,000)."""
    digits = len(str(abs(n)))
    return round(n, -(digits - 2)) if digits > 2 else n


SEARCH_SQL = f"""
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


def facet_counts(rows: Iterable[Any]) -> dict[str, list[tuple[str, int]]]:
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


def visible_captures(
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
