"""The memory tiers' own errors (the rest are core.errors')."""

from __future__ import annotations

from core.errors import StoreUnavailable


class MemoryUnavailable(StoreUnavailable):
    """Working memory's Redis cannot be reached: 503 ``memory_unavailable`` with Retry-After.
    Only working-memory operations raise it; short-term memory and pools keep answering."""

    code = "memory_unavailable"
