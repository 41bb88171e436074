"""Building the graph from text: the entities of document chunks (after ingestion, and on
``graph_rebuild``), through the model when one is configured and offline otherwise, written by
``rag.services.graph_index``. Other apps hand their own units' texts to ``units_index`` (memory
does, for long-term entries)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from django.db import connection
from django.db.models import F, QuerySet

from core.llm import LLMError, get_llm_provider
from rag.graph import entities_llm
from rag.graph.entities import TextEntities, text_entities
from rag.models import Chunk, Document, KnowledgeBase
from rag.services.graph_index import IndexOutcome, UnitEntities, mentions_replace
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
    texts: Sequence[tuple[int, str]], *, known_names: Iterable[str] = ()
) -> tuple[dict[int, TextEntities], str]:
    """The entities of each unit (``(unit id, text)``): the model's, batch by batch, falling
    back to the offline extractor for a batch whose call fails or whose answer does not hold;
    offline when no model is configured. Returns them by unit id, and the methods used."""
    names = list(known_names)
    provider = get_llm_provider()
    if provider.model_id.startswith("offline:"):
        return {u: text_entities(t, known_names=names) for u, t in texts}, "offline"
    found: dict[int, TextEntities] = {}
    methods: set[str] = set()
    for batch in entities_llm.batches(texts):
        try:
            found.update(entities_llm.extract(provider, batch))
            methods.add(f"llm:{provider.model_id}")
        except LLMError as exc:
            logger.warning("graph extraction: the model failed (%s); extracting offline", exc)
            found.update({u: text_entities(t, known_names=names) for u, t in batch})
            methods.add("offline")
    return found, " + ".join(sorted(methods)) or "offline"


def units_index(
    *,
    account_id: int,
    space: SearchSpace,
    units: Sequence[tuple[int, int, str]],
    known_names: Iterable[str] = (),
    origin: str = "",
) -> IndexOutcome:
    """Extract and index the entities of units (``(unit id, scope id, text)``) of a space."""
    total = IndexOutcome()
    names = list(known_names)
    for start in range(0, len(units), INDEX_BATCH):
        batch = units[start : start + INDEX_BATCH]
        scopes = {unit_id: scope_id for unit_id, scope_id, _ in batch}
        found, method = units_extract([(u, t) for u, _, t in batch], known_names=names)
        outcome = mentions_replace(
            account_id=account_id,
            space=space,
            units=[
                UnitEntities(u, scopes[u], found[u].entities, found[u].relations) for u in scopes
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
        rows = list(
            Chunk.objects.filter(document_id__in=ids, account_id=account_id)
            .order_by("document_id", "position")
            .values_list("id", "knowledge_base_id", "text")
        )
        outcome = units_index(account_id=account_id, space=CHUNKS, units=rows)
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
