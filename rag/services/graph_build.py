"""Building the graph from text: the entities of document chunks (after ingestion, and on
``graph_rebuild``), through the model when one is configured and offline otherwise, written by
``rag.services.graph_index``. Other apps hand their own units' texts to ``units_index`` (memory
does, for long-term entries)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from core.llm import LLMError, get_llm_provider
from rag.graph import entities_llm
from rag.graph.entities import TextEntities, text_entities
from rag.models import Chunk, Document, KnowledgeBase
from rag.services.graph_index import IndexOutcome, UnitEntities, mentions_replace
from rag.spaces import CHUNKS, SearchSpace

logger = logging.getLogger("engram.rag")

# Units written per transaction.
INDEX_BATCH = 200


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
        total.units += outcome.units
        total.mentions += outcome.mentions
        total.nodes_created += outcome.nodes_created
        total.nodes_touched += outcome.nodes_touched
        total.edges += outcome.edges
    return total


def documents_graph_index(*, document_ids: Sequence[int]) -> IndexOutcome:
    """Index the entities of the chunks of these documents (the indexed ones; gone: nothing)."""
    total = IndexOutcome()
    accounts = sorted(
        set(
            Document.objects.filter(
                pk__in=list(document_ids), status=Document.Status.INDEXED
            ).values_list("account_id", flat=True)
        )
    )
    for account_id in accounts:
        rows = list(
            Chunk.objects.filter(document_id__in=list(document_ids), account_id=account_id)
            .order_by("document_id", "position")
            .values_list("id", "knowledge_base_id", "text")
        )
        outcome = units_index(account_id=account_id, space=CHUNKS, units=rows)
        total.units += outcome.units
        total.mentions += outcome.mentions
        total.nodes_created += outcome.nodes_created
        total.edges += outcome.edges
    return total


def knowledge_base_graph_rebuild(*, kb: KnowledgeBase) -> IndexOutcome:
    """Index the entities of every chunk of a knowledge base again (``graph_rebuild``)."""
    ids = list(
        Document.objects.filter(knowledge_base=kb, status=Document.Status.INDEXED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    total = IndexOutcome()
    for start in range(0, len(ids), 50):
        outcome = documents_graph_index(document_ids=ids[start : start + 50])
        total.units += outcome.units
        total.mentions += outcome.mentions
        total.nodes_created += outcome.nodes_created
        total.edges += outcome.edges
    return total
