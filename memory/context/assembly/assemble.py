"""One call that answers an agent's LLM context for a query, within a hard token budget, from
every store, each item with its provenance (docs/memory/context.md).

1. The query is embedded once; the task type is given or classified (``memory.context.task_types``).
2. Each section's sources answer candidates best first (``memory.context.assembly.sources``).
3. The budget, less the query's own line, is shared among the sections that have candidates, by
   the task type's shares (``TUNING.shares``); a section packs its candidates best first while they
   fit, shortening an item only at a sentence boundary (``budget.fit_sentences``), and what it
   leaves unused flows to the next section. Whatever is still left after the last section goes
   back, in section order, to candidates not taken yet (the final fill): an empty store never
   wastes the budget.
4. An item already taken (a turn both recent and retrieved, a memory and its summary entry, the
   same text twice) is kept once, where it first appears.
5. Sections are rendered in seed 003's order, items in reading order (turns by turn number),
   and the whole text is counted once more: it never exceeds the budget.

What an item costs is its line's tokens plus its metadata echo's (a bounded excerpt,
``budget.echo``): ``tokens`` counts everything the answer shows. Each item's bytes in the answer
come out of ``budget.BODY_BYTES_PER_TOKEN`` x the budget, so the body is bounded by a function
of the budget whatever the items hold (docs/memory/context.md, "The budget").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core import metrics
from core.actors import Actor
from core.db_router import primary_reads
from core.embeddings import get_embedding_provider
from core.errors import ValidationFailed
from core.search import MAX_QUERY_CHARS
from core.side_by_side import side_by_side
from memory.context import task_types
from memory.context.assembly import budget, sources
from memory.context.assembly.packing import Packer, Section, header_line, reading_order, render
from memory.context.assembly.sources import Candidate
from memory.conversations import selectors as conversation_selectors
from memory.models import Conversation
from memory.tuning import TUNING

MIN_BUDGET, MAX_BUDGET, DEFAULT_BUDGET = 100, 32_000, 2_000
DEFAULT_RECENT_TURNS = 5
# The last turns' cap (a share of the budget) and when the rest of a conversation is read are
# tunables: ``TUNING.packing`` (memory.tuning).
SOURCES = (
    "recent_turns",
    "summaries",
    "history",
    "memories",
    "knowledge",
    "documents",
    "pages",
    "skills",
    "pools",
    "working",
)
FORMATS = ("text", "markdown")
# Seed 003's order; each section's sources.
SECTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("immediate", "Recent conversation", ("recent_turns",)),
    ("recent", "Summaries of the conversation", ("summaries",)),
    ("history", "Relevant history", ("history", "memories")),
    ("knowledge", "Knowledge", ("knowledge",)),
    ("documents", "Documents", ("documents",)),
    ("pages", "Pages", ("pages",)),
    ("skills", "Skills", ("skills",)),
    ("task", "Task context", ("working", "pools")),
)
QUERY_SECTION = ("query", "Current query")
# Each section's share of what the last turns leave, by task type (renormalised over the
# sections that have candidates), is a tunable: ``TUNING.shares`` (memory.tuning).


def shares_of(task_type: str) -> dict[str, float]:
    """Each section's share for ``task_type``, as tuned now."""
    return dataclasses.asdict(getattr(TUNING.shares, task_type))


@dataclass(frozen=True)
class ContextRequest:
    query: str
    conversation_id: int | None = None
    session_id: str = ""
    task_type: str | None = None
    token_budget: int = DEFAULT_BUDGET
    sources: Sequence[str] | None = None
    knowledge_base_ids: Sequence[int] = ()
    format: str = "text"


@dataclass
class ContextResult:
    context: str
    task_type: str
    task_type_source: str
    tokens: int
    token_budget: int
    tokenizer: str
    sections: list[dict[str, Any]]
    dropped: dict[str, int]
    timings_ms: dict[str, float]


def _check(request: ContextRequest) -> None:
    if not request.query.strip():
        raise ValidationFailed("query is required.", code="empty_query")
    if len(request.query) > MAX_QUERY_CHARS:
        raise ValidationFailed(
            f"query is limited to {MAX_QUERY_CHARS} characters.", code="query_too_long"
        )
    if not MIN_BUDGET <= request.token_budget <= MAX_BUDGET:
        raise ValidationFailed(
            f"token_budget must be from {MIN_BUDGET} to {MAX_BUDGET}.",
            code="invalid_token_budget",
            details={"min": MIN_BUDGET, "max": MAX_BUDGET},
        )
    unknown = sorted(set(request.sources or ()) - set(SOURCES))
    if unknown:
        raise ValidationFailed(
            f"Unknown sources: {', '.join(unknown)}.",
            code="invalid_source",
            details={"choices": list(SOURCES)},
        )
    if request.task_type is not None and request.task_type not in task_types.TASK_TYPES:
        raise ValidationFailed(
            "task_type must be conversation, problem_solving, learning or analysis.",
            code="invalid_task_type",
        )
    if request.format not in FORMATS:
        raise ValidationFailed("format must be text or markdown.", code="invalid_format")


