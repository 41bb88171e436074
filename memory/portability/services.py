"""memory's kinds of an account export (``core.portability``): long-term contexts with their
grants, conversations (their messages and summaries are entries of their own context), every
version of every entry, and short-term entries.

Loading writes the rows as they were (versions, lineages, archives, access counts, times) with
new ids and new lineages; what is derived is rebuilt, never carried: each current entry waits
in ``PendingIndex`` for its BM25 postings (and its embedding, unless the archive carried one
made by this installation's model), which the ``memory.index_pending`` task writes after the
import commits, and for its links to the knowledge graph (``memory.tasks.link_entries``, also
after the commit); short-term indexes are rebuilt inside the import's transaction. An agent's own
memory is named after the agent (``agent:<id>``), and a conversation's messages after it
(thread ``conversation:<id>``): both follow the new ids."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from django.utils import timezone

from core.errors import Conflict
from core.portability.kinds import ExportScope, ImportScope, Kind, Row, ref, when
from memory.models import (
    DEFAULT_POOL_ID,
    Conversation,
    KnowledgeItem,
    KnowledgeSource,
    KnowledgeStore,
    MemoryContext,
    MemoryContextGrant,
    MemoryEntry,
    MemoryPool,
    MemoryPoolEvent,
    MemoryPoolGrant,
    PendingIndex,
    ShortTermEntry,
)

AGENT = "core.agent"
TEAM = "core.team"
CONTEXT = "memory.context"
GRANT = "memory.context_grant"
CONVERSATION = "memory.conversation"
ENTRY = "memory.entry"
SHORT_TERM = "memory.short_term_entry"
STORE = "memory.knowledge_store"
ITEM = "memory.knowledge_item"
SOURCE = "memory.knowledge_source"
POOL = "memory.pool"
POOL_GRANT = "memory.pool_grant"
POOL_EVENT = "memory.pool_event"
ITEM_NODE = "memory.knowledge_item_node"
GRAPH_NODE = "rag.graph_node"
_AGENT_MEMORY_NAME = re.compile(r"^agent:\d+$")
_CONVERSATION_THREAD = re.compile(r"^conversation:(\d+)$")


def _contexts(scope: ExportScope) -> Any:
    contexts = MemoryContext.objects.filter(account=scope.account)
    if scope.single_agent:
        contexts = contexts.filter(owner__in=scope.agent_ids)
    return contexts


# --- contexts and grants ----------------------------------------------------------------------


def _context_rows(scope: ExportScope) -> Iterator[Row]:
    for context in _contexts(scope).order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": context.pk,
            "name": context.name,
            "context_type": context.context_type,
            "scope": context.scope,
            "owner": scope.agent_ref(context.owner_id),
            "team": ref(TEAM, context.team_id),
            "description": context.description,
            "metadata": context.metadata,
            "archived_at": context.archived_at,
            "change_policy": context.change_policy,
            "agent_write_policy": context.agent_write_policy,
            "is_agent_memory": context.is_agent_memory,
            "created_at": context.created_at,
            "updated_at": context.updated_at,
        }


def _context_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = []
    for row in rows:
        owner = scope.resolve(row["owner"])
        name = row["name"]
        if row["is_agent_memory"] and _AGENT_MEMORY_NAME.match(name) and owner is not None:
            name = f"agent:{owner}"
        made.append(
            MemoryContext(
                account=scope.account,
                name=name,
                context_type=row["context_type"],
                scope=row["scope"],
                owner_id=owner,
                team_id=scope.resolve(row["team"]),
                description=row["description"],
                metadata=row["metadata"],
                archived_at=when(row["archived_at"]),
                change_policy=row["change_policy"],
                agent_write_policy=row["agent_write_policy"],
                is_agent_memory=row["is_agent_memory"],
                created_at=when(row["created_at"]),
            )
        )
    MemoryContext.objects.bulk_create(made)
    scope.remember_created(CONTEXT, MemoryContext, rows, made, "updated_at")


def _grant_rows(scope: ExportScope) -> Iterator[Row]:
    grants = MemoryContextGrant.objects.filter(
        context__in=_contexts(scope), agent__in=scope.agent_ids
    )
    for grant in grants.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": grant.pk,
            "context": ref(CONTEXT, grant.context_id),
            "agent": ref(AGENT, grant.agent_id),
            "level": grant.level,
            "created_at": grant.created_at,
        }


def _grant_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = MemoryContextGrant.objects.bulk_create(
        [
            MemoryContextGrant(
                context_id=scope.required(row["context"]),
                agent_id=scope.required(row["agent"]),
                level=row["level"],
            )
            for row in rows
        ]
    )
    scope.remember_created(GRANT, MemoryContextGrant, rows, made, "created_at")


# --- conversations ----------------------------------------------------------------------------


def _conversation_rows(scope: ExportScope) -> Iterator[Row]:
    conversations = Conversation.objects.filter(
        account=scope.account, context__in=_contexts(scope), agent__in=scope.agent_ids
    )
    for conversation in conversations.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": conversation.pk,
            "agent": ref(AGENT, conversation.agent_id),
            "context": ref(CONTEXT, conversation.context_id),
            "user_id": conversation.user_id,
            "title": conversation.title,
            "summary": conversation.summary,
            "metadata": conversation.metadata,
            "message_count": conversation.message_count,
            "summary_every": conversation.summary_every,
            "summarized_through": conversation.summarized_through,
            "extracted_through": conversation.extracted_through,
            "last_message_at": conversation.last_message_at,
            "created_at": conversation.created_at,
            "updated_at": conversation.updated_at,
        }


_CONVERSATION_FIELDS = (
    "user_id",
    "title",
    "summary",
    "metadata",
    "message_count",
    "summary_every",
    "summarized_through",
    "extracted_through",
)


def _conversation_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = Conversation.objects.bulk_create(
        [
            Conversation(
                account=scope.account,
                agent_id=scope.required(row["agent"]),
                context_id=scope.required(row["context"]),
                last_message_at=when(row["last_message_at"]),
                created_at=when(row["created_at"]),
                **{name: row[name] for name in _CONVERSATION_FIELDS},
            )
            for row in rows
        ]
    )
    scope.remember_created(CONVERSATION, Conversation, rows, made, "updated_at")


# --- entries ----------------------------------------------------------------------------------

_ENTRY_FIELDS = (
    "version",
    "is_current",
    "entry_type",
    "source",
    "memory_type",
    "content",
    "data",
    "tags",
    "metadata",
    "position",
    "role",
    "speaker",
    "importance",
    "confidence",
    "access_count",
)


def _entry_rows(scope: ExportScope) -> Iterator[Row]:
    entries = MemoryEntry.objects.filter(account=scope.account, context__in=_contexts(scope))
    if not scope.with_vectors:
        entries = entries.defer("embedding")
    for entry in entries.order_by("pk").iterator(chunk_size=1000):
        row: Row = {
            "id": entry.pk,
            "context": ref(CONTEXT, entry.context_id),
            "lineage": str(entry.lineage),
            "previous": ref(ENTRY, entry.previous_id),
            "author": scope.agent_ref(entry.author_id),
            "thread": entry.thread,
            "occurred_at": entry.occurred_at,
            "last_accessed_at": entry.last_accessed_at,
            "archived_at": entry.archived_at,
            "created_at": entry.created_at,
            "embedding_model": entry.embedding_model if scope.with_vectors else "",
            **{name: getattr(entry, name) for name in _ENTRY_FIELDS},
        }
        if scope.with_vectors:
            row["embedding"] = (
                None if entry.embedding is None else [float(x) for x in entry.embedding]
            )
        yield row


def _thread(scope: ImportScope, thread: str) -> str:
    """A conversation's thread names the conversation: it follows the conversation's new id."""
    match = _CONVERSATION_THREAD.match(thread)
    if match is None:
        return thread
    new = scope.new_id(CONVERSATION, int(match.group(1)))
    return thread if new is None else f"conversation:{new}"


def _entry_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    lineages: dict[str, uuid.UUID] = scope.memo.setdefault("memory.lineages", {})
    made = []
    for row in rows:
        vector = scope.vector_of(row)
        made.append(
            MemoryEntry(
                account=scope.account,
                context_id=scope.required(row["context"]),
                lineage=lineages.setdefault(row["lineage"], uuid.uuid4()),
                author_id=scope.resolve(row["author"]),
                thread=_thread(scope, row["thread"]),
                occurred_at=when(row["occurred_at"]),
                last_accessed_at=when(row["last_accessed_at"]),
                archived_at=when(row["archived_at"]),
                embedding=vector,
                embedding_model=scope.embedding_model if vector is not None else "",
                **{name: row[name] for name in _ENTRY_FIELDS},
            )
        )
    MemoryEntry.objects.bulk_create(made)
    waiting: list[tuple[int, int, bool]] = scope.memo.setdefault("memory.waiting", [])
    for row, entry in zip(rows, made, strict=True):
        scope.remember(ENTRY, row["id"], entry.pk)
        entry.created_at = when(row["created_at"])
        if entry.is_current and entry.archived_at is None:
            waiting.append((entry.pk, entry.context_id, entry.embedding is None))
    for row, entry in zip(rows, made, strict=True):
        entry.previous_id = scope.resolve(row["previous"])
    MemoryEntry.objects.bulk_update(made, ["created_at", "previous"])


def _entries_finish(scope: ImportScope) -> None:
    """Every current entry waits for its index; the index runs once the import commits."""
    waiting: list[tuple[int, int, bool]] = scope.memo.get("memory.waiting", [])
    now = timezone.now()
    PendingIndex.objects.bulk_create(
        [
            PendingIndex(
                entry_id=pk, context_id=context_id, keyword=True, embed=embed, queued_at=now
            )
            for pk, context_id, embed in waiting
        ],
        batch_size=1000,
    )
    contexts = sorted({context_id for _, context_id, _ in waiting})
    if contexts:
        scope.after_commit.append(lambda: _index_soon(contexts))
        by_context: dict[int, list[int]] = {}
        for pk, context_id, _ in waiting:
            by_context.setdefault(context_id, []).append(pk)
        scope.after_commit.append(lambda: _link_soon(by_context))


def _link_soon(by_context: dict[int, list[int]]) -> None:
    """The current entries' links to the graph (derived, not carried: ``rag.graph.portability``),
    rebuilt by workers, a context's entries read together up to ``graph_links.BATCH``."""
    from memory.long_term.services import graph_links

    for context_id, ids in by_context.items():
        for start in range(0, len(ids), graph_links.BATCH):
            graph_links.entries_link_soon(ids[start : start + graph_links.BATCH], context_id)


