"""Airflow plugin: the curators' views (app.curator.webapp) inside Airflow's UI.

The FastAPI app is mounted by Airflow's API server at ``/curator`` and listed in the UI's
navigation. Every request must carry Airflow's own login (the UI's ``_token`` cookie or a
Bearer JWT) and the WEBSITE view permission; the dependency also names the user's role on our
pages (admin, crawl engineer, curator, viewer) from Airflow's auth manager, which
:func:`app.curator.actions.check_write` checks on every write.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from airflow.plugins_manager import AirflowPlugin
from fastapi import HTTPException, Request


async def require_airflow_login(request: Request) -> None:
    """FastAPI dependency: Airflow's authenticated user, allowed to see the website."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
    from airflow.api_fastapi.core_api.security import (
        COOKIE_NAME_JWT_TOKEN,
        resolve_user_from_token,
    )

    header = request.headers.get("authorization", "")
    token = header[7:] if header.lower().startswith("bearer ") else None
    token = token or request.cookies.get(COOKIE_NAME_JWT_TOKEN)
    try:
        user = await resolve_user_from_token(token)
    except HTTPException:
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            login = get_auth_manager().get_url_login(next_url=str(request.url))
            raise HTTPException(status_code=307, headers={"Location": login}) from None
        raise
    manager = get_auth_manager()
    if not manager.is_authorized_view(access_view=AccessView.WEBSITE, user=user):
        raise HTTPException(status_code=403, detail="not allowed to see harvestflow's views")
    request.state.user = user.get_name()
    request.state.role = curator_role(manager, user)


def curator_role(manager: Any, user: Any) -> Any:
    """The user's role on the curator pages, from Airflow's auth manager (see module doc)."""
    from app.curator.actions import Role

    if _is_admin(manager, user):
        return Role.ADMIN
    if manager.is_authorized_pool(method="PUT", user=user):
        return Role.ENGINEER
    if manager.is_authorized_dag(method="PUT", user=user):
        return Role.CURATOR
    return Role.VIEWER


def _is_admin(manager: Any, user: Any) -> bool:
    """An administrator: the simple auth manager's ADMIN (its own test), FAB's Admin (the only
    role that may delete FAB's users)."""
    own = getattr(manager, "_is_admin", None)
    if callable(own):
        return bool(own(user))
    return bool(
        manager.is_authorized_custom_view(method="DELETE", resource_name="Users", user=user)
    )


def airflow_base_path(base_url: str) -> str:
    """The path Airflow's UI is served under (``[api] base_url``), '' when it is at /."""
    return urlsplit(base_url).path.rstrip("/")


class BuiltOnFirstUse:
    """An ASGI app that builds the real one at its first request (or when one of the real app's
    attributes is read: ``routes``, ``router``...).

    Why: Airflow imports this module in every process that loads plugins (each task's process,
    for the macros; the scheduler, the DAG processor, `airflow dags test`), and only the
    api-server serves these pages; building them at import (every curator page's routes, the
    search stack and its imports) cost each of the others CPU for nothing. The first request
    builds it in a worker thread, so the api-server's event loop goes on serving Airflow's own
    pages and API meanwhile.
    """

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._built: Any = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        return self._built is not None

    @property
    def app(self) -> Any:
        """The real app, built once."""
        if self._built is None:
            with self._lock:
                if self._built is None:
                    self._built = self._build()
        return self._built

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        app = self._built
        if app is None:
            from starlette.concurrency import run_in_threadpool

            app = await run_in_threadpool(lambda: self.app)
        await app(scope, receive, send)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # never the real app's private parts (nor a half-built self)
            raise AttributeError(name)
        return getattr(self.app, name)


def _app() -> Any:
    from airflow.configuration import conf

    from app.curator.webapp import create_app
    from harvestflow.db import get_engine
    from harvestflow.settings import get_settings

    settings = get_settings()
    return create_app(
        get_engine,
        data_dir=settings.data_dir,
        auth=require_airflow_login,
        # links to Airflow's own pages (task logs) keep a proxy's path prefix
        airflow_base=airflow_base_path(conf.get("api", "base_url", fallback="") or ""),
        airflow_db=lambda: get_engine(settings.airflow_db_url),  # the overview's failed runs
    )


class HarvestflowCuratorPlugin(AirflowPlugin):
    name = "harvestflow_curator"
    # plain lists: AirflowPlugin declares these as instance attributes (mypy refuses ClassVar)
    fastapi_apps = [  # noqa: RUF012
        {"app": BuiltOnFirstUse(_app), "url_prefix": "/curator", "name": "harvestflow curator"}
    ]
    external_views = [  # noqa: RUF012
        {
            "name": "Harvest curator",
            "href": "/curator/",
            "destination": "nav",
            "category": "browse",
            "url_route": "harvest-curator",
        }
    ]


def _search_app() -> Any:
    from access.searchapp import app_from_settings

    return app_from_settings(auth=require_airflow_login)


class HarvestflowSearchPlugin(AirflowPlugin):
    """The full-text search page for curators, behind the same login as the curator views."""

    name = "harvestflow_search"
    fastapi_apps = [  # noqa: RUF012
        {"app": BuiltOnFirstUse(_search_app), "url_prefix": "/search", "name": "harvestflow search"}
    ]
    external_views = [  # noqa: RUF012
        {
            "name": "Archive search",
            "href": "/search/",
            "destination": "nav",
            "category": "browse",
            "url_route": "archive-search",
        }
    ]