def _gather(
    actor: Actor,
    request: ContextRequest,
    conversation: Conversation | None,
    task_type: str,
    vector: np.ndarray,
    timings: dict[str, float],
) -> dict[str, list[Candidate]]:
    wanted = set(request.sources or SOURCES)
    found: dict[str, list[Candidate]] = {name: [] for name in SOURCES}

    def timed(name: str, read: Callable[[], list[Candidate]]) -> None:
        """``read``'s candidates stored in ``found``, its milliseconds in ``timings``."""
        if name in wanted:
            started = time.perf_counter()
            found[name] = read()
            timings[name] = round((time.perf_counter() - started) * 1000, 2)

    store_ids: list[int] | None = None
    document_base_ids: list[int] | None = None
    if request.knowledge_base_ids:
        store_ids, document_base_ids = sources.base_ids_split(actor, request.knowledge_base_ids)

    def task() -> None:
        """Working memory and the pools, read together (``task_context``)."""
        tiers = [t for t, s in (("working", "working"), ("shared", "pools")) if s in wanted]
        if not tiers:
            return
        started = time.perf_counter()
        read = sources.task_context(
            actor, request.query, vector, session_id=request.session_id, tiers=tiers
        )
        found["working"] = [c for c in read if c.kind == "working"]
        found["pools"] = [c for c in read if c.kind == "pool"]
        timings["task"] = round((time.perf_counter() - started) * 1000, 2)

    def history() -> None:
        if conversation is not None:
            timed(
                "history",
                lambda: sources.history(
                    actor,
                    conversation,
                    request.query,
                    vector,
                    limit=sources.history_candidates(request.token_budget),
                )[0],
            )

    def memories_and_the_conversation() -> None:
        """The memories, then the conversation's last turns and summaries (two small reads)."""
        timed("memories", lambda: sources.memories(actor, request.query, vector)[0])
        if conversation is not None:
            timed(
                "recent_turns",
                lambda: sources.recent_turns(conversation, DEFAULT_RECENT_TURNS),
            )
            timed("summaries", lambda: sources.summaries(conversation))

    def knowledge_and_the_rest() -> None:
        """The knowledge items, then the sources that cost little each, one after another
        (each on the pool of its own queued behind the searches: measured, slower)."""
        timed(
            "knowledge",
            lambda: sources.knowledge(actor, request.query, vector, task_type, store_ids),
        )
        timed(
            "documents",
            lambda: sources.documents(actor, request.query, vector, document_base_ids),
        )
        timed("pages", lambda: sources.pages(actor, request.query, vector))
        timed("skills", lambda: sources.skills(actor, request.query, vector))
        task()

    # Three lanes side by side (core.side_by_side), each about a third of the work: the
    # conversation's history; the memories with the conversation's own small reads; the
    # knowledge items with the cheap sources after them.
    side_by_side(
        {
            "history": history,
            "memories": memories_and_the_conversation,
            "rest": knowledge_and_the_rest,
        }
    )
    return found


def _merge_history(found: dict[str, list[Candidate]]) -> list[Candidate]:
    """The conversation's turns and the agent's memories, each list in its own ranking, merged
    by score (one engine, one scale)."""
    turns, memories = found["history"], found["memories"]
    merged: list[Candidate] = []
    i = j = 0
    while i < len(turns) or j < len(memories):
        take_turn = j >= len(memories) or (i < len(turns) and turns[i].score >= memories[j].score)
        if take_turn:
            merged.append(turns[i])
            i += 1
        else:
            merged.append(memories[j])
            j += 1
    return merged


