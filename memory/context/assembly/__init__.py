"""Context assembly: an agent's LLM context for a query, within a hard token budget, from
every store, each item with its provenance (``assemble``; docs/memory/context.md)."""

from memory.context.assembly.assemble import (
    DEFAULT_BUDGET,
    FORMATS,
    MAX_BUDGET,
    MIN_BUDGET,
    SOURCES,
    ContextRequest,
    ContextResult,
    context_assemble,
)
from memory.context.assembly.preview import context_preview

__all__ = [
    "DEFAULT_BUDGET",
    "FORMATS",
    "MAX_BUDGET",
    "MIN_BUDGET",
    "SOURCES",
    "ContextRequest",
    "ContextResult",
    "context_assemble",
    "context_preview",
]
