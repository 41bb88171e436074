"""Working memory writes: per agent and session, in Redis (layout: memory/working/store.py).

Every operation acts for the calling agent in its own namespace, so another agent's (or
account's) entries are never reachable. Redis being unreachable is 503 ``memory_unavailable``
(``working_memory_available``); nothing here touches the other tiers. Writes to Redis are not
audited (the tier is ephemeral by design); persisting to and loading from PostgreSQL are.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from redis.exceptions import WatchError

from core.actors import Actor
from core.audit import audit_record
from core.errors import Conflict, NotFound
from core.parsers import MAX_JSON_DEPTH, check_json_value
from memory import names
from memory.agents import acting_agent, agent_in_account, session_of
from memory.models import WorkingMemorySnapshot
from memory.redis_store import memory_redis, working_memory_available
from memory.working import store as wr
from memory.working.selectors import read_session
from memory.working.store import WorkingEntry

# A clear retries when the session changes under it (WATCH); this many times at most.
CLEAR_ATTEMPTS = 20


def _store_json(
    namespace: wr.Namespace, member: str, value: Any, ttl: int | None
) -> tuple[wr.Expiry, int]:
    payload = wr.encode(value)
    wr.check_size(len(payload))
    ttl_ms = wr.ttl_ms(ttl)
    with working_memory_available():
        result = wr.run_script(wr.STORE, namespace, member, ttl_ms, payload)
    expires, size = wr.check_written(result)
    return wr.Expiry.from_epoch_ms(expires), size


def working_store(
    *, actor: Actor, session_id: str, key: str, value: Any, ttl: int | None = None
) -> WorkingEntry:
    """Store ``value`` (any JSON) under ``key`` for ``ttl`` seconds (default
    WORKING_MEMORY_DEFAULT_TTL), replacing what was there."""
    namespace = session_of(actor, session_id)
    names.check_key(key)
    expiry, size = _store_json(namespace, wr.entry_name(wr.VALUE, key), value, ttl)
    return WorkingEntry(session_id, wr.VALUE, key, value, expiry, size)


def working_state_store(
    *,
    actor: Actor,
    session_id: str,
    kind: str,
    value: Any,
    name: str = "",
    ttl: int | None = None,
) -> WorkingEntry:
    """The task state, a step's intermediate result or a tool's state (``kind``), by name."""
    if kind not in (wr.TASK_STATE, wr.STEP, wr.TOOL_STATE):
        raise ValueError(f"not a state kind: {kind}")
    namespace = session_of(actor, session_id)
    if kind != wr.TASK_STATE:
        names.check_key(name)
    expiry, size = _store_json(namespace, wr.entry_name(kind, name), value, ttl)
    return WorkingEntry(session_id, kind, name, value, expiry, size)


def working_conversation_store(
    *, actor: Actor, session_id: str, messages: list[Any], ttl: int | None = None
) -> WorkingEntry:
    """Replace the conversation context with ``messages`` (the latest
    WORKING_MEMORY_CONVERSATION_MAX_MESSAGES of them are kept); an empty list removes it."""
    namespace = session_of(actor, session_id)
    cap = settings.WORKING_MEMORY_CONVERSATION_MAX_MESSAGES
    kept = messages[-cap:]
    payloads = [wr.encode(message) for message in kept]
    for payload in payloads:
        wr.check_size(len(payload), "message")
    ttl_ms = wr.ttl_ms(ttl)
    member = wr.entry_name(wr.CONVERSATION)
    with working_memory_available():
        result = wr.run_script(wr.PUSH, namespace, member, ttl_ms, "1", cap, *payloads)
    expires, length = wr.check_written(result)
    expiry = wr.Expiry.from_epoch_ms(expires) if length else wr.Expiry(None, timezone.now())
    return WorkingEntry(session_id, wr.CONVERSATION, "", kept, expiry, length)


def working_conversation_append(
    *, actor: Actor, session_id: str, message: Any, ttl: int | None = None
) -> WorkingEntry:
    """Append one message; the oldest beyond the cap are dropped. The conversation's TTL starts
    again from this append. ``size`` of the answer is the number of messages kept."""
    namespace = session_of(actor, session_id)
    payload = wr.encode(message)
    wr.check_size(len(payload), "message")
    ttl_ms = wr.ttl_ms(ttl)
    cap = settings.WORKING_MEMORY_CONVERSATION_MAX_MESSAGES
    member = wr.entry_name(wr.CONVERSATION)
    with working_memory_available():
        result = wr.run_script(wr.PUSH, namespace, member, ttl_ms, "0", cap, payload)
    expires, length = wr.check_written(result)
    return WorkingEntry(
        session_id, wr.CONVERSATION, "", message, wr.Expiry.from_epoch_ms(expires), length
    )


def working_scratch_pad_store(
    *, actor: Actor, session_id: str, content: str, ttl: int | None = None
) -> WorkingEntry:
    """Replace the scratch pad's text."""
    namespace = session_of(actor, session_id)
    payload = wr.encode_text(content)
    wr.check_size(len(payload), "scratch pad")
    ttl_ms = wr.ttl_ms(ttl)
    with working_memory_available():
        result = wr.run_script(wr.STORE, namespace, wr.entry_name(wr.SCRATCH_PAD), ttl_ms, payload)
    expires, size = wr.check_written(result)
    return WorkingEntry(
        session_id, wr.SCRATCH_PAD, "", content, wr.Expiry.from_epoch_ms(expires), size
    )