def _index_soon(contexts: Sequence[int]) -> None:
    from memory.long_term.services import pending

    for context_id in contexts:
        pending.index_soon(context_id)


# --- short-term entries -----------------------------------------------------------------------


def _short_term_rows(scope: ExportScope) -> Iterator[Row]:
    entries = ShortTermEntry.objects.filter(account=scope.account, agent__in=scope.agent_ids)
    for entry in entries.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": entry.pk,
            "agent": ref(AGENT, entry.agent_id),
            "session_id": entry.session_id,
            "key": entry.key,
            "value": entry.value,
            "memory_type": entry.memory_type,
            "ttl_seconds": entry.ttl_seconds,
            "expires_at": entry.expires_at,
            "access_count": entry.access_count,
            "last_accessed_at": entry.last_accessed_at,
            "created_at": entry.created_at,
            "updated_at": entry.updated_at,
        }


def _short_term_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = ShortTermEntry.objects.bulk_create(
        [
            ShortTermEntry(
                account=scope.account,
                agent_id=scope.required(row["agent"]),
                session_id=row["session_id"],
                key=row["key"],
                value=row["value"],
                memory_type=row["memory_type"],
                ttl_seconds=row["ttl_seconds"],
                expires_at=when(row["expires_at"]),
                access_count=row["access_count"],
                last_accessed_at=when(row["last_accessed_at"]),
                created_at=when(row["created_at"]),
            )
            for row in rows
        ]
    )
    agents: set[int] = scope.memo.setdefault("memory.short_term_agents", set())
    for row, entry in zip(rows, made, strict=True):
        scope.remember(SHORT_TERM, row["id"], entry.pk)
        entry.updated_at = when(row["updated_at"])
        agents.add(entry.agent_id)
    ShortTermEntry.objects.bulk_update(made, ["updated_at"])


