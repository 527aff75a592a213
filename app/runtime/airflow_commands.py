"""Airflow's commands as harvestflow runs them: each through :mod:`app.runtime.airflow_batch`
(:func:`batch_command`), one or several in one process, with harvestflow's Airflow
environment (:func:`app.runtime.airflow_config.airflow_env`); and the preparation of
Airflow's metadata DB every start needs first (:func:`prepare_commands`: its migration, the
crawl pools, the logins).

This module never imports Airflow: it runs Airflow's commands with the running Python.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys

from app.runtime import airflow_batch, airflow_schema
from app.runtime.airflow_config import airflow_env
from app.runtime.airflow_logins import ensure_login
from harvestflow.settings import Settings

log = logging.getLogger(__name__)


def run_airflow(
    settings: Settings, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run ``airflow ARGS`` (:func:`batch_command`: no interpreter teardown at its end); raise
    RuntimeError with its stderr when it fails, unless ``check`` is false."""
    cmd = batch_command(list(args))
    log.info("running airflow %s", " ".join(args))
    proc = subprocess.run(
        cmd, env=airflow_env(settings), capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"`airflow {' '.join(args)}` failed: {proc.stderr.strip()[-2000:]}")
    return proc


def pools(settings: Settings) -> dict[str, int]:
    af = settings["airflow"]
    return {
        af["high_priority_pool"]: int(af["high_priority_slots"]),
        af["low_priority_pool"]: int(af["low_priority_slots"]),
        **dict([settings.continuous_pool]),
    }


def batch_command(*commands: list[str]) -> list[str]:
    """The program running ``airflow ARGS`` for each ARGS of ``commands``, in order, in ONE
    process (:mod:`app.runtime.airflow_batch`: Airflow's start-up cost paid once, and no
    interpreter teardown at its end).

    Every Airflow command harvestflow runs goes through here, one command or several (the
    components, ``dags trigger``, the Celery workers, ``harvestflow airflow``): the same
    entry point, parser and options as the ``airflow`` program, 1.5-2 CPU-s cheaper each."""
    # -P: the working directory is not put first on sys.path (a folder there named like a
    # module would be imported instead of it)
    return [sys.executable, "-P", "-m", airflow_batch.__name__, json.dumps(commands)]


def run_airflow_batch(settings: Settings, *commands: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``airflow ARGS`` for each ARGS of ``commands``, in order, in ONE process
    (:func:`batch_command`); raise RuntimeError naming the command that failed, with the
    process's stderr, when one did (the later ones do not run)."""
    cmd = batch_command(*commands)
    log.info("running %s", " ; ".join(f"airflow {' '.join(args)}" for args in commands))
    proc = subprocess.run(
        cmd, env=airflow_env(settings), capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        named = re.search(airflow_batch.FAILED.format("(.*)"), proc.stderr)
        failed = named.group(1) if named else " ; ".join(" ".join(a) for a in commands)
        raise RuntimeError(f"`airflow {failed}` failed: {proc.stderr.strip()[-2000:]}")
    return proc


def prepare_commands(settings: Settings) -> list[list[str]]:
    """The Airflow commands that migrate the metadata DB (unless it is as the last migration
    left it: :mod:`app.runtime.airflow_schema`) and create the crawl pools (idempotent): one
    ``pools import`` for every pool (its slots and description set anew when it exists).
    Writes the pool file they read and the logins' password file."""
    settings.airflow_home.mkdir(parents=True, exist_ok=True)
    wanted = {
        name: {"slots": slots, "description": f"harvestflow crawl channel {name}"}
        for name, slots in pools(settings).items()
    }
    pool_file = settings.airflow_home / "pools.json"
    pool_file.write_text(json.dumps(wanted, indent=1))
    ensure_login(settings)
    commands = [["pools", "import", str(pool_file)]]
    if airflow_schema.needs_migration(settings):  # else as the last migration left it
        commands.insert(0, airflow_schema.MIGRATE)
    return commands


def prepare(settings: Settings) -> None:
    """Migrate Airflow's metadata DB and create the crawl pools (:func:`prepare_commands`), in
    one Airflow process: each one costs seconds of CPU to start. (``up`` runs them in its
    launcher instead: :meth:`AirflowProcesses.start`.)"""
    commands = prepare_commands(settings)
    run_airflow_batch(settings, *commands)
    airflow_schema.record_migrated(settings, commands)
