"""What Engram measures for Prometheus (docs/operations.md, "Metrics"), and how it is recorded.

Every metric is defined here, once; the code that measures calls one of the small functions
below, never ``prometheus_client`` itself. Labels are bounded by construction: a request is
labelled with its URL pattern (``api/v1/memory/contexts/<id:context_id>``), never its path; a
search with its space and mode; a task with its registered name.

Processes: gunicorn's workers and Celery's pool processes each record their own values. When
``PROMETHEUS_MULTIPROC_DIR`` is set (``./engram run`` and docker-compose set it), every process
writes them to memory-mapped files in that directory and a scrape of any web worker adds them up
(prometheus-client's multiprocess mode). A process is identified by host name and pid, so
containers sharing the directory never write to each other's files. What is read at scrape time
(queue lengths, database connections) lives in ``core.metrics_scrape``.

This module imports no Django at import time: gunicorn's master loads it (``config/gunicorn.py``).
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics, values
from prometheus_client.multiprocess import mark_process_dead

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_HOST = socket.gethostname().replace("_", "-") or "host"


def multiprocess_dir() -> Path | None:
    """The directory of multiprocess mode, or None when each process keeps its own values."""
    value = os.environ.get(MULTIPROC_ENV)
    return Path(value) if value else None


def process_identifier(pid: int | None = None) -> str:
    """A process's name in the directory's file names: unique across containers sharing it."""
    return f"{_HOST}-{os.getpid() if pid is None else pid}"


def multiprocess_dir_clean(path: Path) -> None:
    """Remove what earlier processes wrote (at start, before any process of this run writes)."""
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink(missing_ok=True)


def process_exited(pid: int) -> None:
    """A web or pool process ended: its live gauges (requests, tasks in progress) stop counting.
    Counters and histograms stay: what it did still happened."""
    directory = multiprocess_dir()
    if directory is not None:
        mark_process_dead(process_identifier(pid), str(directory))


# A `_created` series per labelled child doubles the series for little use (and multiprocess mode
# has none).
disable_created_metrics()
_directory = multiprocess_dir()
if _directory is not None:
    # Before any metric is created: prometheus-client picks the value class at creation.
    _directory.mkdir(parents=True, exist_ok=True)
    values.ValueClass = values.MultiProcessValue(process_identifier)

# Seconds. Requests and stages: 0.5 ms to 30 s; tasks: 10 ms to their 30-minute limit.
FAST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
TASK_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 1800.0)

HTTP_REQUEST_SECONDS = Histogram(
    "engram_http_request_duration_seconds",
    "Time to answer an HTTP request, by URL pattern (route), method and status.",
    ["route", "method", "status"],
    buckets=REQUEST_BUCKETS,
)
HTTP_IN_PROGRESS = Gauge(
    "engram_http_requests_in_progress",
    "Requests being answered now (all web processes).",
    multiprocess_mode="livesum",
)
SEARCH_STAGE_SECONDS = Histogram(
    "engram_search_stage_duration_seconds",
    "A search stage's time (embed, vector, keyword, prf, fusion), by search space and mode.",
    ["source", "mode", "stage"],
    buckets=FAST_BUCKETS,
)
CONTEXT_STAGE_SECONDS = Histogram(
    "engram_context_stage_duration_seconds",
    "Context assembly's time by stage (each source read, embed, classify, pack; total: the "
    "whole assembly), by task type.",
    ["task_type", "stage"],
    buckets=FAST_BUCKETS,
)
EMBEDDING_CALLS = Counter(
    "engram_embedding_calls",
    "Calls to the embedding provider, by provider, kind (query, documents) and outcome.",
    ["provider", "kind", "outcome"],
)
EMBEDDING_TEXTS = Counter(
    "engram_embedding_texts",
    "Texts embedded, by provider and kind.",
    ["provider", "kind"],
)
EMBEDDING_SECONDS = Histogram(
    "engram_embedding_duration_seconds",
    "Time of one call to the embedding provider, by provider and kind.",
    ["provider", "kind"],
    buckets=FAST_BUCKETS,
)
CELERY_TASKS = Counter(
    "engram_celery_tasks",
    "Celery tasks run, by task name and outcome (success, failure, retry, ...).",
    ["task", "outcome"],
)
CELERY_TASK_SECONDS = Histogram(
    "engram_celery_task_duration_seconds",
    "A Celery task's run time, by task name and outcome.",
    ["task", "outcome"],
    buckets=TASK_BUCKETS,
)
CELERY_IN_PROGRESS = Gauge(
    "engram_celery_tasks_in_progress",
    "Celery tasks running now, by task name (all worker processes).",
    ["task"],
    multiprocess_mode="livesum",
)
DB_CONNECTIONS_OPENED = Counter(
    "engram_db_connections_opened",
    "Database connections opened by Engram's processes (persistent connections are reused "
    "for DATABASE_CONN_MAX_AGE seconds: a fast rise means churn).",
)
TURNS_ADDED = Counter(
    "engram_conversation_turns_added",
    "Conversation messages appended (seed 003's conversation_turns_added; Engram numbers one "
    "turn per message).",
)

# --- recording ---------------------------------------------------------------------------------

# Django's methods and WebDAV's are the ones a client might send; anything else is "other".
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"})


def request_observed(*, route: str, method: str, status: int, seconds: float) -> None:
    method = method if method in _METHODS else "other"
    HTTP_REQUEST_SECONDS.labels(route, method, str(status)).observe(seconds)


def search_stages_observed(*, source: str, mode: str, stage_ms: Mapping[str, float]) -> None:
    for stage, ms in stage_ms.items():
        SEARCH_STAGE_SECONDS.labels(source, mode, stage).observe(ms / 1000)


def context_observed(task_type: str, timings_ms: Mapping[str, float]) -> None:
    """Context assembly's timings (``ContextResult.timings_ms``), one observation per stage."""
    for stage, ms in timings_ms.items():
        CONTEXT_STAGE_SECONDS.labels(task_type, stage).observe(ms / 1000)


