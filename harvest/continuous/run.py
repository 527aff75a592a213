"""One bounded run of the continuous crawl, resuming from (and writing back to) the URL state.

Why a chain of bounded runs instead of one endless crawler: the URL state in PostgreSQL is the
frontier, so a run is a crawler job whose seeds are the URLs due now (``max_hops`` 0, links only
noted, embeds fetched with their page), deduplicated against the state. After the run its
crawl.log and WARCs update the state (its WARCs indexed live as they close); a crashed run
leaves the state untouched, so the same URLs are due again.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import sqlalchemy as sa

from harvest.continuous import store
from harvest.continuous.jobs import DEFINITION, finish_run, register_run
from harvest.continuous.noise import NoiseFilter, load_rules
from harvest.continuous.policy import RevisitPolicy
from harvest.continuous.runread import read_run
from harvest.continuous.urlstate import UrlState, apply_visit, dedup_line, new_state
from harvestflow.atomic import atomic_write_text
from harvestflow.contracts.jobdir import JobDir
from harvestflow.contracts.jobspec import JobSpec
from harvestflow.contracts.summary import JobSummary
from harvestflow.formats.domains import registrable_domain
from harvestflow.formats.harvest_channels import Channel
from harvestflow.formats.urls import host_of

log = logging.getLogger(__name__)


class LiveIndex(Protocol):
    """Indexes a run's data WARCs into the live collection as they close, while it crawls.

    ``indexing.nrt.LiveWatcher`` is the one in use; the caller (the continuous-crawl DAG, the
    CLI) passes it, since harvest sits below indexing in the layering and must not import it.
    """

    lines: int
    indexed_at: dict[str, dt.datetime]

    def start(self) -> LiveIndex: ...

    def stop(self) -> None: ...


# (directory the crawler writes its WARCs to, live collection directory) -> a LiveIndex
LiveIndexFactory = Callable[[Path, Path], LiveIndex]

# what every continuous run's template forces (the rest: settings [crawler] + overrides)
FORCED_TEMPLATE = {
    "name": "continuous",
    "scope": "host",
    "max_hops": 0,
    "dedup_mime_exclude": "",
    "extract_sitemaps": False,
}

# defaults a template may change: files small enough to close (and go live) during a run; a
# page's embeds (and theirs: a stylesheet's images) fetched with it, as in a selective crawl
RUN_DEFAULTS = {"warc_max_size": 50_000_000, "max_transclusion_hops": 2}

CrawlFn = Callable[..., JobSummary]


@dataclass
class BatchResult:
    run_id: str
    job_id: int | None = None
    due: int = 0
    visited: int = 0
    changed: int = 0
    unchanged: int = 0
    unjudged: int = 0
    revisit_records: int = 0
    new_urls: int = 0
    warcs: list[str] = field(default_factory=list)
    cdx_lines: int = 0
    live_indexed_at: dict[str, dt.datetime] = field(default_factory=dict)
    out_dir: str = ""
    status: str = "empty"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (an XCom value): times as ISO strings."""
        d = dict(self.__dict__)
        d["live_indexed_at"] = {k: v.isoformat() for k, v in self.live_indexed_at.items()}
        return d


def in_scope(url: str, seed: str, scope: str) -> bool:
    """Is a discovered URL within its seed's scope (host, domain or path prefix)?"""
    if not url.startswith(("http://", "https://")):
        return False
    if scope == "domain":
        return registrable_domain(host_of(url)) == registrable_domain(host_of(seed))
    if scope == "path":  # same host, below the seed's directory (http and https alike)
        if host_of(url) != host_of(seed):
            return False
        directory = urlsplit(seed).path.rsplit("/", 1)[0] + "/"
        return (urlsplit(url).path or "/").startswith(directory)
    return host_of(url) == host_of(seed)


