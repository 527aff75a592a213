"""Benchmark: query latency of the PostgreSQL search backend on a generated index.

    .venv/bin/python bench/fulltext/bench_query.py [--docs 200000] [--queries 40] [--keep DIR]

Starts an embedded PostgreSQL in a temporary folder (``--keep DIR`` reuses one), loads N
documents through ``PgSearchBackend.add`` (one capture each, 2 capture years, 2,000 hosts,
English/French/other texts of 150–400 Zipf-distributed words from a 5,000-word vocabulary), then
times ``search()`` — the whole page: total, 10 collapsed hits with snippets, six facets — for
single words (from frequent to rare), two-word phrases taken from the texts, and faceted queries
(a word with ``site:`` and a year). Prints p50/p95 per query shape and round, their medians over
``--rounds``, how many results were estimates (``--count-limit``), and the index size.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _vocabulary(rnd: random.Random, n: int = 5000) -> list[str]:
    syllables = [c + v for c in "bdklmnprst" for v in "aeiou"]
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rnd.choice(syllables) for _ in range(rnd.randint(2, 4))))
    return sorted(words)


def _text(rnd: random.Random, vocab: list[str]) -> str:
    n = rnd.randint(150, 400)
    return " ".join(vocab[min(int(rnd.paretovariate(0.8)) - 1, len(vocab) - 1)] for _ in range(n))


def load(n: int, vocab: list[str]) -> list[str]:
    from harvestflow.db import get_engine
    from search.model import CaptureRecord, Document, FileProgress
    from search.pg import PgSearchBackend

    backend = PgSearchBackend(get_engine())
    rnd = random.Random(7)
    texts: list[str] = []
    batch = 1000
    started = time.monotonic()
    for start in range(0, n, batch):
        docs, caps = [], []
        for i in range(start, min(n, start + batch)):
            text = _text(rnd, vocab)
            if len(texts) < 200:
                texts.append(text)
            digest = f"sha1:BENCH{i:020d}"
            lang = rnd.choices(["en", "fr", "de"], [6, 3, 1])[0]
            host = f"www.site{rnd.randint(1, 2000)}.example"
            docs.append(Document(digest, " ".join(text.split()[:6]), text, lang, 10))
            caps.append(CaptureRecord(
                file_name=f"bench-{i // 10000}.warc.gz", offset=i, url=f"http://{host}/p/{i}",
                surt=f"example,{host[4:-8]})/p/{i}", host=host, domain=host[4:],
                captured_at=datetime(rnd.choice([2025, 2026]), 1 + i % 12, 1, tzinfo=UTC),
                status=200, mime="text/html", digest=digest, record_type="response",
                collection=rnd.choice(["", "elections"]), harvest_id=1, job_id=1,
            ))  # fmt: skip
        backend.add(docs, caps, FileProgress(f"bench-{start}", done=True))
        if start % 20000 == 0:
            print(f"  loaded {start + len(docs):,} documents, {time.monotonic() - started:.0f} s")
    print(f"load: {n:,} documents in {time.monotonic() - started:.0f} s")
    return texts


def _stored_texts(engine: Any) -> list[str]:
    """Texts of the loaded index (a fixed sample), to cut phrases from when it is reused."""
    import sqlalchemy as sa

    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT body FROM fulltext_docs TABLESAMPLE SYSTEM (1) REPEATABLE (7) LIMIT 200"
            )
        ).all()
    return [r[0] for r in rows]


def run(queries: int, vocab: list[str], texts: list[str], rounds: int, count_limit: int) -> None:
    from harvestflow.db import get_engine
    from search.pg import PgSearchBackend
    from search.query import parse_query

    backend = PgSearchBackend(get_engine(), count_limit=count_limit)
    rnd = random.Random(11)
    ranks = [int(len(vocab) * (k / queries) ** 3) for k in range(queries)]  # frequent to rare
    words = [vocab[r] for r in ranks]
    phrases = []
    for _ in range(queries):
        tokens = rnd.choice(texts).split()
        j = rnd.randrange(len(tokens) - 1)
        phrases.append(f'"{tokens[j]} {tokens[j + 1]}"')
    faceted = [f"{w} site:site{rnd.randint(1, 2000)}.example" for w in words]
    # phrases that are not cut from a text: two mid-frequency words (ranks 30-300; both in
    # many texts, rarely side by side, so the candidate bound is read through), and a frequent
    # word before a rare one
    rarely = [f'"{vocab[rnd.randrange(30, 300)]} {vocab[rnd.randrange(30, 300)]}"' for _ in words]
    rare = [f'"{vocab[rnd.randrange(30)]} {vocab[rnd.randrange(1000, 5000)]}"' for _ in words]
    shapes = {
        "single word": words,
        "two-word phrase": phrases,
        "phrase, words rarely adjacent": rarely,
        "phrase, frequent + rare word": rare,
        "word + site: + year": faceted,
    }
    backend.search(parse_query(words[0]))  # warm-up
    print(f"count limit {count_limit:,} matching captures per search; load {_load()}")
    per_shape: dict[str, list[tuple[float, float]]] = {shape: [] for shape in shapes}
    for rnd_no in range(1, rounds + 1):
        for shape, items in shapes.items():
            times, totals, approx = [], [], 0
            for q in items:
                kw = {"years": (2026,)} if shape.startswith("word +") else {}
                t0 = time.perf_counter()
                result = backend.search(parse_query(q, **kw))
                times.append((time.perf_counter() - t0) * 1000)
                totals.append(result.total)
                approx += not result.exact
            times.sort()
            p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
            per_shape[shape].append((statistics.median(times), p95))
            print(
                f"round {rnd_no} {shape:30s} p50 {statistics.median(times):8.1f} ms"
                f"  p95 {p95:8.1f} ms  max {times[-1]:8.1f} ms  hits median"
                f" {int(statistics.median(totals)):,} max {max(totals):,}"
                f" ({approx}/{len(items)} estimated); load {_load()}"
            )
    for shape, figures in per_shape.items():
        print(
            f"median of {rounds} rounds: {shape:30s} p50"
            f" {statistics.median(f[0] for f in figures):8.1f} ms"
            f"  p95 {statistics.median(f[1] for f in figures):8.1f} ms"
        )


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--keep", type=Path)
    ap.add_argument(
        "--load-only", action="store_true", help="load (or reuse) the index, no queries"
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count-limit", type=int, default=2_000)
    args = ap.parse_args()
    from bench.runner.embedded import embedded_data_dir

    embedded_data_dir("hf-bench-fulltext-", args.keep)
    import sqlalchemy as sa

    from harvestflow import db, services
    from harvestflow.settings import get_settings, reset

    reset()
    settings = get_settings()
    pg = services.postgres_for(settings)
    pg.start()
    try:
        db.ensure_database(settings.harvest_db_url)
        engine = db.get_engine(settings.harvest_db_url)
        db.migrate(engine)
        vocab = _vocabulary(random.Random(3))
        with engine.connect() as conn:
            have = conn.execute(sa.text("SELECT count(*) FROM fulltext_docs")).scalar_one()
        texts = load(args.docs, vocab) if have < args.docs else _stored_texts(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("ANALYZE fulltext_docs; ANALYZE fulltext_captures"))
            size = conn.execute(
                sa.text(
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c"
                    " JOIN pg_inherits i ON i.inhrelid = c.oid"
                    " WHERE i.inhparent IN ('fulltext_docs'::regclass, 'fulltext_captures'::regclass)"
                )
            ).scalar_one()
        size = int(size or 0)
        print(
            f"index size: {size / 1e6:,.0f} MB for {args.docs:,} documents"
            f" ({size / 1e6 / args.docs * 1e6:,.0f} MB per million)"
        )
        if not args.load_only:
            run(args.queries, vocab, texts, args.rounds, args.count_limit)
    finally:
        db.dispose_engines()
        if not args.keep:
            pg.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