def turns_added(count: int) -> None:
    TURNS_ADDED.inc(count)


P = ParamSpec("P")
R = TypeVar("R")


def ranking_observed(rank: Callable[P, R]) -> Callable[P, R]:
    """Decorates the one ranking function every search space goes through (``rag.search.
    space_rank``): its stage timings (``Ranking.stage_ms``) by space and mode."""

    @functools.wraps(rank)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        ranking = rank(*args, **kwargs)
        space: Any = kwargs.get("space")
        search_stages_observed(
            source=getattr(space, "name", "unknown"),
            mode=str(kwargs.get("mode", "unknown")),
            stage_ms=getattr(ranking, "stage_ms", {}),
        )
        return ranking

    return wrapper


def embedding_timed(provider: str, kind: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorates a provider's ``embed_query`` (kind ``query``) or ``embed_documents``
    (``documents``, whose texts are its second argument): calls, texts, outcome and time."""

    def decorate(embed: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(embed)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            texts: Any = args[1] if kind == "documents" and len(args) > 1 else None
            started = time.perf_counter()
            outcome = "error"
            try:
                result = embed(*args, **kwargs)
                outcome = "ok"
                return result
            finally:
                EMBEDDING_SECONDS.labels(provider, kind).observe(time.perf_counter() - started)
                EMBEDDING_CALLS.labels(provider, kind, outcome).inc()
                count = 1 if texts is None or isinstance(texts, str) else len(texts)
                EMBEDDING_TEXTS.labels(provider, kind).inc(count)

        return wrapper

    return decorate


# --- Celery and database signals (connected once, by core's AppConfig.ready) -------------------

_task_started: dict[str, float] = {}
_task_lock = threading.Lock()


def _task_prerun(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if task_id is None or task is None:
        return
    with _task_lock:
        _task_started[task_id] = time.perf_counter()
    CELERY_IN_PROGRESS.labels(task.name).inc()


def _task_postrun(
    task_id: str | None = None, task: Any = None, state: str | None = None, **_: Any
) -> None:
    if task_id is None or task is None:
        return
    with _task_lock:
        started = _task_started.pop(task_id, None)
    if started is None:
        return  # its prerun was in another process (never expected)
    outcome = (state or "unknown").lower()
    CELERY_IN_PROGRESS.labels(task.name).dec()
    CELERY_TASKS.labels(task.name, outcome).inc()
    CELERY_TASK_SECONDS.labels(task.name, outcome).observe(time.perf_counter() - started)


def _pool_process_shutdown(**_: Any) -> None:
    process_exited(os.getpid())


def _connection_created(**_: Any) -> None:
    DB_CONNECTIONS_OPENED.inc()


def signals_connect() -> None:
    from celery.signals import task_postrun, task_prerun, worker_process_shutdown
    from django.db.backends.signals import connection_created

    task_prerun.connect(_task_prerun, weak=False, dispatch_uid="engram.metrics.prerun")
    task_postrun.connect(_task_postrun, weak=False, dispatch_uid="engram.metrics.postrun")
    worker_process_shutdown.connect(
        _pool_process_shutdown, weak=False, dispatch_uid="engram.metrics.shutdown"
    )
    connection_created.connect(
        _connection_created, weak=False, dispatch_uid="engram.metrics.connection"
    )
