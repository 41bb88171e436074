"""The Redis client of the memory tiers: working memory's store and the pools' pub/sub.

One client per URL per process (``core.redis_client.shared_redis``: short timeouts and a single
quick retry, so a Redis that is down costs a request a moment and a 503, not tens of seconds of
backoff).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import redis
from django.conf import settings
from redis.exceptions import (
    MasterDownError,
    OutOfMemoryError,
    ReadOnlyError,
    TryAgainError,
)

from core.redis_client import shared_redis
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


def memory_redis() -> redis.Redis:
    """The client for ``settings.REDIS_URL`` (tests point that at a dead socket): the process's
    shared one (core/redis_client.py), so the rate limit and working memory share a pool."""
    return shared_redis(settings.REDIS_URL)


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
