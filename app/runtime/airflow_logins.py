"""The logins of Airflow's simple auth manager: the admin and ``[airflow] users``, each with a
role and a password generated once and kept in the Airflow home.

Why generated and kept: ``up`` prints the admin's login every time (``airflow standalone``
prints a generated password once only), and a second ``up`` on the same data directory must
let the same people in. :func:`app.runtime.airflow_env.airflow_env` gives Airflow the users
and the password file.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from harvestflow.atomic import atomic_write_text
from harvestflow.settings import Settings

ADMIN_USER = "admin"
AIRFLOW_ROLES = ("VIEWER", "USER", "OP", "ADMIN")  # the simple auth manager's roles


def password_file(settings: Settings) -> Path:
    return settings.airflow_home / "simple_auth_manager_passwords.json.generated"


def login_users(settings: Settings) -> dict[str, str]:
    """The simple auth manager's users and roles: admin, then ``[airflow] users``."""
    users = {ADMIN_USER: "admin"}
    for entry in settings["airflow"].get("users") or []:
        name, _, role = str(entry).partition(":")
        if not name.strip() or role.strip().upper() not in AIRFLOW_ROLES:
            raise ValueError(
                f"[airflow] users: {entry!r} is not name:ROLE (ROLE one of "
                f"{', '.join(r.lower() for r in AIRFLOW_ROLES)})"
            )
        users[name.strip()] = role.strip().lower()
    return users


def ensure_login(settings: Settings) -> tuple[str, str]:
    """Create each user's password once (kept across runs) and return the admin's login."""
    path = password_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    passwords: dict[str, str] = {}
    if path.exists() and path.read_text().strip():
        passwords = json.loads(path.read_text())
    missing = [name for name in login_users(settings) if name not in passwords]
    if missing:
        passwords.update({name: secrets.token_urlsafe(12) for name in missing})
        atomic_write_text(path, json.dumps(passwords) + "\n", chmod=0o600)
    return ADMIN_USER, passwords[ADMIN_USER]
