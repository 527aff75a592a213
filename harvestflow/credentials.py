"""The credential store: logins the crawler uses behind HTTP Basic/Digest or a login form.

Why in core: the harvest stage attaches credentials to jobs (by reference), the crawler reads
them decrypted at run time, the CLI manages them; all three reach one table (sql/013) through
this module. Heritrix keeps credentials in its order file in clear; a legal-deposit archive
publishes its job specs, logs and metadata WARCs, so here:

- the username and password are stored only as a Fernet token (``cryptography``, AES-128-CBC +
  HMAC-SHA256); the key comes from the setting ``[credentials] key`` (environment
  ``HARVESTFLOW_CREDENTIALS__KEY``), else from ``[credentials] key_file`` under the data
  directory, generated there (mode 0600) on first use. Every machine that crawls needs the same
  key: set the variable, or share the data directory;
- a job spec carries only a :class:`CredentialRef` (id, domain, kind, login and logout URLs):
  the secret never reaches job.json, crawl.log, reports or the metadata WARC;
- nothing here logs a username or a password, and :class:`Secret` hides both in its ``repr``.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from cryptography.fernet import Fernet, InvalidToken
from sqlalchemy.engine import Connection, Engine

from harvestflow.db import get_engine
from harvestflow.errors import HarvestflowError
from harvestflow.settings import get_settings

log = logging.getLogger(__name__)

KINDS = ("basic", "digest", "form")


class CredentialError(HarvestflowError, ValueError):
    """A credential that cannot be stored or read (bad kind, unknown id, wrong key)."""


@dataclass(frozen=True)
class CredentialRef:
    """What a job spec says about a credential: never the secret."""

    id: int
    domain: str
    kind: str
    realm: str | None = None
    login_url: str | None = None
    logout_url: str | None = None


@dataclass(frozen=True)
class Secret:
    """A credential read for a crawl: the reference plus the decrypted login."""

    ref: CredentialRef
    username: str = field(repr=False)
    password: str = field(repr=False)
    username_field: str | None = None
    password_field: str | None = None


def _key() -> bytes:
    conf = get_settings().data.get("credentials", {})
    if conf.get("key"):
        return str(conf["key"]).encode()
    path = Path(str(conf.get("key_file") or "secrets/credentials.key"))
    if not path.is_absolute():
        path = get_settings().path(str(path))
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = Fernet.generate_key()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return path.read_bytes().strip()
    with os.fdopen(fd, "wb") as fh:
        fh.write(key + b"\n")
    log.warning(
        "generated the credential key %s: back it up (stored credentials cannot be read"
        " without it) and give every crawl machine the same key",
        path,
    )
    return key


def _fernet() -> Fernet:
    try:
        return Fernet(_key())
    except ValueError as exc:
        raise CredentialError(f"the credential key is not a Fernet key: {exc}") from None


def _ref(row: Any) -> CredentialRef:
    return CredentialRef(
        row.credential_id, row.domain, row.kind, row.realm, row.login_url, row.logout_url
    )


def set_credential(
    domain: str,
    kind: str,
    username: str,
    password: str,
    *,
    harvest_id: int | None = None,
    secret_id: str | None = None,
    realm: str | None = None,
    login_url: str | None = None,
    logout_url: str | None = None,
    username_field: str | None = None,
    password_field: str | None = None,
    engine: Engine | None = None,
) -> int:
    """Create or replace the credential of ``domain`` (in one definition, or all); its id."""
    domain = domain.strip().lower().rstrip(".")
    if kind not in KINDS:
        raise CredentialError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if not domain:
        raise CredentialError("a credential needs a domain (or host)")
    if kind == "form" and not login_url:
        raise CredentialError("a form credential needs the login page URL (--login-url)")
    token = _fernet().encrypt(json.dumps({"username": username, "password": password}).encode())
    engine = engine or get_engine()
    with engine.begin() as conn:
        cid = conn.execute(
            sa.text(
                "INSERT INTO credentials (domain, harvest_id, secret_id, kind, realm, login_url,"
                " logout_url, username_field, password_field, secret)"
                " VALUES (:d, :h, :s, :k, :r, :li, :lo, :uf, :pf, :t)"
                " ON CONFLICT (domain, COALESCE(harvest_id, 0)) DO UPDATE SET"
                " secret_id = EXCLUDED.secret_id, kind = EXCLUDED.kind, realm = EXCLUDED.realm,"
                " login_url = EXCLUDED.login_url, logout_url = EXCLUDED.logout_url,"
                " username_field = EXCLUDED.username_field,"
                " password_field = EXCLUDED.password_field, secret = EXCLUDED.secret,"
                " updated_at = now() RETURNING credential_id"
            ),
            {
                "d": domain,
                "h": harvest_id,
                "s": secret_id,
                "k": kind,
                "r": realm,
                "li": login_url,
                "lo": logout_url,
                "uf": username_field,
                "pf": password_field,
                "t": token,
            },
        ).scalar_one()
    log.info("credential %s (%s) stored for %s", cid, kind, domain)
    return int(cid)


def list_credentials(engine: Engine | None = None) -> list[dict[str, Any]]:
    """Every credential without its secret (what ``harvestflow credentials list`` shows)."""
    engine = engine or get_engine()
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT * FROM credentials ORDER BY domain, harvest_id NULLS FIRST")
        ).all()
    return [{**asdict(_ref(r)), "harvest_id": r.harvest_id, "secret_id": r.secret_id} for r in rows]


def remove_credential(credential_id: int, engine: Engine | None = None) -> bool:
    engine = engine or get_engine()
    with engine.begin() as conn:
        gone = conn.execute(
            sa.text("DELETE FROM credentials WHERE credential_id = :i"), {"i": credential_id}
        ).rowcount
    return bool(gone)


def apply_feed_login(
    conn: Connection,
    secret_id: str,
    domain: str,
    login_url: str | None,
    logout_url: str | None,
) -> bool:
    """The crawl feed's login fields of a target set on the credential its ``secretId`` names
    (stored beforehand with ``harvestflow credentials set --secret-id``); False if none is.
    Raises :class:`CredentialError` if another credential is already stored for ``domain``."""
    clash = conn.execute(
        sa.text(
            "SELECT credential_id FROM credentials WHERE domain = :d AND harvest_id IS NULL"
            " AND secret_id IS DISTINCT FROM :s"
        ),
        {"d": domain, "s": secret_id},
    ).scalar()
    if clash is not None:
        raise CredentialError(
            f"secretId {secret_id!r}: credential {clash} is already stored for {domain}"
        )
    found = conn.execute(
        sa.text(
            "UPDATE credentials SET domain = :d, login_url = COALESCE(:li, login_url),"
            " logout_url = COALESCE(:lo, logout_url),"
            " kind = CASE WHEN :li IS NULL THEN kind ELSE 'form' END, updated_at = now()"
            " WHERE secret_id = :s"
        ),
        {"d": domain, "li": login_url, "lo": logout_url, "s": secret_id},
    ).rowcount
    return bool(found)


def refs_for_job(conn: Connection, harvest_id: int, domains: list[str]) -> list[CredentialRef]:
    """The credentials of a job's domains (a credential's domain may be one of their hosts):
    for each, the definition's own, else the one for every definition."""
    rows = conn.execute(
        sa.text(
            "SELECT DISTINCT ON (domain) * FROM credentials c"
            " WHERE (harvest_id IS NULL OR harvest_id = :h) AND EXISTS ("
            "  SELECT 1 FROM unnest(CAST(:d AS text[])) AS jd(name)"
            "  WHERE c.domain = jd.name OR c.domain LIKE '%.' || jd.name)"
            " ORDER BY domain, harvest_id NULLS LAST"
        ),
        {"d": domains, "h": harvest_id},
    ).all()
    return [_ref(r) for r in rows]


def load_secrets(ids: list[int], engine: Engine | None = None) -> list[Secret]:
    """Decrypted credentials for a crawl (in memory only); a missing id is an error."""
    if not ids:
        return []
    engine = engine or get_engine()
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT * FROM credentials WHERE credential_id = ANY(CAST(:i AS integer[]))"),
            {"i": list(ids)},
        ).all()
    missing = set(ids) - {r.credential_id for r in rows}
    if missing:
        raise CredentialError(f"credential(s) {sorted(missing)} not in the harvest database")
    fernet = _fernet()
    out = []
    for r in rows:
        try:
            data = json.loads(fernet.decrypt(bytes(r.secret)))
        except InvalidToken:
            raise CredentialError(
                f"credential {r.credential_id} ({r.domain}) cannot be decrypted with this"
                " machine's key ([credentials] key / key_file)"
            ) from None
        out.append(
            Secret(_ref(r), data["username"], data["password"], r.username_field, r.password_field)
        )
    return out
