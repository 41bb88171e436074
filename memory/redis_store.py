"""The Redis client of the memory tiers: working memory's store and the pools' pub/sub.

One client per URL per process (redis-py's connection pool is thread-safe and fork-aware), with
short timeouts and a single quick retry: a Redis that is down must cost a request a moment and a
503, not tens of seconds of backoff.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

import redis
from django.conf import settings
from redis.backoff import ConstantBackoff
from redis.exceptions import (
    MasterDownError,
    OutOfMemoryError,
    ReadOnlyError,
    TryAgainError,
)
from redis.retry import Retry

from memory.errors import MemoryUnavailable

logger = logging.getLogger("engram.memory")

# What "Redis cannot serve us right now" looks like (AuthenticationError and BusyLoadingError are
# ConnectionErrors); anything else from Redis is a bug worth a 500 and a traceback.
UNAVAILABLE: tuple[type[Exception], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    OutOfMemoryError,
    ReadOnlyError,
    MasterDownError,
    TryAgainError,
)
TIMEOUT_SECONDS = 2.0

_clients: dict[str, redis.Redis] = {}
_lock = threading.Lock()


def memory_redis() -> redis.Redis:
    """The client for ``settings.REDIS_URL`` (tests point that at a dead socket)."""
    url = settings.REDIS_URL
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


def redis_prefix() -> str:
    return str(settings.MEMORY_REDIS_PREFIX)


@contextlib.contextmanager
def working_memory_available() -> Iterator[None]:
    """Turn Redis being unreachable into 503 ``memory_unavailable``."""
    try:
        yield
    except UNAVAILABLE as exc:
        logger.warning("working memory unavailable: %s", exc)
        raise MemoryUnavailable(
            "Working memory is unavailable (Redis cannot be reached).",
            details={"store": "redis", "tier": "working"},
        ) from exc
