"""Long-term memory API, by concern: contexts with their grants and access log
(``contexts``), entries (``entries``), snapshots (``snapshots``) and search (``search``)
(docs/memory/long-term.md)."""

from memory.long_term.apis.contexts import (
    ContextAccessLogApi,
    ContextArchiveApi,
    ContextDetailApi,
    ContextGrantApi,
    ContextGrantListCreateApi,
    ContextListCreateApi,
    ContextUnarchiveApi,
)
from memory.long_term.apis.entries import (
    ContextEntryBatchApi,
    ContextEntryListCreateApi,
    EntryArchiveApi,
    EntryBatchCreateApi,
    EntryCreateApi,
    EntryDetailApi,
    EntryImportanceApi,
    EntryUnarchiveApi,
    EntryVersionsApi,
)
from memory.long_term.apis.search import LongTermSearchApi
from memory.long_term.apis.snapshots import ContextSnapshotListCreateApi, SnapshotRestoreApi

__all__ = [
    "ContextAccessLogApi",
    "ContextArchiveApi",
    "ContextDetailApi",
    "ContextEntryBatchApi",
    "ContextEntryListCreateApi",
    "ContextGrantApi",
    "ContextGrantListCreateApi",
    "ContextListCreateApi",
    "ContextSnapshotListCreateApi",
    "ContextUnarchiveApi",
    "EntryArchiveApi",
    "EntryBatchCreateApi",
    "EntryCreateApi",
    "EntryDetailApi",
    "EntryImportanceApi",
    "EntryUnarchiveApi",
    "EntryVersionsApi",
    "LongTermSearchApi",
    "SnapshotRestoreApi",
]
