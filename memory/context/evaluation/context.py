"""LoCoMo as a context-assembly benchmark (``manage.py memory_eval --context --budget N``).

Each conversation is written through the conversations' services as a client of the API would
write it: one conversation, one message per dialogue turn (``name`` the speaker, ``occurred_at``
the session's date, ``metadata.dia_id``), a batch per session, each batch followed by the work
a Celery worker does after it (the rolling summary). Each question is then asked through the
context service with the conversation and the budget. A question's evidence recall is the
fraction of its evidence turns present among the context's turn items (by their
``metadata.dia_id``); reported per category and over categories 1-4, with the tokens used and
the latency. The temporary accounts are deleted at the end, whatever happens.
"""

from __future__ import annotations

import math
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.context.evaluation.locomo import CATEGORIES, Conversation, Question, load_locomo
from memory.context.evaluation.retrieval import OVERALL_CATEGORIES
from rag.evaluation import percentiles


@dataclass(frozen=True)
class ContextResult:
    question: Question
    recall: float
    tokens: int
    latency_ms: float  # the whole call, the query embedding included
    assembly_ms: float  # without the query embedding


def evidence_recall(
    sections: list[dict[str, Any]],
    evidence: tuple[str, ...],
    dia_of_turn: dict[int, str] | None = None,
) -> float:
    """The share of ``evidence`` (dia ids) among the context's turns: each turn's dia id read
    from ``dia_of_turn`` by its turn number when given (messages written without labels), else
    from its ``metadata.dia_id``."""
    present = {
        str(
            dia_of_turn.get(item["source"]["turn_number"])
            if dia_of_turn is not None
            else item["metadata"].get("dia_id")
        )
        for section in sections
        for item in section["items"]
        if item["kind"] == "turn" and isinstance(item.get("metadata"), dict)
    }
    return sum(1 for dia_id in evidence if dia_id in present) / len(evidence)


def conversation_write(
    actor: Any, chat: Any, conversation: Conversation, *, labels: bool = True
) -> dict[int, str]:
    """Write a LoCoMo conversation into ``chat`` as a client of the API would: one message per
    turn (``name`` the speaker, ``occurred_at`` the session's date, ``metadata.dia_id`` unless
    ``labels`` is False), a batch per session, each followed by what the worker does after it
    (the messages' index, the rolling summary). Answers each turn's number (its message's
    position) -> dia id: a context echoes a message's metadata and counts it in its budget, so
    a benchmark that keeps its labels itself leaves the budget to the conversation
    (docs/benchmarks-log.md)."""
    from memory.conversations import selectors as conversation_selectors
    from memory.conversations import services
    from memory.long_term.services.pending import pending_index_all

    sessions: dict[int, list[Any]] = defaultdict(list)
    for turn in conversation.turns:
        sessions[turn.session].append(turn)
    for number in sorted(sessions):
        services.messages_append(
            actor=actor,
            conversation=chat,
            messages=[
                services.MessageInput(
                    role="user",
                    content=turn.text,
                    name=turn.speaker,
                    occurred_at=turn.occurred_at,
                    metadata={"dia_id": turn.dia_id} if labels else {},
                )
                for turn in sessions[number]
            ],
        )
        pending_index_all(context_id=chat.context_id)
        services.conversation_follow_up_run(conversation_id=chat.pk)
    positions = [
        int(position or 0)
        for position in conversation_selectors.messages_of(chat).values_list("position", flat=True)
    ]
    ordered = [turn.dia_id for number in sorted(sessions) for turn in sessions[number]]
    return dict(zip(positions, ordered, strict=True))


def evaluate_conversation(
    conversation: Conversation,
    *,
    budget: int,
    on_progress: Callable[[str], None] | None = None,
) -> list[ContextResult]:
    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from memory.context.assembly import ContextRequest, context_assemble
    from memory.conversations import services as conversations_services

    slug = f"memory-eval-{uuid.uuid4().hex[:12]}"
    account = core_services.account_create(name=f"memory_eval {conversation.sample_id}", slug=slug)
    tool = actor_for_account(account.pk)
    try:
        agent = core_services.agent_create(
            actor=tool, account=account, name="locomo", description="memory_eval --context"
        )
        actor = actor_for_agent(agent)
        chat = conversations_services.conversation_create(
            actor=actor, title=conversation.sample_id, user_id=conversation.speakers[0]
        )
        conversation_write(actor, chat, conversation)
        if on_progress:
            on_progress(f"{conversation.sample_id}: {len(conversation.turns)} messages written")
        results: list[ContextResult] = []
        for question in conversation.questions:
            if not question.evidence:
                continue
            started = time.perf_counter()
            answer = context_assemble(
                actor=actor,
                request=ContextRequest(
                    query=question.question, conversation_id=chat.pk, token_budget=budget
                ),
            )
            latency = (time.perf_counter() - started) * 1000
            results.append(
                ContextResult(
                    question=question,
                    recall=evidence_recall(answer.sections, question.evidence),
                    tokens=answer.tokens,
                    latency_ms=latency,
                    assembly_ms=latency - answer.timings_ms.get("embed", 0.0),
                )
            )
        return results
    finally:
        core_services.account_delete(actor=tool, account=account)


def summarise(results: list[ContextResult]) -> dict[str, Any]:
    def block(rows: list[ContextResult]) -> dict[str, Any]:
        return {
            "questions": len(rows),
            "evidence_recall": round(math.fsum(r.recall for r in rows) / len(rows), 4),
            "tokens_mean": round(math.fsum(r.tokens for r in rows) / len(rows), 1),
        }

    categories = {
        str(number): {"name": name, **block(rows)}
        for number, name in CATEGORIES.items()
        if (rows := [r for r in results if r.question.category == number])
    }
    overall = [r for r in results if r.question.category in OVERALL_CATEGORIES]
    report: dict[str, Any] = {
        "categories": categories,
        "overall_1_4": block(overall) if overall else None,
    }
    if results:
        report["tokens_max"] = max(r.tokens for r in results)
        report["latency_ms"] = {
            k: round(v, 2)
            for k, v in percentiles([r.latency_ms for r in results], (50, 95)).items()
        }
        report["assembly_ms_excluding_embedding"] = {
            k: round(v, 2)
            for k, v in percentiles([r.assembly_ms for r in results], (50, 95)).items()
        }
    return report


def run_locomo_context(
    path: Path,
    *,
    budget: int,
    sample_ids: set[str] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    conversations = load_locomo(path, sample_ids=sample_ids)
    results: list[ContextResult] = []
    for conversation in conversations:
        results.extend(evaluate_conversation(conversation, budget=budget, on_progress=on_progress))
    return {
        "dataset": str(path),
        "conversations": [c.sample_id for c in conversations],
        "budget": budget,
        "questions_scored": len(results),
        **summarise(results),
    }
