"""``harvestflow search ...``: rebuild the full-text index, query it from a terminal.

- ``search reindex [--collection C]``: forget the extracted texts of the chain's files (of one
  collection; ``""`` is the main one) and extract them again from the WARCs, with a progress bar.
- ``search query "words \\"a phrase\\" -not site:host domain:name" [--page N] [--json]``: one
  page of collapsed results and the facets; ``--block SURT`` hides captures as access rules do.

Here and not in search/: ``reindex`` runs the indexing package's text extraction, which writes
through search's backend (indexing sits above search in the layering).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from search.model import SearchResult


def cmd_reindex(args: argparse.Namespace) -> int:
    from indexing.fulltext import reindex  # the chain module owns the files it reads

    totals = reindex(args.collection, progress_bar=True)
    print(
        f"{totals['files']} file(s): {totals['extracted']} documents extracted,"
        f" {totals['duplicates']} duplicate captures, {totals['skipped']} skipped,"
        f" {totals['failed']} failed"
        + (
            f"; {totals['unreadable_files']} file(s) unreadable"
            if totals["unreadable_files"]
            else ""
        )
    )
    return 1 if totals["failed"] or totals["unreadable_files"] else 0


def _print(result: SearchResult) -> None:
    from search.model import FACETS

    q = result.query
    first = (q.page - 1) * q.per_page + 1 if result.hits else 0
    shown = f"{first}-{first + len(result.hits) - 1 if first else 0}"
    if result.exact:
        print(f"{result.total} result(s); {shown}")
    else:
        print(f"{result.approximation()}; {shown}")
    for hit in result.hits:
        print()
        print(f"{hit.title or '(untitled)'}")
        print(f"  {hit.url}  {hit.captured_at:%Y-%m-%d %H:%M:%S}  {hit.mime}  {hit.lang}")
        if hit.other_captures:
            print(f"  {hit.other_captures} other capture(s) of the same content")
        print(f"  {hit.snippet_text('[', ']')}")
    print()
    for name in FACETS:
        values = result.facets.get(name) or []
        if values:
            shown = ", ".join(f"{v or '(none)'} {n}" for v, n in values)
            print(f"{name}: {shown}")


def cmd_query(args: argparse.Namespace) -> int:
    from access.rules import search_rules
    from harvestflow.db import get_engine
    from search.backends import get_backend
    from search.query import parse_query

    # the access rules in force (as replay applies them), plus what the command line adds
    in_force = search_rules(get_engine())
    rules = replace(
        in_force,
        blocked=in_force.blocked + tuple(args.block),
        embargoes=in_force.embargoes
        + ((("", timedelta(days=args.embargo_days)),) if args.embargo_days else ()),
    )
    query = parse_query(
        args.text,
        page=args.page,
        per_page=args.per_page,
        years=tuple(args.year),
        mimes=tuple(args.mime),
        collections=tuple(args.collection),
        langs=tuple(args.lang),
        access=rules,
    )
    result = get_backend().search(query)
    if args.json:
        payload = {
            "total": result.total,
            "exact": result.exact,
            "hits": [
                asdict(h) | {"captured_at": h.captured_at.isoformat(), "snippet": h.snippet_html()}
                for h in result.hits
            ],
            "facets": result.facets,
        }
        json.dump(payload, sys.stdout, ensure_ascii=False, indent=1)
        print()
    else:
        _print(result)
    return 0


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``search`` and its subcommands."""
    search = subparsers.add_parser("search", help="full-text search of the archive")
    sub = search.add_subparsers(dest="search_command", required=True)
    rx = sub.add_parser("reindex", help="rebuild the full-text index from the WARCs")
    rx.add_argument("--collection", help='only this collection ("" = the main one)')
    rx.set_defaults(func=cmd_reindex)
    q = sub.add_parser("query", help='search: words, "phrases", -exclusion, site:, domain:')
    q.add_argument("text")
    q.add_argument("--page", type=int, default=1)
    q.add_argument("--per-page", type=int, default=10)
    q.add_argument("--year", type=int, action="append", default=[], help="facet filter")
    q.add_argument("--mime", action="append", default=[], help="facet filter")
    q.add_argument("--collection", action="append", default=[], help="facet filter")
    q.add_argument("--lang", action="append", default=[], help="facet filter")
    q.add_argument(
        "--block",
        action="append",
        default=[],
        metavar="SURT",
        help="hide captures under this SURT prefix (as an access rule would)",
    )
    q.add_argument(
        "--embargo-days", type=int, default=0, help="hide captures younger than this many days"
    )
    q.add_argument("--json", action="store_true", help="JSON output (snippets as HTML)")
    q.set_defaults(func=cmd_query)
