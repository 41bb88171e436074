"""How working memory is laid out in Redis; the services and selectors of the tier use it.

Every key of a session starts with ``<prefix>:wm:<account>:<agent>:<session>`` (``<prefix>`` is
``settings.MEMORY_REDIS_PREFIX``, ``engram``):

- ``...:k:<name>``: one entry, with its own TTL. A plain value or a state is a JSON string; the
  conversation context is a list of JSON messages (RPUSH, then LTRIM to the cap); the scratch
  pad is raw UTF-8 text (APPEND).
- ``...:index``: a sorted set of the session's entry names scored by their expiry (ms since the
  epoch, Redis's own clock). Listing and clearing a session read it instead of scanning the
  keyspace; writes prune the members that expired and count the rest against
  ``WORKING_MEMORY_MAX_KEYS``; the index itself expires with the longest-lived entry.

Names: a key the agent chose is stored as is (it starts with a letter or a digit); the
specialised entries have names starting with ``_`` (``_task_state``, ``_step:<step>``,
``_conversation``, ``_tool:<tool>``, ``_scratch_pad``), so they can never collide with a key.

Values shared with another agent live in that agent's inbox,
``<prefix>:wm:<account>:inbox:<recipient>``, laid out the same way with entry names
``<sender id>:<key>``.

Writes that touch several keys run as one Lua script (atomic: the TTL of the value and of the
index move together, and the key cap is checked against the same state) or in a MULTI pipeline.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.utils import timezone
from redis.commands.core import Script

from core.errors import Conflict, PayloadTooLarge, ValidationFailed
from core.parsers import check_json_value
from memory.names import json_text
from memory.redis_store import memory_redis, redis_prefix

VALUE = "value"
TASK_STATE = "task_state"
STEP = "step"
CONVERSATION = "conversation"
TOOL_STATE = "tool_state"
SCRATCH_PAD = "scratch_pad"
KINDS = (VALUE, TASK_STATE, STEP, CONVERSATION, TOOL_STATE, SCRATCH_PAD)


def entry_name(kind: str, name: str = "") -> str:
    """The index member (and key suffix) of an entry."""
    return {
        VALUE: name,
        TASK_STATE: "_task_state",
        STEP: f"_step:{name}",
        CONVERSATION: "_conversation",
        TOOL_STATE: f"_tool:{name}",
        SCRATCH_PAD: "_scratch_pad",
    }[kind]


def entry_kind(member: str) -> tuple[str, str]:
    """``(kind, name)`` of an index member: the inverse of ``entry_name``."""
    if not member.startswith("_"):
        return VALUE, member
    if member.startswith("_step:"):
        return STEP, member.removeprefix("_step:")
    if member.startswith("_tool:"):
        return TOOL_STATE, member.removeprefix("_tool:")
    return {"_task_state": TASK_STATE, "_conversation": CONVERSATION}.get(member, SCRATCH_PAD), ""


@dataclass(frozen=True)
class Namespace:
    base: str

    @property
    def index(self) -> str:
        return f"{self.base}:index"

    def key(self, member: str) -> str:
        return f"{self.base}:k:{member}"


def session_namespace(account_id: int, agent_id: int, session_id: str) -> Namespace:
    return Namespace(f"{redis_prefix()}:wm:{account_id}:{agent_id}:{session_id}")


def inbox_namespace(account_id: int, recipient_id: int) -> Namespace:
    return Namespace(f"{redis_prefix()}:wm:{account_id}:inbox:{recipient_id}")


def inbox_member(sender_id: int, key: str) -> str:
    return f"{sender_id}:{key}"


def index_members(client: Any, index: str) -> list[str]:
    """The names in an index (live or not yet pruned), sorted."""
    return sorted(m.decode() for m in cast("list[bytes]", client.zrange(index, 0, -1)))


# --- values ----------------------------------------------------------------------------------


def encode(value: Any) -> bytes:
    """Compact JSON in UTF-8, the form stored and measured against the size limit. A NUL or a
    lone surrogate anywhere in it is 400 ``invalid_characters``, as the API's parser answers:
    nothing reaches Redis that persisting to PostgreSQL could not store."""
    check_json_value(value, root="value")
    return json_text(value, ensure_ascii=False, separators=(",", ":")).encode()


def encode_text(text: str) -> bytes:
    """The scratch pad's text in UTF-8, with the same characters refused as ``encode``."""
    check_json_value(text, root="content")
    return text.encode()


def decode(raw: bytes | None) -> Any:
    return None if raw is None else json.loads(raw)


def check_size(size: int, what: str = "value") -> None:
    limit = settings.WORKING_MEMORY_MAX_VALUE_BYTES
    if size > limit:
        raise PayloadTooLarge(
            f"The {what} is {size} bytes; working memory takes at most {limit}.",
            code="value_too_large",
            details={"limit": limit, "size": size},
        )


def ttl_ms(ttl: int | None) -> int:
    """The TTL to store with, in ms: ``ttl`` seconds (1 to WORKING_MEMORY_MAX_TTL) or the
    default."""
    if ttl is None:
        return int(settings.WORKING_MEMORY_DEFAULT_TTL) * 1000
    limit = int(settings.WORKING_MEMORY_MAX_TTL)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 1 <= ttl <= limit:
        raise ValidationFailed(
            f"ttl must be 1 to {limit} seconds.",
            code="invalid_ttl",
            details={"min": 1, "max": limit},
        )
    return ttl * 1000


