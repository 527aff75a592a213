"""The full-text search page on the configured backend, under the access rules in force, and
its server for readers behind the access gateway.

Why here: the rules are the access service's (:mod:`access.rules`, the same rules pywb applies
to replay), and access comes after search in the import layers, so access may join the two.
Two places serve the page: the Airflow plugin (``plugins/harvestflow_curator.py``, at
``/search`` behind Airflow's login, for curators) and the access gateway (at ``/search/`` on
``[access] url``, for readers, under the reading-room rule: :mod:`access.gateway`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

import uvicorn
from fastapi import FastAPI

from access.config import AccessConfig
from access.rules import search_rules
from harvestflow.db import get_engine
from harvestflow.settings import Settings, get_settings
from search.backends import get_backend
from search.model import AccessRules
from search.webapp import create_app

log = logging.getLogger(__name__)


def app_from_settings(
    settings: Settings | None = None,
    rules: Callable[[], AccessRules] | None = None,
    auth: Callable[..., Any] | None = None,
) -> FastAPI:
    """The app on the configured backend, linking to the replay service at ``[access] url``.

    By default each query applies the access rules in force in the harvest database, the same
    rules the replay service applies (:func:`access.rules.search_rules`). ``auth``: a FastAPI
    dependency run before every route (the Airflow plugin's login check)."""
    settings = settings or get_settings()
    if rules is None:
        url = settings.harvest_db_url
        rules = lambda: search_rules(get_engine(url))  # noqa: E731
    return create_app(
        lambda: get_backend(settings),
        replay_url=AccessConfig.from_settings(settings).url,
        rules=rules,
        auth=auth,
    )


class SearchServer:
    """The search page served by uvicorn in a thread, on a free port of ``host`` (loopback).

    Why a port chosen by the system: only the gateway talks to it (it forwards ``/search/…``
    there after the reading-room check), so no setting is needed and two services on one
    machine never collide; on loopback, nobody reaches it around the gateway."""

    def __init__(self, app: FastAPI, host: str) -> None:
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.sock.bind((host, 0))
        self.sock.listen(128)  # the gateway's first request waits for uvicorn, not refused
        self.port: int = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, name="access-search", daemon=True)

    def _run(self) -> None:
        asyncio.run(self.server.serve(sockets=[self.sock]))

    def start(self) -> None:
        self.thread.start()
        log.info("search page on port %d (behind the gateway at /search/)", self.port)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()
