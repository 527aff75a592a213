"""The ``harvestflow`` command: builds the parser and runs the chosen subcommand.

One rule: each top-level command ``harvestflow X`` lives in ``app/cli/X.py`` (hyphens as
underscores), whose ``add_cli(subparsers)`` adds X and all of its subcommands, each calling the
same stage functions the DAGs call. This module adds none itself.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from types import ModuleType

from app.cli import (
    access,
    airflow,
    ark,
    continuous,
    crawl,
    credentials,
    db,
    definitions,
    demo,
    documents,
    domain,
    index,
    jobs,
    preload,
    preservation,
    qa,
    qc,
    rights,
    search,
    selection,
    services,
    templates,
    traps,
    up,
    worker,
)

log = logging.getLogger("harvestflow")

# The command modules, in the order of `harvestflow --help` (each adds its command with
# add_cli(subparsers)); imported here, not by name at run time, so that the import graph
# lint-imports checks is the one that runs.
COMMAND_MODULES: tuple[ModuleType, ...] = (
    services,
    db,
    up,
    worker,
    demo,
    airflow,
    crawl,
    selection,
    traps,
    domain,
    definitions,
    jobs,
    preload,
    continuous,
    index,
    documents,
    ark,
    preservation,
    qa,
    credentials,
    access,
    search,
    qc,
    templates,
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harvestflow", description="Web-archive production platform (Airflow 3)."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
