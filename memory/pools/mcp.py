"""Shared memory pools as tools: ``create_memory_pool``, ``list_memory_pools``,
``read_shared_memory``, ``write_shared_memory``, ``read_pool_events`` and
``delete_memory_pool``, over the calls the pools API makes (``memory/pools/apis.py``).

A pool the caller may not read answers like a missing one (``pool_not_found``). A value is
addressed by a dot path (``agent_bulletin.market_regime``); writes under ``agent_bulletin``
are the pool's events.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core import serializers as strict
from core.mcp import Call, CursorInput, Tool, page, paged
from memory import names
from memory.apis.common import path_field
from memory.models import MemoryPoolEvent
from memory.pools import data_services as pool_data_services
from memory.pools import selectors as pool_selectors
from memory.pools import services as pool_services
from memory.pools.apis import (
    DataValueOutput,
    DataWriteInput,
    DataWriteOutput,
    EventFeedPagination,
    EventOutput,
    PoolListCreateApi,
    PoolOutput,
)


@extend_schema_field(
    {"type": "string", "pattern": f"^{names.POOL_ID}$", "maxLength": names.MAX_POOL_ID_CHARS}
)
class PoolIdField(serializers.CharField):
    """A pool id; checked by the selectors (400 ``invalid_pool_id``), stated in the schema."""


class PoolInput(strict.InputSerializer):
    pool_id = PoolIdField(help_text="The pool's id.")


class PathInput(PoolInput):
    """A dot path, as ``key`` (the seed's and most clients' name) or ``path`` (the API's)."""

    key = path_field(
        required=False,
        allow_blank=True,
        help_text="Dot path of the value, e.g. agent_bulletin.market_regime; empty or omitted: "
        "the whole data (a JSON object).",
    )
    path = path_field(
        required=False, allow_blank=True, help_text="The same as key (the REST API's name)."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "key" in attrs and "path" in attrs and attrs["key"] != attrs["path"]:
            raise serializers.ValidationError("Give key or path, not both.")
        attrs["path"] = attrs.pop("key", attrs.get("path", ""))
        return attrs


class WriteInput(PathInput, DataWriteInput):
    merge = serializers.BooleanField(
        default=False,
        help_text="Merge value (an object) into the object at the path (RFC 7396: nested "
        "objects merge, null removes a key) instead of replacing it.",
    )


class ListPoolsInput(CursorInput):
    pool_type = PoolListCreateApi.FilterSerializer._declared_fields["pool_type"]
    scope = PoolListCreateApi.FilterSerializer._declared_fields["scope"]
    workflow_run_id = PoolListCreateApi.FilterSerializer._declared_fields["workflow_run_id"]


class EventsInput(PoolInput, CursorInput):
    pass


class PoolDeletedOutput(serializers.Serializer):
    pool_id = serializers.CharField()
    deleted = serializers.BooleanField()


def _create(call: Call) -> dict[str, Any]:
    pool_services.pool_create(actor=call.actor, **call.data)
    pool = pool_selectors.pool_get(actor=call.actor, pool_id=call.data["pool_id"])
    return dict(PoolOutput(pool).data)


def _list(call: Call) -> dict[str, Any]:
    filters = {k: v for k, v in call.data.items() if k not in ("cursor", "page_size")}
    pools, cursor = page(pool_selectors.pool_list(actor=call.actor, **filters), call.data)
    return {"results": PoolOutput(pools, many=True).data, "next_cursor": cursor}


def _read(call: Call) -> dict[str, Any]:
    pool_id, path = call.data["pool_id"], call.data["path"]
    pool = pool_selectors.pool_get(actor=call.actor, pool_id=pool_id)
    found = pool_selectors.pool_data_read(actor=call.actor, pool=pool, path=path)
    return dict(
        DataValueOutput(
            {"pool_id": pool_id, "path": path, "value": found.value, "version": found.version}
        ).data
    )


def _write(call: Call) -> dict[str, Any]:
    pool_id, path = call.data["pool_id"], call.data["path"]
    pool = pool_selectors.pool_get(actor=call.actor, pool_id=pool_id)
    action = MemoryPoolEvent.Action
    written = pool_data_services.pool_data_write(
        actor=call.actor,
        pool=pool,
        path=path,
        value=call.data["value"],
        mode=action.MERGE if call.data["merge"] else action.WRITE,
        expected_version=call.data.get("expected_version"),
    )
    body = {
        "pool_id": pool_id,
        "path": path,
        "value": written.value,
        "version": written.version,
        "changed": written.changed,
        "size_bytes": written.size_bytes,
    }
    return dict(DataWriteOutput(body).data)


def _events(call: Call) -> dict[str, Any]:
    pool = pool_selectors.pool_get(actor=call.actor, pool_id=call.data["pool_id"])
    events, cursor = page(
        pool_selectors.pool_event_list(actor=call.actor, pool=pool),
        call.data,
        pagination=EventFeedPagination,
    )
    return {"results": EventOutput(events, many=True).data, "next_cursor": cursor}


def _delete(call: Call) -> dict[str, Any]:
    pool = pool_selectors.pool_get(actor=call.actor, pool_id=call.data["pool_id"])
    pool_services.pool_delete(actor=call.actor, pool=pool)
    return {"pool_id": call.data["pool_id"], "deleted": True}


def _listed(out: Any, noun: str) -> str:
    more = " More with next_cursor." if out.get("next_cursor") else ""
    return f"{len(out['results'])} {noun}.{more}"


TOOLS = (
    Tool(
        name="create_memory_pool",
        rest="POST /api/v1/memory/pools",
        title="Create a shared memory pool",
        description=(
            "Create a memory pool: a JSON object that several agents read and write, for "
            "shared state and bulletins. `pool_id` is a unique name of your choosing; "
            "`public_read` lets every agent of the account read it; `retention_policy` can "
            "expire it (`ttl_seconds`) and cap its size (`max_size_bytes`); `change_policy` "
            "`review` holds automatic changes to it for a person's review."
        ),
        scope="write",
        input=PoolListCreateApi.InputSerializer,
        output=PoolOutput,
        run=_create,
        hints={
            "pool_id": "A unique name of your choosing (letters, digits, . _ : -), "
            "e.g. team-alpha.",
            "name": "A human-readable name, e.g. Team alpha's board.",
            "pool_type": "What the pool is for (default general).",
            "scope": "Who it is shared with: account, workflow, ... (default account).",
            "data": 'Its initial data, a JSON object, e.g. {"agent_bulletin": {}}.',
            "public_read": "Let every agent of the account read it (default false).",
            "retention_policy": 'Expiry and size cap, e.g. {"ttl_seconds": 86400, '
            '"max_size_bytes": 100000}.',
            "expires_at": "When it expires (ISO 8601), e.g. 2026-12-31T00:00:00Z.",
            "persist_across_executions": "Keep it after its workflow run ends.",
            "workflow_run_id": "The workflow run it belongs to, e.g. run-7.",
            "workflow_kind": "The kind of that workflow, e.g. research.",
            "change_policy": "review: hold automatic changes to it for a person's review.",
            "description": "What it holds.",
        },
        summary=lambda out: f"Created pool {out['pool_id']}.",
    ),
    Tool(
        name="list_memory_pools",
        rest="GET /api/v1/memory/pools",
        title="List memory pools",
        description=(
            "The memory pools you may read (the account's default pool included), newest "
            "first, optionally by `pool_type`, `scope` or `workflow_run_id`. Paged: pass "
            "`next_cursor` back as `cursor` for more."
        ),
        scope="read",
        input=ListPoolsInput,
        output=paged(PoolOutput),
        run=_list,
        hints={
            "pool_type": "Only pools of this type.",
            "scope": "Only pools of this scope.",
            "workflow_run_id": "Only pools of this workflow run, e.g. run-7.",
        },
        summary=lambda out: _listed(out, "pools"),
    ),
    Tool(
        name="read_shared_memory",
        rest="GET /api/v1/memory/pools/{pool_id}/data/{path}",
        title="Read shared memory",
        description=(
            "Read the value at a dot path (`key`, e.g. agent_bulletin.market_regime) of a "
            "memory pool's data, with the pool's version (for a later compare-and-set write). "
            "Without `key`: the whole data. Nothing there is the error path_not_found."
        ),
        scope="read",
        input=PathInput,
        output=DataValueOutput,
        run=_read,
        summary=lambda out: f"Read {out['path'] or 'the data'} of pool {out['pool_id']}.",
        examples={"key": "agent_bulletin.market_regime"},
    ),
    Tool(
        name="write_shared_memory",
        rest="PUT /api/v1/memory/pools/{pool_id}/data/{path}",
        title="Write shared memory",
        description=(
            "Write `value` (any JSON) at a dot path (`key`) of a memory pool's data; objects "
            "missing on the way are created. With `expected_version` the write happens only "
            "if the pool is still at that version (else the error version_conflict: read "
            "again and retry). `merge` merges an object instead of replacing. Writes under "
            "agent_bulletin are published as the pool's events."
        ),
        scope="write",
        input=WriteInput,
        output=DataWriteOutput,
        run=_write,
        summary=lambda out: f"Pool {out['pool_id']} is at version {out['version']}.",
        idempotent=True,
        examples={"key": "agent_bulletin.market_regime", "value": "calm"},
    ),
    Tool(
        name="read_pool_events",
        rest="GET /api/v1/memory/pools/{pool_id}/events",
        title="Read a pool's events",
        description=(
            "The writes under agent_bulletin in a memory pool, oldest first, after `cursor`. "
            "`next_cursor` is never null: pass it back later to read only newer events (an "
            "empty page means nothing new yet)."
        ),
        scope="read",
        input=EventsInput,
        output=paged(EventOutput),
        run=_events,
        summary=lambda out: _listed(out, "events"),
    ),
    Tool(
        name="delete_memory_pool",
        rest="DELETE /api/v1/memory/pools/{pool_id}",
        title="Delete a memory pool",
        description=(
            "Delete a memory pool you own, with its data, grants and events. The account's "
            "default pool cannot be deleted (default_pool_protected)."
        ),
        scope="write",
        input=PoolInput,
        output=PoolDeletedOutput,
        run=_delete,
        summary=lambda out: f"Deleted pool {out['pool_id']}.",
        destructive=True,
        idempotent=False,
    ),
)
