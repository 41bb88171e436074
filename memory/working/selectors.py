"""Working memory reads, each in the calling agent's own namespace (memory/working/store.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.actors import Actor
from core.errors import NotFound
from memory import names
from memory.agents import acting_agent, agent_in_account, session_of
from memory.redis_store import memory_redis, working_memory_available
from memory.working import store as wr
from memory.working.store import WorkingEntry


@dataclass(frozen=True)
class IndexedEntry:
    """A live entry as the index lists it: its name, kind and expiry (no value)."""

    name: str
    kind: str
    expiry: wr.Expiry


def _not_found() -> NotFound:
    return NotFound("No such key in this working memory.", code="working_memory_key_not_found")


def _read(namespace: wr.Namespace, member: str, *, as_list: bool = False) -> tuple[Any, int]:
    """The raw value (None when absent) and PTTL of one entry, read together."""
    with working_memory_available():
        pipe = memory_redis().pipeline(transaction=True)
        if as_list:
            pipe.lrange(namespace.key(member), 0, -1)
        else:
            pipe.get(namespace.key(member))
        pipe.pttl(namespace.key(member))
        raw, pttl = pipe.execute()
    return raw, int(pttl)


def working_retrieve(*, actor: Actor, session_id: str, key: str) -> WorkingEntry:
    namespace = session_of(actor, session_id)
    names.check_key(key)
    raw, pttl = _read(namespace, wr.entry_name(wr.VALUE, key))
    if raw is None:
        raise _not_found()
    return WorkingEntry(session_id, wr.VALUE, key, wr.decode(raw), wr.Expiry.from_pttl(pttl))


def working_exists(*, actor: Actor, session_id: str, key: str) -> bool:
    namespace = session_of(actor, session_id)
    names.check_key(key)
    with working_memory_available():
        return bool(memory_redis().exists(namespace.key(wr.entry_name(wr.VALUE, key))))


def working_state_get(*, actor: Actor, session_id: str, kind: str, name: str = "") -> WorkingEntry:
    """The task state, a step's result or a tool's state (404 when not stored)."""
    namespace = session_of(actor, session_id)
    if kind != wr.TASK_STATE:
        names.check_key(name)
    raw, pttl = _read(namespace, wr.entry_name(kind, name))
    if raw is None:
        raise _not_found()
    return WorkingEntry(session_id, kind, name, wr.decode(raw), wr.Expiry.from_pttl(pttl))


def working_conversation_get(*, actor: Actor, session_id: str) -> WorkingEntry:
    """The conversation context, oldest message first (none stored: an empty list)."""
    namespace = session_of(actor, session_id)
    raw, pttl = _read(namespace, wr.entry_name(wr.CONVERSATION), as_list=True)
    messages = [wr.decode(item) for item in raw]
    return WorkingEntry(
        session_id, wr.CONVERSATION, "", messages, wr.Expiry.from_pttl(pttl), len(messages)
    )


def working_scratch_pad_get(*, actor: Actor, session_id: str) -> WorkingEntry:
    """The scratch pad's text (none stored: empty)."""
    namespace = session_of(actor, session_id)
    raw, pttl = _read(namespace, wr.entry_name(wr.SCRATCH_PAD))
    text = raw.decode() if raw is not None else ""
    return WorkingEntry(
        session_id, wr.SCRATCH_PAD, "", text, wr.Expiry.from_pttl(pttl), len(raw or b"")
    )


def _listed(namespace: wr.Namespace) -> list[tuple[str, wr.Expiry]]:
    """The live members of an index with their expiry, sorted by name.

    The index says which entries exist; each entry's own PTTL says whether it still does and
    for how long (the truth, even if an entry was deleted or expired behind the index's back).
    Members found gone are pruned from the index on the way. One round trip (script LIST).
    """
    with working_memory_available():
        members = wr.live_members(namespace)
    return [(member, wr.Expiry.from_pttl(pttl)) for member, pttl in members]


def working_keys(*, actor: Actor, session_id: str) -> list[IndexedEntry]:
    """Every live entry of the session (at most WORKING_MEMORY_MAX_KEYS), sorted by name."""
    namespace = session_of(actor, session_id)
    return [
        IndexedEntry(member, wr.entry_kind(member)[0], expiry)
        for member, expiry in _listed(namespace)
    ]


@dataclass(frozen=True)
class InboxEntry:
    agent_id: int
    key: str
    value: Any
    expiry: wr.Expiry


def working_inbox_list(*, actor: Actor) -> list[InboxEntry]:
    """What other agents of the account shared with the caller and is still live (no values)."""
    agent = acting_agent(actor)
    namespace = wr.inbox_namespace(agent.account_id, agent.pk)
    entries = []
    for member, expiry in _listed(namespace):
        sender, _, key = member.partition(":")
        entries.append(InboxEntry(int(sender), key, None, expiry))
    return sorted(entries, key=lambda e: (e.agent_id, e.key))


def working_inbox_retrieve(*, actor: Actor, agent_id: int, key: str) -> InboxEntry:
    """What agent ``agent_id`` shared with the caller under ``key``."""
    agent = acting_agent(actor)
    names.check_key(key)
    sender = agent_in_account(actor, agent_id)
    namespace = wr.inbox_namespace(agent.account_id, agent.pk)
    raw, pttl = _read(namespace, wr.inbox_member(sender.pk, key))
    if raw is None:
        raise NotFound("Nothing shared under this key.", code="working_memory_key_not_found")
    return InboxEntry(sender.pk, key, wr.decode(raw), wr.Expiry.from_pttl(pttl))


def read_session(namespace: wr.Namespace) -> list[dict[str, Any]]:
    """Every live entry of a session with its value and the TTL it has left, read in one
    MULTI (a consistent picture), sorted by name."""
    client = memory_redis()
    members = wr.index_members(client, namespace.index)
    if not members:
        return []
    pipe = client.pipeline(transaction=True)
    for member in members:
        kind, _ = wr.entry_kind(member)
        if kind == wr.CONVERSATION:
            pipe.lrange(namespace.key(member), 0, -1)
        else:
            pipe.get(namespace.key(member))
        pipe.pttl(namespace.key(member))
    results = pipe.execute()
    entries = []
    for i, member in enumerate(members):
        raw, pttl = results[2 * i], results[2 * i + 1]
        if pttl == -2 or raw is None or raw == []:
            continue  # expired since the index was read
        kind, _ = wr.entry_kind(member)
        if kind == wr.CONVERSATION:
            value: Any = [wr.decode(item) for item in raw]
        elif kind == wr.SCRATCH_PAD:
            value = raw.decode()
        else:
            value = wr.decode(raw)
        entries.append({"name": member, "kind": kind, "value": value, "ttl_ms": pttl})
    return entries
