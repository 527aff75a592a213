"""``harvestflow preload …``: the broad-crawl preload from a terminal.

- ``preload check-dns FILE --nameserver HOST[:PORT]`` writes ``domain<TAB>class<TAB>detail``
  lines (the same code the DAG's mapped DNS-check tasks run); with ``-o OUT`` the results go to
  ``OUT.part`` first and a re-run after an interruption checks only what is missing.
- ``preload run --run-id ID --source NAME=KIND[:PATH[:COLUMN]] …`` runs every step of the
  ``broad_crawl_preload`` DAG in sequence (collect, DNS check, redirects, transfer) and prints
  the report; ``--hosts-file`` / ``--static-only`` and ``--connect-to`` let it run on loopback
  without Internet DNS (demo).
- ``preload report RUN_ID`` prints the figures of a run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

DEMO_HELP = (
    "without Internet DNS: --hosts-file FILE (hosts format, names listed are active) with "
    "--static-only (names not listed are failed), or --nameserver 127.0.0.1:PORT of a local "
    "server; --connect-to 127.0.0.1:PORT sends redirect probes to the sample site"
)


def add_cli(subparsers: Any) -> None:
    parser = subparsers.add_parser("preload", help="broad-crawl preload (DNS check, load)")
    sub = parser.add_subparsers(dest="preload_command", required=True, metavar="STEP")

    dns = sub.add_parser(
        "check-dns", help="DNS-check a file of domains: domain<TAB>class<TAB>detail lines"
    )
    dns.add_argument("file", type=Path, help="one domain per line (# comments allowed)")
    _dns_options(dns)
    dns.add_argument("-o", "--output", type=Path, help="output file (default: stdout)")
    dns.add_argument("--in-flight", type=int, help="queries in flight per process")
    dns.add_argument("--processes", type=int, help="worker processes (default: one per core)")
    dns.add_argument("--timeout", type=float, help="per-query timeout, seconds")
    dns.add_argument("--retries", type=int, help="retries after a timeout/SERVFAIL/REFUSED")
    dns.set_defaults(func=cmd_check_dns)

    run = sub.add_parser("run", help="all preload steps in sequence, then the report")
    run.add_argument("--run-id", required=True)
    run.add_argument(
        "--source",
        action="append",
        required=True,
        metavar="NAME=KIND[:PATH[:COLUMN]]",
        help="registry:FILE[:COLUMN], url_list:FILE, harvest_db or selections (repeatable,"
        " in order of precedence)",
    )
    _dns_options(run)
    run.add_argument("--connect-to", help="send every redirect probe to HOST:PORT")
    run.add_argument("--no-redirects", action="store_true", help="skip redirect discovery")
    run.set_defaults(func=cmd_run)

    report = sub.add_parser("report", help="print the figures of a preload run")
    report.add_argument("run_id")
    report.set_defaults(func=cmd_report)
    parser.epilog = DEMO_HELP


def _nameserver(text: str) -> str:
    """argparse type of ``--nameserver``: a malformed value is a usage error (exit 2)."""
    from harvest.preload.dnsbase import parse_nameserver

    try:
        parse_nameserver(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _dns_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nameserver",
        action="append",
        type=_nameserver,
        metavar="HOST[:PORT]",
        help="nameserver to ask (repeatable; default [preload] nameservers, else resolv.conf)",
    )
    parser.add_argument("--hosts-file", help="hosts-format file answering the names it lists")
    parser.add_argument(
        "--static-only", action="store_true", help="names not in --hosts-file are failed"
    )


def _dns_settings(args: argparse.Namespace) -> Any:
    from harvest.preload.dnscheck import dns_settings
    from harvestflow.settings import get_settings

    overrides: dict[str, Any] = {}
    for attr, key in (
        ("timeout", "timeout_s"),
        ("retries", "retries"),
        ("in_flight", "max_in_flight"),
    ):
        value = getattr(args, attr, None)
        if value is not None:
            overrides[key] = value
    if args.static_only:
        if not args.hosts_file:
            raise SystemExit("--static-only needs --hosts-file")
        overrides["static_only"] = True
    return dns_settings(get_settings(), args.nameserver, args.hosts_file, **overrides)


# exit codes of check-dns (docs/engineers/commands.md): rejected lines and a run nobody answered are not success
EXIT_REJECTED = 1
EXIT_NO_ANSWER = 3


def cmd_check_dns(args: argparse.Namespace) -> int:
    from harvest.preload.dnsbase import format_result, timed_out
    from harvest.preload.dnscheck import (
        RejectedLine,
        check_dns_file,
        default_processes,
        iter_check,
        read_checked_names,
        rejects_file,
    )
    from harvest.preload.store import preload_settings
    from harvestflow.settings import get_settings

    if not args.file.is_file():
        print(f"harvestflow preload check-dns: no such file: {args.file}", file=sys.stderr)
        return 2
    dns = _dns_settings(args)
    settings = get_settings()
    extra = frozenset(str(s).lower() for s in preload_settings(settings)["extra_suffixes"])
    processes = args.processes or default_processes(settings)
    rejected: list[RejectedLine] = []
    if args.output is not None:
        counts = check_dns_file(
            args.file,
            args.output,
            dns,
            processes=processes,
            bar=True,
            extra_suffixes=extra,
            rejected=rejected,
        )
        print(
            f"{args.output}: {counts['names']} names, active {counts.get('active', 0)},"
            f" failed {counts.get('failed', 0)}, unknown {counts.get('unknown', 0)}"
            f" ({counts['resumed']} from an earlier interrupted run),"
            f" {counts['rejected']} lines rejected ({rejects_file(args.output)})",
            file=sys.stderr,
        )
        checked = sum(counts.get(c, 0) for c in ("active", "failed", "unknown"))
        timeouts = counts["timeouts"]
    else:
        out = sys.stdout
        checked = timeouts = 0
        names = read_checked_names(args.file, extra, rejected)
        for domain, cls, detail in iter_check(names, dns, processes):
            out.write(format_result((domain, cls, detail)))
            checked += 1
            timeouts += timed_out(cls, detail)
        out.flush()
    for line in rejected:
        print(f"REJECTED {line.message(str(args.file))}", file=sys.stderr)
    if checked and timeouts == checked:
        print(
            f"harvestflow preload check-dns: no answer at all: all {checked} names timed out"
            " (is the nameserver reachable?)",
            file=sys.stderr,
        )
        return EXIT_NO_ANSWER
    return EXIT_REJECTED if rejected else 0


def _parse_source(text: str) -> dict[str, Any]:
    name, sep, rest = text.partition("=")
    if not sep or not name:
        raise SystemExit(f"--source {text!r}: expected NAME=KIND[:PATH[:COLUMN]]")
    kind, _, tail = rest.partition(":")
    spec: dict[str, Any] = {"name": name, "kind": kind}
    if tail:
        path, _, column = tail.partition(":")
        spec["path"] = path
        if column:
            spec["column"] = column
    return spec


def cmd_run(args: argparse.Namespace) -> int:
    from harvest.preload.run_all import run_all
    from harvest.preload.transfer import report_text

    if args.static_only and not args.hosts_file:
        raise SystemExit("--static-only needs --hosts-file")
    report = run_all(
        args.run_id,
        [_parse_source(s) for s in args.source],
        nameservers=args.nameserver,
        hosts_file=args.hosts_file,
        static_only=True if args.static_only else None,
        connect_to=args.connect_to,
        redirects=not args.no_redirects,
    )
    collected = report["collected"]
    print(
        f"collected {collected['unique_domains']} domains, {collected['rejected']} lines"
        f" rejected ({report.get('rejects_path', '')})",
        file=sys.stderr,
    )
    print(report_text(report), end="")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from harvest.preload.transfer import preload_report, report_text

    print(report_text(preload_report(args.run_id)), end="")
    return 0
