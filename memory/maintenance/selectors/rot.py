"""Rot across stores (docs/memory/rot.md): one report per account of what has
gone stale or broken in pages, documents, memories, skills and knowledge items, each item with a
suggested action. Reads only, through each app's selectors (memory sits above them all); the
report is computed when asked, so it is always as fresh as the data.

Sections (``kind``):

- ``broken_wikilink``: a page's wikilinks naming no page of the account and no article;
- ``stale_linked_page``: a page other pages link to, unchanged for ``days``;
- ``outdated_document``: an indexed document with chunks embedded by another model than the one
  queries use, or chunked by another chunker version or other settings than its knowledge
  base's now;
- ``invalidated_memory``: a current long-term memory that is the source of (or links to) a
  knowledge item since invalidated or replaced by a newer version;
- ``unused_skill``: a draft or active skill nobody used for ``days``;
- ``orphaned_knowledge_item``: a current knowledge item whose sources (a conversation message,
  a document chunk, a page) were deleted;
- ``stale_vectors``: per embedded space (chunks, long-term entries, knowledge items, graph
  nodes, pages, skills), how many of the account's units still carry a vector of another model
  than the current embedding generation's (``core.embeddings.generations``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from core.actors import Actor
from core.embeddings import get_embedding_provider
from core.errors import NotFound, ValidationFailed
from memory.long_term.context_access import derived_visible, derived_visible_sql, readable_contexts
from memory.models import KnowledgeItem, KnowledgeSource, MemoryEntry
from memory.roles import MANAGE_MEMORY

MIN_DAYS, MAX_DAYS = 1, 3650
DEFAULT_LIMIT, MAX_LIMIT = 50, 500
KINDS = (
    "broken_wikilink",
    "stale_linked_page",
    "outdated_document",
    "invalidated_memory",
    "unused_skill",
    "orphaned_knowledge_item",
    "stale_vectors",
)
TITLES = {
    "broken_wikilink": "Broken wikilinks",
    "stale_linked_page": "Linked pages nobody changed",
    "outdated_document": "Documents built by another model or chunker",
    "invalidated_memory": "Memories a newer fact invalidated",
    "unused_skill": "Unused skills",
    "orphaned_knowledge_item": "Knowledge items whose sources were deleted",
    "stale_vectors": "Vectors of another embedding model",
}


@dataclass
class RotItem:
    kind: str
    id: int
    title: str
    detail: str
    suggested_action: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class RotSection:
    kind: str
    title: str
    total: int
    items: list[RotItem]


@dataclass
class RotReport:
    account_id: int
    days: int
    generated_at: datetime
    sections: list[RotSection]

    @property
    def total(self) -> int:
        return sum(section.total for section in self.sections)


def _bounds(days: int, limit: int) -> None:
    if not MIN_DAYS <= days <= MAX_DAYS:
        raise ValidationFailed(
            f"days must be {MIN_DAYS} to {MAX_DAYS}.",
            code="invalid_days",
            details={"min": MIN_DAYS, "max": MAX_DAYS},
        )
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationFailed(
            f"limit must be 1 to {MAX_LIMIT}.", code="invalid_limit", details={"max": MAX_LIMIT}
        )


def report_account(actor: Actor, account_id: int | None) -> int:
    """The account a report is about: an agent's own; a person's (owner or operator there; a
    foreign or missing account answers 404 like every other)."""
    if actor.agent is not None:
        return actor.agent.account_id
    if account_id is None:
        account_id = actor.account_id if len(actor.account_ids) == 1 else None
    if account_id is None or account_id not in actor.accounts_with(MANAGE_MEMORY):
        raise NotFound("No such account.", code="account_not_found")
    return account_id


def rot_report(
    *,
    actor: Actor,
    account_id: int | None = None,
    days: int | None = None,
    limit: int = DEFAULT_LIMIT,
) -> RotReport:
    """The rot report of the actor's account (``days`` without change or use: default
    MAINTENANCE_ROT_DAYS; at most ``limit`` items per section, each section's ``total`` counts
    them all). Agents see the memories of the contexts they may read; owners and operators all."""
    days = settings.MAINTENANCE_ROT_DAYS if days is None else days
    _bounds(days, limit)
    account = report_account(actor, account_id)
    before = timezone.now() - timedelta(days=days)
    readers: dict[str, Callable[[], tuple[list[RotItem], int]]] = {
        "broken_wikilink": lambda: _broken_links(account, limit),
        "stale_linked_page": lambda: _stale_pages(account, before, days, limit),
        "outdated_document": lambda: _outdated_documents(account, limit),
        "invalidated_memory": lambda: _invalidated_memories(actor, account, limit),
        "unused_skill": lambda: _unused_skills(account, before, days, limit),
        "orphaned_knowledge_item": lambda: _orphaned_items(actor, account, limit),
        "stale_vectors": lambda: _stale_vectors(actor, account, limit),
    }
    sections = []
    for kind in KINDS:
        items, total = readers[kind]()
        sections.append(RotSection(kind, TITLES[kind], total, items))
    return RotReport(account, days, timezone.now(), sections)


# --- pages -----------------------------------------------------------------------------------


def _broken_links(account_id: int, limit: int) -> tuple[list[RotItem], int]:
    from content import selectors as content

    pages, total = content.broken_links_in_account(account_id=account_id, limit=limit)
    return [
        RotItem(
            "broken_wikilink",
            page.pk,
            page.title,
            "links to " + ", ".join(f"[[{name}]]" for name in names),
            "Create the missing pages, or correct or remove the links.",
            {"targets": names},
        )
        for page, names in pages
    ], total


def _stale_pages(
    account_id: int, before: datetime, days: int, limit: int
) -> tuple[list[RotItem], int]:
    from content import selectors as content

    pages, total = content.stale_linked_pages(account_id=account_id, before=before, limit=limit)
    return [
        RotItem(
            "stale_linked_page",
            page.pk,
            page.title,
            f"{linkers} page(s) link to it; unchanged since {page.updated_at:%Y-%m-%d} "
            f"(more than {days} days)",
            "Review it: update what changed, or mark it as still current by editing it.",
            {"linked_from": linkers, "updated_at": page.updated_at.isoformat()},
        )
        for page, linkers in pages
    ], total


# --- documents -------------------------------------------------------------------------------


def _outdated_documents(account_id: int, limit: int) -> tuple[list[RotItem], int]:
    from rag import selectors as rag

    model_id = get_embedding_provider().model_id
    documents, total = rag.documents_outdated(account_id=account_id, model_id=model_id, limit=limit)
    items = []
    for doc in documents:
        reasons = []
        if doc.other_model:
            reasons.append(f"chunks embedded by {', '.join(doc.chunk_models)}, not {model_id}")
        if doc.other_chunker:
            reasons.append(
                f"chunked as {doc.indexed_chunker}, the knowledge base now says "
                f"{doc.current_chunker}"
            )
        items.append(
            RotItem(
                "outdated_document",
                doc.id,
                doc.title,
                f"{doc.knowledge_base}: " + "; ".join(reasons),
                f"Reprocess it (POST /api/v1/rag/documents/{doc.id}/reprocess with force).",
                {
                    "knowledge_base_id": doc.knowledge_base_id,
                    "chunk_models": doc.chunk_models,
                    "current_model": model_id,
                    "indexed_chunker": doc.indexed_chunker,
                    "current_chunker": doc.current_chunker,
                },
            )
        )
    return items, total


# --- memories and knowledge items --------------------------------------------------------------

_INVALIDATED = """
    WITH refs AS (
        SELECT e.id AS entry_id, s.item_id FROM memory_knowledgesource s
        JOIN memory_memoryentry e ON e.account_id = s.account_id AND s.source_id = e.id::text
        WHERE s.account_id = %(account)s AND s.source_type = 'conversation_message'
        UNION
        SELECT e.id, (r->>'id')::bigint FROM memory_memoryentry e
        CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(e.metadata->'related')
            = 'array' THEN e.metadata->'related' ELSE '[]'::jsonb END) r
        WHERE e.account_id = %(account)s AND e.is_current AND e.archived_at IS NULL
          AND r->>'kind' = 'knowledge_item' AND (r->>'id') ~ '^[0-9]{{1,18}}$'
    )
    SELECT {columns}
    FROM refs JOIN memory_memoryentry e ON e.id = refs.entry_id
    JOIN memory_knowledgeitem k ON k.id = refs.item_id AND k.account_id = %(account)s
    JOIN memory_knowledgeitem c ON c.lineage = k.lineage AND c.is_current
    JOIN memory_knowledgestore st ON st.id = c.store_id
    WHERE e.account_id = %(account)s AND e.is_current AND e.archived_at IS NULL
      AND (%(contexts)s::bigint[] IS NULL OR e.context_id = ANY(%(contexts)s::bigint[]))
      AND {visible}
      AND ((c.valid_to IS NOT NULL AND c.valid_to > e.created_at)
           OR (c.id <> k.id AND c.created_at > e.created_at))
