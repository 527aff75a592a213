"""The ``harvestflow`` command.

The platform commands (services, db, up, demo) live here; every other module of app.cli adds
the subcommands it is named after through an ``add_cli(subparsers)`` function, each calling the
same stage functions the DAGs call.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from app.cli import (
    access,
    continuous,
    crawl,
    crawl_templates,
    credentials,
    documents,
    harvest,
    index,
    preload,
    preservation,
    qa,
    qc,
    rights,
    search,
)

log = logging.getLogger("harvestflow")

# The modules that add subcommands (each with add_cli(subparsers)); imported here, not by name
# at run time, so that the import graph lint-imports checks is the one that runs.
COMMAND_MODULES: tuple[ModuleType, ...] = (
    crawl,
    harvest,
    preload,
    continuous,
    index,
    documents,
    preservation,
    qa,
    credentials,
    access,
    search,
    qc,
    crawl_templates,
    rights,
)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%Y-%m-%dT%H:%M:%S",
    )
    for noisy in ("botocore", "urllib3", "s3transfer", "boto3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def cmd_services(args: argparse.Namespace) -> int:
    from harvestflow import services
    from harvestflow.settings import get_settings

    settings = get_settings()
    if args.action == "start":
        started = services.start_all(settings)
        print("started: " + (", ".join(started) if started else "nothing (already running)"))
    elif args.action == "stop":
        stopped = services.stop_all(settings)
        print("stopped: " + (", ".join(stopped) if stopped else "nothing (not running)"))
    for status in services.status_all(settings):
        print(status.line())
    return 0


def cmd_db_migrate(args: argparse.Namespace) -> int:
    from harvestflow import db

    applied = db.migrate()
    print("applied: " + (", ".join(applied) if applied else "nothing (schema up to date)"))
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    from app.demo.samplesite_service import start_demo_site
    from app.runtime.up import run_up

    site = None if args.no_sample_site else start_demo_site
    return run_up(sample_site=site, workers=args.workers)


def cmd_worker(args: argparse.Namespace) -> int:
    """An Airflow Celery worker with harvestflow's environment (executor "celery")."""
    from app.runtime.workers import parse_queues, run_worker
    from harvestflow.services.datadir import DataDirError
    from harvestflow.settings import get_settings

    settings = get_settings()
    try:
        queues = parse_queues(args.queues, settings)
        return run_worker(
            settings,
            queues,
            name=args.name,
            concurrency=args.concurrency,
            serve_logs=not args.skip_serve_logs,
        )
    except (DataDirError, ValueError) as exc:
        print(f"harvestflow worker: {exc}", file=sys.stderr)
        return 2


def cmd_demo(args: argparse.Namespace) -> int:
    from app.demo.run import run_demo

    return run_demo(keep_services=args.keep_services)


def cmd_airflow(args: argparse.Namespace) -> int:
    """The Airflow CLI with harvestflow's environment (metadata DB, dags/, plugins/, login)."""
    import os

    from app.runtime.airflow_runtime import airflow_bin, airflow_env
    from harvestflow.settings import get_settings

    rest = [a for a in args.airflow_args if a != "--"]
    os.execvpe(airflow_bin(), [airflow_bin(), *rest], airflow_env(get_settings()))
    return 0  # not reached


def _file_preserved(engine: Any, job_id: int | None, file_name: str) -> bool:
    """Preservation's answer for ``index clean`` (indexing.cleanup asks it before deleting an
    original; indexing may not import preservation, so the top of the CLI hands it in)."""
    from preservation.records import file_preserved

    return file_preserved(engine, job_id, file_name)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harvestflow", description="Web-archive production platform (Airflow 3)."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parser.set_defaults(preserved=_file_preserved)  # read by `index clean`

    p = sub.add_parser("services", help="start, stop or inspect the embedded PostgreSQL and S3")
    p.add_argument("action", choices=["start", "stop", "status"])
    p.set_defaults(func=cmd_services)

    p = sub.add_parser("db", help="harvest database maintenance")
    dbsub = p.add_subparsers(dest="db_command", required=True)
    m = dbsub.add_parser("migrate", help="apply the SQL migrations not yet applied")
    m.set_defaults(func=cmd_db_migrate)

    p = sub.add_parser("up", help="start services and Airflow (UI); Ctrl-C stops what it started")
    p.add_argument("--no-sample-site", action="store_true", help="do not serve the sample website")
    p.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help='with [airflow] executor = "celery": also start N local Celery workers (all queues)',
    )
    p.set_defaults(func=cmd_up)

    p = sub.add_parser(
        "worker",
        help='an Airflow Celery worker ([airflow] executor = "celery") on this machine; needs '
        "PostgreSQL, the broker, S3 and the shared data directory",
    )
    p.add_argument(
        "--queues",
        help="comma-separated queues, e.g. crawl_high or crawl_low,default (default: all)",
    )
    p.add_argument("--name", help="worker name (Celery hostname and task hostname; default FQDN)")
    p.add_argument(
        "--concurrency", type=int, help="task instances at once ([airflow] worker_concurrency)"
    )
    p.add_argument(
        "--skip-serve-logs",
        action="store_true",
        help="do not serve task logs on the log port (when the api-server reads the log folder)",
    )
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("demo", help="run the whole cycle on the sample site through the DAGs")
    p.add_argument("--keep-services", action="store_true", help="leave PostgreSQL/S3 running")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "airflow",
        help="the Airflow CLI with harvestflow's environment, e.g. `harvestflow airflow dags test"
        " broad_crawl` or `harvestflow airflow pools list`",
        add_help=False,
    )
    p.add_argument("airflow_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_airflow)

    for module in COMMAND_MODULES:
        module.add_cli(sub)
    return parser


def database_unreachable(exc: BaseException) -> str | None:
    """One line saying the harvest database cannot be reached, when that is why ``exc`` (an
    error of a command) happened; None otherwise.

    Why a probe: SQLAlchemy raises the same OperationalError class for a server that is down
    and for a query that failed on a live one; only the first is "start the services", so on
    such an error the harvest database is asked again, briefly, and the line is given only if
    that fails too. Every command that needs the database gets this answer, from here.
    """
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    from harvestflow.settings import get_settings

    if not isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError):
        return None
    settings = get_settings()
    url = make_url(settings.harvest_db_url)
    probe = sa.create_engine(url, connect_args={"connect_timeout": 3}, poolclass=sa.NullPool)
    try:
        with probe.connect():
            return None  # the server answers: the error was the query's, not the connection's
    except Exception as probe_exc:
        reason = str(getattr(probe_exc, "orig", None) or probe_exc).strip().splitlines()[0]
        reason = reason.rsplit("failed: ", 1)[-1]
    finally:
        probe.dispose()
    where = f"{url.host or 'localhost'}:{url.port or 5432}"
    if settings["postgres"].get("url"):
        todo = f"check that the server is running, or [postgres] url in {settings.source}"
    else:
        todo = "run `harvestflow services start`"
    return (
        f"harvestflow: cannot reach the harvest database {url.database!r} at {where}"
        f" ({reason}): {todo}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.verbose)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the CLI's last line of defence: say what failed, in words
        from harvestflow.services import ServiceError
        from harvestflow.settings import SettingsError

        if isinstance(exc, ServiceError | SettingsError):
            print(f"harvestflow: {exc}", file=sys.stderr)
            return 2
        unreachable = database_unreachable(exc)
        if unreachable is not None:
            log.debug("the command failed on the database", exc_info=True)
            print(unreachable, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
