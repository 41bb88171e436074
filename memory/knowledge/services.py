"""Knowledge items: bases, versioned keyed items with their sources, invalidation, and
relationships as edges of rag's knowledge graph (docs/memory/knowledge.md).

Who writes: bases are account-wide; an agent writes with its key's ``write`` scope (checked by
the API, and here), a person with the operator role (``memory.roles.MANAGE_MEMORY``; owners
always). Every write keeps the store's search index exact in its own transaction, under the
store's row lock, with embeddings computed before the transaction opens.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.actors import Actor
from core.audit import audit_record
from core.embeddings import get_embedding_provider
from core.errors import Conflict, PayloadTooLarge, ValidationFailed
from core.writes import changes_of, changes_validate, row_locked, row_update
from memory import names
from memory.knowledge import selectors
from memory.knowledge.index_services import index_forget, index_put
from memory.knowledge.models import MAX_BASE_NAME_LENGTH, MAX_KEY_LENGTH
from memory.models import KnowledgeItem, KnowledgeSource, KnowledgeStore
from memory.roles import MANAGE_MEMORY
from memory.spaces import MEMORY_ENTRIES, knowledge_item_text
from rag.graph import selectors as graph
from rag.graph import services as graph_services
from rag.graph.selectors import NodeType
from rag.visibility import source_of

if TYPE_CHECKING:
    from rag.graph.models import GraphEdge, GraphNode

# A key or a base name: a letter or digit, then letters, digits and . _ : @ - (no "/", so it
# is one URL path segment). Keys up to 200 characters, base names up to 100.
NAME_CHARS = r"[A-Za-z0-9][A-Za-z0-9._:@-]*"
_NAME = re.compile(NAME_CHARS)
MAX_CONTENT_CHARS = 100_000
MAX_SOURCES = 50
WRITE_KNOWLEDGE = MANAGE_MEMORY
KNOWLEDGE_ENTITY_TYPE = "knowledge_item"


def _name_check(value: str, *, what: str, limit: int, prefix: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationFailed(f"The {what} is empty.", code=f"invalid_{prefix}")
    if len(value) > limit:
        raise ValidationFailed(
            f"The {what} is limited to {limit} characters.",
            code=f"{prefix}_too_long",
            details={"max_length": limit},
        )
    if not _NAME.fullmatch(value):
        raise ValidationFailed(
            f"Invalid {what}: it must match {NAME_CHARS}.",
            code=f"invalid_{prefix}",
            details={"pattern": NAME_CHARS},
        )
    return value


def key_check(key: str) -> str:
    """400 ``key_too_long`` past 200 characters, ``invalid_key`` outside the charset."""
    return _name_check(key, what="key", limit=MAX_KEY_LENGTH, prefix="key")


def base_name_check(name: str) -> str:
    return _name_check(
        name, what="knowledge base name", limit=MAX_BASE_NAME_LENGTH, prefix="base_name"
    )


def _unit(value: float, what: str, code: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValidationFailed(f"{what} must be a number from 0 to 1.", code=code)
    return float(value)


def _writer(actor: Actor, account_id: int) -> None:
    actor.require(account_id, WRITE_KNOWLEDGE)
    actor.require_scope("write")


# --- bases -----------------------------------------------------------------------------------


def store_create(
    *,
    actor: Actor,
    name: str,
    knowledge_type: str = KnowledgeStore.KnowledgeType.FACTUAL,
    description: str = "",
    account_id: int | None = None,
) -> KnowledgeStore:
    """A named knowledge base of the account; 409 ``knowledge_base_exists`` for a name taken."""
    account_id = account_id if account_id is not None else actor.account_id
    _writer(actor, account_id)
    base_name_check(name)
    if knowledge_type not in KnowledgeStore.KnowledgeType.values:
        raise ValidationFailed(
            "Unknown knowledge type.",
            code="invalid_knowledge_type",
            details={"allowed": list(KnowledgeStore.KnowledgeType.values)},
        )
    store = KnowledgeStore(
        account_id=account_id,
        name=name,
        knowledge_type=knowledge_type,
        description=description,
        created_by=actor.agent,
    )
    try:
        with transaction.atomic():
            store.save(force_insert=True)
            audit_record(
                actor=actor,
                action="memory.knowledge.base.create",
                account_id=account_id,
                target=store,
                changes={"name": name, "knowledge_type": knowledge_type},
            )
    except IntegrityError as exc:
        if "knowledge_store_unique_name" in str(exc):
            raise Conflict(
                "A knowledge base of this name exists.", code="knowledge_base_exists"
            ) from exc
        raise
    return store


def store_delete(*, actor: Actor, store: KnowledgeStore) -> None:
    """Delete a base with every version of its items and their sources; the items' graph
    nodes go too (with their relationships), through rag's services."""
    _writer(actor, store.account_id)
    node_ids = set(
        KnowledgeItem.objects.filter(store=store, graph_node__isnull=False).values_list(
            "graph_node_id", flat=True
        )
    )
    with transaction.atomic():
        for node in graph.nodes_by_id(node_ids).values():
            graph_services.node_delete(actor=actor, node=node)
        audit_record(
            actor=actor,
            action="memory.knowledge.base.delete",
            account_id=store.account_id,
            target=store,
            changes={"name": store.name},
        )
        KnowledgeItem.objects.filter(store=store).update(previous=None)
        KnowledgeStore.objects.filter(pk=store.pk).delete()


