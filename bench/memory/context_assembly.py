"""Context assembly at scale: ``context_assemble`` latency and ``POST /api/v1/memory/context``
throughput (issue 18, "Done means"; docs/benchmarks-log.md, "Context assembly").

The account ``engram-bench-context`` (built once, reused by later runs; ``--no-build`` only
measures) has one agent ``bench-context`` with:

- 100,000 long-term memories in the agent's own memory context: sentences of BEIR SciFact
  abstracts, a thread per abstract, written through ``entries_write`` in batches of 500, exactly
  as bench/memory/memory_long_term.py builds its context;
- 10,000 knowledge items in four bases (two factual, one procedural, one conceptual): passages
  of three consecutive SciFact sentences, each written through ``knowledge_item_put`` one at a
  time (the only write path; a new item each: version 1, BM25 postings, embedding, graph node);
- a 1,000-message conversation: the turns of the LoCoMo development conversations in order,
  repeated (each pass a year later), appended through ``messages_append`` a session at a time,
  each append followed by ``conversation_follow_up_run`` (the rolling summary, as the worker
  does).

Data is read in place from ../shared/data (SciFact and LoCoMo; the product never reads it).
During the build every embedding comes from bench/memory/memory_long_term.py's word-hash stand-in
(same model id and dimensions as the configured model; the local model would take hours).

Latency: the LoCoMo questions (categories 1-4, both conversations, the first ``--queries``)
through ``context_assemble`` in process, with the conversation, budget 2,000, the task type
classified; the query is embedded by the same stand-in, so ``embed`` is ~0.1 ms, and the figure
without it (``total - embed``) is reported next to the whole call's. After the warm-up the
process's heap is frozen (``core.heap``), as the web server's workers freeze theirs at start-up;
``--no-freeze`` measures without.

Throughput: the web server as ``./engram run`` serves it (gunicorn, gthread workers,
config.wsgi; bench/memory/memory_working.py's ``start_web``), 8 client threads each with its own
keep-alive connection and the agent's API key, ``POST /api/v1/memory/context`` for ``--seconds``
after a warm-up. The server embeds each query with the configured model (local ONNX), so the
query embedding is included there.

    uv run python bench/memory/context_assembly.py [--no-build] [--queries 200] [--seconds 30]
        [--clients 8] [--profile] [--skip-http] [--no-freeze]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import io
import itertools
import json
import os
import pstats
import random
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_session
from bench.memory.memory_long_term import _SENTENCE_END, WordHashEmbeddings
from bench.memory.memory_working import free_port, start_web

SLUG, AGENT, TITLE = "engram-bench-context", "bench-context", "bench-context-1000"
BASES = (
    ("bench-facts", "factual"),
    ("bench-procedures", "procedural"),
    ("bench-concepts", "conceptual"),
    ("bench-facts-2", "factual"),
)
BATCH = 500
LOCOMO = SHARED_DATA / "locomo" / "locomo-dev.json"
SCIFACT = SHARED_DATA / "scifact"
START = datetime(2023, 1, 1, 9, tzinfo=UTC)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(SHARED_DATA), help="../shared/data")
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--knowledge", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=1_000)
    parser.add_argument("--no-build", action="store_true", help="measure the account as it is")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured queries first")
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the measured queries (to stderr)"
    )
    parser.add_argument("--skip-http", action="store_true", help="no throughput run")
    parser.add_argument(
        "--no-freeze",
        action="store_true",
        help="in process: leave the heap to the collector (the server freezes it at start-up)",
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2, help="web workers (WEB_CONCURRENCY)")
    args = parser.parse_args()
    global LOCOMO, SCIFACT
    LOCOMO = Path(args.data) / "locomo" / "locomo-dev.json"
    SCIFACT = Path(args.data) / "scifact"
    os.environ["API_THROTTLE_READ"] = os.environ["API_THROTTLE_WRITE"] = "1000000/minute"
    with django_session():
        report = run(args)
    print(json.dumps(report, indent=2))


def _sentences() -> list[tuple[str, list[str]]]:
    from rag.evaluation import load_beir

    dataset = load_beir(SCIFACT, "train")
    return [
        (doc_id, [s for s in _SENTENCE_END.split(f"{doc.title}. {doc.text}") if s.strip()])
        for doc_id, doc in dataset.corpus.items()
    ]


def build(args: argparse.Namespace, actor: Any, stand_in: WordHashEmbeddings) -> dict[str, float]:
    """Whatever is missing of the account's memories, knowledge items and conversation."""
    from tqdm import tqdm

    import core.embeddings
    from memory.context.evaluation.locomo import load_locomo
    from memory.conversations import services as conv
    from memory.knowledge import services as knowledge
    from memory.long_term import services as ltm
    from memory.long_term.services.pending import pending_index_all
    from memory.models import Conversation, KnowledgeItem, KnowledgeStore

    seconds: dict[str, float] = {}
    sentences = _sentences()
    with mock.patch.object(core.embeddings._cached, "get", return_value=stand_in):
        # 1. Memories, as bench/memory/memory_long_term.py writes them.
        started = time.perf_counter()
        context = ltm.agent_memory_context(actor=actor)
        written, done = context.entry_count, 0
        pending: list[ltm.EntryInput] = []
        with tqdm(total=args.memories, initial=written, desc="memories") as progress:
            for number in range(10_000):
                if written >= args.memories:
                    break
                for index, (doc_id, parts) in enumerate(sentences):
                    for position, text in enumerate(parts):
                        done += 1
                        if done <= written or written + len(pending) >= args.memories:
                            continue
                        day = timedelta(days=index % 700, hours=number)
                        pending.append(
                            ltm.EntryInput(
                                content=text,
                                thread=f"p{number}:{doc_id}",
                                position=position,
                                occurred_at=START + day,
                            )
                        )
                        if len(pending) == BATCH or written + len(pending) >= args.memories:
                            ltm.entries_write(
                                actor=actor, context=context, items=pending, graph_link=False
                            )
                            written += len(pending)
                            progress.update(len(pending))
                            pending = []
        seconds["memories"] = round(time.perf_counter() - started, 1)

        # 2. Knowledge items, round robin over the bases.
        started = time.perf_counter()
        for name, knowledge_type in BASES:
            if not KnowledgeStore.objects.filter(account_id=actor.account_id, name=name).exists():
                knowledge.store_create(actor=actor, name=name, knowledge_type=knowledge_type)
        passages = [
            (f"{doc_id}-{i // 3}", " ".join(parts[i : i + 3]))
            for doc_id, parts in sentences
            for i in range(0, len(parts), 3)
        ][: args.knowledge]
        have = KnowledgeItem.objects.filter(account_id=actor.account_id).count()
        with tqdm(total=len(passages), initial=have, desc="knowledge") as progress:
            for number, (key, content) in enumerate(passages[have:], start=have):
                knowledge.knowledge_item_put(
                    actor=actor, base=BASES[number % len(BASES)][0], key=key, content=content
                )
                progress.update(1)
        seconds["knowledge"] = round(time.perf_counter() - started, 1)

        # 3. The conversation, a LoCoMo session per append.
        started = time.perf_counter()
        chat = Conversation.objects.filter(agent=actor.agent, title=TITLE).first()
        if chat is None:
            chat = conv.conversation_create(actor=actor, title=TITLE)
        messages: list[tuple[tuple[int, str, int], conv.MessageInput]] = []
        samples = load_locomo(LOCOMO)
        for number in range(1 + args.messages // sum(len(s.turns) for s in samples)):
            for sample in samples:
                for turn in sample.turns:
                    when = turn.occurred_at and turn.occurred_at + timedelta(days=365 * number)
                    role = "user" if turn.speaker == sample.speakers[0] else "assistant"
                    metadata = {"dia_id": turn.dia_id, "pass": number}
                    message = conv.MessageInput(role, turn.text, turn.speaker, when, metadata)
                    messages.append(((number, sample.sample_id, turn.session), message))
        missing = messages[chat.message_count : args.messages]
        for _, session in itertools.groupby(missing, key=lambda pair: pair[0]):
            batch = [message for _, message in session]
            conv.messages_append(actor=actor, conversation=chat, messages=batch)
            pending_index_all(context_id=chat.context_id)  # what the worker does after it
            conv.conversation_follow_up_run(conversation_id=chat.pk)
        seconds["conversation"] = round(time.perf_counter() - started, 1)
    return seconds


def _account() -> tuple[Any, Any]:
    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from core.models import Account, Agent

    account = Account.objects.filter(slug=SLUG).first() or core_services.account_create(
        name="Engram benchmarks: context assembly", slug=SLUG
    )
    tool = actor_for_account(account.pk)
    agent = Agent.objects.filter(account=account, name=AGENT).first() or (
        core_services.agent_create(actor=tool, account=account, name=AGENT)
    )
    return tool, actor_for_agent(agent)


def _prepare() -> None:
    """Statistics and buffers as a long-running server would have them: every table vacuumed
    and analysed, as autovacuum leaves them once a bulk load settles (the three tables alone
    left the conversation's and the knowledge stores' statistics stale: p95 88-101 ms right
    after a build, 62 ms once the whole database was analysed), and what an assembly reads in
    PostgreSQL's buffers."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        cursor.execute(
            "SELECT pg_prewarm(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')"
            " AND (c.relname LIKE 'memory_%%' OR c.relname LIKE 'ltm_%%'"
            " OR c.relname LIKE 'knowledge%%')"
        )


def _questions(count: int) -> list[str]:
    from memory.context.evaluation.locomo import load_locomo

    found = [
        q.question
        for sample in load_locomo(LOCOMO)
        for q in sample.questions
        if q.evidence and q.category <= 4
    ]
    random.Random(18).shuffle(found)
    return found[:count]


def _ms(values: list[float]) -> dict[str, float]:
    from rag.evaluation import percentiles

    return {k: round(v, 2) for k, v in percentiles(values, (50, 95, 99)).items()}


def latency(args: argparse.Namespace, actor: Any, chat_id: int, stand_in: Any) -> dict[str, Any]:
    import core.embeddings
    from memory.context.assembly import ContextRequest, context_assemble

    queries = _questions(args.queries + args.warmup)
    measured, warmup = queries[: args.queries], queries[args.queries :]
    timings: list[dict[str, float]] = []
    calls: list[float] = []
    tokens: list[int] = []
    task_types: dict[str, int] = {}

    def ask(query: str) -> None:
        started = time.perf_counter()
        answer = context_assemble(
            actor=actor,
            request=ContextRequest(query=query, conversation_id=chat_id, token_budget=args.budget),
        )
        calls.append((time.perf_counter() - started) * 1000)
        timings.append(answer.timings_ms)
        tokens.append(answer.tokens)
        task_types[answer.task_type] = task_types.get(answer.task_type, 0) + 1

    profile = cProfile.Profile() if args.profile else None
    with mock.patch.object(core.embeddings._cached, "get", return_value=stand_in):
        for query in warmup:
            ask(query)
        if not args.no_freeze:
            # As the web server's workers do once started (config/wsgi.py, core.heap).
            from core.heap import freeze_startup_objects

            freeze_startup_objects()
        for collected in (timings, calls, tokens):
            collected.clear()
        task_types.clear()
        if profile is not None:
            profile.enable()
        for query in measured:
            ask(query)
        if profile is not None:
            profile.disable()
    names = sorted(
        {name for t in timings for name in t}, key=lambda n: -sum(t.get(n, 0) for t in timings)
    )
    report: dict[str, Any] = {
        "queries": len(measured),
        "budget": args.budget,
        "assembly_ms_total_minus_embed": _ms([t["total"] - t["embed"] for t in timings]),
        "assembly_ms_total": _ms([t["total"] for t in timings]),
        "call_ms_wall": _ms(calls),
        "timings_ms_mean": {
            n: round(sum(t.get(n, 0) for t in timings) / len(timings), 2) for n in names
        },
        "tokens_max": max(tokens),
        "task_types": task_types,
    }
    if profile is not None:
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out)
        stats.sort_stats("cumulative").print_stats(60)
        stats.sort_stats("tottime").print_stats(30)
        print(out.getvalue(), file=sys.stderr)  # the JSON report stays on stdout
    return report


def throughput(args: argparse.Namespace, key: str, chat_id: int) -> dict[str, Any]:
    queries = _questions(10_000)
    port = free_port()
    web = start_web(port, args.workers)
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    state = {"measuring": False, "stop": False}

    def client(number: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        i = number
        while not state["stop"]:
            body = {"query": queries[i % len(queries)], "conversation_id": chat_id}
            body["token_budget"] = args.budget
            i += args.clients
            started = time.perf_counter()
            conn.request("POST", "/api/v1/memory/context", body=json.dumps(body), headers=headers)
            response = conn.getresponse()
            data = response.read()
            elapsed = (time.perf_counter() - started) * 1000
            with lock:
                if response.status != 200:
                    errors.append(f"{response.status} {data[:200]!r}")
                elif state["measuring"]:
                    latencies.append(elapsed)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(10)  # warm-up: every worker thread has loaded the model and its caches
        with lock:
            state["measuring"] = True
        started = time.perf_counter()
        load_before = os.getloadavg()
        time.sleep(args.seconds)
        with lock:
            state["measuring"] = False
            wall = time.perf_counter() - started
            count = len(latencies)
        state["stop"] = True
        for thread in threads:
            thread.join(timeout=120)
    finally:
        web.terminate()
        web.wait(timeout=30)
    return {
        "clients": args.clients,
        "seconds": round(wall, 1),
        "contexts": count,
        "contexts_per_s": round(count / wall, 1),
        "latency_ms": _ms(latencies[:count]),
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
        "web": f"gunicorn gthread, config.wsgi, {args.workers} workers x 4 threads",
        "load_average_before": [round(x, 2) for x in load_before],
        "query_embedding": "included (the server's configured model)",
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    from core import services as core_services
    from core.embeddings import get_embedding_provider
    from memory.models import Conversation, KnowledgeItem

    tool, actor = _account()
    provider = get_embedding_provider()
    stand_in = WordHashEmbeddings(provider.model_id, provider.dimensions)
    report: dict[str, Any] = {"data": f"{SCIFACT} and {LOCOMO} (../shared/data)"}
    if not args.no_build:
        report["build_seconds_this_run"] = build(args, actor, stand_in)
    chat = Conversation.objects.get(agent=actor.agent, title=TITLE)
    from memory.long_term import services as ltm

    report["account"] = {
        "memories": ltm.agent_memory_context(actor=actor).entry_count,
        "knowledge_items": KnowledgeItem.objects.filter(account_id=actor.account_id).count(),
        "messages": chat.message_count,
    }
    _prepare()
    report["load_average_before"] = [round(x, 2) for x in os.getloadavg()]
    report["in_process"] = latency(args, actor, chat.pk, stand_in)
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    if not args.skip_http:
        _, key = core_services.api_key_create(
            actor=tool, agent=actor.agent, scopes=["read", "write"], name="bench/context_assembly"
        )
        report["http"] = throughput(args, key, chat.pk)
        report["http"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    report["cpu"] = f"{os.cpu_count()} cores"
    return report


if __name__ == "__main__":
    main()