def _short_term_finish(scope: ImportScope) -> None:
    from memory.tier_index import rebuild_short_term_index

    for agent_id in sorted(scope.memo.get("memory.short_term_agents", set())):
        rebuild_short_term_index(agent_id=agent_id)


# --- knowledge bases (items) ------------------------------------------------------------------


def _stores(scope: ExportScope) -> Any:
    """The account's knowledge bases; an agent's share holds none (they are account-wide)."""
    stores = KnowledgeStore.objects.filter(account=scope.account)
    return stores.none() if scope.single_agent else stores


def _store_rows(scope: ExportScope) -> Iterator[Row]:
    for store in _stores(scope).order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": store.pk,
            "name": store.name,
            "description": store.description,
            "knowledge_type": store.knowledge_type,
            "created_by": scope.agent_ref(store.created_by_id),
            "created_at": store.created_at,
            "updated_at": store.updated_at,
        }


def _store_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = KnowledgeStore.objects.bulk_create(
        [
            KnowledgeStore(
                account=scope.account,
                name=row["name"],
                description=row["description"],
                knowledge_type=row["knowledge_type"],
                created_by_id=scope.resolve(row["created_by"]),
                created_at=when(row["created_at"]),
            )
            for row in rows
        ]
    )
    scope.remember_created(STORE, KnowledgeStore, rows, made, "updated_at")


