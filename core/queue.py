"""Celery's queues by role, and sending tasks without failing a request whose data is committed.

Every task has one of three queues (``QUEUES``), declared once where the task is: ``queued_task``
(a ``shared_task`` with its queue) or ``core.jobs.periodic_job`` (maintenance unless it says
otherwise). ``task_route`` is Celery's router (``CELERY_TASK_ROUTES``): it reads the table those
declarations fill, so a send by name (beat's, ``app.send_task``) lands on the same queue as
``task.delay``. docs/operations.md, "Queues and workers", says which task goes where and how to run
a worker per queue.


A write sends its follow-up work with ``transaction.on_commit``, so a worker never looks for a
row that is not there yet. The callback runs after the commit: if the broker (Valkey/Redis)
cannot be reached then, raising would turn a saved write into a 500 and lose the work. Here the
failure is logged and the send reports it; what must happen anyway is recorded durably by the
write itself (a status or a timestamp in the same transaction: ``Document.status`` pending,
``Page.sync_pending_at``) and a periodic job sweeps it up (``rag.recover_documents``,
``content.sync_pending``). ``on_failure`` may record more after the fact (it runs outside the
transaction, which has committed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import redis
from celery import shared_task
from django.db import transaction
from kombu.exceptions import OperationalError

logger = logging.getLogger("engram.queue")

# What sending a task raises when the broker is unreachable (kombu wraps the transport's errors;
# the Redis ones are listed for a transport that does not).
BROKER_ERRORS: tuple[type[Exception], ...] = (
    OperationalError,
    redis.ConnectionError,
    redis.TimeoutError,
)


# --- queues by role -------------------------------------------------------------------------------

# Work a request waits for, or a user expects within seconds: indexing a message or memory just
# written, a saved page's links, a conversation's summary and extraction.
INTERACTIVE = "interactive"
# Bulk work measured in minutes: documents' extraction, chunking and embedding, their graph
# links, re-syncs of many pages, exports and imports.
INGESTION = "ingestion"
# Periodic upkeep (every ``periodic_job``), clustering, graph communities, flushes.
MAINTENANCE = "maintenance"
QUEUES: tuple[str, ...] = (INTERACTIVE, INGESTION, MAINTENANCE)
# Where a task nobody routed goes (Celery's own, a task of a library).
DEFAULT_QUEUE = INTERACTIVE

# Task name -> queue, as ``queued_task`` and ``periodic_job`` declared it.
_ROUTES: dict[str, str] = {}


def task_queue_declare(name: str, queue: str) -> None:
    """Record the queue of the task ``name`` (once: a second, different queue is an error)."""
    if queue not in QUEUES:
        raise ValueError(f"{name}: unknown queue {queue!r} (one of {', '.join(QUEUES)})")
    known = _ROUTES.setdefault(name, queue)
    if known != queue:
        raise ValueError(f"{name} is routed to {known!r} already, not {queue!r}")


def queued_task(*, queue: str, **options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``shared_task(**options)`` on the queue ``queue``: the one place the task's queue is
    named. The task's name is ``<module>.<function>`` unless ``name`` is given."""

    def declare(body: Callable[..., Any]) -> Any:
        name = options.pop("name", None) or f"{body.__module__}.{body.__name__}"
        task_queue_declare(name, queue)
        return shared_task(name=name, **options)(body)

    return declare


def task_queues() -> dict[str, str]:
    """Every Engram task's queue, by task name (importing every app's ``tasks`` first)."""
    from core.jobs import app_modules

    for _ in app_modules("tasks"):
        pass
    return dict(sorted(_ROUTES.items()))


def task_route(
    name: str, args: Any = None, kwargs: Any = None, options: Any = None, **_: Any
) -> dict[str, str] | None:
    """Celery's router: the queue declared for ``name``; None (the default queue) for a task
    Engram does not declare. A name not seen yet imports the apps' tasks modules once (a
    process that sends by name before importing them)."""
    queue = _ROUTES.get(name)
    if queue is None and ".tasks." in name:
        from core.jobs import ENGRAM_APPS

        if name.split(".")[0] in ENGRAM_APPS:
            queue = task_queues().get(name)
    return {"queue": queue} if queue is not None else None


# --- sending -------------------------------------------------------------------------------------


def task_send(task: Any, *args: Any, **kwargs: Any) -> bool:
    """``task.delay(*args, **kwargs)``; False, logged, when the broker cannot be reached."""
    try:
        task.delay(*args, **kwargs)
    except BROKER_ERRORS as exc:
        logger.warning(
            "broker unavailable: %s not queued (%s); a periodic job will pick the work up",
            getattr(task, "name", task),
            exc,
        )
        return False
    return True


def task_send_on_commit(
    task: Any, *args: Any, on_failure: Callable[[], None] | None = None, **kwargs: Any
) -> None:
    """Send ``task`` once the current transaction commits (at once outside one), tolerating a
    broker that is down: see the module's docstring."""

    def send() -> None:
        if not task_send(task, *args, **kwargs) and on_failure is not None:
            on_failure()

    transaction.on_commit(send)


# Kombu's Redis transport keeps a queue's messages of priority p > 0 in "<queue>\x06\x16<p>".
_PRIORITY_SEPARATOR = "\x06\x16"
_PRIORITY_STEPS = (3, 6, 9)


def queue_names() -> list[str]:
    """The queues Celery sends to: the default one and every declared or routed one (with
    Engram's settings, ``QUEUES``)."""
    from celery import current_app  # the project's app (core never imports config)

    conf = current_app.conf
    names = {str(conf.task_default_queue or "celery")}
    for queue in conf.task_queues or ():
        names.add(str(getattr(queue, "name", queue)))
    for route in (conf.task_routes or {}).values() if isinstance(conf.task_routes, dict) else ():
        if isinstance(route, dict) and route.get("queue"):
            names.add(str(route["queue"]))
    return sorted(names)


def queue_lengths() -> dict[str, int]:
    """Messages waiting in each queue (``/metrics`` and the admin's home), read from the Redis
    broker in one round trip; raises the broker's error when it cannot be reached."""
    from celery import current_app

    names = queue_names()
    with current_app.connection_for_read() as conn:
        client: Any = getattr(conn.default_channel, "client")  # noqa: B009  (Redis only)
        pipe = client.pipeline(transaction=False)
        for name in names:
            pipe.llen(name)
            for step in _PRIORITY_STEPS:
                pipe.llen(f"{name}{_PRIORITY_SEPARATOR}{step}")
        lengths = pipe.execute()
    per_queue = 1 + len(_PRIORITY_STEPS)
    return {
        name: int(sum(lengths[index * per_queue : (index + 1) * per_queue]))
        for index, name in enumerate(names)
    }
