"""What the harvestflow DAG files share: Assets, channel names, small task helpers.

Not a DAG file (listed in .airflowignore). Only ``airflow.sdk`` and the standard library are
imported here; the stage libraries are imported inside the tasks, so parsing stays fast.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from airflow.sdk import Asset, CronTriggerTimetable, Param

# Stage hand-offs: a finished harvest wakes indexing, indexed files wake preservation.
# Why the x- scheme: Airflow looks up a URI normalizer for any other scheme, and that lookup
# discovers every installed provider (0.8 CPU-s) in each process that builds an Asset: every
# DAG-file parse of the dag-processor and every task process. An x- scheme is Airflow's mark of
# a scheme with no provider semantics (airflow.sdk.definitions.asset._sanitize_uri skips it).
HARVEST_DONE = Asset("x-harvestflow://harvest/jobs-done")
FILES_INDEXED = Asset("x-harvestflow://indexing/files-indexed")
PRESERVED = Asset("x-harvestflow://preservation/packages-preserved")
# The continuous crawl's launcher wakes the crawl when it injected seeds.
SEEDS_INJECTED = Asset("x-harvestflow://continuous/seeds-injected")


def crawl_pools(environ: dict[str, str] | None = None) -> tuple[str, str]:
    """(high, low) priority pool names, each also its queue, from the settings.

    Why at parse time: a pool is fixed when the DAG is parsed, and `harvestflow up` creates the
    pools named in the settings; a DAG holding other names would queue its crawls for ever. Read
    by harvestflow.settings, the one reader of the settings file and its overrides (a small file:
    no stage library is imported at parse time); a missing settings file is an import error that
    names it.
    """
    from harvestflow.settings import load

    return load(environ=environ).crawl_pools


# Crawl channels (NetarchiveSuite's high/low priority): pool and queue of the same name, as
# named in config/harvestflow.toml [airflow]; `harvestflow up` creates the pools.
HIGH_PRIORITY_POOL, LOW_PRIORITY_POOL = crawl_pools()


def continuous_pool(environ: dict[str, str] | None = None) -> str:
    """The continuous crawl's pool (and queue), ``[airflow] continuous_pool``: its own, so its
    back-to-back runs never keep a slot of the selective harvests' pool."""
    from harvestflow.settings import load

    return load(environ=environ).continuous_pool[0]


CONTINUOUS_POOL = continuous_pool()

NETWORK_RETRIES: dict[str, Any] = {
    "retries": 2,
    "retry_delay": timedelta(minutes=1),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=15),
}


# The JSON Schema dialect of every DAG's params (:func:`form_param`).
PARAM_DIALECT = "http://json-schema.org/draft-07/schema#"


def form_param(default: Any, **schema: Any) -> Param:
    """A DAG param (its trigger form's field) whose schema is checked as JSON Schema draft 7.

    Why: Airflow validates every param against its schema each time it serializes a DAG
    (every task holds the DAG's params: broad_crawl's 5 on 21 tasks), in the dag-processor's
    parses and in each ``dags test`` run's re-sync of the DAGs folder; jsonschema first checks
    the schema itself against its dialect's metaschema: 1.6 ms for the default (2020-12), 0.37
    ms for draft 7 on the CI VM. Our schemas use only draft-7 keywords (type, minimum, pattern,
    format, items, minLength, additionalProperties), which mean the same in both.
    """
    return Param(default, **{"$schema": PARAM_DIALECT, **schema})


def day_param() -> Param:
    """The optional ``day`` param of daily, backfillable DAGs."""
    return form_param(
        None,
        type=["null", "string"],
        format="date",
        title="Day",
        description="The day to process (default: the day before the run's date).",
    )


def run_date(context: Any) -> datetime:
    """The date a run stands for: its logical date, or (asset-triggered, manual) run_after."""
    logical = context.get("logical_date")
    if logical is not None:
        return logical
    return context["dag_run"].run_after


def report_day(context: Any) -> date:
    """The day a daily run reports on: the ``day`` param, else the day before the run's date."""
    chosen = context["params"].get("day")
    if chosen:
        return date.fromisoformat(chosen)
    return (run_date(context) - timedelta(days=1)).date()


def task_logger() -> Any:
    """The logger whose lines land in the Airflow task log."""
    import logging

    return logging.getLogger("airflow.task")


def alert_failed_run(context: Any) -> None:
    """Every DAG's ``on_failure_callback``: the failed run as an alert ([monitoring] webhook
    and email), naming the run, its last task and the reason Airflow gives."""
    from harvestflow.monitoring.alerts import failed_run

    dag = context.get("dag")
    dag_run = context.get("dag_run")
    ti = context.get("ti") or context.get("task_instance")
    failed_run(
        dag_id=str(getattr(dag, "dag_id", None) or getattr(dag_run, "dag_id", "?")),
        run_id=str(context.get("run_id") or getattr(dag_run, "run_id", "?")),
        reason=str(context.get("reason") or "failed"),
        task_id=getattr(ti, "task_id", None),
    )


START = datetime(2026, 1, 1)


def from_next_time(cron: str) -> CronTriggerTimetable:
    """``cron`` (UTC) for a DAG of ``dag_args(start=None)``: its first run is its next time,
    whatever the hour it is first unpaused. Why ``run_immediately`` is given: Airflow's default
    for a DAG without start date still runs the latest past time when that is less than a tenth
    of the period old (up to 2.4 hours after midnight for ``@daily``); no delay means never."""
    return CronTriggerTimetable(cron, timezone="UTC", run_immediately=timedelta(0))


def dag_args(
    *tags: str, max_active_runs: int | None = 1, start: datetime | None = START
) -> dict[str, Any]:
    """What every DAG of ours is declared with (beside its id, schedule and doc): no catch-up
    of missed intervals, one run at a time unless said (``None``: Airflow's default), its
    tags, and a failed run alerted. One place, so that the DAGs cannot drift apart.

    ``start=None`` (with a :func:`from_next_time` schedule): no start date, so the DAG's first
    scheduled run is its next scheduled time after it is first unpaused, not at once for the
    latest past one (with a start date and no catch-up, Airflow runs the latest past time
    straight away: a new platform's first start ran those DAGs for the day before it existed,
    with nothing to work on). For the DAGs whose work comes from what the platform did since
    their last run; once a DAG has run, a time missed while the platform was stopped is still
    run when it comes back (``catchup=False``: the latest one), and a backfill or a triggered
    run is as before."""
    args: dict[str, Any] = {
        "catchup": False,
        "tags": list(tags),
        "on_failure_callback": alert_failed_run,
    }
    if start is not None:
        args["start_date"] = start
    if max_active_runs is not None:
        args["max_active_runs"] = max_active_runs
    return args
