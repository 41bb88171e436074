"""Conversation writes and the recent context (docs/benchmarks-log.md, "Message batches and mixed
load"; reads LoCoMo from /work/shared/data).

    uv run python bench/memory/conversation_write.py [--repeats 3] [--searchable 1000] \\
        [--history 10000]

1. Batches through ``POST /api/v1/memory/conversations/{id}/messages`` in-process, through the
   whole DRF stack (key authentication, parsing and validating every message, the append, the
   answer), the index task held back: what a request costs, the index following on a worker.
   Batches of 100 and 1,000 messages of 500 and 2,000 characters (LoCoMo's lines joined),
   ``--repeats`` times each: messages per second at the median and at the slowest batch (goal:
   at least 100 for 500 characters).
2. Time to searchable: a batch of ``--searchable`` messages of 500 characters, then the worker's
   run (``pending_index_run``, what ``memory.index_pending`` does after the commit): seconds
   until every message is found by keyword (the keyword pass) and by meaning (the embedding
   pass), with the local embedding model.
3. ``GET /api/v1/memory/conversations/{id}/messages?last=5`` through the whole DRF stack in a
   conversation of ``--history`` messages: p50 / p95 over 200 requests (goal <= 10 ms), and
   the read alone.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session

DATA = next(
    (
        up / "shared" / "data" / "locomo" / "locomo-dev.json"
        for up in Path(__file__).resolve().parents[2:5]
        if (up / "shared" / "data" / "locomo" / "locomo-dev.json").exists()
    ),
    Path("../shared/data/locomo/locomo-dev.json"),
)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def _plan(queryset: Any) -> str:
    from django.db import connection

    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        return " / ".join(row[0].strip() for row in cursor.fetchall()[:3])


def main() -> None:
    from rest_framework.test import APIClient

    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from memory.conversations import selectors, services

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--searchable", type=int, default=1000)
    parser.add_argument("--history", type=int, default=10_000)
    args = parser.parse_args()
    lines = [
        (turn["speaker"], turn["text"])
        for sample in json.loads(args.data.read_text(encoding="utf-8"))
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    source = itertools.cycle(lines)
    account = core_services.account_create(
        name="bench conversations", slug=f"bench-{uuid.uuid4().hex[:12]}"
    )
    tool = actor_for_account(account.pk)
    agent = core_services.agent_create(actor=tool, account=account, name="writer")
    actor = actor_for_agent(agent)

    def text(chars: int) -> tuple[str, str]:
        speaker, line = next(source)
        while len(line) < chars:
            line = f"{line} {next(source)[1]}"
        return speaker, line[:chars]

    def batch(size: int, chars: int = 0) -> list[services.MessageInput]:
        lines = [text(chars) if chars else next(source) for _ in range(size)]
        return [
            services.MessageInput("user", line, speaker, metadata={"n": n})
            for n, (speaker, line) in enumerate(lines)
        ]

    from unittest import mock

    from memory.long_term.services import pending
    from memory.models import PendingIndex

    _, writer_key = core_services.api_key_create(actor=tool, agent=agent, scopes=["write"])
    writer = APIClient(SERVER_NAME="localhost")
    writer.credentials(HTTP_AUTHORIZATION=f"Bearer {writer_key}")
    try:
        chat = services.conversation_create(actor=actor, title="writes", summary_every=0)
        url = f"/api/v1/memory/conversations/{chat.pk}/messages"
        print("batches through the API (the index follows on a worker):", flush=True)
        with mock.patch.object(services.transaction, "on_commit"):
            warm = {"messages": [{"role": "user", "content": "warm up"}]}
            assert writer.post(url, warm, format="json").status_code == 201
            for chars in (500, 2000):
                for size in (100, 1000):
                    seconds: list[float] = []
                    for _ in range(args.repeats):
                        body = json.dumps(
                            {
                                "messages": [
                                    {"role": m.role, "content": m.content, "name": m.name}
                                    for m in batch(size, chars)
                                ]
                            }
                        )
                        started = time.perf_counter()
                        answer = writer.post(url, body, content_type="application/json")
                        seconds.append(time.perf_counter() - started)
                        assert answer.status_code == 201, answer.content[:300]
                    print(
                        f"  {size:>5} messages of {chars} characters, {args.repeats} batches: "
                        f"median {statistics.median(seconds):.2f} s = "
                        f"{size / statistics.median(seconds):.0f} messages/s, slowest "
                        f"{max(seconds):.2f} s = {size / max(seconds):.0f} messages/s",
                        flush=True,
                    )
            fresh = services.conversation_create(actor=actor, title="fresh", summary_every=0)
            started = time.perf_counter()
            services.messages_append(
                actor=actor, conversation=fresh, messages=batch(args.searchable, 500)
            )
            stored = time.perf_counter() - started
        started = time.perf_counter()
        keyword_only = mock.patch.object(pending, "_embed_batch", return_value=0)
        with keyword_only:
            pending.pending_index_run(context_id=fresh.context_id, budget_seconds=3600)
        by_keyword = time.perf_counter() - started
        pending.pending_index_all(context_id=fresh.context_id)
        by_meaning = time.perf_counter() - started
        assert not PendingIndex.objects.filter(context_id=fresh.context_id).exists()
        print(
            f"time to searchable, {args.searchable} messages of 500 characters: stored in "
            f"{stored:.1f} s; found by keyword after {by_keyword:.1f} s more "
            f"({args.searchable / by_keyword:.0f} messages/s), by meaning after {by_meaning:.1f} s "
            f"({args.searchable / (by_meaning - by_keyword):.1f} messages/s embedded)",
            flush=True,
        )
        long = services.conversation_create(actor=actor, title="history", summary_every=0)
        started = time.perf_counter()
        # Not indexed (no task sent): reading the last turns never touches the index.
        with mock.patch.object(services.transaction, "on_commit"):
            for _ in range(args.history // 1000):
                services.messages_append(actor=actor, conversation=long, messages=batch(1000))
        print(f"history: {args.history} messages written in {time.perf_counter() - started:.0f} s")
        from django.db import connection

        with connection.cursor() as cursor:  # fresh rows: the statistics a live table has
            cursor.execute("ANALYZE memory_memoryentry")
        _, secret = core_services.api_key_create(actor=tool, agent=agent, scopes=["read"])
        client = APIClient(SERVER_NAME="localhost")
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        url = f"/api/v1/memory/conversations/{long.pk}/messages?last=5"
        for _ in range(20):  # warm up
            assert client.get(url).status_code == 200
        recent: list[float] = []
        for _ in range(200):
            started = time.perf_counter()
            answer = client.get(url)
            recent.append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200
        turns = [m["turn_number"] for m in answer.json()["results"]]
        assert turns == list(range(args.history - 4, args.history + 1)), turns
        print(
            f"GET messages?last=5 in a {args.history}-message conversation, 200 requests: "
            f"p50 {statistics.median(recent):.2f} ms, p95 {_p95(recent):.2f} ms"
        )
        selector: list[float] = []
        for _ in range(200):
            started = time.perf_counter()
            list(selectors.messages_recent(long, 5))
            selector.append((time.perf_counter() - started) * 1000)
        print(
            f"of which the read (messages_recent, 200 calls): p50 {statistics.median(selector):.2f}"
            f" ms, p95 {_p95(selector):.2f} ms; plan: "
            f"{_plan(selectors.messages_recent_query(long, 5))}"
        )
    finally:
        core_services.account_delete(actor=tool, account=account)


if __name__ == "__main__":
    started = time.perf_counter()
    with django_session():
        main()
    print(f"wall {time.perf_counter() - started:.0f} s")
