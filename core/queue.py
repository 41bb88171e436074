"""Sending Celery tasks without failing a request whose data is committed.

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
    """The queues Celery sends to: the default one and every declared or routed one."""
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
