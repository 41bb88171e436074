"""Read replicas: which database a read goes to (docs/operations.md, "Read replicas").

Everything reads and writes the primary (``default``) unless three things hold at once:

1. the read runs inside a *read scope*: a request (``ReadScopeMiddleware``) or a Celery task
   (opened on the primary, see ``tasks_connect``). Management commands, the shell and
   anything else outside a scope read the primary;
2. the read declared that it tolerates replica lag: it runs inside ``replica_reads`` (the
   search selectors are decorated with it). An outer ``primary_reads`` wins over an inner
   ``replica_reads`` (context assembly must see the message its caller just wrote);
3. nothing has pinned the scope to the primary: a write anywhere in the scope (an ORM write,
   through the router's ``db_for_write``, or any statement on the primary connection that is
   not a read, through an execute wrapper) pins it for the rest of the request or task
   ("sticky after write"), and so does an open ``transaction.atomic`` on the primary for its
   duration.

Then the ORM (``ReplicaRouter.db_for_read``) and the raw SQL of the search engine
(``read_connection()``) read from one replica, chosen at random once per scope and kept for the
scope (reads of one request do not go back in time by switching replicas). A replica that
refuses a connection is marked down for ``DATABASE_REPLICA_RETRY_SECONDS`` and the read goes to
another replica or to the primary: a search never fails because a replica is down. Migrations
never run on a replica.
"""

from __future__ import annotations

import functools
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.utils import DatabaseError

logger = logging.getLogger("engram.db")

P = ParamSpec("P")
R = TypeVar("R")


@dataclass
class _Scope:
    """One request's or task's routing state. Nested scopes (an eager task inside a request)
    pin their parents too: a write in either is seen by both."""

    primary: bool = False
    replica: str | None = None
    parent: _Scope | None = None

    def pin_primary(self) -> None:
        scope: _Scope | None = self
        while scope is not None:
            scope.primary = True
            scope = scope.parent


_scope: ContextVar[_Scope | None] = ContextVar("engram_read_scope", default=None)
# None: nobody said; True: inside replica_reads; False: inside primary_reads. The outermost wins.
_lag_ok: ContextVar[bool | None] = ContextVar("engram_read_lag_ok", default=None)
# alias -> time.monotonic() until which the replica is skipped.
_down_until: dict[str, float] = {}
_down_lock = threading.Lock()


def replica_aliases() -> tuple[str, ...]:
    return tuple(getattr(settings, "DATABASE_REPLICAS", ()))


@contextmanager
def read_scope(*, primary: bool = False) -> Iterator[None]:
    """A request's or task's routing state, from a clean start (``primary``: pinned at once)."""
    token = _scope.set(_Scope(primary=primary, parent=_scope.get()))
    try:
        yield
    finally:
        _scope.reset(token)


def _lag(ok: bool) -> Callable[[Callable[P, R]], Callable[P, R]]:
    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if _lag_ok.get() is not None:
                return func(*args, **kwargs)
            token = _lag_ok.set(ok)
            try:
                return func(*args, **kwargs)
            finally:
                _lag_ok.reset(token)

        return wrapper

    return decorate


#: Decorates a read that tolerates replica lag (a search): its reads may go to a replica.
replica_reads = _lag(True)
#: Decorates a read that must see the latest writes of every caller, searches inside included.
primary_reads = _lag(False)


def pin_primary() -> None:
    """The current scope has written: it reads the primary from now on."""
    scope = _scope.get()
    if scope is not None and not scope.primary:
        scope.pin_primary()


def reads_primary() -> bool:
    """Whether the current scope is pinned to the primary (it wrote, or opened pinned)."""
    scope = _scope.get()
    return scope is None or scope.primary


def replica_mark_down(alias: str) -> None:
    with _down_lock:
        _down_until[alias] = time.monotonic() + settings.DATABASE_REPLICA_RETRY_SECONDS


def replicas_reset() -> None:
    """Forget which replicas were marked down (tests)."""
    with _down_lock:
        _down_until.clear()


def _usable(alias: str) -> bool:
    """Whether ``alias`` may take a read: not marked down, and connected (connecting now if
    needed; a refusal marks it down)."""
    until = _down_until.get(alias)
    if until is not None:
        if time.monotonic() < until:
            return False
        with _down_lock:
            _down_until.pop(alias, None)
    wrapper = connections[alias]
    if wrapper.connection is not None:
        return True
    try:
        wrapper.ensure_connection()
    except DatabaseError as exc:
        logger.warning(
            "read replica %s is down, reading the primary for %ss: %s",
            alias,
            settings.DATABASE_REPLICA_RETRY_SECONDS,
            exc,
        )
        replica_mark_down(alias)
        return False
    return True