_ITEM_FIELDS = ("key", "version", "is_current", "content", "content_type", "metadata", "confidence")


def _item_rows(scope: ExportScope) -> Iterator[Row]:
    items = KnowledgeItem.objects.filter(account=scope.account, store__in=_stores(scope))
    if not scope.with_vectors:
        items = items.defer("embedding")
    for item in items.order_by("pk").iterator(chunk_size=1000):
        row: Row = {
            "id": item.pk,
            "store": ref(STORE, item.store_id),
            "lineage": str(item.lineage),
            "previous": ref(ITEM, item.previous_id),
            "author": scope.agent_ref(item.author_id),
            "source_context": ref(CONTEXT, item.source_context_id),
            "valid_from": item.valid_from,
            "valid_to": item.valid_to,
            "created_at": item.created_at,
            "embedding_model": item.embedding_model if scope.with_vectors else "",
            **{name: getattr(item, name) for name in _ITEM_FIELDS},
        }
        if scope.with_vectors:
            row["embedding"] = (
                None if item.embedding is None else [float(x) for x in item.embedding]
            )
        yield row


def _item_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    lineages: dict[str, uuid.UUID] = scope.memo.setdefault("memory.item_lineages", {})
    made = []
    for row in rows:
        vector = scope.vector_of(row)
        made.append(
            KnowledgeItem(
                account=scope.account,
                store_id=scope.required(row["store"]),
                lineage=lineages.setdefault(row["lineage"], uuid.uuid4()),
                author_id=scope.resolve(row["author"]),
                source_context_id=scope.resolve(row["source_context"]),
                valid_from=when(row["valid_from"]),
                valid_to=when(row["valid_to"]),
                embedding=vector,
                embedding_model=scope.embedding_model if vector is not None else "",
                **{name: row[name] for name in _ITEM_FIELDS},
            )
        )
    KnowledgeItem.objects.bulk_create(made)
    stores: set[int] = scope.memo.setdefault("memory.stores", set())
    for row, item in zip(rows, made, strict=True):
        scope.remember(ITEM, row["id"], item.pk)
        item.created_at = when(row["created_at"])
        item.previous_id = scope.resolve(row["previous"])
        stores.add(item.store_id)
    KnowledgeItem.objects.bulk_update(made, ["created_at", "previous"])


def _items_finish(scope: ImportScope) -> None:
    """Each base's BM25 index now, inside the import; the embeddings the archive did not carry
    (or carried from another model) after the commit, outside any transaction."""
    from memory.spaces import KNOWLEDGE_ITEMS
    from rag import keyword

    stores = sorted(scope.memo.get("memory.stores", set()))
    for store_id in stores:
        keyword.index_rebuild(space=KNOWLEDGE_ITEMS, scope_id=store_id)
    if stores:
        scope.after_commit.append(lambda: _embed_stores(stores))


def _embed_stores(stores: Sequence[int]) -> None:
    from memory.knowledge.index_services import index_rebuild

    for store_id in stores:
        index_rebuild(store_id)


def _source_rows(scope: ExportScope) -> Iterator[Row]:
    sources = KnowledgeSource.objects.filter(account=scope.account, item__store__in=_stores(scope))
    for source in sources.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": source.pk,
            "item": ref(ITEM, source.item_id),
            "source_type": source.source_type,
            "source_id": source.source_id,
            "reliability": source.reliability,
            "extracted_at": source.extracted_at,
        }


