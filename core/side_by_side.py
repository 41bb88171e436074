"""Independent reads of one call run side by side: on a small pool of threads per process, each
thread with its own database connection, so that one read's database time overlaps another's
Python (context assembly's sources: docs/memory/context.md).

Side by side only outside a transaction: another connection cannot see what the caller's open
transaction wrote, so inside one (a test case, a caller's ``atomic`` block) the reads run one
after another on the caller's connection, with the same results. ``SIDE_BY_SIDE_THREADS`` (0:
never) bounds the threads of a process; each keeps its connection between calls, as a web
thread does (``DATABASE_CONN_MAX_AGE``, health-checked before each read).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from django.conf import settings
from django.db import close_old_connections, connection

from core.process_cache import PerProcess

T = TypeVar("T")

_pool: PerProcess[ThreadPoolExecutor] = PerProcess(
    lambda: ThreadPoolExecutor(
        max_workers=max(1, settings.SIDE_BY_SIDE_THREADS), thread_name_prefix="engram-side"
    )
)


def _in_thread(read: Callable[[], T]) -> T:
    close_old_connections()  # what a request's start does: drop a broken or expired connection
    return read()


def side_by_side(reads: Mapping[str, Callable[[], T]]) -> dict[str, T]:
    """Each read's result by name. The first runs in the calling thread, the others on the
    pool; an exception of any read is raised here once all have finished."""
    names = list(reads)
    if len(names) < 2 or settings.SIDE_BY_SIDE_THREADS < 1 or connection.in_atomic_block:
        return {name: reads[name]() for name in names}
    pool = _pool.get()
    futures: dict[str, Future[T]] = {
        # Each in a copy of the caller's context: its read scope (core.db_router) goes along.
        name: pool.submit(contextvars.copy_context().run, _in_thread, reads[name])
        for name in names[1:]
    }
    results: dict[str, T] = {}
    failure: BaseException | None = None
    try:
        results[names[0]] = reads[names[0]]()
    except BaseException as exc:  # re-raised below, after the others finished
        failure = exc
    for name, future in futures.items():
        try:
            results[name] = future.result()
        except BaseException as exc:  # the first failure is re-raised
            failure = failure or exc
    if failure is not None:
        raise failure
    return results
