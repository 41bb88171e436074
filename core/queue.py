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
