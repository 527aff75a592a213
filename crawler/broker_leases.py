"""Host leases in the Celery broker (Redis): the same shared politeness, in memory.

Why: a national crawl needs ~2,200 host-lease round trips per second (two per fetch at
1,100 URLs/s); the PostgreSQL upserts of :mod:`crawler.lease_tables` sustained ~430/s on two shared
cores, each one a write-ahead-logged transaction. With the celery executor a Redis server is
already there for every worker; a lease is one ``SET NX PX`` there, in memory.

Same rules as the ``host_leases`` table, one Lua script per call (one round trip, atomic):

``hf:hostlease:{host}`` holds the holder's name while it fetches (expiring after ``hold_s``),
then ``""`` for the politeness delay; waiters take turns by tickets in a sorted set (``…:q``).
The keys of one host share a hash tag, so a Redis cluster keeps them on one node. Without the
broker (local executor) the leases stay in PostgreSQL.
"""

from __future__ import annotations

import logging
from typing import Any

import redis

log = logging.getLogger(__name__)

PREFIX = "hf:hostlease:"
TIMEOUT_S = 5.0  # every call to the broker is time-limited (a broker away is a platform outage)

# KEYS: lease, queue, queue deadlines, ticket counter; ARGV: me, hold_ms, grace_ms, poll_ms.
# Returns 0 when taken, else the milliseconds to wait before asking again.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me = ARGV[1]
local first = false
while true do
  local head = redis.call('ZRANGE', KEYS[2], 0, 0)
  if #head == 0 then break end
  local deadline = tonumber(redis.call('HGET', KEYS[3], head[1]) or '0')
  if deadline > now then first = head[1]; break end
  redis.call('ZREM', KEYS[2], head[1])
  redis.call('HDEL', KEYS[3], head[1])
end
if (not first or first == me) and redis.call('SET', KEYS[1], me, 'NX', 'PX', ARGV[2]) then
  if first then
    redis.call('ZREM', KEYS[2], me)
    redis.call('HDEL', KEYS[3], me)
  end
  return 0
end
local wait = tonumber(ARGV[4])
if redis.call('GET', KEYS[1]) == '' then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then wait = ttl end
end
if not redis.call('ZSCORE', KEYS[2], me) then
  redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[4]), me)
end
local alive = wait + tonumber(ARGV[3])
redis.call('HSET', KEYS[3], me, now + alive)
for i = 2, 4 do
  if redis.call('PTTL', KEYS[i]) < alive + 1000 then redis.call('PEXPIRE', KEYS[i], alive + 1000) end
end
return wait
"""

# KEYS: lease; ARGV: me, delay_ms. 1 when given back, 0 when it was not this holder's.
_GIVE_BACK = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local delay = tonumber(ARGV[2])
if delay > 0 then redis.call('SET', KEYS[1], '', 'PX', delay) else redis.call('DEL', KEYS[1]) end
return 1
"""


def _keys(host: str) -> list[str]:
    base = f"{PREFIX}{{{host}}}"
    return [base, base + ":q", base + ":qx", base + ":t"]


class BrokerHostLeases:
    """Take a host (or learn how long to wait) and give it back, in the broker's Redis; the
    interface of :class:`crawler.lease_tables.HostLeases`."""

    def __init__(
        self, client: redis.Redis, holder: str, hold_s: float, *, poll_s: float, grace_s: float
    ) -> None:
        """``poll_s``: the wait before asking again for a held host; ``grace_s``: how long past
        that a waiter keeps its turn (crawler.lease_tables' POLL_S and WAITER_GRACE_S, passed in so
        that this module does not import that one)."""
        self.client = client
        self.holder = holder
        self.hold_s = hold_s
        self.poll_s = poll_s
        self.grace_s = grace_s
        self._take = client.register_script(_TAKE)
        self._give_back = client.register_script(_GIVE_BACK)

    @classmethod
    def from_url(
        cls, url: str, holder: str, hold_s: float, *, poll_s: float, grace_s: float
    ) -> BrokerHostLeases:
        # one connection per crawler, its threads taking turns on it (a call is ~0.1 ms): a pool
        # checks each connection out with a readiness poll, one more system call (and one more
        # wait for the interpreter's lock in a busy crawler) per round trip, and holds a
        # connection per thread
        client = redis.Redis.from_url(
            url,
            socket_timeout=TIMEOUT_S,
            socket_connect_timeout=TIMEOUT_S,
            single_connection_client=True,
        )
        return cls(client, holder, hold_s, poll_s=poll_s, grace_s=grace_s)

    def as_holder(self, holder: str, hold_s: float = 0.0) -> BrokerHostLeases:
        """The same store seen by another holder (an earlier run giving back what it left)."""
        return BrokerHostLeases(
            self.client, holder, hold_s, poll_s=self.poll_s, grace_s=self.grace_s
        )

    def try_take(self, host: str) -> float:
        """0.0 when this crawler now holds ``host``; else seconds to wait before asking again."""
        args: list[Any] = [
            self.holder,
            max(1, int(self.hold_s * 1000)),
            int(self.grace_s * 1000),
            int(self.poll_s * 1000),
        ]
        wait_ms = int(self._take(keys=_keys(host), args=args))
        return wait_ms / 1000.0

    def give_back(self, host: str, delay_s: float) -> None:
        """Release ``host``: its next fetch (by anyone) no sooner than ``delay_s`` from now."""
        delay_ms = max(0, round(delay_s * 1000))
        self._give_back(keys=_keys(host)[:1], args=[self.holder, delay_ms])

    def close(self) -> None:
        self.client.close()
