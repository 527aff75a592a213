"""``harvestflow documents list|show|export|check|scan``: the documents of watched targets.

- ``documents list [--target ID] [--state S]``: one line per document (id, state, kind, date,
  title, URL), broken ones marked;
- ``documents show ID``: every field, the captures, the landing page and the version history;
- ``documents export FILE [--format jsonl|dc] [--target ID]``: the available and catalogued
  documents, as JSON lines or Dublin Core (oai_dc) XML, with their archive URLs;
- ``documents check``: the availability check the indexing chain runs (new -> available);
- ``documents scan FILE_NAME``: one WARC of the chain read for documents (as the DAG does).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from indexing.documents import STATES


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    docs = subparsers.add_parser("documents", help="documents of watched targets")
    sub = docs.add_subparsers(dest="documents_command", required=True, metavar="ACTION")
    p = sub.add_parser("list", help="documents, oldest first")
    p.add_argument("--target", type=int, help="a watched selection record's id")
    p.add_argument("--state", choices=STATES)
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("show", help="one document: fields, captures, landing page, history")
    p.add_argument("document_id", type=int)
    p.set_defaults(func=cmd_show)
    p = sub.add_parser("export", help="available and catalogued documents for cataloguing")
    p.add_argument("file", type=Path)
    p.add_argument("--format", choices=("jsonl", "dc"), default="jsonl")
    p.add_argument("--target", type=int)
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("check", help="offer the new documents the access service replays")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("scan", help="read one WARC of the chain for documents")
    p.add_argument("file_name")
    p.set_defaults(func=cmd_scan)


def _line(doc: dict[str, Any]) -> str:
    flag = " BROKEN" if doc["broken"] else ""
    return (
        f"{doc['document_id']}\t{doc['state']}{flag}\t{doc['kind']}\t{doc['published'] or ''}"
        f"\t{doc['title'] or ''}\t{doc['url']}"
    )


def cmd_list(args: argparse.Namespace) -> int:
    from harvestflow.db import get_engine
    from indexing.documents import store

    states = (args.state,) if args.state else None
    with get_engine().connect() as conn:
        docs = store.list_documents(conn, record_id=args.target, states=states)
    for doc in docs:
        print(_line(doc))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from harvestflow.db import get_engine
    from indexing.documents import store

    with get_engine().connect() as conn:
        docs = store.list_documents(conn, document_id=args.document_id)
        if not docs:
            print(f"harvestflow documents: no document {args.document_id}", file=sys.stderr)
            return 1
        doc = docs[0]
        doc["history"] = store.history(conn, args.document_id)
    print(json.dumps(doc, indent=1, default=str, ensure_ascii=False))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from indexing.documents import export

    items = export.records(record_id=args.target)
    write = export.write_jsonl if args.format == "jsonl" else export.write_dublin_core
    count = write(args.file, items)
    print(f"{count} document(s) written to {args.file}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from indexing.documents.availability import check_new

    print(json.dumps(check_new()))
    return 0


def cmd_scan(args: argparse.Namespace) -> int:
    from indexing.documents.scan import extract_file

    print(json.dumps(extract_file(args.file_name), default=str))
    return 0
