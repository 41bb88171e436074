"""rag's kinds of an account export (``core.portability``): document knowledge bases with their
chunking settings, and their documents with the original file's bytes (base64) and metadata;
then, loaded after every other app's kinds (``late``), the knowledge graph's nodes and typed
edges (``rag.graph.portability``).

Chunks are not carried: they are rebuilt on import by the normal ingestion job, from the
original bytes and the knowledge base's chunking settings, exactly as an upload is. Each
imported document is written ``pending`` inside the import's transaction, and its processing
(``rag.process_documents``: chunks, BM25 postings, embeddings, its graph mentions) is queued
once the import commits; a document becomes searchable when its processing ends (status
``indexed``). A queue that is down leaves the documents pending, and the recovery job
(``rag.recover_documents``) queues them. Knowledge bases are account-wide: an agent's share
holds none."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

from django.conf import settings

from core.portability.kinds import ExportScope, ImportScope, Kind, Row, ref, when
from rag.graph.portability import EDGE_KIND, NODE_KIND
from rag.models import Document, KnowledgeBase

KNOWLEDGE_BASE = "rag.knowledge_base"
DOCUMENT = "rag.document"
PROCESS_BATCH = 50


def _bases(scope: ExportScope) -> Any:
    bases = KnowledgeBase.objects.filter(account=scope.account)
    return bases.none() if scope.single_agent else bases


_BASE_FIELDS = (
    "name",
    "description",
    "chunking_strategy",
    "chunk_size",
    "chunk_overlap",
    "status",
    "status_message",
)


def _base_rows(scope: ExportScope) -> Iterator[Row]:
    for kb in _bases(scope).order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": kb.pk,
            "embedding_provider": kb.embedding_provider,
            "embedding_model": kb.embedding_model,
            "created_at": kb.created_at,
            "updated_at": kb.updated_at,
            **{name: getattr(kb, name) for name in _BASE_FIELDS},
        }


def _base_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    """Each base with its chunking settings; its vectors are this installation's model's (the
    chunks are embedded again), whatever model the source used."""
    made = KnowledgeBase.objects.bulk_create(
        [
            KnowledgeBase(
                account=scope.account,
                embedding_provider=settings.EMBEDDING_PROVIDER,
                embedding_model=scope.embedding_model,
                created_at=when(row["created_at"]),
                **{name: row[name] for name in _BASE_FIELDS},
            )
            for row in rows
        ]
    )
    scope.remember_created(KNOWLEDGE_BASE, KnowledgeBase, rows, made, "updated_at")


_DOCUMENT_FIELDS = (
    "title",
    "source",
    "content_type",
    "checksum",
    "size_bytes",
    "doc_type",
    "tags",
    "lifecycle_state",
    "source_path",
    "metadata",
)


def _document_rows(scope: ExportScope) -> Iterator[Row]:
    documents = Document.objects.filter(account=scope.account, knowledge_base__in=_bases(scope))
    for document in documents.order_by("pk").iterator(chunk_size=100):
        yield {
            "id": document.pk,
            "knowledge_base": ref(KNOWLEDGE_BASE, document.knowledge_base_id),
            "original": base64.b64encode(bytes(document.original)).decode("ascii"),
            "document_date": document.document_date,
            "status": document.status,
            "created_at": document.created_at,
            **{name: getattr(document, name) for name in _DOCUMENT_FIELDS},
        }


def _original(row: Row) -> bytes:
    """The row's file, checked against its own size and SHA-256 (ValueError otherwise)."""
    try:
        data = base64.b64decode(row["original"], validate=True)
    except (binascii.Error, TypeError) as exc:
        raise ValueError(f"document {row['id']}: original is not base64") from exc
    if len(data) != row["size_bytes"] or hashlib.sha256(data).hexdigest() != row["checksum"]:
        raise ValueError(f"document {row['id']}: original does not match its size and checksum")
    return data


def _document_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    """Each document pending, with its bytes: its chunks are made after the commit."""
    made = Document.objects.bulk_create(
        [
            Document(
                account=scope.account,
                knowledge_base_id=scope.required(row["knowledge_base"]),
                original=_original(row),
                document_date=(
                    None
                    if row["document_date"] is None
                    else dt.date.fromisoformat(row["document_date"])
                ),
                status=Document.Status.PENDING,
                **{name: row[name] for name in _DOCUMENT_FIELDS},
            )
            for row in rows
        ]
    )
    scope.remember_created(DOCUMENT, Document, rows, made, "created_at")
    documents: list[int] = scope.memo.setdefault(DOCUMENT, [])
    documents.extend(document.pk for document in made)


def _documents_finish(scope: ImportScope) -> None:
    documents = list(scope.memo.get(DOCUMENT, []))
    if documents:
        scope.after_commit.append(lambda: _process(documents))


def _process(documents: Sequence[int]) -> None:
    """Queue the imported documents' ingestion in batches (what a batch upload does); a batch
    the broker did not take stays pending for ``rag.recover_documents``."""
    from core.queue import task_send
    from rag.tasks import process_documents

    for start in range(0, len(documents), PROCESS_BATCH):
        task_send(process_documents, list(documents[start : start + PROCESS_BATCH]))


_DATETIME = "datetime"

KINDS = (
    Kind(
        name=KNOWLEDGE_BASE,
        schema={
            "name": "str: unique in the account",
            "description": "str",
            "embedding_provider": "str: the source's (an import uses its own)",
            "embedding_model": "str: the source's (an import embeds with its own)",
            "chunking_strategy": "str: recursive | markdown | semantic | code",
            "chunk_size": "int: target tokens per chunk (32..8192)",
            "chunk_overlap": "int: tokens shared by neighbours (< chunk_size)",
            "status": "str: active | indexing | paused | error | archived",
            "status_message": "str",
            "created_at": _DATETIME,
            "updated_at": _DATETIME,
        },
        rows=_base_rows,
        load=_base_load,
    ),
    Kind(
        name=DOCUMENT,
        schema={
            "knowledge_base": f"ref:{KNOWLEDGE_BASE}",
            "title": "str",
            "source": "str: file name or URL",
            "content_type": "str: MIME type",
            "original": "str: the original file's bytes, base64 (RFC 4648)",
            "checksum": "str: SHA-256 of the original (hex), checked on import",
            "size_bytes": "int: the original's size, checked on import",
            "doc_type": "str",
            "tags": "[str]",
            "lifecycle_state": "str",
            "source_path": "str",
            "document_date": "date or null",
            "metadata": "object",
            "status": "str: the source's processing status (an import processes it again)",
            "created_at": _DATETIME,
        },
        rows=_document_rows,
        load=_document_load,
        finish=_documents_finish,
    ),
    NODE_KIND,
    EDGE_KIND,
)
