"""The whole preload in one call (CLI ``preload run``, demo, small runs).

Why: the ``broad_crawl_preload`` DAG maps the DNS check and the redirect probes over chunks as
separate tasks; a demo or a small list wants the same steps in one process. This runs exactly
the functions the DAG's tasks call, in the DAG's order.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.engine import Engine

from harvest.preload.dnstask import dns_check_chunk
from harvest.preload.redirects import probe_redirects
from harvest.preload.sources import collect_sources
from harvest.preload.transfer import transfer
from harvestflow.settings import Settings

log = logging.getLogger(__name__)


def run_all(
    run_id: str,
    sources: list[dict[str, Any]],
    *,
    nameservers: list[str] | None = None,
    hosts_file: str | None = None,
    static_only: bool | None = None,
    connect_to: str | None = None,
    redirects: bool = True,
    settings: Settings | None = None,
    engine: Engine | None = None,
) -> dict[str, Any]:
    """Collect, DNS-check every chunk, probe redirects, transfer; returns the final report."""
    collected = collect_sources(run_id, sources, settings=settings, engine=engine)
    for chunk in collected["chunks"]:
        dns_check_chunk(
            run_id,
            chunk,
            nameservers,
            settings=settings,
            engine=engine,
            hosts_file=hosts_file,
            static_only=static_only,
        )
    if redirects:
        for chunk in collected["chunks"]:
            probe_redirects(
                run_id,
                chunk,
                settings=settings,
                engine=engine,
                connect_to=connect_to,
                hosts_file=hosts_file,
                nameservers=nameservers,
                static_only=static_only,
            )
    report = transfer(run_id, settings=settings, engine=engine)
    report["collected"] = {k: collected[k] for k in ("unique_domains", "rejected", "chunks")}
    return report
