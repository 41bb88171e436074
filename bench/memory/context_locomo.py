"""Context assembly on LoCoMo: evidence recall within a token budget, per conversation, for the
assembler's settings and the alternatives tried (docs/benchmarks-log.md, "Context assembly").

    uv run python bench/memory/context_locomo.py [--data ../shared/data/locomo/locomo-dev.json]
        [--budgets 1000,2000] [--variants default,...]

Reads the LoCoMo development conversations from ../shared/data (the product never does). Each
conversation is written once through the conversations' services (a batch per session, the
rolling summary after each, as the worker does); every variant then answers every question with
evidence through ``context_assemble``. A variant changes one setting; the figures per
conversation show whether a choice holds on both (leave-one-conversation-out: a setting is kept
only when it wins on each conversation, not on their mean).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo-dev.json"


def _variants() -> dict[str, Callable[[], contextlib.AbstractContextManager[None]]]:
    """Each variant: tunables set for the block through the tuning registry
    (``core.tuning.override``, docs/tuning.md)."""
    from core import tuning

    def tuned(**values: Any) -> Callable[[], contextlib.AbstractContextManager[None]]:
        """``area__name=value``: memory's tunable ``memory.area.name`` (``shares_conversation``
        for ``memory.shares.conversation``, ``spaces_entries`` for ``memory.spaces.entries``)."""
        named = {
            "memory."
            + name.replace("shares_conversation", "shares.conversation")
            .replace("spaces_entries", "spaces.entries")
            .replace("__", "."): value
            for name, value in values.items()
        }
        return lambda: tuning.override(named)

    return {
        "default": contextlib.nullcontext,
        "summaries_share_0": tuned(shares_conversation__recent=0.0),
        "summaries_share_0.2": tuned(shares_conversation__recent=0.2),
        "candidates_100": tuned(sources__history_candidates=100),
        "no_summaries": tuned(sources__max_summaries=0),
        "summaries_2": tuned(sources__max_summaries=2),
        "no_speaker_boost": tuned(sources__speaker_boost=0.0),
        "depth_10": tuned(sources__history_depth_factor=10),
        "depth_2": tuned(sources__history_depth_factor=2),
        "depth_1": tuned(sources__history_depth_factor=1),
        "depth_3": tuned(sources__history_depth_factor=3),
        "per_candidate_12": tuned(sources__history_tokens_per_candidate=12),
        "speaker_boost_0.1": tuned(sources__speaker_boost=0.1),
        "speaker_boost_0.5": tuned(sources__speaker_boost=0.5),
        # History's fusion weights: (vector, keyword).
        "weights_v5_k5": tuned(sources__history_weights=(0.5, 0.5)),
        "weights_v3_k7": tuned(sources__history_weights=(0.3, 0.7)),
        "immediate_max_0.2": tuned(packing__immediate_max=0.2),
        "summaries_share_0.04": tuned(shares_conversation__recent=0.04),
        "speaker_boost_0.35": tuned(sources__speaker_boost=0.35),
        "depth_4": tuned(sources__history_depth_factor=4),
        "speaker_boost_0.3": tuned(sources__speaker_boost=0.3),
        "speaker_boost_0.4": tuned(sources__speaker_boost=0.4),
        "knowledge_share_0": tuned(shares_conversation__knowledge=0.0),
        "knowledge_similarity_0": tuned(floors__knowledge_min_similarity=0.0),
        "knowledge_similarity_0.4": tuned(floors__knowledge_min_similarity=0.4),
        "knowledge_similarity_0.6": tuned(floors__knowledge_min_similarity=0.6),
        # The session lift of conversation turns (the engine's, every long-term search).
        "group_weight_0.3": tuned(spaces_entries__group_weight=0.3),
        "group_weight_0.35": tuned(spaces_entries__group_weight=0.35),
        # The reference point: the turns BM25 ranks highest, packed (with --sources
        # history, nothing else in the context).
        "bm25_packing": tuned(sources__history_weights=(0.0, 1.0), sources__speaker_boost=0.0),
    }


# Each written conversation's turn numbers -> LoCoMo dia ids (``conversation_write``).
DIA_OF_TURN: dict[int, dict[int, str]] = {}


def _write(conversation: Any, labels: bool = True) -> tuple[Any, Any, Any]:
    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from memory.context.evaluation.context import conversation_write
    from memory.conversations import services

    account = core_services.account_create(
        name=f"bench {conversation.sample_id}", slug=f"bench-{uuid.uuid4().hex[:12]}"
    )
    tool = actor_for_account(account.pk)
    agent = core_services.agent_create(actor=tool, account=account, name="locomo")
    actor = actor_for_agent(agent)
    chat = services.conversation_create(actor=actor, title=conversation.sample_id)
    DIA_OF_TURN[chat.pk] = conversation_write(actor, chat, conversation, labels=labels)
    return tool, actor, chat


def ask(actor: Any, chat: Any, query: str, budget: int, sources: list[str] | None = None) -> Any:
    """``query`` through ``context_assemble``, with the conversation and the budget."""
    from memory.context.assembly import ContextRequest, context_assemble

    return context_assemble(
        actor=actor,
        request=ContextRequest(
            query=query, conversation_id=chat.pk, token_budget=budget, sources=sources
        ),
    )


def _body_bytes(answer: Any) -> int:
    """The answer's body as the API sends it, in bytes."""
    from core.metadata import json_bytes
    from memory.context.apis.context import ContextOutput

    return json_bytes(ContextOutput(answer).data)


