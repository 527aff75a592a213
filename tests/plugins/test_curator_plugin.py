"""The Airflow plugin module without a running Airflow: what it registers, and where links to
Airflow's own pages point when Airflow is served under a path prefix."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

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