def store_update(
    *, actor: Actor, store: KnowledgeStore, fields: Mapping[str, Any]
) -> KnowledgeStore:
    """Change a base's description (its name and type are fixed: items' URLs and graph nodes
    carry the name)."""
    _writer(actor, store.account_id)
    changes = changes_of(store, fields, ("description",))
    if not changes:
        return store
    changes_validate(store, changes)
    return row_update(
        actor=actor,
        instance=store,
        changes=changes,
        action="memory.knowledge.base.update",
        account_id=store.account_id,
    )


def _store_for_put(actor: Actor, name: str, account_id: int) -> KnowledgeStore:
    """The account's base ``name``, created (factual) on first use."""
    base_name_check(name)
    visible = selectors.stores_visible(actor).filter(account_id=account_id)
    found = visible.filter(name=name).first()
    if found is not None:
        return found
    try:
        return store_create(actor=actor, name=name, account_id=account_id)
    except Conflict:  # made meanwhile by a concurrent first write
        return visible.get(name=name)


# --- items -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceInput:
    source_type: str
    source_id: str = ""
    reliability: float = 1.0
    extracted_at: datetime | None = None


def _sources_check(sources: Sequence[SourceInput]) -> None:
    if len(sources) > MAX_SOURCES:
        raise ValidationFailed(f"At most {MAX_SOURCES} sources.", code="too_many_sources")
    for source in sources:
        if source.source_type not in KnowledgeSource.SourceType.values:
            raise ValidationFailed(
                "Unknown source_type.",
                code="invalid_source_type",
                details={"allowed": list(KnowledgeSource.SourceType.values)},
            )
        if len(source.source_id) > 200:
            raise ValidationFailed("source_id is limited to 200 characters.", code="invalid_source")
        _unit(source.reliability, "reliability", "invalid_reliability")


def _source_rows(item: KnowledgeItem, sources: Sequence[SourceInput]) -> list[KnowledgeSource]:
    now = timezone.now()
    return [
        KnowledgeSource(
            account_id=item.account_id,
            item=item,
            source_type=s.source_type,
            source_id=s.source_id,
            reliability=s.reliability,
            extracted_at=s.extracted_at or now,
        )
        for s in sources
    ]


def _same_sources(item: KnowledgeItem, sources: Sequence[SourceInput]) -> bool:
    held = [(s.source_type, s.source_id, s.reliability) for s in item.sources.all()]
    return held == [(s.source_type, s.source_id, float(s.reliability)) for s in sources]


@dataclass(frozen=True)
class PutOutcome:
    item: KnowledgeItem
    created: bool  # a new item (version 1)
    changed: bool  # a new version was written


