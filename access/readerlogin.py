"""Whether a reader's token is a signed-in curator's: the curator pages answer, we remember briefly.

Why a short memory, and a bounded one: a replayed page is dozens of requests, and asking the
curator pages (Airflow's one api-server worker) for each would load them; but a token signed out
(Airflow revokes it) must close replay at once, not after a minute. Answers are kept
:data:`TTL_S` seconds (the bound on how long a signed-out token still opens replay), at most
:data:`MAX_ENTRIES` of them, least recently used dropped first, so a stream of unique bogus
tokens costs a fixed amount of memory. Tokens are kept as their SHA-256, never as themselves.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import threading
import time
from collections import OrderedDict
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

TTL_S = 5.0
MAX_ENTRIES = 4096
_ASK_TIMEOUT_S = 10


class LoginChecker:
    """``checker(token)``: True when the curator pages at ``url`` accept the token."""

    def __init__(self, url: str, ttl_s: float = TTL_S, max_entries: int = MAX_ENTRIES) -> None:
        self.url = url
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._cache: OrderedDict[str, tuple[bool, float]] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, token: str) -> bool:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
            if hit and hit[1] > now:
                self._cache.move_to_end(key)
                return hit[0]
        ok = self._ask(token)
        with self._lock:
            self._cache[key] = (ok, time.monotonic() + self.ttl_s)
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return ok

    def __len__(self) -> int:
        """How many answers are remembered (never more than ``max_entries``)."""
        with self._lock:
            return len(self._cache)

    def _ask(self, token: str) -> bool:
        parts = urlsplit(self.url)
        conn = http.client.HTTPConnection(
            parts.hostname or "127.0.0.1", parts.port, timeout=_ASK_TIMEOUT_S
        )
        try:
            conn.request(
                "GET",
                parts.path or "/",
                headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            )
            return conn.getresponse().status == 200
        except (OSError, http.client.HTTPException) as exc:
            log.warning("reading room: cannot check a login at %s (%s)", self.url, exc)
            return False
        finally:
            conn.close()