def working_scratch_pad_append(
    *, actor: Actor, session_id: str, content: str, ttl: int | None = None
) -> WorkingEntry:
    """Append text to the scratch pad as given (add your own separator); past
    WORKING_MEMORY_MAX_VALUE_BYTES in all, 413 ``value_too_large`` and nothing is appended.
    ``size`` of the answer is the pad's length in bytes."""
    namespace = session_of(actor, session_id)
    payload = wr.encode_text(content)
    ttl_ms = wr.ttl_ms(ttl)
    limit = settings.WORKING_MEMORY_MAX_VALUE_BYTES
    member = wr.entry_name(wr.SCRATCH_PAD)
    with working_memory_available():
        result = wr.run_script(wr.APPEND, namespace, member, ttl_ms, payload, limit)
    expires, size = wr.check_written(result, limit_what="scratch pad")
    return WorkingEntry(
        session_id, wr.SCRATCH_PAD, "", content, wr.Expiry.from_epoch_ms(expires), size
    )


def _key_not_found() -> NotFound:
    return NotFound("No such key in this working memory.", code="working_memory_key_not_found")


def working_remove(*, actor: Actor, session_id: str, key: str) -> None:
    """Remove one key (404 ``working_memory_key_not_found`` when it is not there)."""
    namespace = session_of(actor, session_id)
    names.check_key(key)
    member = wr.entry_name(wr.VALUE, key)
    with working_memory_available():
        pipe = memory_redis().pipeline(transaction=True)
        pipe.delete(namespace.key(member))
        pipe.zrem(namespace.index, member)
        deleted, _ = pipe.execute()
    if not deleted:
        raise _key_not_found()


def working_clear(*, actor: Actor, session_id: str) -> int:
    """Remove every entry of the session (keys and specialised entries); how many there were.

    WATCH on the index: an entry stored between reading the index and deleting retries the
    whole clear, so nothing stored before the clear survives it.
    """
    namespace = session_of(actor, session_id)
    with working_memory_available(), memory_redis().pipeline() as pipe:
        for _ in range(CLEAR_ATTEMPTS):
            try:
                pipe.watch(namespace.index)
                members = wr.index_members(pipe, namespace.index)
                pipe.multi()
                if members:
                    pipe.delete(*(namespace.key(m) for m in members))
                pipe.delete(namespace.index)
                results = pipe.execute()
            except WatchError:
                continue  # the session changed meanwhile: read its index again
            return int(results[0]) if members else 0
    raise Conflict(
        "The session kept changing while it was being cleared; retry.", code="concurrent_update"
    )


