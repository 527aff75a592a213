"""Entry points for the DAGs and the CLI: launch an hour, crawl for a while, report.

Why here: the DAG tasks and ``harvestflow continuous ...`` call the same few functions with
plain arguments; settings come from the optional [continuous] section of harvestflow.toml
(``policy`` sub-table: RevisitPolicy keys, and ``policy.<template>`` sub-tables for the seeds
of a template; ``template``: crawler template keys for the runs; ``batch_size``, ``max_run_s``,
``pause_s``, ``max_urls_per_launch``), code defaults otherwise. A seed's template is the one
its record's depth maps to in config/selection_mapping.toml.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from harvest.continuous.launcher import LaunchResult, launch_hour
from harvest.continuous.policy import RevisitPolicy, policy_from_settings, template_policies
from harvest.continuous.report import crawl_stats, format_host_report, host_report
from harvest.continuous.run import BatchResult, LiveIndexFactory, run_batch

log = logging.getLogger(__name__)


def conf() -> dict[str, Any]:
    from harvestflow.settings import get_settings

    return dict(get_settings().data.get("continuous") or {})


def default_policy() -> RevisitPolicy:
    return policy_from_settings(conf().get("policy"))


def depth_templates() -> dict[str, str]:
    """A record's depth → the template its seeds get (config/selection_mapping.toml)."""
    from harvest.selection.mapping import load_mapping

    return {depth: str(spec["template"]) for depth, spec in load_mapping().depths.items()}


def base_dir() -> Path:
    from harvestflow.settings import get_settings

    return Path(conf().get("base_dir") or get_settings().data_dir / "continuous")


def _engine(engine: sa.Engine | None) -> sa.Engine:
    if engine is not None:
        return engine
    from harvestflow.db import get_engine

    return get_engine()


def launch(
    hour_start: dt.datetime, *, engine: sa.Engine | None = None, reset_quotas: bool = True
) -> LaunchResult:
    """Inject the seeds due in the hour starting at ``hour_start`` (idempotent per hour)."""
    return launch_hour(
        _engine(engine),
        hour_start,
        default_policy(),
        reset_quotas=reset_quotas,
        max_urls_per_launch=int(conf().get("max_urls_per_launch", -1)),
        depth_templates=depth_templates(),
    )


@contextlib.contextmanager
def steady_progress(
    engine: sa.Engine, logger: logging.Logger, interval_s: float, done: Callable[[], int]
) -> Iterator[None]:
    """Log the due / overdue / done line every ``interval_s`` while the body runs.

    Why a thread: a batch may run for minutes (``max_run_s``), and a curator reading the task
    log should see where the crawl stands at a steady interval, not only between batches; the
    crawler child's own progress lines say how the current batch goes.
    """
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(interval_s):
            try:
                stats = crawl_stats(engine, dt.datetime.now(dt.UTC))
            except sa.exc.SQLAlchemyError as exc:  # a DB hiccup must not end the crawl task
                logger.warning("continuous: progress figures unavailable: %s", exc)
                continue
            logger.info("%s", stats.progress_line(done()))

    thread = threading.Thread(target=beat, name="continuous-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def crawl_for(
    duration_s: float,
    *,
    live_index: LiveIndexFactory,
    engine: sa.Engine | None = None,
    out_dir: Path | None = None,
    batch_size: int | None = None,
    pause_s: float | None = None,
    resolve: dict[str, str] | None = None,
    logger: logging.Logger | None = None,
    progress_interval_s: float | None = None,
) -> dict[str, Any]:
    """Run bounded batches for about ``duration_s`` seconds (the long-running crawl task).

    Each batch fetches the URLs due at its start; when nothing is due the loop sleeps
    ``pause_s``. The log gets the due / overdue / done line after each batch and every
    ``progress_interval_s`` (settings ``progress_interval_s``, default 60 s) in between.
    ``live_index`` (``indexing.nrt.LiveWatcher``) makes each closed WARC replayable at once.
    """
    logger = logger or log
    engine = _engine(engine)
    settings = conf()
    batch_size = batch_size or int(settings.get("batch_size", 500))
    pause_s = float(settings.get("pause_s", 30.0) if pause_s is None else pause_s)
    deadline = time.monotonic() + duration_s
    out_dir = out_dir or base_dir()
    policy = default_policy()
    policies = template_policies(settings.get("policy"))
    template = dict(settings.get("template") or {})
    interval = float(settings.get("progress_interval_s", 60.0))
    if progress_interval_s is not None:
        interval = progress_interval_s
    results: list[BatchResult] = []
    done = 0
    with steady_progress(engine, logger, interval, lambda: done):
        while True:
            batch = run_batch(
                engine,
                out_dir,
                max_urls=batch_size,
                max_run_s=int(settings.get("max_run_s", 240)),
                policy=policy,
                policies=policies,
                template=template,
                resolve=resolve,
                logger=logger,
                live_index=live_index,
            )
            if batch.due:
                results.append(batch)
                done += batch.visited
            logger.info("%s", crawl_stats(engine, dt.datetime.now(dt.UTC)).progress_line(done))
            if time.monotonic() >= deadline:
                break
            if not batch.due:
                time.sleep(min(pause_s, max(0.0, deadline - time.monotonic())))
                if time.monotonic() >= deadline:
                    break
    return {
        "runs": len(results),
        "visited": done,
        "changed": sum(r.changed for r in results),
        "unchanged": sum(r.unchanged for r in results),
        "new_urls": sum(r.new_urls for r in results),
        "warcs": sum(len(r.warcs) for r in results),
    }


def report_text(engine: sa.Engine | None = None, now: dt.datetime | None = None) -> str:
    engine = _engine(engine)
    now = now or dt.datetime.now(dt.UTC)
    stats = crawl_stats(engine, now)
    return stats.progress_line(0) + "\n" + format_host_report(host_report(engine, now))
