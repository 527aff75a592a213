"""Signing in through the institution's directory: `harvestflow up` with ``[airflow] auth =
"ldap"`` (Airflow's FAB auth manager) against an OpenLDAP directory the test starts (slapd on
loopback, tests/support/ldap_directory.py). A user in the curators group signs in with their
directory password and is a curator on the curator pages; one in the engineers group a crawl
engineer, one in the administrators group an administrator, one in no mapped group a viewer; a
wrong password is refused. The groups are mapped to Airflow's roles by ``ldap_roles``.

Signing in needs Airflow's api-server and its metadata DB only: the test starts the api-server
as ``up`` starts its components, after ``up``'s preparation (its own metadata DB, in the
session's PostgreSQL, migrated with the FAB auth manager's tables), and no scheduler,
dag-processor, object store or replay service (these tests run no DAG).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.runtime.airflow_commands import prepare_commands
from harvestflow import db
from harvestflow import settings as settings_mod
from harvestflow.settings import Settings
from tests.support.environment import free_port
from tests.support.ldap_directory import Directory, ldap_directory
from tests.support.platform_up import NO_TASKS, api_server

pytestmark = [pytest.mark.services, pytest.mark.slow]

PEOPLE = {"carol": "carol-secret", "olga": "olga-secret", "ada": "ada-secret",
          "victor": "victor-secret"}  # fmt: skip
GROUPS = {"curators": ["carol"], "engineers": ["olga"], "administrators": ["ada"],
          "readers": ["victor"]}  # fmt: skip


@pytest.fixture(scope="module")
def platform(
    services: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Directory]]:
    root = tmp_path_factory.mktemp("ldap")
    with (
        ldap_directory(root / "slapd", PEOPLE, GROUPS) as directory,
        pytest.MonkeyPatch.context() as mp,
    ):
        roles = {directory.group_dn("curators"): "User", directory.group_dn("engineers"): "Op",
                 directory.group_dn("administrators"): "Admin"}  # fmt: skip
        mp.setenv("HARVESTFLOW_DATA_DIR", str(root / "var"))  # its Airflow home and logins
        mp.setenv("HARVESTFLOW_POSTGRES__AIRFLOW_DB", '"airflow_ldap"')  # FAB's tables in it
        mp.setenv("HARVESTFLOW_AIRFLOW__PORT", str(free_port()))
        mp.setenv("HARVESTFLOW_AIRFLOW__AUTH", '"ldap"')
        mp.setenv("HARVESTFLOW_AIRFLOW__LDAP_SERVER", json.dumps(directory.url))
        mp.setenv("HARVESTFLOW_AIRFLOW__LDAP_SEARCH", json.dumps(directory.people))
        mp.setenv("HARVESTFLOW_AIRFLOW__LDAP_ROLES", json.dumps([f"{v}={k}" for k, v in roles.items()]))  # fmt: skip
        settings_mod.reset()
        try:
            settings = settings_mod.get_settings()
            db.ensure_database(settings.airflow_db_url)  # as `up`'s services start does
            with api_server(settings, prepare_commands(settings), *NO_TASKS):
                af = settings["airflow"]
                yield f"http://{af['host']}:{af['port']}", directory
        finally:
            settings_mod.reset()


def _role_on_the_curator_pages(base: str, user: str, password: str) -> str:
    answer = httpx.post(f"{base}/auth/token", json={"username": user, "password": password},
                        timeout=60)  # fmt: skip
    assert answer.status_code == 201, (user, answer.text)
    page = httpx.get(f"{base}/curator/records", timeout=60,
                     headers={"Authorization": f"Bearer {answer.json()['access_token']}"})  # fmt: skip
    assert page.status_code == 200, (user, page.text[:300])
    found = page.text.split("you are a ", 1)[1]
    return found.split("<", 1)[0].split(" —", 1)[0].strip()


def test_a_directory_user_in_the_curators_group_signs_in_as_a_curator(
    platform: tuple[str, Directory],
) -> None:
    base, _ = platform
    assert _role_on_the_curator_pages(base, "carol", PEOPLE["carol"]) == "curator"
    assert _role_on_the_curator_pages(base, "olga", PEOPLE["olga"]) == "crawl engineer"
    assert _role_on_the_curator_pages(base, "ada", PEOPLE["ada"]) == "administrator"
    assert _role_on_the_curator_pages(base, "victor", PEOPLE["victor"]) == "viewer"
    wrong = httpx.post(f"{base}/auth/token", json={"username": "carol", "password": "guess"},
                       timeout=60)  # fmt: skip
    assert wrong.status_code == 401


def test_the_fab_configuration_comes_from_the_settings(tmp_path: Path) -> None:
    """What FAB reads (``webserver_ldap.py``): the settings' directory, or a clear refusal."""
    from app.runtime.ldap_auth import fab_config, ldap_env
    from harvestflow.settings import SettingsError, load

    env = {"HARVESTFLOW_AIRFLOW__AUTH": '"ldap"',
           "HARVESTFLOW_AIRFLOW__LDAP_SERVER": '"ldap://127.0.0.1:389"',
           "HARVESTFLOW_AIRFLOW__LDAP_SEARCH": '"ou=people,dc=archive,dc=test"',
           "HARVESTFLOW_AIRFLOW__LDAP_ROLES": '["User=cn=c,dc=archive,dc=test"]'}  # fmt: skip
    config = fab_config(load(environ=env))
    assert config["AUTH_ROLES_MAPPING"] == {"cn=c,dc=archive,dc=test": ["User"]}
    assert config["AUTH_LDAP_USERNAME_FORMAT"] == "uid=%s,ou=people,dc=archive,dc=test"
    assert ldap_env(load(environ=env))["AIRFLOW__CORE__AUTH_MANAGER"].endswith("FabAuthManager")
    assert ldap_env(load(environ={})) == {}
    bad = {**env, "HARVESTFLOW_AIRFLOW__LDAP_ROLES": '["Boss=cn=c"]'}
    with pytest.raises(SettingsError, match="role 'Boss'"):
        ldap_env(load(environ=bad))
