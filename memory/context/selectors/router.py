"""The memory router's reads: its tiers, filters and the counts of each tier
(docs/memory/router.md). The search across tiers is ``memory.context.selectors.search``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, Sum
from django.utils import timezone

from core.actors import Actor
from core.errors import ValidationFailed
from memory.agents import acting_agent, session_of
from memory.errors import MemoryUnavailable
from memory.long_term.context_access import visible_contexts
from memory.models import MemoryEntry, ShortTermEntry
from memory.pools.access import visible_pools
from memory.redis_store import working_memory_available
from memory.working.selectors import read_session

WORKING, SHORT_TERM, LONG_TERM, SHARED = "working", "short_term", "long_term", "shared"
TIERS = (WORKING, SHORT_TERM, LONG_TERM, SHARED)

# Statuses of a tier in an answer.
OK, UNAVAILABLE, SKIPPED = "ok", "unavailable", "skipped"


@dataclass(frozen=True)
class RouterFilters:
    session_id: str = ""  # working memory (required for it) and short-term memory
    context_ids: tuple[int, ...] = ()
    entry_types: tuple[str, ...] = ()
    memory_types: tuple[str, ...] = ()  # long-term memory types and short-term memory types
    tags_any: tuple[str, ...] = ()
    pool_ids: tuple[str, ...] = ()
    occurred_from: datetime | None = None
    occurred_to: datetime | None = None

    @property
    def long_term_only(self) -> bool:
        """Filters only long-term entries have fields for: the other tiers cannot match them."""
        return bool(
            self.context_ids
            or self.entry_types
            or self.tags_any
            or self.occurred_from
            or self.occurred_to
        )


def text_of(value: Any) -> str:
    """The text keyword matching sees in a JSON value: strings as they are, anything else as
    its JSON (keys included: an object's field names are words too)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def tiers_validate(tiers: Iterable[str] | None) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(tiers)) if tiers else TIERS
    unknown = sorted(set(chosen) - set(TIERS))
    if unknown or not chosen:
        raise ValidationFailed(
            "Unknown memory tier.",
            code="invalid_tier",
            details={"choices": list(TIERS), "unknown": unknown},
        )
    return chosen


# --- stats -----------------------------------------------------------------------------------


def memory_stats(*, actor: Actor, session_id: str = "") -> dict[str, Any]:
    """Counts of every tier for the calling agent: its working memory in ``session_id`` (when
    given), its live short-term entries, the long-term contexts it may read, the pools it may
    read."""
    agent = acting_agent(actor)
    stats: dict[str, Any] = {}
    if session_id:
        namespace = session_of(actor, session_id)
        try:
            with working_memory_available():
                entries = read_session(namespace)
            stats[WORKING] = {"status": OK, "session_id": session_id, "keys": len(entries)}
        except MemoryUnavailable:
            stats[WORKING] = {"status": UNAVAILABLE, "session_id": session_id, "keys": None}
    else:
        stats[WORKING] = {"status": SKIPPED, "session_id": "", "keys": None}
    short = ShortTermEntry.objects.filter(agent=agent, expires_at__gt=timezone.now()).aggregate(
        entries=Count("id"),
        sessions=Count("session_id", distinct=True),
        accesses=Sum("access_count", default=0),
    )
    stats[SHORT_TERM] = {"status": OK, **short}
    contexts = visible_contexts(actor)
    counts = MemoryEntry.objects.filter(context__in=contexts.values("pk")).aggregate(
        current=Count("id", filter=Q(is_current=True, archived_at__isnull=True)),
        archived=Count("id", filter=Q(is_current=True, archived_at__isnull=False)),
        versions=Count("id"),
    )
    stats[LONG_TERM] = {"status": OK, "contexts": contexts.count(), **counts}
    pools = visible_pools(actor).aggregate(
        pools=Count("id"), bytes=Sum("data_size_bytes", default=0)
    )
    stats[SHARED] = {"status": OK, **pools}
    return stats
