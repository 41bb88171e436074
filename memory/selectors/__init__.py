"""Every non-trivial read of the memory tiers (one module per tier)."""

from memory.selectors.pools import (
    PoolValue,
    pool_data_read,
    pool_event_list,
    pool_get,
    pool_grant_list,
    pool_list,
    pool_stats,
)
from memory.selectors.short_term import short_term_list
from memory.selectors.working import (
    InboxEntry,
    IndexedEntry,
    working_conversation_get,
    working_exists,
    working_inbox_list,
    working_inbox_retrieve,
    working_keys,
    working_retrieve,
    working_scratch_pad_get,
    working_state_get,
)

__all__ = [
    "InboxEntry",
    "IndexedEntry",
    "PoolValue",
    "pool_data_read",
    "pool_event_list",
    "pool_get",
    "pool_grant_list",
    "pool_list",
    "pool_stats",
    "short_term_list",
    "working_conversation_get",
    "working_exists",
    "working_inbox_list",
    "working_inbox_retrieve",
    "working_keys",
    "working_retrieve",
    "working_scratch_pad_get",
    "working_state_get",
]
