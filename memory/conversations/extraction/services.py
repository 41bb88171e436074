"""Extraction: knowledge out of a conversation's messages (docs/memory/conversations.md,
"Extraction").

``extraction_run`` extracts turns ``from_turn``..``to_turn`` on request; ``extraction_follow_up``
is what the Celery follow-up of an append runs: it claims the messages after
``Conversation.extracted_through`` with a compare-and-set (a repeated or concurrent run finds
nothing left to claim, so a batch is extracted once), then extracts them. A run that fails
leaves a visible row (decision ``none`` with its ``error``) and is not retried in a loop; a new
request (``POST .../extract``) can run the turns again.

With an LLM configured the model proposes facts, entities and relations and decides each fact
against the 10 most similar current knowledge items (``memory.conversations.extraction.llm``); when
the model cannot be reached or answers unusable JSON, the batch is extracted offline instead
(``memory.conversations.extraction.offline``), and the method on each row says which ran.

Facts are knowledge items in the account's base ``EXTRACTION_BASE`` (factual, so context
assembly reads them for conversations), each version sourced from its messages
(``conversation_message``, the entry id); entities are nodes of rag's knowledge graph (found
again by their name and type), relations its edges.

Derived data keeps the visibility of its source (docs/architecture.md, rule 11): every item,
node and edge written here records the conversation's context, so only those who may read the
conversation see it. A key names one item per source: a conversation writes versions of its
own items only, and the model decides its facts against the items every reader of the
conversation sees (account-wide ones and the conversation's own), never another's
(``memory.conversations.extraction.writer_services`` writes them). No write here runs inside a
transaction of its own: each knowledge or graph service commits its own, after its embedding is
computed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

from django.db.models import F, Q
from django.utils import timezone

from core.actors import Actor, actor_for_account
from core.errors import ValidationFailed
from core.llm import LLMError, LLMProvider, get_llm_provider
from memory.conversations.extraction import llm, offline
from memory.conversations.extraction.models import OFFLINE_METHOD
from memory.conversations.extraction.writer_services import EXTRACTION_BASE as EXTRACTION_BASE
from memory.conversations.extraction.writer_services import ExtractionRun, ExtractionWriter
from memory.conversations.selectors import messages_in_range
from memory.conversations.services import turn_range_check
from memory.knowledge import selectors as knowledge_selectors
from memory.knowledge import services as knowledge_services
from memory.long_term.context_access import require_writable
from memory.long_term.services.graph_links import conversation_graph_link
from memory.models import Conversation, Extraction, KnowledgeItem, MemoryEntry
from memory.tuning import TUNING

logger = logging.getLogger("engram.memory")

# The knowledge items the model decides a fact against and the confidence of what it extracted
# are tunables: ``TUNING.extraction`` (memory.tuning).
# Offline relations: the fact's predicate -> the entity type of its value.
_RELATION_VALUE_TYPES = {
    "moved_to": offline.PLACE,
    "lives_in": offline.PLACE,
    "works_at": offline.ORGANISATION,
}
Decision = Extraction.Decision
Kind = Extraction.Kind


# --- the extractors --------------------------------------------------------------------------


def _offline(writer: ExtractionWriter, messages: Sequence[MemoryEntry]) -> None:
    speakers = {m.speaker for m in messages if m.speaker}
    mentioned = offline.entities_of([m.content for m in messages], speakers)
    # Each entity once per run, with every message that mentions it.
    mentions: dict[tuple[str, str], tuple[offline.Entity, list[MemoryEntry]]] = {}
    relations: list[tuple[MemoryEntry, offline.Fact, str]] = []

    def mention(entity: offline.Entity, message: MemoryEntry) -> None:
        where = mentions.setdefault((entity.name.lower(), entity.entity_type), (entity, []))[1]
        if message not in where:
            where.append(message)

    for message, entities in zip(messages, mentioned, strict=True):
        facts = offline.facts_of(message.content, message.speaker, message.role)
        speaker = message.speaker.strip()
        if facts and speaker:  # first person: the speaker is mentioned
            mention(offline.Entity(speaker, offline.PERSON), message)
        for entity in entities:
            mention(entity, message)
        for fact in facts:
            writer.fact_put(
                [message],
                key=fact.key,
                text=fact.text,
                confidence=fact.confidence,
                metadata={"when": fact.when} if fact.when else {},
            )
            value_type = _RELATION_VALUE_TYPES.get(fact.predicate)
            if value_type and speaker:
                mention(offline.Entity(fact.value, value_type), message)
                relations.append((message, fact, value_type))
    for entity, where in mentions.values():
        writer.entity(
            where, entity.name, entity.entity_type, TUNING.extraction.offline_entity_confidence
        )
    for message, fact, value_type in relations:
        person, _ = writer.node(
            message.speaker, offline.PERSON, TUNING.extraction.offline_entity_confidence
        )
        value, _ = writer.node(fact.value, value_type, TUNING.extraction.offline_entity_confidence)
        writer.relation([message], person, fact.predicate, value, fact.confidence)


def _fact_key(proposed: llm.ProposedFact) -> str:
    key = proposed.key
    try:
        return knowledge_services.key_check(key) if key else _hashed_key(proposed.text)
    except ValidationFailed:  # not a usable key: the derived one
        return _hashed_key(proposed.text)


def _hashed_key(text: str) -> str:
    return "fact." + hashlib.sha256(" ".join(text.lower().split()).encode()).hexdigest()[:16]


def _llm(writer: ExtractionWriter, provider: LLMProvider, messages: Sequence[MemoryEntry]) -> None:
    """The model's extraction (raises LLMError before anything is written when the first call
    fails, so the caller can fall back)."""
    proposal = llm.propose(
        provider, [llm.Line(m.position or 0, m.speaker or m.role, m.content) for m in messages]
    )
    by_turn = {m.position: m for m in messages}

    def sources(turns: list[int]) -> list[MemoryEntry]:
        return [by_turn[t] for t in turns if t in by_turn] or list(messages)

    candidates = [
        [
            llm.Candidate(hit.item.pk, hit.item.key, hit.item.content)
            for hit in knowledge_selectors.knowledge_search(
                actor=writer.actor,
                query=fact.text,
                top_k=TUNING.extraction.candidates,
                seen_from_context=writer.context_id,
            ).hits
        ]
        for fact in proposal.facts
    ]
    try:
        decisions = llm.decide(provider, proposal.facts, candidates) if proposal.facts else []
    except LLMError as exc:
        logger.warning("extraction: the decisions failed (%s); every fact is added", exc)
        decisions = [llm.Decision("add", None, fact.text) for fact in proposal.facts]
    for fact, decided in zip(proposal.facts, decisions, strict=True):
        where = sources(fact.turns)
        chosen = decided.candidate
        item = None
        if chosen is not None:
            item = (
                KnowledgeItem.objects.defer("embedding")
                .select_related("store")
                .filter(account_id=writer.account_id, pk=chosen.item_id, is_current=True)
                .filter(Q(source_context__isnull=True) | Q(source_context_id=writer.context_id))
                .first()
            )
        if decided.decision == "update" and item is not None:
            writer.fact_put(
                where, key=item.key, text=decided.text, confidence=fact.confidence,
                base=item.store.name,
            )  # fmt: skip
        elif (
            decided.decision == "invalidate"
            and item is not None
            and item.source_context_id == writer.context_id
        ):  # an account-wide item is never invalidated by what one conversation said
            done = knowledge_services.knowledge_item_invalidate(
                actor=writer.actor, item=item, reason=fact.text
            )
            writer.row(
                where, kind=Kind.FACT, decision=Decision.INVALIDATE, fact=fact.text,
                confidence=fact.confidence, key=item.key, knowledge_item=done,
            )  # fmt: skip
        elif decided.decision == "none":
            writer.row(
                where, kind=Kind.FACT, decision=Decision.NONE, fact=fact.text,
                confidence=fact.confidence, key=item.key if item else "", knowledge_item=item,
            )  # fmt: skip
        else:  # add (or an update / invalidation of an item gone meanwhile, or not its own)
            writer.fact_put(where, key=_fact_key(fact), text=fact.text, confidence=fact.confidence)
    types: dict[str, str] = {}
    for entity in proposal.entities:
        types.setdefault(entity.name.lower(), entity.entity_type)
        writer.entity(
            sources(entity.turns), entity.name, entity.entity_type, TUNING.extraction.llm_confidence
        )
    for relation in proposal.relations:
        source, _ = writer.node(
            relation.source,
            types.get(relation.source.lower(), offline.PERSON),
            TUNING.extraction.llm_confidence,
        )
        target, _ = writer.node(
            relation.target,
            types.get(relation.target.lower(), offline.PERSON),
            TUNING.extraction.llm_confidence,
        )
        writer.relation(
            sources(relation.turns),
            source,
            relation.relation_type,
            target,
            TUNING.extraction.llm_confidence,
        )


def _stretches(messages: Sequence[MemoryEntry]) -> list[list[MemoryEntry]]:
    """The batch in stretches whose transcript fits one model call (``TUNING.llm.input_chars``)."""
    stretches: list[list[MemoryEntry]] = [[]]
    size = 0
    for message in messages:
        length = len(message.content) + len(message.speaker) + 16
        if stretches[-1] and size + length > TUNING.llm.input_chars:
            stretches.append([])
            size = 0
        stretches[-1].append(message)
        size += length
    return [s for s in stretches if s]


def _extract(
    actor: Actor, conversation: Conversation, messages: Sequence[MemoryEntry], run: ExtractionRun
) -> None:
    """The model's extraction, stretch by stretch, each falling back to the offline extractor
    when the model fails before writing anything of it; offline when no model is configured."""
    provider = get_llm_provider()
    if provider.model_id.startswith("offline:"):
        run.method = OFFLINE_METHOD
        _offline(ExtractionWriter(actor, conversation, OFFLINE_METHOD, run), messages)
        return
    methods = set()
    for stretch in _stretches(messages):
        writer = ExtractionWriter(actor, conversation, f"llm:{provider.model_id}", run)
        written = len(run.extractions)
        try:
            _llm(writer, provider, stretch)
            methods.add(writer.method)
            continue
        except LLMError as exc:
            if len(run.extractions) > written:
                raise  # something of this stretch was written: not a clean fallback
            logger.warning("extraction: the model failed (%s); extracting offline", exc)
        _offline(ExtractionWriter(actor, conversation, OFFLINE_METHOD, run), stretch)
        methods.add(OFFLINE_METHOD)
    run.method = " + ".join(sorted(methods)) or OFFLINE_METHOD


# --- the entry points ------------------------------------------------------------------------


def extraction_run(
    *,
    actor: Actor,
    conversation: Conversation,
    from_turn: int | None = None,
    to_turn: int | None = None,
) -> ExtractionRun:
    """Extract turns ``from_turn``..``to_turn`` now (default: the whole conversation; write
    access). 400 ``invalid_turn_range`` for a backwards range, ``turn_out_of_range`` past the
    end. Facts already known answer decision ``none``. ``extracted_through`` moves past the
    range when the range reaches on from it (compare-and-set)."""
    require_writable(actor, conversation.context_id)
    actor.require_scope("write")
    fresh = Conversation.objects.select_related("context").get(pk=conversation.pk)
    to_turn = fresh.message_count if to_turn is None else to_turn
    from_turn = 1 if from_turn is None else from_turn
    run = ExtractionRun(from_turn, to_turn, OFFLINE_METHOD)
    if fresh.message_count == 0 and to_turn == 0 and from_turn == 1:
        return run  # nothing said yet
    turn_range_check(fresh, from_turn, to_turn)
    messages = messages_in_range(fresh, from_turn, to_turn)
    _extract(actor, fresh, messages, run)
    conversation_graph_link(messages=messages, extractions=run.extractions)
    Conversation.objects.filter(
        pk=fresh.pk, extracted_through__gte=from_turn - 1, extracted_through__lt=to_turn
    ).update(extracted_through=to_turn)
    return run


def extraction_follow_up(*, conversation_id: int) -> ExtractionRun | None:
    """After an append (Celery): claim the turns after ``extracted_through`` and extract them.
    None when there is nothing to claim (a repeated run, or another run claimed them). A
    failure is logged and recorded as a row with its error; it never fails the append."""
    conversation = Conversation.objects.select_related("context").filter(pk=conversation_id).first()
    if conversation is None:
        return None
    start, end = conversation.extracted_through + 1, conversation.message_count
    if end < start:
        return None
    claimed = Conversation.objects.filter(pk=conversation.pk, extracted_through=start - 1).update(
        extracted_through=end, updated_at=timezone.now()
    )
    if not claimed:
        return None
    actor = actor_for_account(conversation.account_id)
    messages = messages_in_range(conversation, start, end)
    run = ExtractionRun(start, end, OFFLINE_METHOD)
    try:
        _extract(actor, conversation, messages, run)
    except Exception as exc:  # any failure ends in a visible state
        logger.exception(
            "extraction of conversation %s turns %s-%s failed", conversation_id, start, end
        )
        ExtractionWriter(actor, conversation, run.method, run).row(
            messages, kind=Kind.FACT, decision=Decision.NONE, fact="", confidence=0.0,
            error=f"{type(exc).__name__}: {exc}"[:2000],
        )  # fmt: skip
    conversation_graph_link(messages=messages, extractions=run.extractions)
    return run


def extractions_due_run(*, dry_run: bool = False, limit: int = 500) -> dict[str, int]:
    """The periodic sweep: conversations with messages not extracted yet (an append whose task
    could not be queued, or a worker lost mid-way before its claim)."""
    due = list(
        Conversation.objects.filter(message_count__gt=F("extracted_through")).values_list(
            "pk", flat=True
        )[:limit]
    )
    if dry_run:
        return {"due": len(due), "extractions": 0}
    made = 0
    for pk in due:
        run = extraction_follow_up(conversation_id=pk)
        made += len(run.extractions) if run else 0
    return {"due": len(due), "extractions": made}