def _source_id(scope: ImportScope, source_type: str, source_id: str) -> str:
    """A conversation message's id follows the message (an entry of the archive)."""
    if source_type == KnowledgeSource.SourceType.CONVERSATION_MESSAGE and source_id.isdigit():
        new = scope.new_id(ENTRY, int(source_id))
        if new is not None:
            return str(new)
    return source_id


def _source_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = KnowledgeSource.objects.bulk_create(
        [
            KnowledgeSource(
                account=scope.account,
                item_id=scope.required(row["item"]),
                source_type=row["source_type"],
                source_id=_source_id(scope, row["source_type"], row["source_id"]),
                reliability=row["reliability"],
                extracted_at=when(row["extracted_at"]),
            )
            for row in rows
        ]
    )
    for row, source in zip(rows, made, strict=True):
        scope.remember(SOURCE, row["id"], source.pk)


# --- pools ------------------------------------------------------------------------------------

_POOL_FIELDS = (
    "pool_id",
    "name",
    "pool_type",
    "scope",
    "data",
    "public_read",
    "version",
    "retention_policy",
    "data_size_bytes",
    "persist_across_executions",
    "workflow_run_id",
    "workflow_kind",
    "change_policy",
)


def _pools(scope: ExportScope) -> Any:
    pools = MemoryPool.objects.filter(account=scope.account)
    if scope.single_agent:
        pools = pools.filter(owner__in=scope.agent_ids)
    return pools


def _pool_rows(scope: ExportScope) -> Iterator[Row]:
    for pool in _pools(scope).order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": pool.pk,
            "owner": scope.agent_ref(pool.owner_id),
            "expires_at": pool.expires_at,
            "created_at": pool.created_at,
            "updated_at": pool.updated_at,
            **{name: getattr(pool, name) for name in _POOL_FIELDS},
        }


def _pool_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    """Pools are created; the account's ``default`` pool (which every account has from its
    creation) takes the archive's when it is still as made (version 1, no data), and the
    import is refused when it has been used."""
    fresh = []
    for row in rows:
        fields = {
            "owner_id": scope.resolve(row["owner"]),
            "expires_at": when(row["expires_at"]),
            "created_at": when(row["created_at"]),
            "updated_at": when(row["updated_at"]),
            **{name: row[name] for name in _POOL_FIELDS},
        }
        if row["pool_id"] == DEFAULT_POOL_ID:
            pristine = MemoryPool.objects.filter(
                account=scope.account, pool_id=DEFAULT_POOL_ID, version=1, data={}
            )
            existing = pristine.values_list("pk", flat=True).first()
            if existing is not None:
                pristine.update(**fields)
                scope.remember(POOL, row["id"], existing)
                continue
            if MemoryPool.objects.filter(account=scope.account, pool_id=DEFAULT_POOL_ID).exists():
                raise Conflict(
                    "The account's default pool holds data already: import into a new account.",
                    code="import_conflict",
                    details={"file": f"{POOL}.jsonl"},
                )
        fresh.append((row, MemoryPool(account=scope.account, **fields)))
    made = MemoryPool.objects.bulk_create([pool for _, pool in fresh])
    for (row, _), pool in zip(fresh, made, strict=True):
        scope.remember(POOL, row["id"], pool.pk)
        pool.updated_at = when(row["updated_at"])
    MemoryPool.objects.bulk_update(made, ["updated_at"])


def _pools_finish(scope: ImportScope) -> None:
    """The account's pool index (its leaves and their postings), rebuilt from the pools."""
    from memory.tier_index import rebuild_pool_index

    rebuild_pool_index(account_id=scope.account.pk)


def _pool_grant_rows(scope: ExportScope) -> Iterator[Row]:
    grants = MemoryPoolGrant.objects.filter(pool__in=_pools(scope), agent__in=scope.agent_ids)
    for grant in grants.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": grant.pk,
            "pool": ref(POOL, grant.pool_id),
            "agent": ref(AGENT, grant.agent_id),
            "level": grant.level,
            "created_at": grant.created_at,
        }


def _pool_grant_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = MemoryPoolGrant.objects.bulk_create(
        [
            MemoryPoolGrant(
                pool_id=scope.required(row["pool"]),
                agent_id=scope.required(row["agent"]),
                level=row["level"],
            )
            for row in rows
        ]
    )
    scope.remember_created(POOL_GRANT, MemoryPoolGrant, rows, made, "created_at")


