"""Sign-in through the institution's directory: Airflow's FAB auth manager with LDAP.

Why FAB: Airflow 3's simple auth manager knows only the users listed in its settings; FAB's
(the ``apache-airflow-providers-fab`` package) signs users in against an LDAP directory and maps
the directory's groups to its roles at every sign-in, and the curator pages take their role from
those roles (plugins/harvestflow_curator.py: Viewer a viewer, User a curator, Op a crawl
engineer, Admin an administrator; a collection may give more: harvest.rights). ``[airflow] auth
= "ldap"`` makes every Airflow process use it (:func:`ldap_env`), with this package's
``webserver_ldap.py`` as FAB's configuration file, which reads the ``[airflow] ldap_*`` settings
through :func:`fab_config` (FAB's ``AUTH_LDAP_*`` keys). Never imports Airflow nor FAB.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from harvestflow.settings import Settings, SettingsError

log = logging.getLogger(__name__)

AUTHS = ("simple", "ldap")
FAB_AUTH_MANAGER = "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager"
FAB_ROLES = ("Admin", "Op", "User", "Viewer", "Public")
CONFIG_FILE = Path(__file__).with_name("webserver_ldap.py")


def auth_of(settings: Settings) -> str:
    """``[airflow] auth``: "simple" (the simple auth manager's users) or "ldap"."""
    value = str(settings.get("airflow", "auth", "simple")).strip().lower()
    if value not in AUTHS:
        raise SettingsError(f"[airflow] auth: {value!r}; want one of {', '.join(AUTHS)}")
    return value


def ldap_env(settings: Settings) -> dict[str, str]:
    """Airflow's environment for ``auth = "ldap"`` (nothing for the simple auth manager)."""
    if auth_of(settings) != "ldap":
        return {}
    fab_config(settings)  # a setting that cannot work is refused here, before Airflow starts
    return {
        "AIRFLOW__CORE__AUTH_MANAGER": FAB_AUTH_MANAGER,
        "AIRFLOW__FAB__CONFIG_FILE": str(CONFIG_FILE),
    }


def fab_config(settings: Settings) -> dict[str, Any]:
    """FAB's configuration keys for LDAP from ``[airflow] ldap_*`` (see config/harvestflow.toml).

    A user not in a mapped group gets ``ldap_registration_role``; the roles are synced from the
    groups at every sign-in, so a user taken out of a group loses its role at the next one.
    """
    af = settings["airflow"]
    server = str(af.get("ldap_server") or "")
    if not server.startswith(("ldap://", "ldaps://")):
        raise SettingsError(
            f"[airflow] ldap_server: want ldap://HOST:PORT or ldaps://…, got {server!r}"
        )
    search = str(af.get("ldap_search") or "")
    if not search:
        raise SettingsError("[airflow] ldap_search: the base DN of the users' entries is missing")
    roles = af.get("ldap_roles") or []
    if not isinstance(roles, list) or not all(isinstance(r, str) and "=" in r for r in roles):
        raise SettingsError('[airflow] ldap_roles: want ["Role=group DN", …]')
    mapping: dict[str, list[str]] = {}
    for entry in roles:
        name, _, group = entry.partition("=")
        if name.strip() not in FAB_ROLES:
            raise SettingsError(
                f"[airflow] ldap_roles: {group!r}: role {name!r}; want one of {', '.join(FAB_ROLES)}"
            )
        mapping.setdefault(group.strip(), []).append(name.strip())
    registration = str(af.get("ldap_registration_role") or "Viewer")
    if registration not in FAB_ROLES:
        raise SettingsError(f"[airflow] ldap_registration_role: {registration!r}")
    config: dict[str, Any] = {
        "AUTH_TYPE": 2,  # flask_appbuilder.const.AUTH_LDAP
        "AUTH_LDAP_SERVER": server,
        "AUTH_LDAP_SEARCH": search,
        "AUTH_LDAP_UID_FIELD": str(af.get("ldap_uid_field") or "uid"),
        "AUTH_LDAP_GROUP_FIELD": str(af.get("ldap_group_field") or "memberOf"),
        "AUTH_LDAP_FIRSTNAME_FIELD": "givenName",
        "AUTH_LDAP_LASTNAME_FIELD": "sn",
        "AUTH_LDAP_EMAIL_FIELD": "mail",
        "AUTH_LDAP_USE_TLS": bool(af.get("ldap_use_tls", False)),
        "AUTH_USER_REGISTRATION": True,
        "AUTH_USER_REGISTRATION_ROLE": registration,
        "AUTH_ROLES_MAPPING": mapping,
        "AUTH_ROLES_SYNC_AT_LOGIN": True,
    }
    bind_user = str(af.get("ldap_bind_user") or "")
    if bind_user:  # search as this user, then bind as the user found
        config["AUTH_LDAP_BIND_USER"] = bind_user
        config["AUTH_LDAP_BIND_PASSWORD"] = str(af.get("ldap_bind_password") or "")
    else:  # bind as uid=<user>,<search> directly
        uid = config["AUTH_LDAP_UID_FIELD"]
        config["AUTH_LDAP_USERNAME_FORMAT"] = f"{uid}=%s,{search}"
    return config