def write_dedup_index(
    states: list[UrlState],
    path: Path,
    policy_of: Callable[[UrlState], RevisitPolicy] | None = None,
) -> int:
    """The run's dedup index (byte order); ``policy_of`` gives each URL's ``verify_every``."""
    lines = sorted(
        (
            ln
            for s in states
            if (ln := dedup_line(s, policy_of(s).verify_every if policy_of else 0))
        ),
        key=lambda x: x.encode(),
    )
    atomic_write_text(path, "".join(ln + "\n" for ln in lines))
    return len(lines)


def run_batch(
    engine: sa.Engine,
    base_dir: Path,
    *,
    now: dt.datetime | None = None,
    max_urls: int = 500,
    max_run_s: int = 240,
    policy: RevisitPolicy | None = None,
    policies: dict[str, RevisitPolicy] | None = None,
    template: dict[str, Any] | None = None,
    resolve: dict[str, str] | None = None,
    live_index: LiveIndexFactory,
    live_dir: Path | None = None,
    crawl: CrawlFn | None = None,
    logger: logging.Logger | None = None,
) -> BatchResult:
    """Fetch up to ``max_urls`` URLs due at ``now`` and update their state; see the module doc.

    ``max_run_s`` bounds the crawl (the crawler's time limit; URLs not reached stay due) so that
    every capture of the run is replayable within minutes of its fetch. ``policy`` is the
    default revisit policy, ``policies`` those of named templates (a URL gets its seed's
    template's, then its host's overrides). ``crawl`` runs the job (default:
    :func:`crawler.launch.crawl_in_subprocess`); ``live_index`` (``indexing.nrt.LiveWatcher``)
    writes the near-real-time index into ``live_dir`` (default ``<base_dir>/live``).
    """
    logger = logger or log
    real_start = dt.datetime.now(dt.UTC)
    now = now or real_start
    # a simulated clock (tests, benchmark): fetch times are moved by the same offset
    shift = now - real_start
    base_dir = Path(base_dir)
    book = store.PolicyBook(policy or RevisitPolicy(), store.host_overrides(engine), policies)
    due = store.due_states(engine, now, max_urls)
    run_id = now.strftime("%Y%m%d%H%M%S%f")
    result = BatchResult(run_id=run_id, due=len(due))
    if not due:
        logger.info("continuous: nothing due at %s", now.isoformat())
        return result
    out = base_dir / "runs" / run_id
    out.mkdir(parents=True, exist_ok=True)
    result.out_dir = str(out)
    dedup_path = out / "dedup.tsv"
    seed_templates = {seed: tpl for seed, (_, tpl) in store.seed_settings(engine).items()}
    # the due URLs' last captures, and those of their seeds' other URLs (embeds fetched with
    # a page are often not due themselves)
    known = due + store.captured_states_of_seeds(
        engine, {s.seed_url for s in due}, [s.url for s in due]
    )
    write_dedup_index(
        known, dedup_path, lambda s: book.for_host(s.host, seed_templates.get(s.seed_url))
    )
    seeds = [s.url for s in due]
    job_template = {**RUN_DEFAULTS, **(template or {}), **FORCED_TEMPLATE}
    job_id, harvest_id = register_run(engine, run_id, real_start, seeds, job_template)
    result.job_id = job_id
    job = JobSpec.from_dict(
        {
            "job_id": job_id,
            "harvest_id": harvest_id,
            "harvest_name": DEFINITION,
            "channel": Channel.CONTINUOUS.value,
            "seeds": seeds,
            "template": job_template,
            "resolve": resolve or {},
            "dedup_index": str(dedup_path),
            "max_running_time_s": max_run_s,
        },
        f"continuous run {run_id}",
        resolve=False,  # the crawler resolves and checks the template
    )
    job_path = JobDir(out).job_json
    job.write(job_path)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO continuous_runs (run_id, started, due, out_dir, status)"
                " VALUES (:r, :s, :d, :o, 'running') ON CONFLICT (run_id) DO NOTHING"
            ),
            {"r": run_id, "s": now, "d": len(due), "o": str(out)},
        )
    if crawl is None:
        from crawler.launch import crawl_in_subprocess

        crawl = crawl_in_subprocess
    watcher = live_index(JobDir(out / "crawl").warcs, live_dir or base_dir / "live").start()
    try:
        summary = crawl(job_path, out / "crawl", logger=logger)
    except Exception:
        watcher.stop()  # what was closed stays replayable
        finish_run(engine, job_id, out / "crawl", ok=False)  # the URLs stay due
        raise
    watcher.stop()
    result.cdx_lines = watcher.lines
    result.live_indexed_at = dict(watcher.indexed_at)
    result.status = summary.status or "unknown"
    update_from_run(engine, out / "crawl", due, book, now, result, shift)
    finish_run(engine, job_id, out / "crawl", ok=True)  # the indexing chain takes it in
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE continuous_runs SET ended = now(), visited = :v, changed = :c,"
                " unchanged = :u, new_urls = :n, warcs = :w, status = :st WHERE run_id = :r"
            ),
            {
                "v": result.visited,
                "c": result.changed,
                "u": result.unchanged,
                "n": result.new_urls,
                "w": result.warcs,
                "st": result.status,
                "r": run_id,
            },
        )
    logger.info(
        "continuous run %s: due %d, visited %d, changed %d, unchanged %d (revisit records %d),"
        " new URLs %d, %d WARC(s) live with %d CDXJ lines",
        run_id,
        result.due,
        result.visited,
        result.changed,
        result.unchanged,
        result.revisit_records,
        result.new_urls,
        len(result.warcs),
        result.cdx_lines,
    )
    return result


