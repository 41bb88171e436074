"""Long-term memory writes, by concern: contexts and grants (``contexts``), entries
(``entries``), snapshots (``snapshots``) and the search index every entry write keeps exact
(``index``). Every service checks its actor itself (``memory.long_term.context_access``)."""

from memory.long_term.services.access import access_flush
from memory.long_term.services.contexts import (
    CONTEXT_UPDATABLE,
    DEFAULT_CONTEXT_TYPE,
    RESERVED_TYPES,
    agent_memory_context,
    context_archive,
    context_create,
    context_delete,
    context_grant,
    context_revoke,
    context_update,
)
from memory.long_term.services.entries import (
    ENTRY_IN_PLACE,
    ENTRY_VERSIONED,
    MAX_BATCH,
    MAX_CONTENT_CHARS,
    EntryInput,
    entries_accessed,
    entries_archive,
    entries_create,
    entries_write,
    entry_archive_set,
    entry_delete,
    entry_importance_adjust,
    entry_read,
    entry_update,
)
from memory.long_term.services.search import long_term_search_run
from memory.long_term.services.snapshots import (
    SNAPSHOT_FIELDS,
    RestoreReport,
    snapshot_create,
    snapshot_restore,
)

__all__ = [
    "CONTEXT_UPDATABLE",
    "DEFAULT_CONTEXT_TYPE",
    "ENTRY_IN_PLACE",
    "ENTRY_VERSIONED",
    "MAX_BATCH",
    "MAX_CONTENT_CHARS",
    "RESERVED_TYPES",
    "SNAPSHOT_FIELDS",
    "EntryInput",
    "RestoreReport",
    "access_flush",
    "agent_memory_context",
    "context_archive",
    "context_create",
    "context_delete",
    "context_grant",
    "context_revoke",
    "context_update",
    "entries_accessed",
    "entries_archive",
    "entries_create",
    "entries_write",
    "entry_archive_set",
    "entry_delete",
    "entry_importance_adjust",
    "entry_read",
    "entry_update",
    "long_term_search_run",
    "snapshot_create",
    "snapshot_restore",
]