"""


def _invalidated_memories(actor: Actor, account_id: int, limit: int) -> tuple[list[RotItem], int]:
    contexts = None
    if actor.agent is not None:
        contexts = list(readable_contexts(actor).values_list("pk", flat=True).distinct())
    params: dict[str, Any] = {"account": account_id, "contexts": contexts, "limit": limit}
    # The newer fact is named only to those who may read it (derived data keeps the
    # visibility of its source: docs/architecture.md, rule 11).
    newer_visible = derived_visible_sql(actor, "c", params)
    columns = (
        "DISTINCT ON (e.id) e.id, e.context_id, left(e.content, 200), c.id, st.name, c.key, "
        "left(c.content, 200), c.valid_to, c.version"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            _INVALIDATED.format(columns=columns, visible=newer_visible)
            + " ORDER BY e.id, c.id LIMIT %(limit)s",
            params,
        )
        rows = cursor.fetchall()
        counted = _INVALIDATED.format(columns="e.id", visible=newer_visible)
        cursor.execute(f"SELECT count(DISTINCT e.id) FROM ({counted}) e", params)  # noqa: S608
        total = int(cursor.fetchone()[0])
    items = []
    for entry_id, context_id, text, item_id, base, key, fact, valid_to, version in rows:
        newer = (
            f"invalidated on {valid_to:%Y-%m-%d}"
            if valid_to is not None
            else f"replaced by version {version}: {fact}"
        )
        items.append(
            RotItem(
                "invalidated_memory",
                entry_id,
                text,
                f"knowledge item {base}/{key} {newer}",
                "Archive the memory, or update it to the newer fact.",
                {"context_id": context_id, "knowledge_item_id": item_id, "base": base, "key": key},
            )
        )
    return items, total


def _unused_skills(
    account_id: int, before: datetime, days: int, limit: int
) -> tuple[list[RotItem], int]:
    from skills.selectors import catalog as skills

    found, total = skills.skills_unused(account_id=account_id, before=before, limit=limit)
    return [
        RotItem(
            "unused_skill",
            skill.pk,
            skill.name,
            (f"last used {skill.last_used_at:%Y-%m-%d}" if skill.last_used_at else "never used")
            + f" ({skill.status}, {skill.usage_count} uses; nothing for {days} days)",
            "Deprecate or archive it if nobody needs it any more.",
            {
                "status": skill.status,
                "last_used_at": skill.last_used_at.isoformat() if skill.last_used_at else None,
                "usage_count": skill.usage_count,
            },
        )
        for skill in found
    ], total


_RESOLVABLE = ("conversation_message", "document_chunk", "page")


def _orphaned_items(actor: Actor, account_id: int, limit: int) -> tuple[list[RotItem], int]:
    """Current, valid items the actor may read with at least one source naming a message,
    chunk or page of the account that no longer exists."""
    from content import selectors as content
    from rag import selectors as rag

    sources = list(
        KnowledgeSource.objects.filter(
            account_id=account_id,
            source_type__in=_RESOLVABLE,
            item__is_current=True,
            item__valid_to__isnull=True,
        )
        .filter(derived_visible(actor, "item__"))
        .order_by("item_id", "pk")
        .values_list("item_id", "source_type", "source_id")
    )
    wanted: dict[str, set[int]] = {kind: set() for kind in _RESOLVABLE}
    for _, kind, source_id in sources:
        if source_id.isdigit() and len(source_id) <= 18:
            wanted[kind].add(int(source_id))
    existing = {
        "conversation_message": set(
            MemoryEntry.objects.filter(
                account_id=account_id, pk__in=list(wanted["conversation_message"])
            ).values_list("pk", flat=True)
        ),
        "document_chunk": rag.chunk_ids_existing(
            account_id=account_id, ids=wanted["document_chunk"]
        ),
        "page": content.page_ids_existing(account_id=account_id, ids=wanted["page"]),
    }
    gone: dict[int, list[str]] = {}
    counted: dict[int, int] = {}
    for item_id, kind, source_id in sources:
        if not (source_id.isdigit() and len(source_id) <= 18):
            continue
        counted[item_id] = counted.get(item_id, 0) + 1
        if int(source_id) not in existing[kind]:
            gone.setdefault(item_id, []).append(f"{kind} {source_id}")
    ids = sorted(gone)
    items = KnowledgeItem.objects.defer("embedding").select_related("store").in_bulk(ids[:limit])
    return [
        RotItem(
            "orphaned_knowledge_item",
            item_id,
            f"{items[item_id].store.name}/{items[item_id].key}",
            f"{len(gone[item_id])} of {counted[item_id]} sources deleted: "
            + ", ".join(gone[item_id][:10]),
            "Verify the item against what remains, or invalidate it."
            if len(gone[item_id]) == counted[item_id]
            else "Check the item: part of its evidence is gone.",
            {"deleted_sources": gone[item_id], "sources": counted[item_id]},
        )
        for item_id in ids[:limit]
        if item_id in items
    ], len(ids)


# --- vectors of another model ----------------------------------------------------------------


def _stale_vectors(actor: Actor, account_id: int, limit: int) -> tuple[list[RotItem], int]:
    """One item per embedded space holding units of the account whose current vector is
    another model's; the item's ``id`` is its position, ``data`` names the space, the count
    and the models found. An agent counts the long-term entries of the contexts it may read."""
    from core.embeddings.generations import embedded_tables

    model_id = get_embedding_provider().model_id
    readable = list(readable_contexts(actor).values_list("pk", flat=True).distinct())
    items: list[RotItem] = []
    with connection.cursor() as cursor:
        for table in embedded_tables():
            if not table.account_owned:
                continue  # articles are the installation's, not an account's
            only = " AND context_id = ANY(%s)" if table.name == "memory_entries" else ""
            params: list[Any] = [account_id, model_id]
            if only:
                params.append(readable)
            cursor.execute(
                f"SELECT embedding_model, count(*) FROM {table.table} "  # noqa: S608
                f"WHERE account_id = %s AND embedding IS NOT NULL AND embedding_model <> %s"
                f"{only} GROUP BY embedding_model ORDER BY 2 DESC",
                params,
            )
            found = {model: int(count) for model, count in cursor.fetchall()}
            if not found:
                continue
            count = sum(found.values())
            items.append(
                RotItem(
                    "stale_vectors",
                    len(items) + 1,
                    table.label,
                    f"{count} {table.label} carry vectors of {', '.join(found)}, not {model_id}",
                    "They are invisible to vector search until embedded again: see "
                    "`./engram manage embeddings status`, then migrate (embeddings start) or "
                    "re-embed in place (rag reindex, reprocess with force).",
                    {
                        "space": table.name,
                        "count": count,
                        "models": found,
                        "current_model": model_id,
                    },
                )
            )
    return items[:limit], len(items)