def knowledge_item_put(
    *,
    actor: Actor,
    base: str,
    key: str,
    content: str,
    content_type: str = "text/plain",
    metadata: Mapping[str, Any] | None = None,
    confidence: float = 1.0,
    sources: Sequence[SourceInput] | None = None,
    account_id: int | None = None,
    source_context_id: int | None = None,
) -> PutOutcome:
    """Write the item ``key`` of the base ``base`` (created, factual, on first use): version 1
    for a new key; otherwise a new version when anything differs from the current one (or it
    was invalidated), the previous version kept readable. The same content, type, metadata,
    confidence and sources (or none given) as the current valid version write nothing.
    ``sources`` omitted carries the current version's sources over. ``account_id``: the
    account, for an actor in several (a person in the admin). ``source_context_id``: the
    context the item is derived from (extraction from a conversation): it keeps that context's
    visibility, and the key names an item of that source alone (None: account-wide)."""
    key_check(key)
    if not content.strip():
        raise ValidationFailed("The content is empty.", code="empty_content")
    if len(content) > MAX_CONTENT_CHARS:
        raise PayloadTooLarge(
            f"content is limited to {MAX_CONTENT_CHARS} characters.",
            code="content_too_large",
            details={"limit": MAX_CONTENT_CHARS},
        )
    if not content_type.strip() or len(content_type) > 100:
        raise ValidationFailed("content_type: 1 to 100 characters.", code="invalid_content_type")
    confidence = _unit(confidence, "confidence", "invalid_confidence")
    metadata = dict(metadata or {})
    names.json_text(metadata)
    if sources is not None:
        _sources_check(sources)
    account_id = account_id if account_id is not None else actor.account_id
    _writer(actor, account_id)
    store = _store_for_put(actor, base, account_id)
    current = selectors.item_current(store, key, source_context_id)
    if current is not None:
        unchanged = (
            current.is_valid
            and current.content == content
            and current.content_type == content_type
            and current.metadata == metadata
            and current.confidence == confidence
            and (sources is None or _same_sources(current, sources))
        )
        if unchanged:
            return PutOutcome(current, created=False, changed=False)
    text = knowledge_item_text(key, content)
    vector = np.asarray(get_embedding_provider().embed_documents([text])[0])
    with transaction.atomic():
        locked = _store_lock(store.pk)
        # Under the store's lock: the current version as it is now.
        previous = (
            KnowledgeItem.objects.select_for_update()
            .defer("embedding")
            .filter(store=store, key=key, is_current=True, source_context_id=source_context_id)
            .first()
        )
        item = KnowledgeItem(
            account_id=store.account_id,
            store=store,
            key=key,
            content=content,
            content_type=content_type,
            metadata=metadata,
            confidence=confidence,
            author=actor.agent,
            source_context_id=source_context_id,
        )
        carried: list[SourceInput] = []
        if previous is not None:
            item.lineage, item.version = previous.lineage, previous.version + 1
            item.previous_id, item.graph_node_id = previous.pk, previous.graph_node_id
            if sources is None:
                carried = [
                    SourceInput(s.source_type, s.source_id, s.reliability, s.extracted_at)
                    for s in previous.sources.all()
                ]
            KnowledgeItem.objects.filter(pk=previous.pk).update(is_current=False)
            if previous.is_valid:
                index_forget(locked, [previous.pk])
                locked.refresh_from_db(fields=["item_count", "total_terms"])
        item.save(force_insert=True)
        KnowledgeSource.objects.bulk_create(_source_rows(item, sources or carried))
        index_put(locked, item, text, vector)
        node = _node_for(actor, item, base, vector)
        if item.graph_node_id != node.pk:
            KnowledgeItem.objects.filter(lineage=item.lineage).update(graph_node=node)
        audit_record(
            actor=actor,
            action="memory.knowledge.item.put",
            account_id=store.account_id,
            target=item,
            changes={"base": base, "key": key, "version": item.version},
        )
    return PutOutcome(_stored(item.pk), created=previous is None, changed=True)


def _node_for(actor: Actor, item: KnowledgeItem, base: str, vector: np.ndarray) -> GraphNode:
    """The item's graph node (``<base>/<key>``, entity type ``knowledge_item``), made on its
    first version (or adopted, when the graph has one of that name and source) and given each
    new version's content; the item's embedding serves the node too (no second provider
    call). An item extracted from a context has a node of that source, named
    ``<base>/<key> (context <id>)``: it keeps the context's visibility (``rag.visibility``)."""
    source = source_of(MEMORY_ENTRIES.name, item.source_context_id)
    name = f"{base}/{item.key}"
    if not source.is_public:
        name += f" (context {item.source_context_id})"
    description = item.content[:2000]
    return graph_services.node_ensure(
        actor=actor,
        account_id=item.account_id,
        name=name,
        entity_type=KNOWLEDGE_ENTITY_TYPE,
        node_id=item.graph_node_id,
        same_source=True,
        fields={"description": description},
        initial={
            "node_type": NodeType.CONCEPT,
            "metadata": {"knowledge_base": base, "key": item.key},
        },
        source=source,
        embedding=vector,
    ).node


