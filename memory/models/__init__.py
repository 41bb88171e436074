"""Memory tiers: one module per tier; each is imported here so Django finds its models."""

from memory.conversations.extraction.models import Extraction
from memory.conversations.models import Conversation
from memory.knowledge.models import (
    KnowledgeItem,
    KnowledgeItemPosting,
    KnowledgeItemTerm,
    KnowledgeSource,
    KnowledgeStore,
)
from memory.long_term.models import (
    MemoryAccessLog,
    MemoryContext,
    MemoryContextGrant,
    MemoryEntry,
    MemoryEntryPosting,
    MemoryEntryReading,
    MemoryEntryTerm,
    MemorySnapshot,
)
from memory.long_term.queue_models import AccessFlush, PendingGraphLink, PendingIndex
from memory.maintenance.models.changes import ChangePolicy, PendingChange
from memory.maintenance.models.jobs import MaintenanceJob
from memory.maintenance.models.reports import MemoryMaintenanceReport
from memory.pools.models import (
    DEFAULT_POOL_ID,
    MemoryPool,
    MemoryPoolEvent,
    MemoryPoolGrant,
    PoolLeaf,
    PoolLeafPosting,
    PoolLeafTerm,
    PoolScope,
)
from memory.short_term.models import ShortTermEntry, ShortTermPosting, ShortTermScope, ShortTermTerm
from memory.working.models import WorkingMemorySnapshot

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
    "MemoryEntryReading",
    "MemoryEntryTerm",
    "MemoryMaintenanceReport",
    "MemoryPool",
    "MemoryPoolEvent",
    "MemoryPoolGrant",
    "MemorySnapshot",
    "PendingChange",
    "PendingGraphLink",
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
