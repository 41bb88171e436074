"""Where a context's candidates come from: one function per source, each reading through the
selectors of the app that owns the store (``rag``, ``content``, ``skills`` and memory's own),
each answering its candidates best first with their provenance. Every search runs on the one
engine, with the query's embedding computed once by the assembler."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.actors import Actor
from memory.context.assembly import floors
from memory.context.selectors.router import SHARED, WORKING, RouterFilters
from memory.context.selectors.search import memory_search
from memory.conversations import selectors as conversation_selectors
from memory.long_term.context_access import readable_contexts
from memory.long_term.selectors import LongTermFilters, long_term_ranked, speakers_named
from memory.models import Conversation, MemoryContext, MemoryEntry
from memory.tuning import TUNING

# Candidates each engine-backed source asks for, the history's depth, fusion weights and speaker
# boost, and the memories' and knowledge items' floors are tunables (``memory.tuning``:
# ``TUNING.sources``, ``TUNING.floors``), each with the benchmark that chose it.
PAGE_TEXT_CHARS = 2000
VALUE_TEXT_CHARS = 2000


@dataclass
class Candidate:
    """One item the context may hold. ``text`` is what the context shows of it (after a
    rendering ``prefix``: the turn's date and number, a label); ``order`` sorts a section's
    chosen items for reading; ``same`` names what it duplicates (an entry id, a text)."""

    kind: str
    id: int | str
    score: float
    text: str
    metadata: dict[str, Any]
    source: dict[str, Any]
    prefix: str = ""
    # Items of one group (a turn's day) are shown under one heading line, said once.
    group: str = ""
    order: tuple[Any, ...] = ()
    same: tuple[str, Any] = ("", None)
    # What it was made from (a knowledge item's source turns): once all of them are in the
    # context, it says again what they say.
    made_from: tuple[tuple[str, Any], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


def _when(entry: MemoryEntry) -> str:
    """The day it happened ("[8 May 2023] ")."""
    when = entry.occurred_at
    return f"[{when.day} {when:%b %Y}] " if when else ""


def _day(entry: MemoryEntry) -> str:
    """A turn's group: its day, said once above the turns of that day (a turn's number and
    time of day would cost more tokens than most questions need; the source keeps both)."""
    when = entry.occurred_at
    return f"{when.day} {when:%B %Y}" if when else ""


# The fields of an entry a turn or a memory candidate reads (only these are loaded).
TURN_FIELDS = ("speaker", "role", "content", "metadata", "position", "occurred_at")
MEMORY_FIELDS = ("context_id", "content", "data", "metadata", "occurred_at")


def turn_candidate(conversation: Conversation, entry: MemoryEntry, score: float) -> Candidate:
    speaker = entry.speaker or entry.role or "unknown"
    return Candidate(
        kind="turn",
        id=entry.pk,
        score=score,
        text=f"{speaker}: {entry.content}",
        metadata=entry.metadata,
        source={
            "conversation_id": conversation.pk,
            "message_id": entry.pk,
            "turn_number": entry.position,
        },
        group=_day(entry),
        order=(entry.position or 0,),
        same=("entry", entry.pk),
    )


def recent_turns(conversation: Conversation, count: int) -> list[Candidate]:
    """The conversation's last ``count`` turns, the newest first (so a tight budget keeps the
    latest), shown in turn order."""
    recent = conversation_selectors.messages_recent(conversation, count)
    return [turn_candidate(conversation, entry, 1.0) for entry in reversed(recent)]


def summaries(conversation: Conversation) -> list[Candidate]:
    """The conversation's summaries, the one reaching furthest first, shown in turn order."""
    found = list(conversation_selectors.summaries_of(conversation)[: TUNING.sources.max_summaries])
    found.sort(key=lambda e: (-int(e.metadata.get("end_turn") or 0), -e.pk))
    out = []
    for entry in found:
        start, end = entry.metadata.get("start_turn"), entry.metadata.get("end_turn")
        out.append(
            Candidate(
                kind="summary",
                id=entry.pk,
                score=1.0,
                text=entry.content,
                metadata=entry.metadata,
                source={
                    "conversation_id": conversation.pk,
                    "entry_id": entry.pk,
                    "start_turn": start,
                    "end_turn": end,
                },
                prefix=f"(turns {start}-{end}) ",
                order=(int(start or 0), entry.pk),
                same=("entry", entry.pk),
            )
        )
    return out