def _store_lock(store_id: int) -> KnowledgeStore:
    """The base's row, locked; one deleted since the caller read it (a write racing the base's
    deletion) is 404 ``knowledge_base_not_found``, as a missing one."""
    return row_locked(KnowledgeStore.objects.all(), store_id, missing=selectors.base_not_found)


def knowledge_item_invalidate(
    *, actor: Actor, item: KnowledgeItem, at: datetime | None = None, reason: str = ""
) -> KnowledgeItem:
    """Mark the current version of an item no longer valid from ``at`` (default now): it gets
    ``valid_to``, is kept with its history, never deleted, and leaves search. An item already
    invalid is answered unchanged. Writing the key again makes a new, valid version."""
    _writer(actor, item.account_id)
    when = at or timezone.now()
    if when < item.valid_from:
        raise ValidationFailed("valid_to cannot precede valid_from.", code="invalid_valid_to")
    with transaction.atomic():
        locked = _store_lock(item.store_id)
        changed = KnowledgeItem.objects.filter(
            pk=item.pk, is_current=True, valid_to__isnull=True
        ).update(valid_to=when)
        if changed:
            index_forget(locked, [item.pk])
            audit_record(
                actor=actor,
                action="memory.knowledge.item.invalidate",
                account_id=item.account_id,
                target=item,
                changes={"valid_to": when.isoformat(), "reason": reason[:500]},
            )
    return _stored(item.pk)


def _stored(item_id: int) -> KnowledgeItem:
    """An item as stored, with its base and sources, without its vector."""
    return (
        KnowledgeItem.objects.defer("embedding")
        .select_related("store")
        .prefetch_related("sources")
        .get(pk=item_id)
    )


# --- relationships ---------------------------------------------------------------------------


def knowledge_relate(
    *,
    actor: Actor,
    source: tuple[str, str],
    target: tuple[str, str],
    relationship_type: str,
    strength: float = 1.0,
) -> GraphEdge:
    """A typed relationship from one item to another (each ``(base, key)``), stored as an edge
    of rag's knowledge graph between the items' nodes, ``strength`` as its weight. 404
    ``knowledge_base_not_found`` / ``knowledge_item_not_found`` for a missing end, 400
    ``invalid_strength`` (0..1), ``invalid_relationship_type`` (1..100 characters),
    ``self_loop``; 409 ``edge_exists`` for the same type between the same items again."""
    relationship_type = (relationship_type or "").strip()
    if not relationship_type or len(relationship_type) > 100:
        raise ValidationFailed(
            "relationship_type: 1 to 100 characters.", code="invalid_relationship_type"
        )
    strength = _unit(strength, "strength", "invalid_strength")
    _writer(actor, actor.account_id)
    ends = [selectors.item_get(actor, base, key) for base, key in (source, target)]
    nodes = []
    for (base, _), item in zip((source, target), ends, strict=True):
        if item.graph_node_id is None:  # its node was deleted from the graph: made again
            vector = _stored_vector(item)
            with transaction.atomic():
                node = _node_for(actor, item, base, vector)
                KnowledgeItem.objects.filter(lineage=item.lineage).update(graph_node=node)
            nodes.append(node.pk)
        else:
            nodes.append(item.graph_node_id)
    return graph_services.edge_create(
        actor=actor,
        account_id=ends[0].account_id,
        source_id=nodes[0],
        target_id=nodes[1],
        relation_type=relationship_type,
        weight=strength,
        metadata={"knowledge": True},
    )


def _stored_vector(item: KnowledgeItem) -> np.ndarray:
    row = KnowledgeItem.objects.filter(pk=item.pk).values_list("embedding", flat=True).first()
    if row is not None:
        return np.asarray(row)
    text = knowledge_item_text(item.key, item.content)
    return np.asarray(get_embedding_provider().embed_documents([text])[0])
