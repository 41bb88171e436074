"""Building the graph from text: the entities of document chunks (after ingestion, and on
``graph_rebuild``), through the model when one is configured and offline otherwise, written by
``rag.graph.services.index``. Other apps hand their own units' texts to ``units_index`` (memory
does, for long-term entries)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from django.db import connection
from django.db.models import F, QuerySet

from core.llm import LLMError, get_llm_provider
from rag.graph import entities_llm
from rag.graph.entities import TextEntities, document_entities
from rag.graph.services.index import IndexOutcome, UnitEntities, mentions_replace
from rag.models import Chunk, Document, KnowledgeBase
from rag.spaces import CHUNKS, SearchSpace

logger = logging.getLogger("engram.rag")

# Units written per transaction.
INDEX_BATCH = 200
# Documents indexed together (one extraction and one write of their chunks' mentions).
DOCUMENT_GROUP = 50


def extraction_method() -> str:
    provider = get_llm_provider()
    return "offline" if provider.model_id.startswith("offline:") else f"llm:{provider.model_id}"


def units_extract(
    texts: Sequence[tuple[int, str]],
    *,
    known_names: Iterable[str] = (),
    groups: Sequence[Sequence[int]] | None = None,
    pronouns_across_units: bool = True,
) -> tuple[dict[int, TextEntities], str]:
    """The entities of each unit (``(unit id, text)``): the model's, batch by batch, falling
    back to the offline extractor for a batch whose call fails or whose answer does not hold;
    offline when no model is configured. ``groups``: the unit ids read together offline (a
    document's chunks in order: aliases and pronouns resolve across them,
    ``rag.graph.entities.document_entities``); None: each unit alone. Returns the entities by
    unit id, and the methods used."""
    names = list(known_names)
    provider = get_llm_provider()
    if provider.model_id.startswith("offline:"):
        return _offline(texts, names, groups, pronouns_across_units), "offline"
    found: dict[int, TextEntities] = {}
    methods: set[str] = set()
    for batch in entities_llm.batches(texts):
        try:
            found.update(entities_llm.extract(provider, batch))
            methods.add(f"llm:{provider.model_id}")
        except LLMError as exc:
            logger.warning("graph extraction: the model failed (%s); extracting offline", exc)
            found.update(_offline(batch, names, groups, pronouns_across_units))
            methods.add("offline")
    return found, " + ".join(sorted(methods)) or "offline"


def _offline(
    texts: Sequence[tuple[int, str]],
    names: list[str],
    groups: Sequence[Sequence[int]] | None,
    pronouns_across_units: bool,
) -> dict[int, TextEntities]:
    text_of = dict(texts)
    found: dict[int, TextEntities] = {}
    for group in groups if groups is not None else [[u] for u, _ in texts]:
        ids = [u for u in group if u in text_of]
        extracted = document_entities(
            [text_of[u] for u in ids],
            known_names=names,
            pronouns_across_units=pronouns_across_units,
        )
        found.update(zip(ids, extracted, strict=True))
    for unit_id, text in texts:  # a unit of no group: alone
        if unit_id not in found:
            found[unit_id] = document_entities([text], known_names=names)[0]
    return found


def units_index(
    *,
    account_id: int,
    space: SearchSpace,
    units: Sequence[tuple[int, int, str]],
    known_names: Iterable[str] = (),
    origin: str = "",
    groups: Sequence[Sequence[int]] | None = None,
) -> IndexOutcome:
    """Extract and index the entities of units (``(unit id, scope id, text)``) of a space;
    ``groups``: the unit ids read together (``units_extract``), each kept in one batch."""
    total = IndexOutcome()
    names = list(known_names)
    scope_of = {unit_id: scope_id for unit_id, scope_id, _ in units}
    text_of = {unit_id: text for unit_id, _, text in units}
    batches: list[list[list[int]]] = [[]]
    size = 0
    for group in groups if groups is not None else [[u] for u, _, _ in units]:
        if batches[-1] and size + len(group) > INDEX_BATCH:
            batches.append([])
            size = 0
        batches[-1].append([u for u in group if u in scope_of])
        size += len(group)
    for batch in batches:
        ids = [u for group in batch for u in group]
        if not ids:
            continue
        found, method = units_extract(
            [(u, text_of[u]) for u in ids], known_names=names, groups=batch
        )
        outcome = mentions_replace(
            account_id=account_id,
            space=space,
            units=[
                UnitEntities(u, scope_of[u], found[u].entities, found[u].relations) for u in ids
            ],
            origin=origin or method,
        )
        total.add(outcome)
    return total


def documents_graph_index(*, document_ids: Sequence[int]) -> IndexOutcome:
    """Index the entities of the chunks of these documents (the indexed ones; gone: nothing),
    and record which chunks the graph now holds (``Document.graph_indexed_at``): a document
    indexed again meanwhile keeps its older mark and stays pending."""
    total = IndexOutcome()
    documents = list(
        Document.objects.filter(pk__in=list(document_ids), status=Document.Status.INDEXED)
        .order_by("pk")
        .values_list("pk", "account_id", "indexed_at")
    )
    for account_id in sorted({account for _, account, _ in documents}):
        ids = [pk for pk, account, _ in documents if account == account_id]
        chunks = list(
            Chunk.objects.filter(document_id__in=ids, account_id=account_id)
            .order_by("document_id", "position")
            .values_list("id", "knowledge_base_id", "text", "document_id")
        )
        groups: dict[int, list[int]] = {}
        for chunk_id, _, _, document_id in chunks:
            groups.setdefault(document_id, []).append(chunk_id)
        outcome = units_index(
            account_id=account_id,
            space=CHUNKS,
            units=[(chunk_id, kb_id, text) for chunk_id, kb_id, text, _ in chunks],
            groups=list(groups.values()),
        )
        total.add(outcome)
    marked = [(pk, at) for pk, _, at in documents if at is not None]
    if marked:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE rag_document AS d SET graph_indexed_at = d.indexed_at "
                "FROM unnest(%s::bigint[], %s::timestamptz[]) AS t(id, at) "
                "WHERE d.id = t.id AND d.indexed_at = t.at",
                [[pk for pk, _ in marked], [at for _, at in marked]],
            )
    return total


def documents_graph_pending(*, knowledge_base_id: int | None = None) -> QuerySet[Document]:
    """Indexed documents whose chunks' entities the graph does not hold yet, oldest first."""
    pending = Document.objects.filter(status=Document.Status.INDEXED).exclude(
        graph_indexed_at=F("indexed_at")
    )
    if knowledge_base_id is not None:
        pending = pending.filter(knowledge_base_id=knowledge_base_id)
    return pending.order_by("pk")


def documents_graph_catch_up(
    *, knowledge_base_id: int | None = None, limit: int | None = None
) -> tuple[int, IndexOutcome]:
    """Index the pending documents (``documents_graph_pending``), at most ``limit``, in groups
    of ``DOCUMENT_GROUP``; returns how many documents were taken and what was indexed. The
    periodic ``rag.graph_index_pending`` job runs it, so a document whose graph task was never
    sent (the broker down) or failed reaches the graph anyway."""
    pending = documents_graph_pending(knowledge_base_id=knowledge_base_id)
    ids = list(pending.values_list("pk", flat=True)[:limit])
    return len(ids), _index_in_groups(ids)


def knowledge_base_graph_rebuild(*, kb: KnowledgeBase) -> IndexOutcome:
    """Index the entities of every chunk of a knowledge base again (``graph_rebuild``)."""
    return _index_in_groups(
        Document.objects.filter(knowledge_base=kb, status=Document.Status.INDEXED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _index_in_groups(document_ids: Iterable[int]) -> IndexOutcome:
    ids = list(document_ids)
    total = IndexOutcome()
    for start in range(0, len(ids), DOCUMENT_GROUP):
        total.add(documents_graph_index(document_ids=ids[start : start + DOCUMENT_GROUP]))
    return total
