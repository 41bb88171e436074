"""Graph-mode memory search latency on a 5,000-turn LoCoMo account (issue 36: p95 <= 40 ms, the
query embedding excluded), next to hybrid's.

The turns: the LoCoMo dev conversations (read in place from --dataset, the shared data beside
the project) written again and again into one long-term context, each pass its own sessions,
until --turns entries, through ``memory.long_term.services.entries_write`` (postings, windows,
statistics, HNSW: what the services build); the context's graph linked as ``memory_eval --mode
graph`` links it (``context_graph_index``: the speakers are hubs, mentioned by their turns).
Only the embeddings stand in (``bench/memory/memory_long_term.py``'s word-hash provider, same model
id and dimensions): the measured searches pass the stand-in's vector of each question, so the
figures exclude the query embedding. Before each search the local model embeds the question, as
the search's own embedding would (untimed): its token states, kept by that one pass, are what
late interaction reads of the query. The entries' readings (``MemoryEntryReading``) are written
with them, or, for a context built before readings existed, read once before the searches.
Questions: the conversations' own, --queries of them.

    uv run python bench/memory/memory_graph_latency.py \\
        --dataset ../shared/data/locomo/locomo-dev.json
        [--turns 5000] [--queries 200] [--modes hybrid,graph]
        [--set memory.spaces.entries.late_weight=0]
        [--variant "memory.spaces.entries.units_read_per_search=0" --variant ...]

Prints one JSON object (p50 / p95 / p99 per mode, and the graph's size). The context is reused
by later runs (account ``engram-bench``, context ``locomo-5k``).

``--variant "NAME=VALUE;NAME=VALUE"`` (repeated) compares graph-mode variants interleaved: each
question is asked once per variant in turn, so the machine's drift falls on all alike. Each
variant reports p50 / p95, its units stage's p50 / p95 and a Recall@10 on the questions of
categories 1-4: the share of a question's evidence turns (any pass's copy, of its own
conversation) among the hits (weak evidence: stand-in embeddings, each turn written many times).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_session, settle_tables
from bench.memory.memory_long_term import SEARCH_TABLES, WordHashEmbeddings, bench_actor

GRAPH_TABLES = ("rag_graphnode", "rag_graphedge", "rag_graphmention")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=str(SHARED_DATA / "locomo" / "locomo-dev.json"))
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--modes", default="hybrid,graph")
    parser.add_argument("--context", default="locomo-5k")
    parser.add_argument(
        "--set", action="append", default=[], help="NAME=JSON value (a tunable: docs/tuning.md)"
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="graph-mode variants compared interleaved: assignments NAME=JSON separated by ';'",
    )
    args = parser.parse_args()
    with django_session():
        from bench.rag.recall_sweep import variant_set

        with variant_set(args.set):
            print(json.dumps({"set": args.set, **run(args)}, indent=2))


def build(actor: Any, context: Any, args: argparse.Namespace, stand_in: Any) -> float:
    """Write the conversations' turns until the context holds --turns entries, then link them
    to the graph; the seconds it took (0 when an earlier run built it)."""
    from pathlib import Path
    from unittest import mock

    import core.embeddings
    from memory.context.evaluation.locomo import load_locomo
    from memory.long_term import services as ltm
    from memory.long_term.services.graph_links import context_graph_index

    if context.entry_count >= args.turns:
        return 0.0
    started = time.perf_counter()
    conversations = load_locomo(Path(args.dataset))
    items: list[ltm.EntryInput] = []
    rounds = 0
    while len(items) < args.turns:
        for conversation in conversations:
            for turn in conversation.turns:
                if len(items) >= args.turns:
                    break
                items.append(
                    ltm.EntryInput(
                        content=turn.text,
                        occurred_at=(
                            turn.occurred_at + timedelta(days=400 * rounds)
                            if turn.occurred_at
                            else None
                        ),
                        thread=f"{conversation.sample_id}-{rounds}-session_{turn.session}",
                        position=turn.position,
                        speaker=turn.speaker,
                        metadata={"dia_id": turn.dia_id, "round": rounds},
                    )
                )
        rounds += 1
    with mock.patch.object(core.embeddings._cached, "get", return_value=stand_in):
        for start in range(0, len(items), 500):
            ltm.entries_write(
                actor=actor, context=context, items=items[start : start + 500], graph_link=False
            )
        context.refresh_from_db()
        context_graph_index(actor=actor, context=context)
    return time.perf_counter() - started


def run(args: argparse.Namespace) -> dict[str, Any]:
    from pathlib import Path

    from core.embeddings import get_embedding_provider
    from memory.context.evaluation.locomo import load_locomo
    from memory.long_term import services as ltm
    from memory.long_term.selectors import LongTermFilters, long_term_search
    from memory.long_term.services.readings import readings_fill
    from memory.models import MemoryContext
    from rag.models import GraphEdge, GraphMention, GraphNode

    actor = bench_actor("bench-locomo-5k")
    provider = get_embedding_provider()
    stand_in = WordHashEmbeddings(provider.model_id, provider.dimensions)
    context = MemoryContext.objects.filter(
        account_id=actor.agent.account_id, name=args.context
    ).first() or ltm.context_create(actor=actor, name=args.context)
    build_seconds = build(actor, context, args, stand_in)
    started = time.perf_counter()
    read = 0
    while (filled := readings_fill())["read"]:  # entries written before readings existed
        read += filled["read"]
    readings_seconds = time.perf_counter() - started
    settle_tables([*SEARCH_TABLES, *GRAPH_TABLES])
    context.refresh_from_db()
    account = actor.agent.account_id
    questions = [
        q.question for c in load_locomo(Path(args.dataset)) for q in c.questions if q.evidence
    ]
    rng = np.random.default_rng(36)
    asked = [questions[i] for i in rng.integers(0, len(questions), args.warmup + args.queries)]
    vectors = {q: stand_in.embed_query(q) for q in asked}
    report: dict[str, Any] = {
        "turns": context.entry_count,
        "build_seconds": round(build_seconds, 1),
        "readings": {"read_now": read, "seconds": round(readings_seconds, 1)},
        "graph_size": {
            "nodes": GraphNode.objects.filter(account_id=account).count(),
            "edges": GraphEdge.objects.filter(account_id=account).count(),
            "mentions": GraphMention.objects.filter(account_id=account).count(),
        },
        "queries": args.queries,
    }
    filters = LongTermFilters(context_ids=(context.pk,))
    if args.variant:
        report["variants"] = interleaved(actor, filters, args, stand_in)
        return report
    for mode in args.modes.split(","):
        times: list[float] = []
        stages: dict[str, list[float]] = {}
        for number, question in enumerate(asked):
            # The query's one model pass, excluded as its embedding is: the local model keeps
            # the token states of what it embedded, which late interaction reads.
            provider.embed_query(question)
            started = time.perf_counter()
            _, stage_ms = long_term_search(
                actor=actor, query=question, top_k=10, filters=filters, mode=mode,
                query_vector=vectors[question],
            )  # fmt: skip
            if number >= args.warmup:
                times.append((time.perf_counter() - started) * 1000)
                for name, value in stage_ms.items():
                    stages.setdefault(name, []).append(value)
        report[mode] = {
            **{f"p{p}": round(float(np.percentile(times, p)), 2) for p in (50, 95, 99)},
            "stages_p95": {k: round(float(np.percentile(v, 95)), 2) for k, v in stages.items()},
        }
    return report


def interleaved(
    actor: Any, filters: Any, args: argparse.Namespace, stand_in: Any
) -> list[dict[str, Any]]:
    """``--variant``: each question asked in graph mode once per variant, in turn."""
    from pathlib import Path

    from bench.rag.recall_sweep import variant_set
    from core.embeddings import get_embedding_provider
    from memory.context.evaluation.locomo import load_locomo
    from memory.long_term.selectors import long_term_search

    provider = get_embedding_provider()
    asked = [
        (c.sample_id, q)
        for c in load_locomo(Path(args.dataset))
        for q in c.questions
        if q.evidence and q.category != 5
    ]
    order = np.random.default_rng(36).permutation(len(asked))
    asked = [asked[i] for i in order[: args.warmup + args.queries]]
    variants = [[a for a in v.split(";") if a] for v in args.variant]
    times: list[list[float]] = [[] for _ in variants]
    units: list[list[float]] = [[] for _ in variants]
    recall: list[list[float]] = [[] for _ in variants]
    for number, (sample_id, question) in enumerate(asked):
        vector = stand_in.embed_query(question.question)
        for k, assignments in enumerate(variants):
            provider.embed_query(question.question)  # its token states, as in run()
            with variant_set(assignments):
                started = time.perf_counter()
                hits, stage_ms = long_term_search(
                    actor=actor, query=question.question, top_k=10, filters=filters,
                    mode="graph", query_vector=vector,
                )  # fmt: skip
                elapsed = (time.perf_counter() - started) * 1000
            found = {
                hit.entry.metadata.get("dia_id")
                for hit in hits
                if hit.entry.thread.startswith(f"{sample_id}-")
            }
            recall[k].append(sum(e in found for e in question.evidence) / len(question.evidence))
            if number >= args.warmup:
                times[k].append(elapsed)
                units[k].append(stage_ms.get("graph_units", 0.0))
    return [
        {
            "set": assignments,
            "p50": round(float(np.percentile(t, 50)), 2),
            "p95": round(float(np.percentile(t, 95)), 2),
            "units_p50": round(float(np.percentile(u, 50)), 2),
            "units_p95": round(float(np.percentile(u, 95)), 2),
            "recall@10": round(float(np.mean(r)), 4),
            "questions": len(r),
        }
        for assignments, t, u, r in zip(variants, times, units, recall, strict=True)
    ]


if __name__ == "__main__":
    main()