def history_candidates(token_budget: int) -> int:
    tuned = TUNING.sources
    return max(
        tuned.history_min_candidates,
        min(tuned.history_candidates, token_budget // tuned.history_tokens_per_candidate),
    )


def history(
    actor: Actor,
    conversation: Conversation,
    query: str,
    vector: np.ndarray,
    *,
    limit: int | None = None,
) -> tuple[list[Candidate], dict[str, float]]:
    """This conversation's turns most relevant to the query (the engine's hybrid search with
    neighbour windows, ``long_term_search``), best first, shown in turn order. (Adding the
    turns next to the best hits was measured and added nothing: docs/benchmarks-log.md.) An
    archived conversation is left out of searches, as every archived context is: its last turns
    and summaries still show, its history is not searched."""
    if conversation.context.archived_at is not None:
        return [], {}
    tuned = TUNING.sources
    limit = limit or tuned.history_candidates
    weights = (
        None
        if tuned.history_weights is None
        else dict(zip(("vector", "keyword"), tuned.history_weights, strict=True))
    )
    found = long_term_ranked(
        actor=actor,
        query=query,
        limit=limit,
        filters=LongTermFilters(context_ids=(conversation.context_id,), thread=conversation.thread),
        weights=weights,
        query_vector=vector,
        depth=max(100, limit * tuned.history_depth_factor),
        # The history weighs the speakers a query names itself (speaker_boost, chosen on
        # context recall); the engine's lift on top lost 0.004 on conv-30 at 2,000 tokens.
        speaker_lift=False,
        fields=TURN_FIELDS,
        # The conversation was read through its access rules (``conversation_get``), its
        # context with it: not checked again on every call.
        scope_ids=(conversation.context_id,),
    )
    hits = [(hit.entry, hit.score) for hit in found.hits]
    # Only a speaker among the candidates can be boosted: their names are the ones to look for.
    named = (
        {name.lower() for name in speakers_named(query, {entry.speaker for entry, _ in hits})}
        if tuned.speaker_boost
        else set()
    )
    if named:
        boost = 1 + tuned.speaker_boost
        hits = sorted(
            (
                (entry, score * boost if entry.speaker.lower() in named else score)
                for entry, score in hits
            ),
            key=lambda pair: -pair[1],
        )
    return [turn_candidate(conversation, entry, score) for entry, score in hits], dict(
        found.timings_ms
    )


# The heading of the caller's memories among the conversation's turns.
MEMORIES_GROUP = "Memories"


def more_turns(conversation: Conversation, exclude: set[int], limit: int) -> list[Candidate]:
    """When the budget outlasts what the search found: the conversation's other turns, the
    newest first (up to ``limit``), scored 0."""
    rows = (
        conversation_selectors.messages_of(conversation)
        .exclude(pk__in=exclude)
        .order_by("-position", "-id")[:limit]
    )
    return [turn_candidate(conversation, entry, 0.0) for entry in rows]


def memories(
    actor: Actor, query: str, vector: np.ndarray
) -> tuple[list[Candidate], dict[str, float]]:
    """The memories the actor may read outside conversations (each conversation is its own
    history), most relevant first."""
    context_ids = sorted(
        set(
            readable_contexts(actor)
            .filter(archived_at__isnull=True)
            .exclude(context_type=MemoryContext.ContextType.CONVERSATION)
            .values_list("pk", flat=True)
        )
    )
    if not context_ids:
        return [], {}
    found = long_term_ranked(
        actor=actor,
        query=query,
        limit=TUNING.sources.memory_candidates,
        query_vector=vector,
        depth=TUNING.sources.memory_depth,
        fields=MEMORY_FIELDS,
        scope_ids=context_ids,  # read above through the access rules, the archived left out
        min_similarity=TUNING.floors.memory_min_similarity,
    )
    out = []
    for rank, hit in enumerate(found.hits):
        entry = hit.entry
        text = entry.content or json.dumps(entry.data, ensure_ascii=False)
        out.append(
            Candidate(
                kind="memory",
                id=entry.pk,
                score=hit.score,
                text=text,
                metadata=entry.metadata,
                source={"context_id": entry.context_id, "entry_id": entry.pk},
                prefix=_when(entry),
                group=MEMORIES_GROUP,
                order=(1, rank),
                same=("entry", entry.pk),
            )
        )
    return out, dict(found.timings_ms)


# Knowledge types read for each task type (seed 003): factual always, procedural for problem
# solving, conceptual for learning and analysis.
KNOWLEDGE_TYPES = {
    "conversation": ("factual",),
    "problem_solving": ("factual", "procedural"),
    "learning": ("factual", "conceptual"),
    "analysis": ("factual", "conceptual"),
}


def base_ids_split(actor: Actor, ids: Sequence[int]) -> tuple[list[int], list[int]]:
    """``knowledge_base_ids`` of a context request, as (knowledge item bases, document
    knowledge bases) of the actor's: one list names either kind. An id of neither: 404
    ``knowledge_base_not_found``, like a foreign one."""
    from core.errors import NotFound
    from memory.knowledge.selectors import stores_visible
    from rag.selectors import knowledge_base_list

    wanted = set(ids)
    stores = set(stores_visible(actor).filter(pk__in=wanted).values_list("pk", flat=True))
    bases = set(knowledge_base_list(actor=actor).filter(pk__in=wanted).values_list("pk", flat=True))
    missing = sorted(wanted - stores - bases)
    if missing:
        raise NotFound(
            "Unknown knowledge base.", code="knowledge_base_not_found", details={"ids": missing}
        )
    return sorted(stores), sorted(bases)


def knowledge(
    actor: Actor,
    query: str,
    vector: np.ndarray,
    task_type: str,
    base_ids: Sequence[int] | None,
) -> list[Candidate]:
    """Current, valid knowledge items of the types the task reads, most relevant first
    (``base_ids``: only those bases; None: every base of the account)."""
    from memory.knowledge.selectors import knowledge_search, source_messages

    if base_ids is not None and not base_ids:
        return []
    found = knowledge_search(
        actor=actor,
        query=query,
        base_ids=base_ids,
        knowledge_types=KNOWLEDGE_TYPES[task_type],
        top_k=TUNING.sources.knowledge_candidates,
        query_vector=vector,
        load_sources=False,
        min_similarity=TUNING.floors.knowledge_min_similarity,
    )
    made_from = source_messages([hit.item.pk for hit in found.hits])
    return [
        Candidate(
            kind="knowledge",
            id=hit.item.pk,
            score=hit.score,
            text=hit.item.content,
            metadata=hit.item.metadata,
            source={
                "base": hit.item.store.name,
                "key": hit.item.key,
                "version": hit.item.version,
            },
            prefix=f"[{hit.item.store.name}/{hit.item.key}] ",
            order=(rank,),
            same=("knowledge", hit.item.pk),
            made_from=tuple(("entry", pk) for pk in made_from.get(hit.item.pk, ())),
        )
        for rank, hit in enumerate(found.hits)
    ]


def documents(
    actor: Actor, query: str, vector: np.ndarray, knowledge_base_ids: Sequence[int] | None
) -> list[Candidate]:
    """Document chunks most relevant to the query and on topic (``floors``;
    ``knowledge_base_ids``: only those; None: every knowledge base of the account)."""
    from rag.search import SearchFilters, chunk_search

    if knowledge_base_ids is not None and not knowledge_base_ids:
        return []

    outcome = chunk_search(
        actor=actor,
        query=query,
        top_k=TUNING.sources.document_candidates,
        filters=SearchFilters(knowledge_base_ids=tuple(knowledge_base_ids or ())),
        query_vector=vector,
    )
    return [
        Candidate(
            kind="chunk",
            id=hit.chunk_id,
            score=hit.score,
            text=hit.text,
            metadata={"document_title": hit.document_title, "heading_path": hit.heading_path},
            source={
                "knowledge_base_id": hit.knowledge_base_id,
                "document_id": hit.document_id,
                "chunk_id": hit.chunk_id,
            },
            prefix=f"[{hit.document_title}] " if hit.document_title else "",
            order=(rank,),
            same=("text", hit.text),
        )
        for rank, (hit, _) in enumerate(
            floors.documents_on_topic(query, outcome.hits, outcome.knowledge_base_ids)
        )
    ]


def pages(actor: Actor, query: str, vector: np.ndarray) -> list[Candidate]:
    from content.selectors import page_search

    return [
        Candidate(
            kind="page",
            id=hit.page.pk,
            score=float(hit.score or 0.0),
            text=hit.page.content[:PAGE_TEXT_CHARS] or hit.page.title,
            metadata={"title": hit.page.title},
            source={"page_id": hit.page.pk},
            prefix=f"[{hit.page.title}] ",
            order=(rank,),
            same=("page", hit.page.pk),
        )
        for rank, (hit, _) in enumerate(
            floors.pages_on_topic(
                page_search(
                    actor=actor,
                    query=query,
                    top_k=TUNING.sources.page_candidates,
                    query_vector=vector,
                ),
                vector,
            )
        )
    ]


def skills(actor: Actor, query: str, vector: np.ndarray) -> list[Candidate]:
    from skills.selectors.catalog import skill_discover

    hits = skill_discover(
        actor=actor, description=query, top_k=TUNING.sources.skill_candidates, query_vector=vector
    )
    return [
        Candidate(
            kind="skill",
            id=hit.skill.pk,
            score=hit.score,
            text=" ".join(p for p in (hit.skill.description, hit.skill.procedure) if p)
            or hit.skill.name,
            metadata={"name": hit.skill.name, "category": hit.skill.category},
            source={"skill_id": hit.skill.pk},
            prefix=f"[{hit.skill.name}] ",
            order=(rank,),
            same=("skill", hit.skill.pk),
        )
        for rank, (hit, _) in enumerate(floors.skills_on_topic(hits, vector))
    ]


def _value_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text[:VALUE_TEXT_CHARS]


def task_context(
    actor: Actor, query: str, vector: np.ndarray, *, session_id: str, tiers: Sequence[str]
) -> list[Candidate]:
    """Working memory of the session (``working``) and pool data (``pools``) relevant to the
    query and on topic (``floors``), through the router's one search across tiers."""

    if actor.agent is None:
        return []  # working memory and pools are agents' (people read pools in the admin)
    wanted = [t for t in tiers if t == SHARED or (t == WORKING and session_id)]
    if not wanted:
        return []
    found = memory_search(
        actor=actor,
        query=query,
        tiers=wanted,
        top_k=TUNING.sources.task_candidates,
        filters=RouterFilters(session_id=session_id if WORKING in wanted else ""),
        query_vector=vector,
    )
    out = []
    for rank, hit in enumerate(floors.tasks_on_topic(found.results, vector)):
        if hit.tier == WORKING:
            out.append(
                Candidate(
                    kind="working",
                    id=str(hit.unit_id),
                    score=hit.score,
                    text=f"{hit.key}: {_value_text(hit.content)}",
                    metadata=dict(hit.extra),
                    source={"session_id": hit.session_id, "key": hit.key},
                    order=(0, rank),
                    same=("working", hit.unit_id),
                )
            )
        elif hit.tier == SHARED:
            out.append(
                Candidate(
                    kind="pool",
                    id=f"{hit.pool_id}:{hit.path}",
                    score=hit.score,
                    text=f"{hit.pool_id}.{hit.path}: {_value_text(hit.content)}",
                    metadata=dict(hit.extra),
                    source={"pool_id": hit.pool_id, "path": hit.path},
                    order=(1, rank),
                    same=("pool", (hit.pool_id, hit.path)),
                )
            )
    return out
