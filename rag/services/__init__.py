"""Every write to knowledge bases and documents, including the ingestion pipeline."""

from rag.agentic.services import agentic_query
from rag.services.analytics import search_queries_prune, search_query_record, search_run
from rag.services.documents import UPDATABLE_FIELDS as DOCUMENT_UPDATABLE_FIELDS
from rag.services.documents import (
    DocumentMetadata,
    document_create,
    document_delete,
    document_replace_content,
    document_reprocess,
    document_update,
    documents_create_batch,
    documents_recover,
)
from rag.services.knowledge_bases import UPDATABLE_FIELDS as KNOWLEDGE_BASE_UPDATABLE_FIELDS
from rag.services.knowledge_bases import (
    knowledge_base_create,
    knowledge_base_delete,
    knowledge_base_transition,
    knowledge_base_update,
)
from rag.services.pipeline import (
    document_mark_failed,
    document_process,
    documents_give_up,
    documents_mark_failed,
    documents_process_batch,
    documents_release,
)

__all__ = [
    "DOCUMENT_UPDATABLE_FIELDS",
    "KNOWLEDGE_BASE_UPDATABLE_FIELDS",
    "DocumentMetadata",
    "agentic_query",
    "document_create",
    "document_delete",
    "document_mark_failed",
    "document_process",
    "document_replace_content",
    "document_reprocess",
    "document_update",
    "documents_create_batch",
    "documents_give_up",
    "documents_mark_failed",
    "documents_process_batch",
    "documents_recover",
    "documents_release",
    "knowledge_base_create",
    "knowledge_base_delete",
    "knowledge_base_transition",
    "knowledge_base_update",
    "search_queries_prune",
    "search_query_record",
    "search_run",
]
