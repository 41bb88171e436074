"""``metadata`` is bounded on every write that takes it (core.metadata, docs/api.md "Input
rules"): at most METADATA_MAX_BYTES bytes as compact JSON (exact at the boundary),
METADATA_MAX_DEPTH levels and METADATA_MAX_PROPERTIES keys, else 400 ``metadata_too_large`` with
the limit, in REST and MCP alike; a row stored before the bound keeps working."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from core.errors import ValidationFailed
from core.metadata import (
    METADATA_MAX_BYTES,
    METADATA_MAX_DEPTH,
    METADATA_MAX_PROPERTIES,
    metadata_check,
    metadata_depth,
    metadata_size,
)
from memory.models import MemoryEntry
from tests.conftest import AuthedAgent
from tests.support.mcp import tool_call

pytestmark = pytest.mark.django_db

LIMIT = {
    "bytes": METADATA_MAX_BYTES,
    "depth": METADATA_MAX_DEPTH,
    "properties": METADATA_MAX_PROPERTIES,
}
# ``{"k":"` + the text + `"}`: 8 bytes around the text.
AROUND = len(json.dumps({"k": ""}, separators=(",", ":")))


def sized(size: int, char: str = "x") -> dict[str, Any]:
    """A metadata object of exactly ``size`` bytes as compact UTF-8 JSON."""
    width = len(char.encode())
    text = char * ((size - AROUND) // width) + "x" * ((size - AROUND) % width)
    value = {"k": text}
    assert metadata_size(value) == size
    return value


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    assert metadata_depth(value, stop_after=100) == depth
    return value


def test_the_bound_is_exact_in_keys() -> None:
    keys = {f"k{i}": 1 for i in range(METADATA_MAX_PROPERTIES)}
    assert metadata_check(keys) is keys
    with pytest.raises(ValidationFailed) as raised:
        metadata_check({**keys, "one_more": 1}, field="context", stored_as="context")
    assert raised.value.code == "metadata_too_large"
    assert raised.value.details == {"limit": LIMIT, "field": "context"}
    # Nested objects are bound by the bytes.
    assert metadata_check({"nested": {**keys, "one_more": 1}}) is not None


def test_the_bound_is_exact_in_bytes_and_depth() -> None:
    for char in ("x", "é", "😀"):
        assert metadata_check(sized(METADATA_MAX_BYTES, char)) is not None
        with pytest.raises(ValidationFailed) as raised:
            metadata_check(sized(METADATA_MAX_BYTES + 1, char))
        assert raised.value.code == "metadata_too_large"
        assert raised.value.details == {"limit": LIMIT, "field": "metadata"}
    metadata_check(nested(METADATA_MAX_DEPTH))
    with pytest.raises(ValidationFailed) as raised:
        metadata_check(nested(METADATA_MAX_DEPTH + 1))
    assert raised.value.code == "metadata_too_large"
    # A 20 MB value is refused without encoding it whole.
    with pytest.raises(ValidationFailed):
        metadata_check({"k": "x" * 20_000_000})


def _setup(authed: AuthedAgent) -> dict[str, Any]:
    """What the write paths need: a conversation, an entry, a context, a knowledge base, two
    graph nodes, a knowledge-item base."""
    client = authed.client

    def made(path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = client.post(path, body, format="json")
        assert answer.status_code == 201, answer.content
        return dict(answer.json())

    return {
        "conversation": made("/api/v1/memory/conversations", {"title": "t"})["id"],
        "entry": made("/api/v1/memory/entries", {"content": "The ferry leaves at 9."})["id"],
        "context": made("/api/v1/memory/contexts", {"name": "notes"})["id"],
        "kb": made("/api/v1/rag/knowledge-bases", {"name": "kb"})["id"],
        "node_a": made("/api/v1/graph/nodes", {"name": "Lisbon", "entity_type": "place"})["id"],
        "node_b": made("/api/v1/graph/nodes", {"name": "Porto", "entity_type": "place"})["id"],
        "base": made("/api/v1/knowledge/bases", {"name": "facts"})["name"],
    }


# (method, path, body with the metadata, expected success status); ids from ``_setup``.
WRITES: list[tuple[str, str, Callable[[dict[str, Any], Any], dict[str, Any]], int]] = [
    ("post", "/api/v1/memory/conversations", lambda s, m: {"title": "x", "metadata": m}, 201),
    (
        "patch",
        "/api/v1/memory/conversations/{conversation}",
        lambda s, m: {"metadata": m},
        200,
    ),
    (
        "post",
        "/api/v1/memory/conversations/{conversation}/messages",
        lambda s, m: {"messages": [{"role": "user", "content": "hi", "metadata": m}]},
        201,
    ),
    (
        "post",
        "/api/v1/memory/conversations/{conversation}/turns",
        lambda s, m: {"user_input": "hi", "agent_response": "hello", "context": m},
        201,
    ),
    ("post", "/api/v1/memory/entries", lambda s, m: {"content": "c", "metadata": m}, 201),
    (
        "post",
        "/api/v1/memory/entries/batch",
        lambda s, m: {"entries": [{"content": "c", "metadata": m}]},
        201,
    ),
    ("patch", "/api/v1/memory/entries/{entry}", lambda s, m: {"metadata": m}, 200),
    ("post", "/api/v1/memory/contexts", lambda s, m: {"name": "ctx2", "metadata": m}, 201),
    ("patch", "/api/v1/memory/contexts/{context}", lambda s, m: {"metadata": m}, 200),
    (
        "put",
        "/api/v1/knowledge/{base}/items/item1",
        lambda s, m: {"content": "c", "metadata": m},
        201,
    ),
    (
        "post",
        "/api/v1/rag/knowledge-bases/{kb}/documents",
        lambda s, m: {"title": "d", "text": "Some text.", "metadata": m},
        201,
    ),
    (
        "post",
        "/api/v1/graph/nodes",
        lambda s, m: {"name": "Faro", "entity_type": "place", "metadata": m},
        201,
    ),
    ("patch", "/api/v1/graph/nodes/{node_a}", lambda s, m: {"metadata": m}, 200),
    (
        "post",
        "/api/v1/graph/edges",
        lambda s, m: {
            "source_id": s["node_a"],
            "target_id": s["node_b"],
            "relation_type": "near",
            "metadata": m,
        },
        201,
    ),
]


@pytest.mark.parametrize(("method", "path", "body", "status"), WRITES, ids=[w[1] for w in WRITES])
def test_every_rest_write_refuses_metadata_past_the_bound_and_takes_it_at_the_bound(
    agent_client: AuthedAgent,
    method: str,
    path: str,
    body: Callable[[dict[str, Any], Any], dict[str, Any]],
    status: int,
) -> None:
    made = _setup(agent_client)
    url = path.format(**made)
    turns = path.endswith("/turns")
    # A turn's ``context`` is stored as ``{"context": ...}``: that object is what is bound.
    wrap = len(json.dumps({"context": None}, separators=(",", ":"))) - len("null") if turns else 0
    over = getattr(agent_client.client, method)(
        url, body(made, sized(METADATA_MAX_BYTES + 1 - wrap)), format="json"
    )
    assert over.status_code == 400, over.content
    error = over.json()["error"]
    assert error["code"] == "metadata_too_large"
    assert error["details"]["limit"] == LIMIT
    deep = getattr(agent_client.client, method)(
        url, body(made, nested(METADATA_MAX_DEPTH + (0 if turns else 1))), format="json"
    )
    assert deep.status_code == 400 and deep.json()["error"]["code"] == "metadata_too_large"
    at = getattr(agent_client.client, method)(
        url, body(made, sized(METADATA_MAX_BYTES - wrap)), format="json"
    )
    assert at.status_code == status, at.content


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (
            "conversation",
            lambda s, m: {
                "action": "add_messages",
                "conversation_id": s["conversation"],
                "messages": [{"role": "user", "content": "hi", "metadata": m}],
            },
        ),
        (
            "memory_write",
            lambda s, m: {
                "kind": "knowledge_item",
                "base": s["base"],
                "key": "k1",
                "content": "c",
                "metadata": m,
            },
        ),
        (
            "add_document",
            lambda s, m: {"knowledge_base_id": s["kb"], "title": "d", "text": "T.", "metadata": m},
        ),
    ],
)
def test_every_mcp_write_refuses_it_alike(
    agent_client: AuthedAgent,
    tool: str,
    arguments: Callable[[dict[str, Any], Any], dict[str, Any]],
) -> None:
    made = _setup(agent_client)
    over = tool_call(agent_client.secret, tool, arguments(made, sized(METADATA_MAX_BYTES + 1)))
    assert over["isError"], over
    error = over["structuredContent"]["error"]
    assert error["code"] == "metadata_too_large" and error["details"]["limit"] == LIMIT
    at = tool_call(agent_client.secret, tool, arguments(made, sized(METADATA_MAX_BYTES)))
    assert not at.get("isError"), at


def test_a_row_stored_before_the_bound_keeps_working(agent_client: AuthedAgent) -> None:
    """Metadata over the bound already stored (written before it existed) is read, and the
    row is still updated through the API when its metadata is left alone."""
    made = _setup(agent_client)
    MemoryEntry.objects.filter(pk=made["entry"]).update(metadata=sized(METADATA_MAX_BYTES * 4))
    read = agent_client.client.get(f"/api/v1/memory/entries/{made['entry']}")
    assert read.status_code == 200 and len(read.json()["metadata"]["k"]) > METADATA_MAX_BYTES
    changed = agent_client.client.patch(
        f"/api/v1/memory/entries/{made['entry']}", {"importance": 0.9}, format="json"
    )
    assert changed.status_code == 200, changed.content


def test_the_admin_refuses_it_too_and_saves_a_stored_row_left_alone(
    agent_client: AuthedAgent,
) -> None:
    from django.urls import reverse

    from tests.memory.test_admin import person

    made = _setup(agent_client)
    entry = MemoryEntry.objects.get(pk=made["entry"])
    _, operator = person(agent_client, "operator")
    url = reverse("admin:memory_memoryentry_change", args=[entry.pk])

    def form(metadata: str, content: str) -> dict[str, Any]:
        return {
            "content": content,
            "data": "null",
            "entry_type": entry.entry_type,
            "source": entry.source,
            "memory_type": entry.memory_type,
            "tags": "",
            "metadata": metadata,
            "occurred_at_0": "",
            "occurred_at_1": "",
            "importance": entry.importance,
            "confidence": entry.confidence,
        }

    over = json.dumps(sized(METADATA_MAX_BYTES + 1), separators=(",", ":"))
    refused = operator.post(url, form(over, "The ferry leaves at 10."))
    assert refused.status_code == 200 and "16384 bytes" in refused.content.decode()
    # A row stored before the bound: saved while its metadata is left as it is.
    stored = sized(METADATA_MAX_BYTES * 2)
    MemoryEntry.objects.filter(pk=entry.pk).update(metadata=stored)
    shown = json.dumps(stored)
    # As a browser sends the change form: the value shown, and the initial one hidden beside it.
    kept = operator.post(url, form(shown, "The ferry leaves at 11.") | {"initial-metadata": shown})
    assert kept.status_code == 302, kept.content.decode()[:2000]
    current = MemoryEntry.objects.get(lineage=entry.lineage, is_current=True)
    assert current.content == "The ferry leaves at 11." and current.metadata == stored
