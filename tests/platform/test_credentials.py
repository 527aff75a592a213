"""The credential store (harvestflow/credentials.py): encrypted at rest with a Fernet key from
the settings or a key file generated under the data directory; unreadable with another key."""

from __future__ import annotations

import stat

import pytest
import sqlalchemy as sa
from cryptography.fernet import Fernet

from harvestflow import settings as settings_mod
from harvestflow.credentials import (
    CredentialError,
    list_credentials,
    load_secrets,
    remove_credential,
    set_credential,
)

PASSWORD = "k3y-t3st-Pa55"


@pytest.fixture(autouse=True)
def _settings_again_after():
    """Settings are cached: read them again once monkeypatch has restored the environment."""
    yield
    settings_mod.reset()


def test_stored_encrypted_with_a_generated_key_file(db_engine, monkeypatch):
    monkeypatch.delenv("HARVESTFLOW_CREDENTIALS__KEY", raising=False)
    settings_mod.reset()
    key_file = settings_mod.get_settings().path("secrets", "credentials.key")
    key_file.unlink(missing_ok=True)
    cid = set_credential("Example.ORG", "basic", "anne", PASSWORD, engine=db_engine)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    with db_engine.connect() as conn:
        token = bytes(conn.execute(sa.text("SELECT secret FROM credentials")).scalar_one())
    assert PASSWORD.encode() not in token and b"anne" not in token
    (secret,) = load_secrets([cid], engine=db_engine)
    assert (secret.ref.domain, secret.username, secret.password) == (
        "example.org",
        "anne",
        PASSWORD,
    )
    assert PASSWORD not in repr(secret) and PASSWORD not in str(list_credentials(db_engine))
    # another key (the setting wins over the file) cannot read it: a clear error
    monkeypatch.setenv("HARVESTFLOW_CREDENTIALS__KEY", Fernet.generate_key().decode())
    settings_mod.reset()
    with pytest.raises(CredentialError, match=f"credential {cid} .*cannot be decrypted"):
        load_secrets([cid], engine=db_engine)
    assert remove_credential(cid, engine=db_engine)
    with pytest.raises(CredentialError, match="not in the harvest database"):
        load_secrets([cid], engine=db_engine)


def test_bad_credentials_are_refused(db_engine):
    with pytest.raises(CredentialError, match="login page URL"):
        set_credential("example.org", "form", "anne", PASSWORD, engine=db_engine)
    with pytest.raises(CredentialError, match="kind 'ntlm'"):
        set_credential("example.org", "ntlm", "anne", PASSWORD, engine=db_engine)
