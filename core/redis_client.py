"""The process's Redis clients: one per URL, shared by its threads.

Building a ``redis.Redis`` costs more than a round trip to the server (it fills a dictionary of
several hundred response callbacks), so nothing on a request's path builds one: Django's cache
backend does, on every ``get_client`` call, which is why the rate limit and the API-key cache
read their Redis through ``cache_redis`` instead. redis-py's connection pool is thread-safe and
fork-aware. Timeouts are short and there is a single quick retry: a Redis that is down must cost
a request a moment (and a 503, or the fallback its caller chose), not tens of seconds of backoff.

A ``sentinel://`` URL (core/redis_urls.py) gives a client of the master the sentinels name: redis-py
asks them again when a connection fails, so a fail-over costs the calls in flight, not a restart.
Django's cache reaches the same master through ``SentinelPool`` (its ``pool_class``).
"""

from __future__ import annotations

import threading
from typing import Any, cast

import redis
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from redis.backoff import ConstantBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelConnectionPool

from core.redis_urls import SentinelUrl, is_sentinel, sentinel_url_parse

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
                client = redis_from_url(
                    url,
                    socket_timeout=TIMEOUT_SECONDS,
                    socket_connect_timeout=TIMEOUT_SECONDS,
                    retry=Retry(ConstantBackoff(0.05), 1),
                    health_check_interval=30,
                )
                _clients[url] = client
    return client


def _sentinel(target: SentinelUrl) -> Sentinel:
    return Sentinel(list(target.sentinels), sentinel_kwargs=target.sentinel_kwargs())


def redis_from_url(url: str, **options: Any) -> redis.Redis:
    """``redis.Redis.from_url(url, **options)``, or for a ``sentinel://`` URL a client of the
    master its sentinels name (the options apply to the master's connections)."""
    if not is_sentinel(url):
        return redis.Redis.from_url(url, **options)
    target = sentinel_url_parse(url)
    return _sentinel(target).master_for(
        target.master_name,
        redis_class=redis.Redis,
        db=target.db,
        username=target.username,
        password=target.password,
        **options,
    )


class SentinelPool:
    """A ``pool_class`` for Django's Redis cache (``OPTIONS["pool_class"]``): its ``from_url``
    gives the connection pool of the master a ``sentinel://`` URL names, plain URLs a plain
    pool. Settings set it when ``REDIS_URL`` is a Sentinel URL."""

    @staticmethod
    def from_url(url: str, **options: Any) -> redis.ConnectionPool:
        if not is_sentinel(url):
            return redis.ConnectionPool.from_url(url, **options)
        target = sentinel_url_parse(url)
        return SentinelConnectionPool(
            target.master_name,
            _sentinel(target),
            db=target.db,
            username=target.username,
            password=target.password,
            **options,
        )


def cache_redis() -> tuple[redis.Redis, Any] | None:
    """The Redis behind the default cache (``CACHES["default"]``) and that backend, whose
    ``make_and_validate_key`` names keys (its ``KEY_PREFIX`` keeps test workers apart); None
    when the default cache is not Redis. The cache's first server takes every call."""
    backend: Any = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    servers: list[str] = cast(Any, backend)._servers
    return shared_redis(servers[0]), backend