def main() -> None:
    from core import services as core_services
    from memory.context.evaluation.context import evidence_recall
    from memory.context.evaluation.locomo import load_locomo

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--budgets", default="1000,2000")
    parser.add_argument("--variants", default="")
    parser.add_argument("--sources", default="", help="the request's sources (default: all)")
    parser.add_argument(
        "--no-labels",
        action="store_true",
        help="write messages without metadata.dia_id (found by turn number instead): the "
        "context echoes and counts a message's metadata",
    )
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    variants = _variants()
    chosen = [v for v in args.variants.split(",") if v] or list(variants)
    print(f"data: {args.data} (LoCoMo development conversations, ../shared/data)")
    for conversation in load_locomo(args.data):
        tool, actor, chat = _write(conversation, labels=not args.no_labels)
        labels = DIA_OF_TURN[chat.pk] if args.no_labels else None
        questions = [q for q in conversation.questions if q.evidence and q.category <= 4]
        try:
            for name in chosen:
                with variants[name]():
                    for budget in budgets:
                        recalls, own_ms, tokens, weights = [], [], [], []
                        types: dict[str, int] = defaultdict(int)
                        for question in questions:
                            answer = ask(
                                actor,
                                chat,
                                question.question,
                                budget,
                                sources=[s for s in args.sources.split(",") if s] or None,
                            )
                            recalls.append(
                                evidence_recall(answer.sections, question.evidence, labels)
                            )
                            own_ms.append(answer.timings_ms["total"] - answer.timings_ms["embed"])
                            tokens.append(answer.tokens)
                            weights.append(_body_bytes(answer) / max(answer.tokens, 1))
                            types[answer.task_type] += 1
                        own_ms.sort()
                        print(
                            f"{conversation.sample_id} {name:22s} budget {budget:5d}: "
                            f"evidence recall {statistics.fmean(recalls):.4f} "
                            f"({len(questions)} questions 1-4), tokens max {max(tokens)}, "
                            f"assembly p50 {own_ms[len(own_ms) // 2]:.1f} ms "
                            f"p95 {own_ms[int(len(own_ms) * 0.95)]:.1f} ms; body bytes per "
                            f"token median {statistics.median(weights):.1f} "
                            f"max {max(weights):.1f}; "
                            f"task types {dict(types)}",
                            flush=True,
                        )
        finally:
            core_services.account_delete(actor=tool, account=chat.account)


if __name__ == "__main__":
    started = time.perf_counter()
    with django_session():
        main()
    print(f"total {time.perf_counter() - started:.0f} s")
