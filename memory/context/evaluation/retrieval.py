"""LoCoMo as a long-term memory retrieval benchmark (``manage.py memory_eval``).

Each conversation is written into a fresh agent's long-term context through the services, one
entry per dialogue turn (its text, ``speaker``, thread = session, position = turn within the
session, ``occurred_at`` = the session's date, ``metadata.dia_id``), exactly as an agent would
store it; an entry with a speaker is indexed as "Speaker: text" (``memory.long_term.indexing``).
Each question is then asked through ``long_term_search`` and scored against its evidence turns:
Recall@5, Recall@10 and nDCG@10 (binary relevance, trec_eval semantics, ``rag.evaluation``), per
category and over categories 1-4. Category 5 (adversarial: the answer is not in the conversation)
is reported on its own when its questions name evidence, never in the overall figure. The
temporary accounts are deleted at the end, whatever happens.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.context.evaluation.locomo import CATEGORIES, Conversation, Question, load_locomo
from rag.evaluation import evaluate_per_query, percentiles

OVERALL_CATEGORIES = (1, 2, 3, 4)
METRICS = ("recall@5", "recall@10", "ndcg@10")
WRITE_BATCH = 500


@dataclass(frozen=True)
class QuestionResult:
    question: Question
    retrieved: tuple[str, ...]  # dia_ids, best first
    metrics: Mapping[str, float]
    latency_ms: float  # the whole long_term_search call, query embedding included
    search_ms: float  # its stages without the query embedding


def score_question(retrieved: Sequence[str], evidence: Iterable[str]) -> dict[str, float]:
    """Recall@5, Recall@10, nDCG@10 of one ranking (dia_ids best first) against the evidence."""
    run = {"q": {dia_id: 1.0 / rank for rank, dia_id in enumerate(retrieved, start=1)}}
    qrels = {"q": dict.fromkeys(evidence, 1)}
    values = evaluate_per_query(run, qrels, ks=(5, 10), ndcg_k=10)["q"]
    return {name: values[name] for name in METRICS}


def summarise(results: Sequence[QuestionResult]) -> dict[str, Any]:
    """Mean metrics per category (those with questions) and over categories 1-4, latencies."""

    def block(rows: Sequence[QuestionResult]) -> dict[str, Any]:
        return {
            "questions": len(rows),
            **{
                name: round(math.fsum(r.metrics[name] for r in rows) / len(rows), 4)
                for name in METRICS
            },
        }

    categories: dict[str, Any] = {}
    for number, name in CATEGORIES.items():
        rows = [r for r in results if r.question.category == number]
        if rows:
            categories[str(number)] = {"name": name, **block(rows)}
    overall = [r for r in results if r.question.category in OVERALL_CATEGORIES]
    report: dict[str, Any] = {
        "categories": categories,
        "overall_1_4": block(overall) if overall else None,
    }
    if results:
        report["latency_ms"] = {
            k: round(v, 2)
            for k, v in percentiles([r.latency_ms for r in results], (50, 95)).items()
        }
        report["search_ms_excluding_embedding"] = {
            k: round(v, 2) for k, v in percentiles([r.search_ms for r in results], (50, 95)).items()
        }
    return report


def turns_write(
    actor: Any,
    context: Any,
    conversation: Conversation,
    *,
    on_progress: Callable[[str], None] | None = None,
) -> dict[int, str]:
    """Write a conversation's turns into a long-term context, one entry a turn (the session its
    thread, the turn's ``dia_id`` in its metadata), in batches through ``entries_write``; returns
    each entry's ``dia_id`` by entry id. ``memory_eval`` and bench/rag/recall_sweep.py write
    alike."""
    from memory.long_term import services as ltm

    items = [
        ltm.EntryInput(
            content=turn.text,
            occurred_at=turn.occurred_at,
            thread=f"session_{turn.session}",
            position=turn.position,
            speaker=turn.speaker,
            metadata={"dia_id": turn.dia_id},
        )
        for turn in conversation.turns
    ]
    dia_of: dict[int, str] = {}
    for start in range(0, len(items), WRITE_BATCH):
        written = ltm.entries_write(
            actor=actor,
            context=context,
            items=items[start : start + WRITE_BATCH],
            graph_link=False,  # linked as a whole context in graph mode (context_graph_index)
        )
        dia_of.update((entry.pk, entry.metadata["dia_id"]) for entry in written)
        if on_progress:
            on_progress(f"{conversation.sample_id}: {len(dia_of)} entries written")
    return dia_of


def evaluate_conversation(
    conversation: Conversation,
    *,
    top_k: int = 10,
    weights: dict[str, float] | None = None,
    modes: Sequence[str] = ("hybrid",),
    on_progress: Callable[[str], None] | None = None,
    stages: Sequence[str] = (),
    max_hops: int = 2,
) -> tuple[dict[str, list[QuestionResult]], int]:
    """Write the conversation into a fresh account's memory, ask its questions in each mode
    (``stages`` apply to the hybrid mode), delete it all.

    Returns each mode's scored questions (categories 1-4, and 5 when it names evidence) and how
    many entries were written."""
    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from memory.long_term import services as ltm
    from memory.long_term.selectors import LongTermFilters, long_term_search

    slug = f"memory-eval-{uuid.uuid4().hex[:12]}"
    account = core_services.account_create(name=f"memory_eval {conversation.sample_id}", slug=slug)
    tool = actor_for_account(account.pk)
    try:
        agent = core_services.agent_create(
            actor=tool, account=account, name="locomo", description="memory_eval"
        )
        actor = actor_for_agent(agent)
        context = ltm.context_create(actor=actor, name=f"locomo:{conversation.sample_id}")
        dia_of = turns_write(actor, context, conversation, on_progress=on_progress)
        if "graph" in modes or "graph" in stages:
            from memory.long_term.services.graph_links import context_graph_index

            linked = context_graph_index(actor=actor, context=context)
            if on_progress:
                on_progress(
                    f"{conversation.sample_id}: {linked.mentions} entity mentions, "
                    f"{linked.nodes_created} nodes"
                )
        filters = LongTermFilters(context_ids=(context.pk,))
        results: dict[str, list[QuestionResult]] = {mode: [] for mode in modes}
        asked = [
            (mode, question)
            for mode in modes
            for question in conversation.questions
            if question.evidence  # nothing to retrieve otherwise (adversarial questions mostly)
        ]
        for mode, question in asked:
            started = time.perf_counter()
            hits, stage_ms = long_term_search(
                actor=actor,
                query=question.question,
                top_k=top_k,
                filters=filters,
                mode=mode,
                weights=weights,
                stages=stages if mode == "hybrid" else (),
                max_hops=max_hops,
            )
            latency = (time.perf_counter() - started) * 1000
            retrieved = tuple(dia_of[hit.entry.pk] for hit in hits if hit.entry.pk in dia_of)
            results[mode].append(
                QuestionResult(
                    question=question,
                    retrieved=retrieved,
                    metrics=score_question(retrieved, question.evidence),
                    latency_ms=latency,
                    search_ms=sum(v for k, v in stage_ms.items() if k != "embed"),
                )
            )
        return results, len(dia_of)
    finally:
        core_services.account_delete(actor=tool, account=account)


def run_locomo(
    path: Path,
    *,
    sample_ids: set[str] | None = None,
    top_k: int = 10,
    weights: dict[str, float] | None = None,
    mode: str = "hybrid",
    modes: Sequence[str] | None = None,
    on_progress: Callable[[str], None] | None = None,
    stages: Sequence[str] = (),
    max_hops: int = 2,
) -> dict[str, Any]:
    """The whole evaluation of a LoCoMo file: one report of ``mode`` (see ``summarise``) plus
    its inputs, and under ``modes`` the report of every mode asked (default: every mode the API
    offers, ``rag.search.SEARCH_MODES``), each conversation written once."""
    from rag.search import SEARCH_MODES

    asked = list(dict.fromkeys([mode, *(SEARCH_MODES if modes is None else modes)]))
    conversations = load_locomo(path, sample_ids=sample_ids)
    results: dict[str, list[QuestionResult]] = {name: [] for name in asked}
    entries = 0
    for conversation in conversations:
        scored, written = evaluate_conversation(
            conversation, top_k=top_k, weights=weights, modes=asked, on_progress=on_progress,
            stages=stages, max_hops=max_hops,
        )  # fmt: skip
        for name, rows in scored.items():
            results[name].extend(rows)
        entries += written
    skipped = sum(
        1 for c in conversations for q in c.questions if not q.evidence and q.category != 5
    )
    return {
        "dataset": str(path),
        "conversations": [c.sample_id for c in conversations],
        "entries": entries,
        "questions_scored": len(results[mode]),
        "questions_without_evidence_1_4": skipped,
        "mode": mode,
        "stages": list(stages),
        "max_hops": max_hops,
        "weights": weights or "default",
        "top_k": top_k,
        **summarise(results[mode]),
        "modes": {name: summarise(rows) for name, rows in results.items()},
    }
