"""The memory router's writes: read a key from the nearest tier that has it, write a key to a
named tier (docs/memory/router.md).

``memory_read`` looks in working memory, then short-term memory (both in ``session_id``), then
long-term memory (the newest current entry carrying the key in its metadata, in the contexts the
agent may read): the first tier that has the key answers. A tier whose store is down is passed
over and reported ``unavailable``. ``memory_write`` writes to the tier named; long-term writes go
to the agent's own context (``agent_context_ensure``) unless ``context_id`` names another it may
write, and writing a key already there writes a new version of that entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.actors import Actor
from core.errors import NotFound, ValidationFailed
from memory import names
from memory.agents import acting_agent
from memory.context.selectors.router import (
    LONG_TERM,
    OK,
    SHORT_TERM,
    SKIPPED,
    UNAVAILABLE,
    WORKING,
    text_of,
)
from memory.errors import MemoryUnavailable
from memory.long_term import services as ltm
from memory.long_term.context_access import visible_contexts
from memory.long_term.selectors import context_get
from memory.models import MemoryAccessLog, MemoryEntry
from memory.short_term.services import short_term_put, short_term_read
from memory.working.selectors import working_retrieve
from memory.working.services import working_store

WRITABLE_TIERS = (WORKING, SHORT_TERM, LONG_TERM)


@dataclass
class RoutedValue:
    tier: str
    key: str
    value: Any
    session_id: str = ""
    entry_id: int | None = None
    context_id: int | None = None
    version: int | None = None
    tiers: dict[str, str] = field(default_factory=dict)


def _long_term_by_key(actor: Actor, key: str, context_id: int | None = None) -> MemoryEntry | None:
    entries = MemoryEntry.objects.filter(
        context__in=visible_contexts(actor).values("pk"),
        is_current=True,
        archived_at__isnull=True,
        metadata__key=key,
    )
    if context_id is not None:
        entries = entries.filter(context_id=context_id)
    return entries.order_by("-created_at", "-id").first()


def memory_read(*, actor: Actor, key: str, session_id: str = "") -> RoutedValue:
    """The value of ``key`` from the nearest tier holding it: working memory, short-term memory
    (in ``session_id``; a short-term read counts an access), then long-term memory. 404
    ``memory_key_not_found`` when no tier has it."""
    acting_agent(actor)
    names.check_key(key)
    if session_id:
        names.check_session_id(session_id)
    status: dict[str, str] = {}
    if session_id:
        try:
            found = working_retrieve(actor=actor, session_id=session_id, key=key)
            status[WORKING] = OK
            return RoutedValue(WORKING, key, found.value, session_id=session_id, tiers=status)
        except MemoryUnavailable:
            status[WORKING] = UNAVAILABLE
        except NotFound:
            status[WORKING] = OK
        try:
            entry = short_term_read(actor=actor, session_id=session_id, key=key)
            status[SHORT_TERM] = OK
            return RoutedValue(
                SHORT_TERM, key, entry.value, session_id=session_id, entry_id=entry.pk, tiers=status
            )
        except NotFound:
            status[SHORT_TERM] = OK
    else:
        status[WORKING] = status[SHORT_TERM] = SKIPPED
    status[LONG_TERM] = OK
    long_term = _long_term_by_key(actor, key)
    if long_term is None:
        raise NotFound(
            "No tier holds this key.", code="memory_key_not_found", details={"tiers": status}
        )
    ltm.entries_accessed(actor=actor, entries=[long_term], action=MemoryAccessLog.Action.READ)
    return RoutedValue(
        LONG_TERM,
        key,
        long_term.content if long_term.content else long_term.data,
        session_id=str(long_term.metadata.get("session_id", "")),
        entry_id=long_term.pk,
        context_id=long_term.context_id,
        version=long_term.version,
        tiers=status,
    )


def memory_write(
    *,
    actor: Actor,
    key: str,
    value: Any,
    tier: str,
    session_id: str = "",
    ttl: int | None = None,
    memory_type: str = "",
    context_id: int | None = None,
    entry_type: str = MemoryEntry.EntryType.FACT,
    importance: float = 0.5,
) -> RoutedValue:
    """Write ``value`` under ``key`` to ``tier``. Working and short-term memory need
    ``session_id`` (and take ``ttl``; short-term also ``memory_type``). Long-term memory writes
    an entry (text values as its content, other JSON as its data, the key in its metadata) to
    ``context_id`` or the agent's own context; a current entry with the key there gets a new
    version instead."""
    acting_agent(actor)
    names.check_key(key)
    if tier not in WRITABLE_TIERS:
        raise ValidationFailed(
            "Unknown memory tier to write.",
            code="invalid_tier",
            details={"choices": list(WRITABLE_TIERS)},
        )
    if tier in (WORKING, SHORT_TERM):
        if not session_id:
            raise ValidationFailed(
                f"Writing to {tier} memory needs session_id.", code="session_required"
            )
        if tier == WORKING:
            working_store(actor=actor, session_id=session_id, key=key, value=value, ttl=ttl)
            return RoutedValue(WORKING, key, value, session_id=session_id)
        extra = {"memory_type": memory_type} if memory_type else {}
        entry, _ = short_term_put(
            actor=actor, session_id=session_id, key=key, value=value, ttl=ttl, **extra
        )
        return RoutedValue(SHORT_TERM, key, value, session_id=session_id, entry_id=entry.pk)
    if session_id:
        names.check_session_id(session_id)
    context = (
        context_get(actor, context_id, write=True)
        if context_id is not None
        else ltm.agent_memory_context(actor=actor)
    )
    is_text = isinstance(value, str)
    content, data = (value, None) if is_text else (text_of(value), value)
    metadata = {"key": key, **({"session_id": session_id} if session_id else {})}
    existing = _long_term_by_key(actor, key, context.pk)
    if existing is not None:
        written = ltm.entry_update(
            actor=actor,
            entry=existing,
            fields={"content": content, "data": data, "importance": importance},
        )
    else:
        (written,) = ltm.entries_write(
            actor=actor,
            context=context,
            items=[
                ltm.EntryInput(
                    content=content,
                    data=data,
                    entry_type=entry_type,
                    metadata=metadata,
                    importance=importance,
                )
            ],
        )
    return RoutedValue(
        LONG_TERM,
        key,
        value,
        session_id=session_id,
        entry_id=written.pk,
        context_id=context.pk,
        version=written.version,
    )


def memory_remember(
    *,
    actor: Actor,
    tier: str,
    key: str | None = None,
    value: Any = None,
    content: str | None = None,
    session_id: str = "",
    ttl: int | None = None,
    memory_type: str = "",
    context_id: int | None = None,
    entry_type: str = MemoryEntry.EntryType.FACT,
    importance: float = 0.5,
    tags: Sequence[str] = (),
) -> RoutedValue:
    """The router's write, for both doors (``POST /memory/write`` and MCP ``memory_write``):
    ``key`` + ``value`` to the tier named (``memory_write``), or ``content``, a text, as a new
    long-term entry (with ``tags``), as ``POST /memory/entries`` writes it. Exactly one of
    ``key`` and ``content``; ``content`` only to long-term memory; ``tags`` only with it."""
    if (key is None) == (content is None):
        raise ValidationFailed("Give exactly one of key or content.", code="validation_error")
    if key is not None:
        if tags:
            raise ValidationFailed(
                "Tags go with content (a long-term entry), not with a key.",
                details={"tags": ["Tags go with content."]},
            )
        return memory_write(
            actor=actor,
            key=key,
            value=value,
            tier=tier,
            session_id=session_id,
            ttl=ttl,
            memory_type=memory_type,
            context_id=context_id,
            entry_type=entry_type,
            importance=importance,
        )
    if tier != LONG_TERM:
        raise ValidationFailed(
            "content is written to long_term memory; give a key instead.",
            details={"content": ["content goes to long_term memory."]},
        )
    acting_agent(actor)
    if session_id:
        names.check_session_id(session_id)
    (entry,) = ltm.entries_create(
        actor=actor,
        context_id=context_id,
        items=[
            ltm.EntryInput(
                content=content or "",
                entry_type=entry_type,
                importance=importance,
                tags=list(tags),
                metadata={"session_id": session_id} if session_id else {},
            )
        ],
    )
    return RoutedValue(
        LONG_TERM,
        "",
        entry.content,
        session_id=session_id,
        entry_id=entry.pk,
        context_id=entry.context_id,
        version=entry.version,
    )


def memory_read_from(
    *, actor: Actor, key: str, session_id: str = "", tier: str | None = None
) -> RoutedValue:
    """``memory_read``, or only the tier named (working and short-term need ``session_id``),
    for both doors (``POST /memory/read`` and MCP ``memory_read``)."""
    if tier is None:
        return memory_read(actor=actor, key=key, session_id=session_id)
    if tier in (WORKING, SHORT_TERM) and not session_id:
        raise ValidationFailed(f"Reading {tier} memory needs session_id.", code="session_required")
    if tier == WORKING:
        acting_agent(actor)
        found = working_retrieve(actor=actor, session_id=session_id, key=key)
        return RoutedValue(WORKING, key, found.value, session_id=session_id)
    if tier == SHORT_TERM:
        acting_agent(actor)
        entry = short_term_read(actor=actor, session_id=session_id, key=key)
        return RoutedValue(SHORT_TERM, key, entry.value, session_id=session_id, entry_id=entry.pk)
    return memory_read(actor=actor, key=key, session_id="")
