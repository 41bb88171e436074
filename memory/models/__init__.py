"""Memory tiers: one module per tier; each is imported here so Django finds its models."""

from memory.models.changes import ChangePolicy, PendingChange
from memory.models.conversations import Conversation
from memory.models.extractions import Extraction
from memory.models.knowledge import (
    KnowledgeItem,
    KnowledgeItemPosting,
    KnowledgeItemTerm,
    KnowledgeSource,
    KnowledgeStore,
)
from memory.models.long_term import (
    MemoryAccessLog,
    MemoryContext,
    MemoryContextGrant,
    MemoryEntry,
    MemoryEntryPosting,
    MemoryEntryTerm,
    MemorySnapshot,
)
from memory.models.maintenance_jobs import MaintenanceJob
from memory.models.maintenance_reports import MemoryMaintenanceReport
from memory.models.pools import (
    DEFAULT_POOL_ID,
    MemoryPool,
    MemoryPoolEvent,
    MemoryPoolGrant,
    PoolLeaf,
    PoolLeafPosting,
    PoolLeafTerm,
    PoolScope,
)
from memory.models.queues import AccessFlush, PendingIndex
from memory.models.short_term import (
    ShortTermEntry,
    ShortTermPosting,
    ShortTermScope,
    ShortTermTerm,
)
from memory.models.working import WorkingMemorySnapshot

__all__ = [
    "DEFAULT_POOL_ID",
    "AccessFlush",
    "ChangePolicy",
    "Conversation",
    "Extraction",
    "KnowledgeItem",
    "KnowledgeItemPosting",
    "KnowledgeItemTerm",
    "KnowledgeSource",
    "KnowledgeStore",
    "MaintenanceJob",
    "MemoryAccessLog",
    "MemoryContext",
    "MemoryContextGrant",
    "MemoryEntry",
    "MemoryEntryPosting",
    "MemoryEntryTerm",
    "MemoryMaintenanceReport",
    "MemoryPool",
    "MemoryPoolEvent",
    "MemoryPoolGrant",
    "MemorySnapshot",
    "PendingChange",
    "PendingIndex",
    "PoolLeaf",
    "PoolLeafPosting",
    "PoolLeafTerm",
    "PoolScope",
    "ShortTermEntry",
    "ShortTermPosting",
    "ShortTermScope",
    "ShortTermTerm",
    "WorkingMemorySnapshot",
]
