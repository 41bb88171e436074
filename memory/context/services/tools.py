"""Memory tools for agents in a run (seed 004; docs/memory/tools.md): write a memory
through a structuring step that may refuse, search semantically with a calibrated score,
find the memories linked to items, and a summarised search; each run's searches budgeted.

Memories written here are long-term entries of the agent's own memory, their references kept
in ``metadata.related`` (``[{"kind", "id"}]``), so the related search and every other search
find them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import Q

from core.actors import Actor
from core.embeddings import get_embedding_provider
from core.errors import NotFound, ValidationFailed
from core.llm import LLMError, get_llm_provider
from memory.agents import acting_agent
from memory.context import run_budget, structuring
from memory.long_term.context_access import readable_contexts
from memory.long_term.selectors import searchable_contexts
from memory.long_term.services.contexts import agent_memory_context
from memory.long_term.services.entries import (
    EntryInput,
    entries_accessed,
    entries_create,
    unarchived_check,
)
from memory.maintenance import fact_check
from memory.maintenance.services.change_kinds import entry_input_json
from memory.maintenance.services.changes import change_submit
from memory.models import ChangePolicy, MemoryAccessLog, MemoryContext, MemoryEntry
from memory.spaces import MEMORY_ENTRIES
from memory.tuning import TUNING
from rag.vector import vector_search

MAX_RELATED = 10
# Semantic search's results, floor and depth, related memories' depth and a summary's sentences
# are tunables: ``TUNING.tools`` (memory.tuning).
RELATED_KINDS = ("entry", "knowledge_item", "page", "skill", "document")


@dataclass(frozen=True)
class Reference:
    kind: str
    id: int

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id}


def references_check(actor: Actor, related: Sequence[dict[str, Any]]) -> list[Reference]:
    """At most ``MAX_RELATED`` references, each to something the actor may read (404
    ``related_not_found`` otherwise, another account's and a missing one alike)."""
    if len(related) > MAX_RELATED:
        raise ValidationFailed(
            f"At most {MAX_RELATED} related references.",
            code="too_many_related",
            details={"max_items": MAX_RELATED, "items": len(related)},
        )
    refs = list(dict.fromkeys(Reference(str(r["kind"]), int(r["id"])) for r in related))
    for ref in refs:
        if not _visible(actor, ref):
            raise NotFound(
                "A related item does not exist.",
                code="related_not_found",
                details={"kind": ref.kind, "id": ref.id},
            )
    return refs


def _visible(actor: Actor, ref: Reference) -> bool:
    from content import selectors as content_selectors
    from rag import selectors as rag_selectors
    from skills.selectors import catalog as skill_selectors

    lookups: dict[str, Any] = {
        "entry": lambda: (
            MemoryEntry.objects.filter(
                pk=ref.id, context__in=readable_contexts(actor).values("pk")
            ).exists()
            or None
        ),
        "page": lambda: content_selectors.page_get(actor=actor, page_id=ref.id),
        "skill": lambda: skill_selectors.skill_get(actor=actor, skill_id=ref.id),
        "document": lambda: rag_selectors.document_get(actor=actor, document_id=ref.id),
        "knowledge_item": lambda: _knowledge_item(actor, ref.id),
    }
    if ref.kind not in lookups:
        raise ValidationFailed(
            "Unknown related kind.", code="invalid_related", details={"choices": RELATED_KINDS}
        )
    try:
        return bool(lookups[ref.kind]())
    except NotFound:
        return False


def _knowledge_item(actor: Actor, item_id: int) -> bool:
    """Knowledge items (docs/memory/knowledge.md) when this installation has them."""
    try:
        from memory.knowledge.selectors import knowledge_item_visible
    except ImportError:
        return False
    return bool(knowledge_item_visible(actor=actor, item_id=item_id))


# --- write -----------------------------------------------------------------------------------


@dataclass
class WriteOutcome:
    written: bool
    entry: MemoryEntry | None = None
    reason: str = ""
    detail: str = ""
    method: str = "offline"
    duplicate_of: int | None = None
    similarity: float | None = None
    pending_change_id: int | None = None


# The write waits for review: the agent's memory has ``agent_write_policy: review``.
PENDING_REVIEW = "pending_review"


def _structure(text: str) -> structuring.Structured:
    """The LLM's structuring when one is configured, within the rules the offline step checks
    first; an answer that fails validation falls back to the offline step."""
    reason, detail = structuring.refusal(text)
    if reason:
        return structuring.Structured(refused=reason, detail=detail)
    provider = get_llm_provider()
    if provider.model_id.startswith("offline:"):
        return structuring.offline_structure(text)
    answer = provider.complete_json(
        text, schema=structuring.LLM_SCHEMA, system=structuring.LLM_SYSTEM, max_tokens=800
    )
    try:
        return structuring.llm_structured(answer, provider.model_id)
    except ValueError:
        return structuring.offline_structure(text)


def _duplicate(actor: Actor, vector: np.ndarray, text: str) -> tuple[int, float] | None:
    """The most similar current memory the actor may read, if it is a near-copy that says
    every statement of ``text`` (``memory.maintenance.fact_check``): a near-copy with a fact of its
    own (another number, name, allergy) is written."""
    scopes = searchable_contexts(actor, ())
    found = vector_search(space=MEMORY_ENTRIES, scope_ids=scopes, query_vector=vector, limit=1)
    if not found or found[0][1] < settings.MEMORY_DEDUP_SIMILARITY:
        return None
    existing = MemoryEntry.objects.filter(pk=found[0][0]).values_list("content", flat=True)
    checked = fact_check.statements_check([(0, text)], [(found[0][0], existing.first() or "")])
    if fact_check.lost(checked):
        return None
    return found[0][0], round(found[0][1], 6)


def memory_tool_write(
    *, actor: Actor, text: str, related: Sequence[dict[str, Any]] = (), run_id: str = ""
) -> WriteOutcome:
    """Structure ``text`` into a memory and write it to the agent's own memory, or refuse:
    ``empty``, ``trivial``, ``personal_data``, ``not_general`` (the structuring step) or
    ``duplicate`` (a current memory at cosine >= MEMORY_DEDUP_SIMILARITY that says each of its
    statements, ``memory.maintenance.fact_check``). When the agent's
    memory has ``agent_write_policy: review``, the write waits as a pending change
    (``pending_review`` with ``pending_change_id``) until an owner or operator approves it."""
    agent = acting_agent(actor)
    actor.require_scope("write")
    if len(text) > structuring.MAX_TEXT_CHARS:
        raise ValidationFailed(
            f"text is limited to {structuring.MAX_TEXT_CHARS} characters.",
            code="text_too_long",
            details={"max_length": structuring.MAX_TEXT_CHARS},
        )
    refs = references_check(actor, related)
    structured = _structure(text)
    if structured.refused:
        return WriteOutcome(
            False, reason=structured.refused, detail=structured.detail, method=structured.method
        )
    vector = np.asarray(get_embedding_provider().embed_query(structured.text))
    duplicate = _duplicate(actor, vector, structured.text)
    if duplicate is not None:
        return WriteOutcome(
            False,
            reason=structuring.DUPLICATE,
            detail="A memory saying the same exists.",
            method=structured.method,
            duplicate_of=duplicate[0],
            similarity=duplicate[1],
        )
    metadata: dict[str, Any] = {
        "name": structured.name,
        "related": [ref.as_json() for ref in refs],
        "written_by": "memory_tools",
        "structured_by": structured.method,
    }
    if run_id:
        metadata["run_id"] = run_id
    item = EntryInput(
        content=structured.text,
        entry_type=structured.entry_type,
        tags=structured.tags,
        metadata=metadata,
    )
    context = agent_memory_context(actor=actor)
    if context.agent_write_policy == ChangePolicy.REVIEW:
        return _write_for_review(actor, context, item, run_id, structured.method)
    (entry,) = entries_create(actor=actor, context_id=context.pk, items=[item])
    if run_id:
        run_budget.add(agent, run_id, run_budget.WRITTEN)
    return WriteOutcome(True, entry=entry, method=structured.method)


def _write_for_review(
    actor: Actor, context: MemoryContext, item: EntryInput, run_id: str, method: str
) -> WriteOutcome:
    """The write held as a pending change (``agent_write``): written when approved."""
    unarchived_check(context)
    submitted = change_submit(
        actor=actor,
        account_id=context.account_id,
        kind="agent_write",
        context=context,
        policy=ChangePolicy.REVIEW,
        payload={
            "agent_id": actor.agent_id,
            "context_id": context.pk,
            "item": entry_input_json(item),
            "run_id": run_id,
        },
        before={"entries": []},
        after={"entries": [{"content": item.content, "tags": list(item.tags)}]},
        reason=f"Agent {actor.agent} wrote a memory through the memory tools; its memory holds "
        "agents' writes for review.",
    )
    change = submitted.change
    return WriteOutcome(
        False,
        reason=PENDING_REVIEW,
        detail="The memory waits for review by an owner or operator; it is written when approved.",
        method=method,
        pending_change_id=change.pk if change is not None else None,
    )


# --- searches ----------------------------------------------------------------------------------


@dataclass
class ToolHit:
    entry: MemoryEntry
    score: float | None = None
    matched: list[dict[str, Any]] = field(default_factory=list)


def _budget(actor: Actor, run_id: str) -> None:
    if run_id:
        run_budget.search_count(acting_agent(actor), run_id)


def _checked(actor: Actor, run_id: str, hits: Sequence[ToolHit], query: str) -> None:
    entries_accessed(
        actor=actor,
        entries=[hit.entry for hit in hits],
        action=MemoryAccessLog.Action.SEARCH,
        query=query,
    )
    if run_id and hits:
        run_budget.add(acting_agent(actor), run_id, run_budget.CHECKED, len(hits))


def _semantic(actor: Actor, query: str) -> tuple[list[ToolHit], np.ndarray]:
    """The memories most similar to ``query``: candidates from the engine's vector stage over
    the contexts the actor may read, scored by cosine similarity (an absolute scale: the same
    score means the same closeness for every query), at least ``min_relevance_score``, at most
    ``search_results`` (``TUNING.tools``)."""
    vector = np.asarray(get_embedding_provider().embed_query(query))
    scopes = searchable_contexts(actor, ())
    tuned = TUNING.tools
    found = vector_search(
        space=MEMORY_ENTRIES, scope_ids=scopes, query_vector=vector, limit=tuned.search_candidates
    )
    kept = [(entry_id, s) for entry_id, s in found if s >= tuned.min_relevance_score][
        : tuned.search_results
    ]
    entries = MemoryEntry.objects.defer("embedding").in_bulk([entry_id for entry_id, _ in kept])
    hits = [
        ToolHit(entry=entries[entry_id], score=round(similarity, 6))
        for entry_id, similarity in kept
        if entry_id in entries
    ]
    return hits, vector


def _search_check(query: str) -> None:
    from core.search import search_query_check

    search_query_check(query)
    if not query.strip():
        raise ValidationFailed("The query is empty.", code="empty_query")


def memory_tool_search(*, actor: Actor, query: str, run_id: str = "") -> list[ToolHit]:
    """Semantic search (``_semantic``): an empty list when nothing qualifies. Counts against
    the run's search budget (429 ``search_budget_exhausted`` past it)."""
    acting_agent(actor)
    _search_check(query)
    _budget(actor, run_id)
    hits, _ = _semantic(actor, query)
    _checked(actor, run_id, hits, query)
    return hits


def _related(actor: Actor, refs: Sequence[Reference]) -> list[ToolHit]:
    if not refs:
        return []
    condition = Q()
    for ref in refs:
        condition |= Q(metadata__related__contains=[ref.as_json()])
    entries = (
        MemoryEntry.objects.defer("embedding")
        .filter(
            condition,
            context__in=readable_contexts(actor).filter(archived_at__isnull=True).values("pk"),
            is_current=True,
            archived_at__isnull=True,
        )
        .order_by("-created_at", "-id")[: TUNING.tools.related_results]
    )
    wanted = {(ref.kind, ref.id) for ref in refs}
    hits = []
    for entry in entries:
        linked = entry.metadata.get("related") or []
        matched = [r for r in linked if (r.get("kind"), r.get("id")) in wanted]
        hits.append(ToolHit(entry=entry, matched=matched))
    return hits


def memory_tool_related(
    *, actor: Actor, related: Sequence[dict[str, Any]], run_id: str = ""
) -> list[ToolHit]:
    """The current memories linked to any of the items (newest first, at most 20)."""
    acting_agent(actor)
    if not related:
        raise ValidationFailed("Name at least one related item.", code="related_required")
    refs = references_check(actor, related)
    _budget(actor, run_id)
    hits = _related(actor, refs)
    _checked(actor, run_id, hits, "")
    return hits


@dataclass
class SummarisedSearch:
    summary: str
    memories: list[ToolHit]
    method: str
    searches: list[str]


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _extractive_summary(hits: Sequence[ToolHit], query_vector: np.ndarray) -> str:
    """The memories' sentences closest to the query (cosine of the local model), at most
    ``summary_sentences`` (``TUNING.tools``), in order of closeness, each citing its memory
    ``[n]``."""
    sentences: list[tuple[int, str]] = []
    for n, hit in enumerate(hits, start=1):
        for sentence in _SENTENCE.split(hit.entry.content.strip()):
            if sentence.strip():
                sentences.append((n, sentence.strip()))
    if not sentences:
        return ""
    vectors = get_embedding_provider().embed_documents([s for _, s in sentences])
    scores = np.asarray(vectors) @ query_vector
    chosen = sorted(range(len(sentences)), key=lambda i: -float(scores[i]))[
        : TUNING.tools.summary_sentences
    ]
    return " ".join(f"{sentences[i][1]} [{sentences[i][0]}]" for i in chosen)


def memory_tool_summarised_search(
    *, actor: Actor, query: str, run_id: str = ""
) -> SummarisedSearch:
    """The semantic search, then the memories linked to the same items as those found (one or
    both searches), summarised with citations: by the LLM when one is configured, else the
    found memories' sentences closest to the query. Counts as one search of the run."""
    acting_agent(actor)
    _search_check(query)
    _budget(actor, run_id)
    hits, vector = _semantic(actor, query)
    searches = ["semantic"]
    linked = [
        Reference(str(r["kind"]), int(r["id"]))
        for hit in hits
        for r in hit.entry.metadata.get("related") or []
        if isinstance(r, dict) and r.get("kind") in RELATED_KINDS and isinstance(r.get("id"), int)
    ]
    if linked:
        searches.append("related")
        seen = {hit.entry.pk for hit in hits}
        hits += [h for h in _related(actor, linked) if h.entry.pk not in seen][
            : TUNING.tools.search_results
        ]
    _checked(actor, run_id, hits, query)
    if not hits:
        return SummarisedSearch("", [], "offline", searches)
    provider = get_llm_provider()
    if not provider.model_id.startswith("offline:"):
        listing = "\n".join(f"[{n}] {h.entry.content}" for n, h in enumerate(hits, start=1))
        try:
            text = provider.complete(
                f"Question: {query}\n\nMemories:\n{listing}",
                system="Answer from these memories only, in at most four sentences, citing "
                "each memory you use as [n]. Say so if they do not answer the question.",
                max_tokens=400,
            )
            return SummarisedSearch(text.strip(), hits, provider.model_id, searches)
        except LLMError:
            pass  # the extractive summary below still answers
    return SummarisedSearch(_extractive_summary(hits, vector), hits, "offline", searches)
