"""Transactions that meet other transactions: what a database error means, and the retry of
the ones that only mean "try again".

PostgreSQL ends a transaction caught in a deadlock (SQLSTATE 40P01) or, at the serializable
level, one whose reads another commit invalidated (40001). Nothing is wrong with the request:
run again, the whole transaction succeeds. ``retry_on_conflict`` does that around a service
whose body is its own transaction, a bounded number of times (``DATABASE_CONFLICT_RETRIES``)
with jittered backoff. Called inside a caller's transaction it runs once: the conflict aborted
that outer transaction, which only its owner can run again.

``database_error_kind`` classifies a database error for ``core.errors.translate_exception``:
only a real outage (no connection, a connection lost, a server shutting down or refusing
connections) is ``store_unavailable``; a conflict that outlived its retries, a lock not
available, a statement cancelled by its timeout each get their own code (docs/api.md).
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.db import DatabaseError, DataError, InterfaceError, OperationalError, connection

logger = logging.getLogger("engram.db")

P = ParamSpec("P")
R = TypeVar("R")

DEADLOCK = "40P01"
SERIALIZATION_FAILURE = "40001"
LOCK_NOT_AVAILABLE = "55P03"
QUERY_CANCELED = "57014"
# Backoff before retry n (1-based): a random wait up to BASE * 2**(n-1), at most CAP seconds
# ("full jitter"), so transactions that collided do not collide again in step.
BACKOFF_BASE_SECONDS = 0.02
BACKOFF_CAP_SECONDS = 0.5

# What ``database_error_kind`` answers.
OUTAGE = "outage"
CONFLICT = "conflict"
TIMEOUT = "timeout"
OVERLOADED = "overloaded"
INVALID_DATA = "invalid_data"
INTEGRITY = "integrity"


def sqlstate_of(exc: BaseException) -> str | None:
    """The SQLSTATE of a database error (Django wraps psycopg's, which carries it), or None
    when the server never answered (a connection refused, a connection lost)."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return None
        state = getattr(seen, "sqlstate", None)
        if isinstance(state, str) and state:
            return state
        seen = seen.__cause__ or seen.__context__
    return None


def database_error_kind(exc: BaseException) -> str | None:
    """``outage``, ``conflict``, ``timeout``, ``overloaded``, ``invalid_data``, ``integrity``
    or None (another error: a bug, answered as one) for a database error; None too for anything
    that is not one."""
    import psycopg

    if not isinstance(exc, DatabaseError | psycopg.Error):
        return None
    if isinstance(exc, InterfaceError | psycopg.InterfaceError):
        return OUTAGE  # the connection is closed or unusable
    state = sqlstate_of(exc)
    if state is None:
        # No answer from a server: connecting failed, or the connection broke mid-query. Or
        # the driver refused a value before sending it (a NUL in text).
        if isinstance(exc, OperationalError | psycopg.OperationalError):
            return OUTAGE
        return INVALID_DATA if isinstance(exc, DataError | psycopg.DataError) else None
    if state.startswith("08") or state.startswith("57P"):
        return OUTAGE  # connection exceptions; admin/crash shutdown, cannot connect now
    if state in {DEADLOCK, SERIALIZATION_FAILURE, LOCK_NOT_AVAILABLE}:
        return CONFLICT
    if state == QUERY_CANCELED:
        return TIMEOUT
    if state.startswith("53"):
        return OVERLOADED  # insufficient resources: too many connections, out of memory, disk
    # What a request sent that validation should have refused and the database did: a value
    # it cannot store (class 22: a NUL in text, a number out of range) or a constraint no
    # service mapped to its own code (class 23). The request's fault, answered as such, and
    # logged: each is a missing check to add.
    if state.startswith("22"):
        return INVALID_DATA
    if state.startswith("23"):
        return INTEGRITY
    return None


def is_retryable(exc: BaseException) -> bool:
    """A deadlock or a serialisation failure: the same transaction, run again, may succeed."""
    return isinstance(exc, DatabaseError) and sqlstate_of(exc) in {
        DEADLOCK,
        SERIALIZATION_FAILURE,
    }


def backoff_seconds(attempt: int) -> float:
    return random.uniform(0, min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1)))  # noqa: S311 - jitter, not secrecy


def retry_on_conflict(func: Callable[P, R]) -> Callable[P, R]:
    """Run ``func`` (whose body is one transaction, or several each complete on its own) again
    when PostgreSQL ended it for a deadlock or a serialisation failure, up to
    ``DATABASE_CONFLICT_RETRIES`` more times; inside a caller's transaction, once."""

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if connection.in_atomic_block:
            return func(*args, **kwargs)
        attempt = 0
        while True:
            try:
                return func(*args, **kwargs)
            except DatabaseError as exc:
                if not is_retryable(exc) or attempt >= settings.DATABASE_CONFLICT_RETRIES:
                    raise
                attempt += 1
                logger.info("%s: %s, retry %d", func.__qualname__, sqlstate_of(exc), attempt)
                time.sleep(backoff_seconds(attempt))

    return run
