"""The DNS check as a resumable, mapped task over the chunk files of a preload run.

Why resumable per result: a yearly check of millions of domains takes hours; if the task is
killed, the results already stored (committed every few thousand) are kept and a re-run skips
them, so nothing is lost and nothing is asked twice. Results are UPSERTs keyed by
(run_id, domain), so a repeated batch changes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harvest.preload.dnscheck import default_processes, dns_settings, iter_check, read_domain_lines
from harvest.preload.dnswire import DnsSettings, Result
from harvest.preload.store import copy_upsert, engine_for, ensure_run
from harvestflow.progress import Progress
from harvestflow.settings import Settings, get_settings

log = logging.getLogger(__name__)

_COMMIT_EVERY = 5000


def checked_domains(engine: Engine, run_id: str, domains: Iterable[str] | None = None) -> set[str]:
    """Domains of ``run_id`` that already have a DNS result (all, or among ``domains``)."""
    with engine.connect() as conn:
        if domains is None:
            rows = conn.execute(
                sa.text("SELECT domain FROM dns_checks WHERE run_id = :r"), {"r": run_id}
            )
        else:
            rows = conn.execute(
                sa.text("SELECT domain FROM dns_checks WHERE run_id = :r AND domain = ANY(:d)"),
                {"r": run_id, "d": list(domains)},
            )
        return set(rows.scalars())


def store_results(
    engine: Engine, run_id: str, results: Iterable[Result], commit_every: int = _COMMIT_EVERY
) -> dict[str, int]:
    """Write results as they come, committing every ``commit_every``; counts per class."""
    counts: dict[str, int] = {}
    batch: list[Result] = []

    def flush() -> None:
        if not batch:
            return
        with engine.begin() as conn:
            copy_upsert(
                conn,
                "dns_checks",
                ("run_id", "domain", "class", "detail", "checked_at"),
                ((run_id, d, c, x, "now") for d, c, x in batch),
                conflict="(run_id, domain) DO UPDATE SET class = EXCLUDED.class,"
                " detail = EXCLUDED.detail, checked_at = EXCLUDED.checked_at",
                key=("run_id", "domain"),
            )
        batch.clear()

    for result in results:
        batch.append(result)
        counts[result[1]] = counts.get(result[1], 0) + 1
        if len(batch) >= commit_every:
            flush()
    flush()
    return counts


def check_and_store(
    engine: Engine,
    run_id: str,
    domains: list[str],
    dns: DnsSettings,
    processes: int = 1,
    label: str = "dns check",
    commit_every: int = _COMMIT_EVERY,
) -> dict[str, Any]:
    """Check the domains of ``domains`` not yet checked in ``run_id`` and store the results."""
    started = time.monotonic()
    with engine.begin() as conn:
        ensure_run(conn, run_id)
    done = checked_domains(engine, run_id, domains)
    todo = list(dict.fromkeys(d for d in domains if d not in done))
    if done:
        log.info("%s: %d of %d domains already checked, resuming", label, len(done), len(domains))
    progress = Progress(label, len(todo), unit="domains")

    def counted(results: Iterator[Result]) -> Iterator[Result]:
        for result in results:
            progress.advance()
            yield result

    with progress:
        results = counted(iter_check(todo, dns, processes))
        counts = store_results(engine, run_id, results, commit_every)
    elapsed = time.monotonic() - started
    return {
        "domains": len(domains),
        "skipped": len(done),
        "checked": len(todo),
        "active": counts.get("active", 0),
        "failed": counts.get("failed", 0),
        "unknown": counts.get("unknown", 0),
        "seconds": round(elapsed, 1),
    }


def dns_check_chunk(
    run_id: str,
    chunk_path: str,
    nameservers: list[str] | None = None,
    settings: Settings | None = None,
    engine: Engine | None = None,
    hosts_file: str | None = None,
    static_only: bool | None = None,
) -> dict[str, Any]:
    """Mapped task: DNS-check one chunk file of a run into ``dns_checks`` (resumable).

    ``nameservers`` (``host[:port]`` strings) override ``[preload] nameservers``; with neither,
    the resolvers of /etc/resolv.conf are used. ``hosts_file`` (or ``[preload] hosts_file``)
    answers the names it lists without DNS (demo on loopback); ``static_only`` (or
    ``[preload] static_only``) makes the names it does not list 'failed' without asking DNS.
    """
    settings = settings or get_settings()
    dns = dns_settings(settings, nameservers, hosts_file, static_only)
    processes = default_processes(settings)
    domains = list(read_domain_lines(Path(chunk_path)))
    result = check_and_store(
        engine_for(engine, settings),
        run_id,
        domains,
        dns,
        # static answers need no network: worker processes would only copy the map
        processes=processes if len(domains) > 20_000 and not dns.static_only else 1,
        label=f"dns check {Path(chunk_path).name}",
        commit_every=int(settings.get("preload", "dns_commit_every", _COMMIT_EVERY)),
    )
    result["chunk"] = chunk_path
    log.info("preload %s: %s", run_id, result)
    return result