def update_from_run(
    engine: sa.Engine,
    crawl_out: Path,
    due: list[UrlState],
    book: store.PolicyBook,
    now: dt.datetime,
    result: BatchResult,
    shift: dt.timedelta = dt.timedelta(0),
) -> None:
    """Apply a finished run's visits and discoveries to the URL state (one transaction)."""
    output = read_run(crawl_out, NoiseFilter(load_rules(engine)))
    for visit in output.visits:
        visit.fetched_at += shift
    result.warcs = [p.name for p in output.warcs]
    states = {s.url: s for s in due}
    missing = {v.url for v in output.visits} - set(states)
    states.update(store.load_states(engine, missing))
    seeds = store.seed_settings(engine)

    def template_of(seed_url: str) -> str | None:
        return seeds[seed_url][1] if seed_url in seeds else None

    changed_pages: set[str] = set()
    per_seed: Counter[str] = Counter()
    updated: dict[str, UrlState] = {}
    for visit in output.visits:
        state = updated.get(visit.url) or states.get(visit.url)
        if state is None:  # fetched but not due (a seed redirect target): start its history
            seed = visit.seed or visit.url
            state = new_state(visit.url, host_of(visit.url), seed, 0, now, book.base)
        policy = book.for_host(state.host, template_of(state.seed_url))
        state, verdict = apply_visit(state, visit, policy)
        updated[visit.url] = state
        per_seed[state.seed_url] += 1
        result.visited += 1
        if verdict is True:
            result.changed += 1
        elif verdict is False:
            result.unchanged += 1
        else:
            result.unjudged += 1
        if visit.revisit_profile:
            result.revisit_records += 1
        if verdict is not False:
            changed_pages.add(visit.url)
    fresh: dict[str, UrlState] = {}
    for url, via, hops, _ in output.discovered:
        parent = updated.get(via) or states.get(via)
        if parent is None or via not in changed_pages or url in fresh or url in updated:
            continue  # an unchanged page's links are not taken again
        scope = seeds[parent.seed_url][0] if parent.seed_url in seeds else "host"
        if not in_scope(url, parent.seed_url, scope):
            continue
        depth = parent.depth + (0 if hops.endswith("E") else 1)
        policy = book.for_host(host_of(url), template_of(parent.seed_url))
        fresh[url] = new_state(url, host_of(url), parent.seed_url, depth, now, policy)
    with engine.begin() as conn:
        store.save_states(conn, updated.values())
        result.new_urls = store.insert_new(conn, fresh.values())
        store.count_seed_fetches(conn, per_seed)
