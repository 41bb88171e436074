"""core.mcp.inline: a loop in this thread, stopped while the sync jobs it hands over run."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import anyio
import pytest

from core.mcp import inline

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="-")


def test_jobs_run_in_the_calling_thread_with_no_loop_running_and_the_callers_context() -> None:
    seen: list[tuple[str, bool, str]] = []

    def job(n: int) -> int:
        try:
            asyncio.get_running_loop()
            running = True
        except RuntimeError:
            running = False
        seen.append((threading.current_thread().name, running, REQUEST.get()))
        return n * 2

    async def main() -> list[int]:
        async with anyio.create_task_group() as tg:  # the SDK's own machinery
            results: list[int] = []

            async def one(n: int) -> None:
                results.append(await inline.run_sync(lambda: job(n)))

            for n in range(3):
                tg.start_soon(one, n)
        return sorted(results)

    REQUEST.set("r1")
    assert inline.run(main) == [0, 2, 4]
    assert seen == [(threading.current_thread().name, False, "r1")] * 3


def test_a_jobs_exception_reaches_the_coroutine_and_the_caller() -> None:
    def job() -> None:
        raise ValueError("from the job")

    async def main() -> None:
        await inline.run_sync(job)

    with pytest.raises(ValueError, match="from the job"):
        inline.run(main)


def test_outside_run_a_job_runs_through_sync_to_async() -> None:
    async def main() -> str:
        return await inline.run_sync(lambda: threading.current_thread().name)

    assert anyio.run(main) != threading.current_thread().name


def test_the_threads_loop_is_kept_and_left_clean_between_runs() -> None:
    started: list[asyncio.Task[None]] = []

    async def main() -> asyncio.AbstractEventLoop:
        # A task left waiting (as the transport's receive() is) is cancelled after the run.
        started.append(asyncio.ensure_future(asyncio.sleep(3600)))
        return asyncio.get_running_loop()

    first, second = inline.run(main), inline.run(main)
    assert first is second and not first.is_running() and not first.is_closed()
    assert all(task.cancelled() for task in started)
    assert not [task for task in asyncio.all_tasks(first) if not task.done()]
