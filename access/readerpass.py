"""Reading-room sign-in from a browser: the curator pages' one-minute pass, the gateway's session.

Why not Airflow's login itself: replay is served from a site of its own, and Airflow's ``_token``
cookie is (by design) never sent there, so a browser signed in to Airflow carries nothing the
gateway could check. The hand-off: the curator pages (behind Airflow's login) issue a *pass*
(:data:`PASS`, valid :data:`PASS_TTL_S` seconds, one use: a random nonce the gateway remembers
until the pass expires) and send the browser to ``<replay site>/_signin?pass=…&next=…``; the
gateway checks it with the shared key alone (no database, no call to Airflow) and sets its own
cookie (:data:`COOKIE`) holding a *reader session* (:data:`SESSION`, ``[access]
reader_session_s``). Both are ``base64url(JSON claims).base64url(HMAC-SHA256)``; the claims name
their purpose, so a pass is never a session nor the reverse. Neither opens anything of Airflow's
or the curator pages: they are reader-only.

The key is ``<access>/reader-pass.key`` (made once, mode 0600), read by the gateway and the
curator pages on one machine. Deleting it (and restarting both) ends every reader session.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from access.errors import AccessError

log = logging.getLogger(__name__)

PASS = "reader-pass"
SESSION = "reader-session"
PASS_TTL_S = 60
COOKIE = "hf_reader"  # the gateway's reader-session cookie: never forwarded to pywb
KEY_FILE = "reader-pass.key"
SIGNIN = "/_signin"  # on the replay site: where a pass is exchanged for a session
SIGNOUT = "/_signout"
MAX_TOKEN = 2048  # a longer pass or cookie is refused unread
MAX_NEXT = 4096
MAX_USED = 10_000  # nonces of passes not yet expired, remembered at once (then: refused)
# a path on the replay site, in the printable ASCII a request line carries (no space, no
# control character a browser would drop, no backslash it would read as a slash)
_NEXT = re.compile(r"/[!-\[\]-~]*")


class PassError(AccessError):
    """A pass, a session or a ``next`` address the gateway refuses (the message says why)."""


@dataclass(frozen=True)
class Claims:
    purpose: str
    user: str
    expires: int  # Unix time
    nonce: str


def load_key(root: Path) -> bytes:
    """The signing key ``<root>/reader-pass.key``, made on first use (mode 0600).

    Made under a temporary name and linked into place: a process never reads a key half
    written, and of two processes making it at once one key wins for both.
    """
    path = Path(root) / KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)
            log.info("made the reading-room sign-in key %s", path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    key = path.read_bytes()
    if len(key) < 32:
        raise PassError(f"the reading-room sign-in key {path} is too short: delete it")
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, payload: str) -> str:
    return _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())


def sign(key: bytes, purpose: str, user: str, ttl_s: float, now: float | None = None) -> str:
    """A token for ``user`` with ``purpose`` (:data:`PASS` or :data:`SESSION`), valid
    ``ttl_s`` seconds from ``now``, with a fresh nonce."""
    expires = int((time.time() if now is None else now) + ttl_s)
    claims = {"p": purpose, "u": user, "e": expires, "n": secrets.token_urlsafe(16)}
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    return f"{payload}.{_mac(key, payload)}"


def verify(key: bytes, purpose: str, token: str, now: float | None = None) -> Claims:
    """The claims of a token made by :func:`sign` with ``key`` for ``purpose`` and not expired;
    PassError otherwise (its message says which)."""
    if not token or len(token) > MAX_TOKEN or token.count(".") != 1:
        raise PassError("not a sign-in token")
    payload, mac = token.split(".")
    if not hmac.compare_digest(mac.encode(), _mac(key, payload).encode()):
        raise PassError("the sign-in token's signature is wrong")
    try:
        claims = json.loads(_unb64(payload))
        found = Claims(str(claims["p"]), str(claims["u"]), int(claims["e"]), str(claims["n"]))
    except (ValueError, KeyError, TypeError) as exc:  # signed by us: only if the key leaked
        raise PassError(f"the sign-in token cannot be read ({exc})") from None
    if found.purpose != purpose:
        raise PassError(f"a {found.purpose} is not a {purpose}")
    if found.expires <= (time.time() if now is None else now):
        raise PassError(f"this {purpose} has expired")
    return found


def safe_next(given: str) -> str:
    """``given`` when it is a path on the replay site (``/…``): never another site's address
    (``//host``, ``http://…``, ``/\\host``), so sign-in is no open redirect; PassError else."""
    if len(given) > MAX_NEXT or not _NEXT.fullmatch(given) or given.startswith("//"):
        raise PassError(f"next must be a path on the replay site (/…), not {given[:100]!r}")
    return given


class UsedNonces:
    """The nonces of passes already exchanged, each kept until its pass expires: a pass is
    good once. Bounded (:data:`MAX_USED`): when that many unexpired passes were used in the
    last minute, a new one is refused (fail closed: forgetting one would let it be used again).
    """

    def __init__(self, max_entries: int = MAX_USED) -> None:
        self.max_entries = max_entries
        self._used: OrderedDict[str, int] = OrderedDict()  # nonce -> expiry, oldest first
        self._lock = threading.Lock()

    def spend(self, claims: Claims, now: float | None = None) -> None:
        """Mark the pass used; PassError when it was, or when the memory is full."""
        now = time.time() if now is None else now
        with self._lock:
            for nonce, expires in list(self._used.items()):
                if expires > now:
                    break  # passes all live PASS_TTL_S: the oldest expire first
                del self._used[nonce]
            if claims.nonce in self._used:
                raise PassError("this sign-in link was used already: sign in again")
            if len(self._used) >= self.max_entries:
                raise PassError("too many sign-ins this minute: try again in a minute")
            self._used[claims.nonce] = claims.expires

    def __len__(self) -> int:
        with self._lock:
            return len(self._used)


def cookie_value(header: str | None) -> str:
    """Our session cookie's value in a ``Cookie`` header ('' when absent)."""
    for part in (header or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value.strip().strip('"')
    return ""


def without_cookie(header: str) -> str:
    """A ``Cookie`` header without our session cookie: what pywb (and an archived page) gets."""
    kept = [p.strip() for p in header.split(";") if p.strip().partition("=")[0] != COOKIE]
    return "; ".join(p for p in kept if p)


def sets_cookie(set_cookie: str) -> bool:
    """Whether a ``Set-Cookie`` value (an archived answer's) would set our session cookie."""
    return set_cookie.strip().partition("=")[0].strip() == COOKIE
