"""The process's Redis clients: one per URL, shared by its threads.

Building a ``redis.Redis`` costs more than a round trip to the server (it fills a dictionary of
several hundred response callbacks), so nothing on a request's path builds one: Django's cache
backend does, on every ``get_client`` call, which is why the rate limit and the API-key cache
read their Redis through ``cache_redis`` instead. redis-py's connection pool is thread-safe and
fork-aware. Timeouts are short and there is a single quick retry: a Redis that is down must cost
a request a moment (and a 503, or the fallback its caller chose), not tens of seconds of backoff.
"""

from __future__ import annotations

import threading
from typing import Any, cast

import redis
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from redis.backoff import ConstantBackoff
from redis.retry import Retry

TIMEOUT_SECONDS = 2.0

_clients: dict[str, redis.Redis] = {}
_lock = threading.Lock()


def shared_redis(url: str) -> redis.Redis:
    """The client for ``url``, built on first use in this process."""
    client = _clients.get(url)
    if client is None:
        with _lock:
            client = _clients.get(url)
            if client is None:
                client = redis.Redis.from_url(
                    url,
                    socket_timeout=TIMEOUT_SECONDS,
                    socket_connect_timeout=TIMEOUT_SECONDS,
                    retry=Retry(ConstantBackoff(0.05), 1),
                    health_check_interval=30,
                )
                _clients[url] = client
    return client


def cache_redis() -> tuple[redis.Redis, Any] | None:
    """The Redis behind the default cache (``CACHES["default"]``) and that backend, whose
    ``make_and_validate_key`` names keys (its ``KEY_PREFIX`` keeps test workers apart); None
    when the default cache is not Redis. The cache's first server takes every call."""
    backend: Any = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    servers: list[str] = cast(Any, backend)._servers
    return shared_redis(servers[0]), backend