@dataclass(frozen=True)
class Expiry:
    """When an entry expires: ``ttl_ms`` from ``at`` (None: no expiry, which writes never set)."""

    ttl_ms: int | None
    at: datetime

    @classmethod
    def from_pttl(cls, pttl: int) -> Expiry:
        return cls(pttl if pttl >= 0 else None, timezone.now())

    @classmethod
    def from_epoch_ms(cls, expires_ms: int) -> Expiry:
        now = timezone.now()
        return cls(max(0, expires_ms - int(now.timestamp() * 1000)), now)

    @property
    def ttl(self) -> int | None:
        """Whole seconds left, rounded up."""
        return None if self.ttl_ms is None else math.ceil(self.ttl_ms / 1000)

    @property
    def expires_at(self) -> datetime | None:
        return None if self.ttl_ms is None else self.at + timedelta(milliseconds=self.ttl_ms)


# --- scripts ---------------------------------------------------------------------------------
# KEYS[1]: the entry's key (its namespace's key prefix, then the name); KEYS[2]: the index.
# ARGV[1]: the entry's name; ARGV[2]: its TTL in ms; ARGV[3]: the cap on entries. Each returns
# {expiry in ms, extra}, or {-1, 0} when the index is full, {-2, size} when the value would grow
# past its limit.
_PRELUDE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if not redis.call('ZSCORE', KEYS[2], ARGV[1])
    and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then
  -- Full: first forget entries deleted behind the index's back (evicted, deleted by hand).
  local base = string.sub(KEYS[1], 1, string.len(KEYS[1]) - string.len(ARGV[1]))
  for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    if redis.call('EXISTS', base .. member) == 0 then
      redis.call('ZREM', KEYS[2], member)
    end
  end
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then
    return {-1, 0}
  end
end
"""
_POSTLUDE = """
local expires = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], expires, ARGV[1])
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[2], last[2])
return {expires, extra}
"""


# ARGV[4]: the JSON (or text) to store.
def _script(source: str) -> Script:
    # Bytes: the SHA needs no client's encoder. Every call names its client (or pipeline).
    return Script(None, source.encode())  # type: ignore[arg-type]


STORE = _script(
    _PRELUDE
    + """
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[2])
local extra = string.len(ARGV[4])
"""
    + _POSTLUDE,
)
# ARGV[4]: "1" to replace the list, "0" to append; ARGV[5]: how many items to keep;
# ARGV[6..]: the items. An empty result removes the entry.
PUSH = _script(
    _PRELUDE
    + """
if ARGV[4] == '1' then redis.call('DEL', KEYS[1]) end
for i = 6, #ARGV do redis.call('RPUSH', KEYS[1], ARGV[i]) end
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[5]), -1)
local extra = redis.call('LLEN', KEYS[1])
if extra == 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return {0, 0}
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
"""
    + _POSTLUDE,
)
# ARGV[4]: the text to append; ARGV[5]: the most bytes the result may have.
APPEND = _script(
    _PRELUDE
    + """
local size = redis.call('STRLEN', KEYS[1]) + string.len(ARGV[4])
if size > tonumber(ARGV[5]) then return {-2, size} end
redis.call('APPEND', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local extra = size
"""
    + _POSTLUDE,
)


# The live members of an index with their PTTL, in one round trip. KEYS[1]: the index; ARGV[1]:
# its namespace's key prefix (``<base>:k:``). Returns {member, pttl, member, pttl, ...}; members
# whose key is gone (expired, evicted, deleted behind the index's back) are removed from the index.
LIST = _script(
    """
local found = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local pttl = redis.call('PTTL', ARGV[1] .. member)
  if pttl == -2 then
    redis.call('ZREM', KEYS[1], member)
  else
    table.insert(found, member)
    table.insert(found, pttl)
  end
end
return found
"""
)


def live_members(namespace: Namespace, client: Any = None) -> list[tuple[str, int]]:
    """``(member, pttl)`` of the namespace's live entries, sorted by name (script LIST)."""
    target = client if client is not None else memory_redis()
    flat = LIST(keys=[namespace.index], args=[namespace.key("")], client=target)
    pairs = [(flat[i].decode(), int(flat[i + 1])) for i in range(0, len(flat), 2)]
    return sorted(pairs)


def run_script(
    script: Script, namespace: Namespace, member: str, ttl: int, *args: Any, client: Any = None
) -> Any:
    """Run ``script`` on one entry (on ``client``, e.g. a pipeline, or the memory client)."""
    target = client if client is not None else memory_redis()
    keys = [namespace.key(member), namespace.index]
    argv = [member, ttl, settings.WORKING_MEMORY_MAX_KEYS, *args]
    return script(keys=keys, args=argv, client=target)


def check_written(result: Any, *, limit_what: str = "value") -> tuple[int, int]:
    """``(expiry ms, extra)`` of a script's answer, or the error it stands for."""
    expires, extra = int(result[0]), int(result[1])
    if expires == -1:
        raise Conflict(
            "This working memory holds as many entries as it may "
            f"({settings.WORKING_MEMORY_MAX_KEYS}); remove some or let them expire.",
            code="working_memory_full",
            details={"limit": settings.WORKING_MEMORY_MAX_KEYS},
        )
    if expires == -2:
        check_size(extra, limit_what)
    return expires, extra


@dataclass(frozen=True)
class WorkingEntry:
    """One entry: ``name`` is the key (or the step or tool name of a specialised entry)."""

    session_id: str
    kind: str
    name: str
    value: Any
    expiry: Expiry
    size: int | None = None