def _pool_event_rows(scope: ExportScope) -> Iterator[Row]:
    events = MemoryPoolEvent.objects.filter(account=scope.account, pool__in=_pools(scope))
    for event in events.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": event.pk,
            "pool": ref(POOL, event.pool_id),
            "version": event.version,
            "path": event.path,
            "action": event.action,
            "value": event.value,
            "agent": scope.agent_ref(event.agent_id),
            "created_at": event.created_at,
        }


def _pool_event_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = MemoryPoolEvent.objects.bulk_create(
        [
            MemoryPoolEvent(
                account=scope.account,
                pool_id=scope.required(row["pool"]),
                version=row["version"],
                path=row["path"],
                action=row["action"],
                value=row["value"],
                agent_id=scope.resolve(row["agent"]),
            )
            for row in rows
        ]
    )
    scope.remember_created(POOL_EVENT, MemoryPoolEvent, rows, made, "created_at")


# --- knowledge items' graph nodes ------------------------------------------------------------


def _item_node_rows(scope: ExportScope) -> Iterator[Row]:
    """Each item's graph node (every version of an item shares its node): one row per item,
    naming its current version and the node of the graph's kind (loaded before this one)."""
    from rag.graph.selectors import exported_node_ids

    items = KnowledgeItem.objects.filter(
        account=scope.account,
        store__in=_stores(scope),
        is_current=True,
        graph_node_id__in=exported_node_ids(account=scope.account, single_agent=scope.single_agent),
    ).values_list("pk", "graph_node_id")
    for pk, node_id in items.order_by("pk").iterator(chunk_size=1000):
        yield {"id": pk, "item": ref(ITEM, pk), "node": ref(GRAPH_NODE, node_id)}


def _item_node_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    nodes = {scope.required(row["item"]): scope.required(row["node"]) for row in rows}
    lineages = dict(
        KnowledgeItem.objects.filter(pk__in=nodes).values_list("pk", "lineage").order_by()
    )
    for item_id, node_id in nodes.items():
        KnowledgeItem.objects.filter(account=scope.account, lineage=lineages[item_id]).update(
            graph_node_id=node_id
        )


_DATETIME = "datetime (ISO 8601) or null"

