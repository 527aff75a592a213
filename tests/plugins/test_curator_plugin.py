"""The Airflow plugin module without a running Airflow: what it registers, and where links to
Airflow's own pages point when Airflow is served under a path prefix."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

PLUGIN = Path(__file__).resolve().parents[2] / "plugins" / "harvestflow_curator.py"


def _plugin() -> ModuleType:
    spec = importlib.util.spec_from_file_location("harvestflow_curator", PLUGIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_plugin_mounts_the_app_and_adds_a_browse_entry() -> None:
    plugin = _plugin().HarvestflowCuratorPlugin
    (app,) = plugin.fastapi_apps
    assert app["url_prefix"] == "/curator"
    paths = {getattr(route, "path", "") for route in app["app"].routes}
    assert {"/", "/definitions", "/jobs", "/jobs/{job_id}", "/preservation"} <= paths
    (view,) = plugin.external_views
    assert view["href"] == "/curator/" and view["category"] == "browse"
    assert view["destination"] == "nav"


def test_airflow_links_keep_the_base_url_path() -> None:
    base_path = _plugin().airflow_base_path
    assert base_path("http://127.0.0.1:8080/") == ""
    assert base_path("http://127.0.0.1:8080") == ""
    assert base_path("https://archive.example/airflow/") == "/airflow"
    assert base_path("") == ""


def test_plugin_mounts_the_search_page_behind_airflow_login() -> None:
    module = _plugin()
    plugin = module.HarvestflowSearchPlugin
    (app,) = plugin.fastapi_apps
    assert app["url_prefix"] == "/search"
    assert {getattr(route, "path", "") for route in app["app"].routes} == {"/"}
    # every route runs the same login check as the curator views
    assert [d.dependency for d in app["app"].router.dependencies] == [module.require_airflow_login]
    (view,) = plugin.external_views
    assert view["href"] == "/search/" and view["category"] == "browse"


def test_roles_come_from_the_simple_auth_managers_roles() -> None:
    """Viewer, curator (may edit DAGs), crawl engineer (may edit pools) and administrator, as
    Airflow's own simple auth manager answers for its four roles."""
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    from app.curator.actions import Role

    curator_role = _plugin().curator_role
    manager = SimpleAuthManager()
    found = {
        name: curator_role(manager, SimpleAuthManagerUser(username=name.lower(), role=name))
        for name in ("VIEWER", "USER", "OP", "ADMIN")
    }
    assert found == {
        "VIEWER": Role.VIEWER,
        "USER": Role.CURATOR,
        "OP": Role.ENGINEER,
        "ADMIN": Role.ADMIN,
    }


def test_the_pages_apps_are_built_at_their_first_use_and_once() -> None:
    """Airflow imports the plugin in every process that loads plugins (each task's process, the
    scheduler, `dags test`), and only the api-server serves the pages: loading it builds neither
    app; the first request (or the first read of an attribute of the app) builds it, once."""
    from fastapi.testclient import TestClient

    module = _plugin()
    entries = [
        entry
        for plugin in (module.HarvestflowCuratorPlugin, module.HarvestflowSearchPlugin)
        for entry in plugin.fastapi_apps
    ]
    assert [(type(e["app"]).__name__, e["app"].built) for e in entries] == [
        ("BuiltOnFirstUse", False),
        ("BuiltOnFirstUse", False),
    ]

    builds: list[str] = []

    def build() -> Any:
        builds.append("built")

        async def answer(scope: Any, receive: Any, send: Any) -> None:
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        answer.routes = ["/"]  # type: ignore[attr-defined]
        return answer

    lazy = module.BuiltOnFirstUse(build)
    assert (lazy.built, builds) == (False, [])
    client = TestClient(lazy)
    assert [client.get(path).status_code for path in ("/", "/jobs")] == [204, 204]
    assert (lazy.routes, builds) == (["/"], ["built"])


def test_the_first_request_builds_the_app_without_holding_the_event_loop() -> None:
    """The build runs in a worker thread: a coroutine of the same loop runs while it is under way
    (it is what lets the build finish here; a build on the loop would wait out its 10 s)."""
    import asyncio
    import threading

    module = _plugin()
    released = threading.Event()
    released_during_build: list[bool] = []

    async def answer(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def build() -> Any:
        released_during_build.append(released.wait(timeout=10))
        return answer

    lazy = module.BuiltOnFirstUse(build)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def release() -> None:
        await asyncio.sleep(0)
        released.set()

    async def both() -> None:
        scope = {"type": "http", "method": "GET", "path": "/", "headers": []}
        await asyncio.gather(lazy(scope, receive, send), release())

    asyncio.run(both())
    assert released_during_build == [True]
    assert sent[0]["status"] == 204