@primary_reads
def context_assemble(*, actor: Actor, request: ContextRequest) -> ContextResult:
    _check(request)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    conversation = (
        conversation_selectors.conversation_get(actor, request.conversation_id)
        if request.conversation_id is not None
        else None
    )
    embed_started = time.perf_counter()
    vector = np.asarray(get_embedding_provider().embed_query(request.query), dtype=np.float32)
    timings["embed"] = round((time.perf_counter() - embed_started) * 1000, 2)
    if request.task_type is not None:
        task_type, task_type_source = request.task_type, "given"
    else:
        classify_started = time.perf_counter()
        task_type, method = task_types.classify(request.query, query_vector=vector)
        task_type_source = "classified" if method == "offline" else f"classified:{method}"
        timings["classify"] = round((time.perf_counter() - classify_started) * 1000, 2)
    found = _gather(actor, request, conversation, task_type, vector, timings)
    wanted = set(request.sources or SOURCES)
    pack_started = time.perf_counter()
    markdown = request.format == "markdown"
    by_name = {
        "immediate": found["recent_turns"],
        "recent": found["summaries"],
        "history": _merge_history(found),
        "knowledge": found["knowledge"],
        "documents": found["documents"],
        "pages": found["pages"],
        "skills": found["skills"],
        "task": [*found["working"], *found["pools"]],
    }
    sections = [Section(name, title, by_name[name]) for name, title, _ in SECTIONS]
    headers = budget.tokens_of([header_line(s.title, markdown) for s in sections])
    for section, header in zip(sections, headers, strict=True):
        section.header_tokens = header

    query_section = Section(*QUERY_SECTION)
    query_section.header_tokens = budget.tokens_of([header_line(QUERY_SECTION[1], markdown)])[0]
    query_section.candidates = [
        Candidate(kind="query", id="query", score=1.0, text=request.query, metadata={}, source={})
    ]
    packer = Packer(markdown)
    left = request.token_budget - packer.take(query_section, request.token_budget)
    # The query's own line is in the answer's fixed part (at most MAX_QUERY_CHARS characters);
    # every other item comes out of the body allowance.
    packer.bytes_left = budget.BODY_BYTES_PER_TOKEN * request.token_budget

    # The last turns take what they need, up to immediate_max of the budget: they are what the
    # agent answers. The other sections share the rest.
    immediate = sections[0]
    left -= packer.take(immediate, int(left * TUNING.packing.immediate_max))
    active = [s for s in sections[1:] if s.candidates]
    shares = shares_of(task_type)
    total_share = sum(shares[s.name] for s in active) or 1.0
    available, carry = left, 0
    for section in active:
        limit = int(available * shares[section.name] / total_share) + carry
        limit = min(limit, left)
        used = packer.take(section, limit)
        left -= used
        carry = limit - used
    for section in [immediate, *active]:  # the final fill
        if left <= 0:
            break
        left -= packer.take(section, left)
    history = sections[2]
    exhausted = all(c.id in history.chosen or packer.duplicate(c) for c in history.candidates)
    if (
        conversation is not None
        and exhausted
        and left >= TUNING.packing.more_room
        and "history" in wanted
    ):
        # The budget outlasts everything the search found: the rest of the conversation,
        # newest first (no more turns than could fit).
        taken = {
            int(i.candidate.id) for s in sections[:3] for i in s.items if i.candidate.kind == "turn"
        }
        rest = sources.more_turns(conversation, taken, left // TUNING.packing.min_turn_tokens + 1)
        history.candidates = [*history.candidates, *rest]
        left -= packer.take(history, left)

    ordered = [*sections, query_section]

    def counted() -> tuple[str, int]:
        """The context's text, and the tokens of everything the answer shows: the text and
        each item's metadata echo."""
        shown = render(ordered, markdown)
        echoes = sum(packer.echo(i.candidate)[2] for s in ordered for i in s.items)
        return shown, (budget.tokens_of([shown])[0] if shown else 0) + echoes

    text, tokens = counted()
    while tokens > request.token_budget:  # never expected: the safety net of the hard limit
        last = next(s for s in reversed(ordered) if s.items)
        last.items.pop()
        text, tokens = counted()
    chosen = {id(i.candidate) for s in ordered for i in s.items}
    left_out = [
        (s, i)
        for s in sections
        for i, c in enumerate(s.candidates)
        if id(c) not in chosen and not packer.duplicate(c)
    ]
    uncounted = [(s, i) for s, i in left_out if i not in s.counts]
    for s, i in uncounted:
        packer.whole(s, i)
    timings["pack"] = round((time.perf_counter() - pack_started) * 1000, 2)
    timings["total"] = round((time.perf_counter() - started) * 1000, 2)
    metrics.context_observed(task_type, timings)
    return ContextResult(
        context=text,
        task_type=task_type,
        task_type_source=task_type_source,
        tokens=tokens,
        token_budget=request.token_budget,
        tokenizer=budget.TOKENIZER,
        sections=[
            {
                "name": s.name,
                "tokens": s.tokens,
                # The query's own line is no item of any kind: it is the text asked about.
                "items": [i.as_json() for i in reading_order(s) if s is not query_section],
            }
            for s in ordered
            if s.items
        ],
        dropped={
            "candidates": len(left_out),
            "tokens": sum(s.counts[i] for s, i in left_out),
        },
        timings_ms=timings,
    )