KINDS = (
    Kind(
        name=CONTEXT,
        schema={
            "name": "str: unique in the account (an agent's own memory: agent:<its id>)",
            "context_type": "str",
            "scope": "str: agent | account | team | global",
            "owner": f"ref:{AGENT} or null",
            "team": f"ref:{TEAM} or null",
            "description": "str",
            "metadata": "object",
            "archived_at": _DATETIME,
            "change_policy": "str: auto | review",
            "agent_write_policy": "str: auto | review",
            "is_agent_memory": "bool",
            "created_at": "datetime",
            "updated_at": "datetime",
        },
        rows=_context_rows,
        load=_context_load,
    ),
    Kind(
        name=GRANT,
        schema={
            "context": f"ref:{CONTEXT}",
            "agent": f"ref:{AGENT}",
            "level": "str: read | write",
            "created_at": "datetime",
        },
        rows=_grant_rows,
        load=_grant_load,
    ),
    Kind(
        name=CONVERSATION,
        schema={
            "agent": f"ref:{AGENT}",
            "context": f"ref:{CONTEXT} its messages' context",
            "user_id": "str",
            "title": "str",
            "summary": "str: the rolling summary",
            "metadata": "object",
            "message_count": "int",
            "summary_every": "int",
            "summarized_through": "int",
            "extracted_through": "int",
            "last_message_at": _DATETIME,
            "created_at": "datetime",
            "updated_at": "datetime",
        },
        rows=_conversation_rows,
        load=_conversation_load,
    ),
    Kind(
        name=ENTRY,
        schema={
            "context": f"ref:{CONTEXT}",
            "lineage": "uuid: shared by the versions of one memory (a new one on import)",
            "version": "int: from 1",
            "previous": f"ref:{ENTRY} the version before, or null",
            "is_current": "bool",
            "author": f"ref:{AGENT} or null",
            "entry_type": "str",
            "source": "str",
            "memory_type": "str",
            "content": "str",
            "data": "any JSON or null",
            "tags": "[str]",
            "metadata": "object",
            "occurred_at": _DATETIME,
            "thread": "str (a conversation's: conversation:<its id>)",
            "position": "int or null",
            "role": "str",
            "speaker": "str",
            "importance": "float 0..1",
            "confidence": "float 0..1",
            "access_count": "int",
            "last_accessed_at": _DATETIME,
            "archived_at": _DATETIME,
            "created_at": "datetime",
            "embedding_model": "str: the model of embedding (blank without vectors)",
        },
        rows=_entry_rows,
        load=_entry_load,
        vector="embedding",
        finish=_entries_finish,
    ),
    Kind(
        name=SHORT_TERM,
        schema={
            "agent": f"ref:{AGENT}",
            "session_id": "str",
            "key": "str: unique per agent and session",
            "value": "any JSON",
            "memory_type": "str",
            "ttl_seconds": "int",
            "expires_at": "datetime",
            "access_count": "int",
            "last_accessed_at": _DATETIME,
            "created_at": "datetime",
            "updated_at": "datetime",
        },
        rows=_short_term_rows,
        load=_short_term_load,
        finish=_short_term_finish,
    ),
    Kind(
        name=STORE,
        schema={
            "name": "str: unique in the account",
            "description": "str",
            "knowledge_type": "str",
            "created_by": f"ref:{AGENT} or null",
            "created_at": "datetime",
            "updated_at": "datetime",
        },
        rows=_store_rows,
        load=_store_load,
    ),
    Kind(
        name=ITEM,
        schema={
            "store": f"ref:{STORE}",
            "key": "str",
            "lineage": "uuid: shared by the versions of one item (a new one on import)",
            "version": "int: from 1",
            "previous": f"ref:{ITEM} the version before, or null",
            "is_current": "bool",
            "content": "str",
            "content_type": "str",
            "metadata": "object",
            "confidence": "float 0..1",
            "valid_from": "datetime",
            "valid_to": _DATETIME,
            "author": f"ref:{AGENT} or null",
            "source_context": f"ref:{CONTEXT} the context it was extracted from, or null",
            "created_at": "datetime",
            "embedding_model": "str: the model of embedding (blank without vectors)",
        },
        rows=_item_rows,
        load=_item_load,
        vector="embedding",
        finish=_items_finish,
    ),
    Kind(
        name=SOURCE,
        schema={
            "item": f"ref:{ITEM}",
            "source_type": "str",
            "source_id": "str (a conversation message's: the entry's id, remapped)",
            "reliability": "float 0..1",
            "extracted_at": "datetime",
        },
        rows=_source_rows,
        load=_source_load,
    ),
    Kind(
        name=POOL,
        schema={
            "pool_id": "str: unique in the account (default: the account's own, merged)",
            "name": "str",
            "pool_type": "str",
            "scope": "str: execution | session | persistent",
            "owner": f"ref:{AGENT} or null",
            "data": "object: the pool's JSON document",
            "public_read": "bool",
            "version": "int: the pool's version (bumped by every write)",
            "retention_policy": "object",
            "data_size_bytes": "int",
            "persist_across_executions": "bool",
            "workflow_run_id": "str",
            "workflow_kind": "str",
            "change_policy": "str: auto | review",
            "expires_at": _DATETIME,
            "created_at": "datetime",
            "updated_at": "datetime",
        },
        rows=_pool_rows,
        load=_pool_load,
        finish=_pools_finish,
    ),
    Kind(
        name=POOL_GRANT,
        schema={
            "pool": f"ref:{POOL}",
            "agent": f"ref:{AGENT}",
            "level": "str: read | write",
            "created_at": "datetime",
        },
        rows=_pool_grant_rows,
        load=_pool_grant_load,
    ),
    Kind(
        name=POOL_EVENT,
        schema={
            "pool": f"ref:{POOL}",
            "version": "int: the pool's version after the write",
            "path": "str",
            "action": "str: write | merge | delete",
            "value": "any JSON",
            "agent": f"ref:{AGENT} or null",
            "created_at": "datetime",
        },
        rows=_pool_event_rows,
        load=_pool_event_load,
    ),
    Kind(
        name=ITEM_NODE,
        schema={
            "item": f"ref:{ITEM}: the item's current version (its versions share the node)",
            "node": f"ref:{GRAPH_NODE}",
        },
        rows=_item_node_rows,
        load=_item_node_load,
        late=True,
    ),
)
