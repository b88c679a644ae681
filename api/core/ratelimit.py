"""The per-key rate limit: a token bucket per API key, in this process or shared by every API process in Redis.

The bucket (both kinds, the same arithmetic): it holds at most ``per_minute`` tokens (the burst) and refills at
``per_minute / 60`` tokens a second; a request takes one token, or, when there is less than one, is refused with
the seconds until there will be one (``(1 - tokens) / rate``: the ``Retry-After`` of the 429).

- ``RateLimiter``: buckets in a dict of this process. The embedded default (no Redis): with several API
  processes each enforces the whole limit, so N replicas let a key through N times over.
- ``RedisRateLimiter``: one bucket per key in Redis, shared by all replicas behind one load balancer. Each take is
  one Lua script run atomically by the server (``EVALSHA``; redis-py's ``register_script`` loads it again on
  ``NOSCRIPT``), reading the server's ``TIME``, so neither a race between replicas nor their clocks' skew can
  hand out a token twice. One round trip per request on a pooled ``redis.asyncio`` connection: the middleware
  awaits it without blocking the event loop (its cost against the in-process bucket's: docs/benchmarks.md,
  "The API under load"). Keys expire once their bucket would be full again (60 s idle), so Redis holds only the
  keys seen in the last minute.

Failing open: the limit protects the service, it is not worth an outage. When Redis does not answer (down,
unreachable, slower than ``timeout``), requests are limited by an in-process bucket instead, per replica as in the
embedded mode, and Redis is tried again ``retry_after`` seconds later (so a dead Redis costs one timeout per
``retry_after``, not one per request); a warning is logged at most once a minute while it lasts.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from typing import Protocol

import redis.asyncio as aioredis
from redis.asyncio.connection import BlockingConnectionPool
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

log = logging.getLogger("api.core.ratelimit")

KEY_PREFIX = "rft:ratelimit:"

# KEYS[1]: one key's bucket, a hash {tokens, ts (ms of the server's clock)}. ARGV[1]: requests per minute (= the
# burst). Returns 0 when a token was taken, else the milliseconds until one will be there (rounded up).
BUCKET_LUA = """
if redis.replicate_commands then redis.replicate_commands() end -- Redis < 5: replicate the writes, not the script
local capacity = tonumber(ARGV[1])
local per_ms = capacity / 60000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or capacity
local last = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - last) * per_ms)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) / per_ms)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', now)
redis.call('PEXPIRE', KEYS[1], 60000)
return wait
"""


class Limiter(Protocol):
    """What the middleware needs: the seconds a key must wait (0: go ahead), and a way to let go of connections."""

    async def acquire(self, key: str) -> float: ...

    async def aclose(self) -> None: ...


class RateLimiter:
    """Token buckets in this process: ``per_minute`` requests per key, bursts up to the same number."""

    def __init__(self, per_minute: int) -> None:
        self.rate = per_minute / 60.0
        self.capacity = float(per_minute)
        self.buckets: dict[str, tuple[float, float]] = {}
        # take() is plain arithmetic under a lock: cheap enough to run on the event loop.
        self.lock = threading.Lock()

    def take(self, key: str) -> float:
        """0 when allowed; otherwise the seconds until a token is available."""
        now = time.monotonic()
        with self.lock:
            tokens, last = self.buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self.buckets[key] = (tokens - 1.0, now)
                return 0.0
            self.buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

    async def acquire(self, key: str) -> float:
        return self.take(key)

    async def aclose(self) -> None:
        return None


class RedisRateLimiter:
    """The same buckets in Redis, shared by every API process that points at it (module docstring: atomicity,
    clocks, and why it fails open to ``RateLimiter`` when Redis does not answer)."""

    def __init__(
        self,
        url: str,
        per_minute: int,
        *,
        timeout: float = 0.25,
        max_connections: int = 32,
        retry_after: float = 5.0,
        warn_every: float = 60.0,
    ) -> None:
        self.url = url
        self.per_minute = per_minute
        self.timeout = timeout
        self.max_connections = max_connections
        self.retry_after = retry_after
        self.warn_every = warn_every
        self.fallback = RateLimiter(per_minute)
        self._client: aioredis.Redis | None = None
        self._script: AsyncScript | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._down_until = 0.0  # monotonic time before which Redis is not tried
        self._warned_at = -math.inf

    def _script_for_this_loop(self) -> AsyncScript:
        """The script bound to a client of the running event loop: an asyncio connection belongs to the loop that
        opened it. One loop for a uvicorn process's life; a test client may run several, one after another."""
        loop = asyncio.get_running_loop()
        if self._script is None or self._loop is not loop:
            pool = BlockingConnectionPool.from_url(
                self.url,
                # A burst of requests waits (up to ``timeout``) for one of these instead of opening a connection
                # each: the plain pool refuses past its cap ("Too many connections") and would fail us open.
                max_connections=self.max_connections,
                timeout=self.timeout,
                socket_timeout=self.timeout,
                socket_connect_timeout=self.timeout,
                # one immediate retry: a pooled connection the server closed (a Redis restart) fails once and
                # reconnects; redis-py's default (10 retries with backoff) would hold a request for seconds
                retry=Retry(NoBackoff(), 1),
            )
            self._client = aioredis.Redis.from_pool(pool)  # closing the client closes its pool
            self._script = self._client.register_script(BUCKET_LUA)
            self._loop = loop
        return self._script

    async def acquire(self, key: str) -> float:
        """0 when allowed; otherwise the seconds until a token is available. Never raises for Redis' sake."""
        now = time.monotonic()
        if now < self._down_until:
            return self.fallback.take(key)
        try:
            waited_ms = await self._script_for_this_loop()(keys=[KEY_PREFIX + key], args=[self.per_minute])
        except (RedisError, OSError) as exc:  # OSError: refused, unreachable, TimeoutError
            self._down_until = now + self.retry_after
            if now - self._warned_at >= self.warn_every:
                self._warned_at = now
                log.warning(
                    "rate limit: Redis did not answer (%s: %s); limiting per API process until it does",
                    type(exc).__name__,
                    exc,
                )
            return self.fallback.take(key)
        return int(waited_ms) / 1000.0

    async def aclose(self) -> None:
        """Close the pooled connections (at the app's shutdown)."""
        client, self._client, self._script, self._loop = self._client, None, None, None
        if client is not None:
            await client.aclose()


def make_limiter(per_minute: int, redis_url: str | None) -> Limiter | None:
    """The limiter a deployment gets: none when the limit is off, Redis' when one is configured, else in-process."""
    if not per_minute:
        return None
    if redis_url:
        return RedisRateLimiter(redis_url, per_minute)
    return RateLimiter(per_minute)
