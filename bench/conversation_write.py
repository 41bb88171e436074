"""Conversation writes and the recent context (docs/benchmarks.md, "Conversation extraction").

    uv run python bench/conversation_write.py [--batches 20] [--history 10000]

1. A 100-message batch write (``messages_append``: numbering under the append lock, indexed
   text with neighbours, the local embedding model, BM25 postings), ``--batches`` times into one
   conversation, LoCoMo's lines as content: p50 / p95 per batch and messages per second at the
   p95 (seed 003's target: 100 turns/s).
2. ``GET /api/v1/memory/conversations/{id}/messages?last=5`` through the whole DRF stack (key
   authentication, the view, serialisation) in a conversation of ``--history`` messages: p50 /
   p95 over 200 requests (goal <= 10 ms). The history is written in batches of 1,000, its
   vectors standing in (the read never touches them).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from _setup import django_session

DATA = next(
    (
        up / "shared" / "data" / "locomo" / "locomo-dev.json"
        for up in Path(__file__).resolve().parents[1:4]
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
    from memory.selectors import conversations as selectors
    from memory.services import conversations as services

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--batches", type=int, default=20)
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

    def batch(size: int) -> list[services.MessageInput]:
        return [
            services.MessageInput("user", text, speaker, metadata={"n": n})
            for n, (speaker, text) in zip(range(size), source, strict=False)
        ]

    try:
        chat = services.conversation_create(actor=actor, title="writes", summary_every=0)
        ms: list[float] = []
        for _ in range(args.batches):
            messages = batch(100)
            started = time.perf_counter()
            services.messages_append(actor=actor, conversation=chat, messages=messages)
            ms.append((time.perf_counter() - started) * 1000)
        print(
            f"100-message batch write (with embeddings), {args.batches} batches: "
            f"p50 {statistics.median(ms):.0f} ms, p95 {_p95(ms):.0f} ms "
            f"= {100 / (_p95(ms) / 1000):.0f} messages/s at the p95",
            flush=True,
        )
        # The same writes with the embeddings standing in (bench/memory_long_term.py's word-hash
        # vectors, same model id and dimensions): what the database path alone costs.
        from unittest import mock

        from memory_long_term import WordHashEmbeddings

        from memory.services.long_term import index as ltm_index

        real = ltm_index.get_embedding_provider()
        stand_in = WordHashEmbeddings(real.model_id, real.dimensions)
        plain = services.conversation_create(actor=actor, title="plain", summary_every=0)
        bare: list[float] = []
        with mock.patch.object(ltm_index, "get_embedding_provider", return_value=stand_in):
            for _ in range(args.batches):
                messages = batch(100)
                started = time.perf_counter()
                services.messages_append(actor=actor, conversation=plain, messages=messages)
                bare.append((time.perf_counter() - started) * 1000)
        print(
            f"100-message batch write (without embeddings: stand-in vectors), {args.batches} "
            f"batches: p50 {statistics.median(bare):.0f} ms, p95 {_p95(bare):.0f} ms "
            f"= {100 / (_p95(bare) / 1000):.0f} messages/s at the p95",
            flush=True,
        )
        long = services.conversation_create(actor=actor, title="history", summary_every=0)
        started = time.perf_counter()
        # The history's vectors stand in too: reading the last turns never touches them.
        with mock.patch.object(ltm_index, "get_embedding_provider", return_value=stand_in):
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