def read_alias() -> str:
    """The database the current read goes to (see the module's docstring)."""
    scope = _scope.get()
    if scope is None or scope.primary or not _lag_ok.get():
        return DEFAULT_DB_ALIAS
    replicas = replica_aliases()
    if not replicas or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    if scope.replica in replicas and _usable(scope.replica):
        return scope.replica
    candidates = [alias for alias in replicas if alias != scope.replica]
    random.shuffle(candidates)
    for alias in candidates:
        if _usable(alias):
            scope.replica = alias
            return alias
    return DEFAULT_DB_ALIAS


def read_connection() -> BaseDatabaseWrapper:
    """The connection a search's raw SQL reads through: ``connections[read_alias()]``. Only
    for reads: raw writes use ``django.db.connection`` (the primary)."""
    return connections[read_alias()]


def read_rows_binary(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The rows of a read (``read_connection``) in PostgreSQL's binary format: a ``bytea``
    comes as its bytes, where Django's cursor (psycopg's client-side cursor, text results only)
    moves and decodes twice as many hex digits. For the few reads that carry large binary values
    (late interaction's stored token states: most of that read's time). Database errors are
    Django's, as through its cursor. ``%s`` placeholders."""
    connection = read_connection()
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        # Not prepared: a pooler in transaction mode (PgBouncer) cannot hold prepared statements.
        cursor.execute(sql, params, binary=True, prepare=False)
        return cursor.fetchall()


class ReplicaRouter:
    """Installed (``DATABASE_ROUTERS``) when ``DATABASE_REPLICA_URLS`` names replicas."""

    def db_for_read(self, model: type, **hints: Any) -> str:
        return read_alias()

    def db_for_write(self, model: type, **hints: Any) -> str:
        pin_primary()
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        # Rows read from a replica are the primary's rows.
        databases = {DEFAULT_DB_ALIAS, *replica_aliases()}
        if obj1._state.db in databases and obj2._state.db in databases:
            return True
        return None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        return False if db in replica_aliases() else None


# --- writes in raw SQL pin the scope too ---------------------------------------------------

_FIRST_WORD = re.compile(r"\s*(\w+)")
_READ_STATEMENTS = frozenset(
    {
        "SELECT", "SHOW", "SET", "RESET", "SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN", "START",
        "COMMIT", "EXPLAIN", "DECLARE", "FETCH", "CLOSE", "VALUES", "DISCARD",
    }
)  # fmt: skip
_MODIFYING = re.compile(r"\b(INSERT|UPDATE|DELETE|MERGE|TRUNCATE)\b", re.IGNORECASE)


def statement_writes(sql: object) -> bool:
    """Whether a statement may change data (unknown statements count as writes)."""
    if not isinstance(sql, str):
        return True
    match = _FIRST_WORD.match(sql)
    if match is None:
        return True
    word = match.group(1).upper()
    if word == "WITH":
        return _MODIFYING.search(sql) is not None
    return word not in _READ_STATEMENTS


def _note_writes(
    execute: Callable[..., Any], sql: object, params: Any, many: bool, context: Any
) -> Any:
    scope = _scope.get()
    if scope is not None and not scope.primary and statement_writes(sql):
        scope.pin_primary()
    return execute(sql, params, many, context)


def _on_connection_created(sender: Any, connection: BaseDatabaseWrapper, **_: Any) -> None:
    if connection.alias == DEFAULT_DB_ALIAS and _note_writes not in connection.execute_wrappers:
        # First: ``connection.execute_wrapper()`` blocks pop the last wrapper when they end.
        connection.execute_wrappers.insert(0, _note_writes)


def signals_connect() -> None:
    """Raw SQL on the primary pins the scope it writes in; each Celery task is a scope."""
    from celery.signals import task_postrun, task_prerun
    from django.db.backends.signals import connection_created

    connection_created.connect(
        _on_connection_created, weak=False, dispatch_uid="engram.db_router.writes"
    )
    primary = connections[DEFAULT_DB_ALIAS]
    if primary.connection is not None:  # connected before ready() (rare): wrap it now
        _on_connection_created(None, primary)
    task_prerun.connect(_task_prerun, weak=False, dispatch_uid="engram.db_router.prerun")
    task_postrun.connect(_task_postrun, weak=False, dispatch_uid="engram.db_router.postrun")


# Task id -> the open scope's exit. A task reads the primary throughout: it was usually queued by
# the write it works on, which a replica may not have yet.
_task_scopes: dict[str, Any] = {}


def _task_prerun(task_id: str | None = None, **_: Any) -> None:
    if task_id is None:
        return
    scope = read_scope(primary=True)
    scope.__enter__()
    _task_scopes[task_id] = scope


def _task_postrun(task_id: str | None = None, **_: Any) -> None:
    scope = _task_scopes.pop(task_id or "", None)
    if scope is not None:
        try:
            scope.__exit__(None, None, None)
        except ValueError:  # ended in another context than it began: start clean
            _scope.set(None)
