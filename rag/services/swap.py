"""The ingestion pipeline's last step (``rag.services.pipeline``): swap inside one transaction.
Lock the knowledge bases, then the documents still held by this claim with unchanged content,
replace their chunks, postings and statistics, and mark them indexed in one statement."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from core.embeddings import generations
from core.queue import task_send_on_commit
from rag import keyword
from rag.chunking import chunker_signature
from rag.models import Chunk, Document, KnowledgeBase
from rag.spaces import CHUNKS


@dataclass
class _Prepared:
    document: Document
    pieces: list[Any]
    texts: list[str]  # what each piece is embedded and keyword-indexed as
    terms: list[keyword.ChunkTerms]


def _chunker(document: Document) -> str:
    """The chunking the pieces were made with (the knowledge base as read when chunking)."""
    kb = document.knowledge_base
    return chunker_signature(
        strategy=kb.chunking_strategy, chunk_size=kb.chunk_size, chunk_overlap=kb.chunk_overlap
    )


def _swap(
    group: list[_Prepared], vectors: list[list[Any]], claim: str, model_id: str
) -> tuple[int, int]:
    """Replace the chunks, postings and statistics of a group of documents in one transaction;
    returns how many were indexed and how many skipped.

    A document whose claim was taken over or whose content changed since it was read is left
    out (skipped) without writing; the others swap together. Each knowledge base's row lock
    serialises its statistics, which are read under that lock: nothing computed before the
    transaction is written back. Knowledge bases are locked before documents, in the order
    deletions take them.
    """
    with transaction.atomic():
        kbs = {
            kb.pk: kb
            for kb in KnowledgeBase.objects.select_for_update()
            .filter(pk__in={item.document.knowledge_base_id for item in group})
            .order_by("pk")
        }
        current = dict(
            Document.objects.select_for_update()
            .filter(pk__in=[item.document.pk for item in group], processing_task_id=claim)
            .order_by("pk")
            .values_list("pk", "checksum")
        )
        live = [
            (item, item_vectors)
            for item, item_vectors in zip(group, vectors, strict=True)
            if current.get(item.document.pk) == item.document.checksum
        ]
        if not live:
            return 0, len(group)
        by_kb: dict[int, list[tuple[_Prepared, list[Any]]]] = {}
        for item, item_vectors in live:
            by_kb.setdefault(item.document.knowledge_base_id, []).append((item, item_vectors))
        for kb_id, items in by_kb.items():
            _swap_in_knowledge_base(kbs[kb_id], items, model_id)
        # One statement for the group (the checksum was verified under the row lock above).
        # clock_timestamp(), not now(): two indexings in one transaction still differ, which
        # is how the graph tells chunks it holds from newer ones (Document.graph_indexed_at).
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE rag_document AS d SET status = %s, error = '', processing_task_id = '', "
                "chunks_total = t.chunks, chunks_embedded = t.chunks, "
                "indexed_checksum = d.checksum, indexed_model = %s, "
                "indexed_at = clock_timestamp(), token_count = t.tokens, "
                "indexed_chunker = t.chunker, updated_at = now() "
                "FROM unnest(%s::bigint[], %s::int[], %s::int[], %s::varchar[]) "
                "AS t(id, chunks, tokens, chunker) WHERE d.id = t.id",
                [
                    Document.Status.INDEXED,
                    model_id,
                    [item.document.pk for item, _ in live],
                    [len(item.pieces) for item, _ in live],
                    [sum(piece.token_count for piece in item.pieces) for item, _ in live],
                    [_chunker(item.document) for item, _ in live],
                ],
            )
        if settings.RAG_GRAPH_EXTRACTION:
            from rag.tasks import graph_index_documents

            # Entities of the new chunks, once they are committed (rag.graph.services.build).
            task_send_on_commit(graph_index_documents, [item.document.pk for item, _ in live])
    return len(live), len(group) - len(live)


def _swap_in_knowledge_base(
    kb: KnowledgeBase, items: list[tuple[_Prepared, list[Any]]], model_id: str
) -> None:
    """Write one knowledge base's share of a group (the caller holds its row lock)."""
    # A document never indexed has nothing to replace.
    replaced = [item.document.pk for item, _ in items if item.document.indexed_at is not None]
    old_chunks, old_terms = keyword.postings_remove_documents(
        knowledge_base_id=kb.pk, document_ids=replaced
    )
    if replaced:
        Chunk.objects.filter(document_id__in=replaced).delete()
    new_chunks = Chunk.objects.bulk_create(
        [
            Chunk(
                account_id=item.document.account_id,
                knowledge_base_id=kb.pk,
                document_id=item.document.pk,
                position=piece.position,
                text=piece.text,
                heading_path=list(piece.heading_path),
                token_count=piece.token_count,
                start_char=piece.start_char,
                end_char=piece.end_char,
                embedding=vector,
                embedding_model=model_id,
                keyword_length=terms.length,
            )
            for item, item_vectors in items
            for piece, vector, terms in zip(item.pieces, item_vectors, item.terms, strict=True)
        ]
    )
    generations.written("chunks", [chunk.pk for chunk in new_chunks])
    all_terms = [terms for item, _ in items for terms in item.terms]
    chunk_count = kb.chunk_count - old_chunks + len(new_chunks)
    total_terms = kb.total_terms - old_terms + sum(terms.length for terms in all_terms)
    keyword.postings_add(
        space=CHUNKS,
        scope_id=kb.pk,
        units=[
            keyword.IndexedUnit(unit_id=chunk.pk, extra=(chunk.document_id,), terms=terms)
            for chunk, terms in zip(new_chunks, all_terms, strict=True)
        ],
        avg_length=total_terms / chunk_count if chunk_count else 0.0,
    )
    KnowledgeBase.objects.filter(pk=kb.pk).update(chunk_count=chunk_count, total_terms=total_terms)