def working_share(
    *, actor: Actor, agent_id: int, key: str, value: Any, ttl: int | None = None
) -> WorkingEntry:
    """Put ``value`` in the inbox of another agent of the account (``agent_id``; oneself too)
    under ``key``, replacing what this agent shared there before. The recipient reads it with
    ``working_inbox_retrieve`` until its TTL ends."""
    sender = acting_agent(actor)
    names.check_key(key)
    recipient = agent_in_account(actor, agent_id)
    namespace = wr.inbox_namespace(sender.account_id, recipient.pk)
    expiry, size = _store_json(namespace, wr.inbox_member(sender.pk, key), value, ttl)
    return WorkingEntry("", wr.VALUE, key, value, expiry, size)


def working_persist(*, actor: Actor, session_id: str) -> WorkingMemorySnapshot:
    """Copy the session's live working memory to PostgreSQL, replacing the copy made before.
    404 ``working_memory_session_not_found`` when the session holds nothing."""
    agent = acting_agent(actor)
    namespace = session_of(actor, session_id)
    with working_memory_available():
        entries = read_session(namespace)
    if not entries:
        raise NotFound(
            "This working memory holds nothing to persist.",
            code="working_memory_session_not_found",
        )
    # Written before working memory refused them (or by a door that skipped the check): a NUL
    # or a lone surrogate would fail the insert. 400 invalid_characters names the entry.
    check_json_value(entries, path="entries", max_depth=MAX_JSON_DEPTH + 3)
    now = timezone.now()
    with transaction.atomic():
        # One statement: a concurrent persist of the same session replaces, never duplicates.
        WorkingMemorySnapshot.objects.bulk_create(
            [
                WorkingMemorySnapshot(
                    account_id=agent.account_id,
                    agent=agent,
                    session_id=session_id,
                    entries=entries,
                    entry_count=len(entries),
                    created_at=now,
                    updated_at=now,
                )
            ],
            update_conflicts=True,
            unique_fields=["agent", "session_id"],
            update_fields=["entries", "entry_count", "updated_at"],
        )
        snapshot = WorkingMemorySnapshot.objects.get(agent=agent, session_id=session_id)
        audit_record(
            actor=actor,
            action="memory.working.persist",
            account_id=agent.account_id,
            target=snapshot,
            changes={"session_id": session_id, "entries": len(entries)},
        )
    return snapshot


def working_load(*, actor: Actor, session_id: str, ttl: int | None = None) -> dict[str, int]:
    """Write the persisted entries of the session back to working memory, replacing entries of
    the same names (others stay). Each gets ``ttl`` seconds if given, else the TTL it had left
    when persisted (at least one second). Entries past WORKING_MEMORY_MAX_KEYS are skipped.
    404 ``working_memory_snapshot_not_found`` when nothing was persisted."""
    agent = acting_agent(actor)
    namespace = session_of(actor, session_id)
    override = wr.ttl_ms(ttl) if ttl is not None else None
    snapshot = WorkingMemorySnapshot.objects.filter(agent=agent, session_id=session_id).first()
    if snapshot is None:
        raise NotFound(
            "Nothing was persisted for this session.", code="working_memory_snapshot_not_found"
        )
    longest = int(settings.WORKING_MEMORY_MAX_TTL) * 1000
    cap = settings.WORKING_MEMORY_CONVERSATION_MAX_MESSAGES
    with working_memory_available():
        pipe = memory_redis().pipeline(transaction=True)
        for entry in snapshot.entries:
            member, kind = entry["name"], entry["kind"]
            entry_ttl = override or min(max(int(entry.get("ttl_ms") or 0), 1000), longest)
            if kind == wr.CONVERSATION:
                items = [wr.encode(m) for m in entry["value"]]
                wr.run_script(wr.PUSH, namespace, member, entry_ttl, "1", cap, *items, client=pipe)
            elif kind == wr.SCRATCH_PAD:
                text = str(entry["value"]).encode()
                wr.run_script(wr.STORE, namespace, member, entry_ttl, text, client=pipe)
            else:
                payload = wr.encode(entry["value"])
                wr.run_script(wr.STORE, namespace, member, entry_ttl, payload, client=pipe)
        results = pipe.execute()
    loaded = sum(1 for result in results if int(result[0]) > 0)
    counts = {"loaded": loaded, "skipped": len(results) - loaded}
    audit_record(
        actor=actor,
        action="memory.working.load",
        account_id=agent.account_id,
        target=snapshot,
        changes={"session_id": session_id, **counts},
    )
    return counts
