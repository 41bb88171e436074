"""Every write to knowledge bases and documents, including the ingestion pipeline."""

from rag.services.analytics import search_query_record, search_run
from rag.services.documents import (
    DocumentMetadata,
    document_create,
    document_delete,
    document_replace_content,
    document_reprocess,
    documents_create_batch,
    documents_recover,
)
from rag.services.knowledge_bases import (
    knowledge_base_create,
    knowledge_base_delete,
    knowledge_base_transition,
    knowledge_base_update,
)
from rag.services.pipeline import (
    document_mark_failed,
    document_process,
    documents_mark_failed,
    documents_process_batch,
)

__all__ = [
    "DocumentMetadata",
    "document_create",
    "document_delete",
    "document_mark_failed",
    "document_process",
    "document_replace_content",
    "document_reprocess",
    "documents_create_batch",
    "documents_mark_failed",
    "documents_process_batch",
    "documents_recover",
    "knowledge_base_create",
    "knowledge_base_delete",
    "knowledge_base_transition",
    "knowledge_base_update",
    "search_query_record",
    "search_run",
]
