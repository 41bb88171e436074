"""The API keys a process has loaded, trusted only while the credentials generation stands.

Authenticating from PostgreSQL cost every API request a query, and Django's connection health
check another round trip before it. Instead each process keeps the rows it loaded (key, agent and
account, as ``core.authentication`` reads them) and reuses one only while the *credentials
generation*, a token in Redis, is still the one it read before loading that row. Each request
reads the generation (one Redis round trip, the throttle's Redis) and checks the secret, the
revocation, the expiry and the agent's and account's state on the cached row as it would on a
fresh one.

Every change to a key, an agent or an account (``credentials_changed`` in the services: revoke,
delete, update, disable, prune) sets a new generation twice: inside its transaction, so that a
change Redis cannot hear about fails (503 ``store_unavailable``) and changes nothing; and after
the commit, so that a process which loaded the old row between the first new generation and the
commit drops it too. The next request after a revocation is therefore refused by every process,
exactly as without the cache.

A generation is a random token, never a counter: a Redis that lost its data and counted again
could hand out a generation some process saw before. A missing generation is set (it never
vouches for anything cached); when Redis cannot be read nothing cached is used and the process
forgets its entries: requests authenticate from the database. A row is also reloaded after
``MAX_AGE_SECONDS``, which bounds how long a change made behind the services' back (SQL by hand)
takes to be seen.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from django.db import transaction

from core.errors import StoreUnavailable
from core.redis_client import cache_redis

logger = logging.getLogger("engram.auth")

GENERATION_KEY = "auth:credentials-generation"
MAX_AGE_SECONDS = 60.0
MAX_ENTRIES = 10_000


@dataclass
class CachedKey:
    """One loaded row and the generation read before loading it. ``touched_at`` is when this
    process last recorded the key's use (``last_used_at`` in the row is as loaded)."""

    row: tuple[Any, ...]
    generation: bytes
    loaded_at: float
    touched_at: Any = None


_entries: dict[str, CachedKey] = {}
_lock = threading.Lock()


def current_generation() -> bytes | None:
    """The credentials generation, or None when nothing cached may be trusted now (Redis is not
    the cache, cannot be reached, or had no generation: one is set for the next request)."""
    return generation_and()[0]


def generation_and(
    queue: Callable[[Any, Any], None] | None = None,
) -> tuple[bytes | None, list[Any] | None]:
    """``current_generation()`` and the answers of the commands ``queue(pipeline, backend)``
    adds, in one round trip to Redis (the rate limit's count rides along); (None, None) when
    Redis cannot be read."""
    found = cache_redis()
    if found is None:
        return None, None
    client, backend = found
    key = backend.make_and_validate_key(GENERATION_KEY)
    try:
        pipe = client.pipeline(transaction=False)
        pipe.get(key)
        if queue is not None:
            queue(pipe, backend)
        generation, *answers = pipe.execute()
        if generation is None:
            client.set(key, _new_token(), nx=True)
    except redis.RedisError as exc:  # Redis down: authenticate from the database
        logger.warning("credentials generation unavailable, keys read from the database: %s", exc)
        forget_all()
        return None, None
    if generation is None:
        return None, answers
    return (generation if isinstance(generation, bytes) else str(generation).encode()), answers


def peek(prefix: str) -> CachedKey | None:
    """The entry for ``prefix``, whatever its generation (not to be trusted as it is)."""
    return _entries.get(prefix)


def cached(prefix: str, generation: bytes | None) -> CachedKey | None:
    """The entry for ``prefix`` if it was loaded under ``generation`` and is young enough."""
    if generation is None:
        return None
    entry = _entries.get(prefix)
    if entry is None or entry.generation != generation:
        return None
    if time.monotonic() - entry.loaded_at > MAX_AGE_SECONDS:
        return None
    return entry


def remember(prefix: str, row: tuple[Any, ...], generation: bytes | None) -> CachedKey:
    """Keep ``row``, loaded after ``generation`` was read (None: returned, not kept)."""
    entry = CachedKey(row=row, generation=generation or b"", loaded_at=time.monotonic())
    if generation is None:
        return entry
    with _lock:
        _entries.pop(prefix, None)
        while len(_entries) >= MAX_ENTRIES:
            del _entries[next(iter(_entries))]  # the oldest
        _entries[prefix] = entry
    return entry


def forget_all() -> None:
    with _lock:
        _entries.clear()


def credentials_changed() -> None:
    """Call inside the transaction that changes a key, an agent or an account: no process
    trusts what it cached any more, now and again once the change is committed."""
    found = cache_redis()
    if found is None:
        return
    try:
        _bump()
    except redis.RedisError as exc:
        logger.warning("credentials generation cannot be changed: %s", exc)
        raise StoreUnavailable(
            "Redis is unavailable: API keys cannot be changed until it is back.",
            details={"store": "redis"},
        ) from exc
    transaction.on_commit(_bump_after_commit)


def _bump() -> None:
    found = cache_redis()
    if found is not None:
        client, backend = found
        client.set(backend.make_and_validate_key(GENERATION_KEY), _new_token())


def _bump_after_commit() -> None:
    try:
        _bump()
    except redis.RedisError as exc:  # the first bump took effect; this one closes a short race
        logger.error("credentials generation not changed after commit: %s", exc)


def _new_token() -> str:
    return secrets.token_hex(16)
