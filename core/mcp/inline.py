"""An event loop in the request's own thread, for the SDK's transport, with the tools' Django code
run in that thread between the loop's steps.

Django refuses to run its database code while an event loop runs in the thread, and the SDK's
transport is asynchronous. ``asgiref.async_to_sync`` answers that by starting a thread per call
for the loop (about 0.3 ms a request here, several under load: docs/benchmarks-log.md, "MCP").
Here the loop runs in the calling thread instead, and a coroutine that needs Django hands a
function to ``run_sync``: the loop stops, the function runs in this thread (no loop running:
Django is content; the request's connection and its request-finished clean-up apply), and the
loop resumes with its result. Nothing else runs meanwhile, which is what one request needs.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_RUNNER: contextvars.ContextVar[_Inline | None] = contextvars.ContextVar(
    "mcp_inline_runner", default=None
)


class _Inline:
    def __init__(self) -> None:
        self.jobs: deque[tuple[Callable[[], Any], contextvars.Context, asyncio.Future[Any]]] = (
            deque()
        )
        self.posted: asyncio.Event | None = None

    async def _until_job_or(self, main: asyncio.Task[Any]) -> None:
        """Return when ``main`` is done or a job waits."""
        assert self.posted is not None
        if self.jobs:
            return
        self.posted.clear()
        waiter = asyncio.ensure_future(self.posted.wait())
        try:
            await asyncio.wait({main, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()

    def run_jobs(self) -> None:
        while self.jobs:
            job, context, future = self.jobs.popleft()
            try:
                result = context.run(job)
            except BaseException as exc:  # handed to the awaiting coroutine
                future.set_exception(exc)
            else:
                future.set_result(result)


_LOOPS = threading.local()


def _loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop, made on first use and kept (not running between requests):
    making and closing one per request costs more than the rest of the loop's work."""
    loop: asyncio.AbstractEventLoop | None = getattr(_LOOPS, "loop", None)
    if loop is None or loop.is_closed():
        loop = _LOOPS.loop = asyncio.new_event_loop()
    return loop


def run(coroutine: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``coroutine()`` to completion on this thread's event loop; whatever it left
    behind (a task still waiting, an async generator) is cancelled and closed before this
    returns, so nothing carries over to the next request."""
    inline = _Inline()
    loop = _loop()

    async def start() -> asyncio.Task[T]:
        inline.posted = asyncio.Event()
        return asyncio.ensure_future(coroutine())

    token = _RUNNER.set(inline)
    try:
        main = loop.run_until_complete(start())
    finally:
        _RUNNER.reset(token)
    try:
        while True:
            loop.run_until_complete(inline._until_job_or(main))
            inline.run_jobs()
            if main.done():
                return main.result()
    finally:
        _settle(loop)


def _settle(loop: asyncio.AbstractEventLoop) -> None:
    left = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in left:
        task.cancel()
    if left:
        loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())


async def run_sync(function: Callable[[], T]) -> T:
    """``function()`` in the thread that called ``run``, with the loop stopped; outside
    ``run`` (the stdio server's loop), in the one thread Django's code uses there."""
    inline = _RUNNER.get()
    if inline is None or inline.posted is None:
        from asgiref.sync import sync_to_async

        return await sync_to_async(function, thread_sensitive=True)()
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    inline.jobs.append((function, contextvars.copy_context(), future))
    inline.posted.set()
    return await future
