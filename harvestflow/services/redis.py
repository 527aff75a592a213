"""The embedded Celery broker: Debian's ``redis-server``, data under <data_dir>/redis, on loopback.

Why Redis and why embedded like PostgreSQL: the CeleryExecutor needs a broker, Redis is the one
Airflow's own deployments use, and Debian ships it (the ``run`` script installs the package), so a
single-machine trial needs nothing else. The server is started detached (own session) with a
config written beside its data: bound to one loopback address, protected mode on, append-only
file so that queued task messages survive a restart. Its pid is kept in ``redis.pid``. An
external broker (``[broker] url``) is never started or stopped, only checked.
"""

from __future__ import annotations

import logging
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from harvestflow.services.postgres import port_open
from harvestflow.services.process import DetachedService, ServiceError, stop_process_group

log = logging.getLogger(__name__)


def redis_binary() -> str:
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if not found:
        raise ServiceError(
            "the `redis-server` program is not installed (Debian package redis-server; "
            '`./run` installs it) — needed by [airflow] executor = "celery"'
        )
    return found


def ping(host: str, port: int, timeout: float = 2.0) -> bool:
    """True when a Redis server answers PING on host:port (RESP inline command, no client)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def url_answers(url: str) -> bool:
    """Whether the broker at a redis:// URL answers (an external broker is only checked)."""
    parsed = urlparse(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 6379
    if parsed.scheme in ("redis", "rediss") and not parsed.password:
        return ping(host, port) if parsed.scheme == "redis" else port_open(host, port)
    return port_open(host, port)


@dataclass
class EmbeddedRedis(DetachedService):
    """One redis-server process bound to a loopback address, its files below ``data_dir``."""

    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 16379
    program = "redis-server"
    stem = "redis"
    poll_s = 0.2

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def answers(self) -> bool:
        return ping(self.host, self.port)

    def not_ready(self) -> str:
        return f"redis-server did not answer on {self.url}"

    def running(self) -> bool:
        return self.pid() is not None and ping(self.host, self.port)

    def _write_config(self) -> Path:
        config = "\n".join(
            [
                f"bind {self.host}",
                f"port {self.port}",
                "protected-mode yes",
                f'dir "{self.data_dir}"',
                "daemonize no",
                'logfile ""',
                "appendonly yes",
                'save ""',
                "",
            ]
        )
        path = self.data_dir / "redis.conf"
        path.write_text(config)
        return path

    def start(self, timeout_s: float = 30) -> bool:
        """Start unless running; True when this call started it. Waits until PING answers."""
        if self.pid() is not None:
            self._wait_ready(timeout_s)
            return False
        if port_open(self.host, self.port):
            raise ServiceError(
                f"port {self.host}:{self.port} is taken by another program; set [broker] port "
                "(HARVESTFLOW_BROKER__PORT) or an external broker url (HARVESTFLOW_BROKER__URL)"
            )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        log.info("starting redis-server on %s (data %s)", self.url, self.data_dir)
        return self.spawn([redis_binary(), str(config)], timeout_s)

    def stop(self, timeout_s: float = 30) -> bool:
        """Stop the server (SIGTERM: it writes its append-only file and exits; SIGKILL after)."""
        return stop_process_group(
            self.pid(),
            self.pidfile,
            name="redis-server",
            timeout_s=timeout_s,
            poll_s=0.1,
            logger=log,
        )
