"""Every paged list answers a malformed ``cursor`` with 400 ``invalid_cursor`` (docs/api.md,
"Pagination"), walked from the OpenAPI schema: each operation that declares a ``cursor`` query
parameter is called as in the tenancy walk (tests/test_tenancy.py, the caller's own ids) with
cursors no list ever returned, and must refuse each; a cursor the list returned still works.
The list tools of MCP page through the same class, so they answer the same code."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from rest_framework.test import APIClient

from core import services
from core.actors import actor_for_account
from tests.support.mcp import error_code, tool_call
from tests.support.world import SharedWorld, Side, build_side, shared_world
from tests.test_tenancy import CASES, OPERATIONS, OWN, Target, call, intruder_state

pytestmark = pytest.mark.django_db


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# Cursors no list returned: not base64, base64 of nothing DRF reads, a position that is no
# value of the ordering, an offset that is no number, a reversed page with a bogus position,
# and a real-looking cursor whose signature was not made here.
MALFORMED = [
    "garbage!",
    _b64("hello"),
    _b64("o=0&p=not-a-date"),
    _b64("o=x"),
    _b64("r=1&p=2024-13-45"),
    _b64("o=0&p=1"),
]


def paged_operations() -> list[str]:
    """The operations whose schema declares a ``cursor`` query parameter."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = []
    for item in schema["paths"].values():
        for operation in item.values():
            names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
            if "cursor" in names:
                found.append(operation["operationId"])
    return sorted(found)


PAGED = paged_operations()


def test_the_walk_covers_the_lists() -> None:
    expected = {
        "memory_conversations_list",
        "memory_conversation_messages_list",
        "knowledge_items_list",
        "memory_maintenance_reports_list",
        "memory_contexts_list",
        "memory_pool_events",
        "graph_nodes_list",
    }
    assert expected <= set(PAGED), sorted(expected - set(PAGED))


@pytest.fixture(scope="module")
def _own_built(django_db_setup: None, django_db_blocker: Any) -> Iterator[SharedWorld[Side]]:
    """The side, built once per module and worker (tests/support/world.py, shared_world)."""
    with shared_world(
        django_db_blocker, lambda capture: build_side(OWN, capture), state=intruder_state
    ) as world:
        yield world


@pytest.fixture
def own(_own_built: SharedWorld[Side], db: None) -> Side:
    """The side as built: each test's writes are rolled back, Redis is put back."""
    return _own_built.fresh()


def _client(side: Side) -> tuple[APIClient, str]:
    _, secret = services.api_key_create(
        actor=actor_for_account(side.account.pk), agent=side.agent, scopes=["admin"]
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client, secret


def _request(operation_id: str, side: Side, cursor: str | None) -> Any:
    case = CASES[operation_id]
    target = Target.of(side)
    suffix, body, query = case.build(target if case.names_ids or case.intruder_names else None)
    query = dict(query or {})
    if operation_id == "memory_conversation_messages_list":
        query.pop("last", None)  # the paged history, not the recent messages
    if cursor is not None:
        query["cursor"] = cursor
    return suffix, body, query


def test_every_paged_list_answers_a_malformed_cursor_with_invalid_cursor(
    own: Side, django_capture_on_commit_callbacks: Any
) -> None:
    client, _ = _client(own)
    wrong: list[Any] = []
    for operation_id in PAGED:
        method, path = OPERATIONS[operation_id]
        request = _request(operation_id, own, None)
        status, body, _ = call(client, method, path, request, django_capture_on_commit_callbacks)
        assert 200 <= status < 300, (operation_id, status, body)
        for cursor in MALFORMED:
            request = _request(operation_id, own, cursor)
            status, body, _ = call(
                client, method, path, request, django_capture_on_commit_callbacks
            )
            if status != 400 or body["error"]["code"] != "invalid_cursor":
                wrong.append((operation_id, cursor, status, body))
    assert wrong == []


def test_a_cursor_the_list_returned_reads_the_next_page(own: Side) -> None:
    client, _ = _client(own)
    for n in range(3):
        made = client.post("/api/v1/memory/contexts", {"name": f"paged {n}"}, format="json")
        assert made.status_code == 201, made.json()
    first = client.get("/api/v1/memory/contexts?page_size=2").json()
    assert first["next"] is not None
    cursor = parse_qs(urlsplit(first["next"]).query)["cursor"][0]
    second = client.get("/api/v1/memory/contexts", {"page_size": "2", "cursor": cursor})
    assert second.status_code == 200
    seen = [c["id"] for c in first["results"]] + [c["id"] for c in second.json()["results"]]
    assert len(seen) == len(set(seen)) >= 3
    # The same cursor on a list ordered differently is not one that list returned.
    other = client.get(f"/api/v1/memory/pools/{own.pool_id}/events", {"cursor": cursor})
    assert other.status_code == 400 and other.json()["error"]["code"] == "invalid_cursor"
    # Tampered: its position changed, its signature not.
    value, signature = cursor.rsplit(":", 1)
    assert "p=" in base64.b64decode(value).decode()
    forged = f"{_b64('o=1&p=2000-01-01+00%3A00%3A00%2B00%3A00')}:{signature}"
    tampered = client.get("/api/v1/memory/contexts", {"page_size": "2", "cursor": forged})
    assert tampered.status_code == 400 and tampered.json()["error"]["code"] == "invalid_cursor"


def test_list_tools_refuse_malformed_cursors_too(own: Side) -> None:
    _, secret = _client(own)
    for cursor in MALFORMED:
        result = tool_call(secret, "list_memory_pools", {"cursor": cursor})
        assert error_code(result) == "invalid_cursor", (cursor, json.dumps(result)[:300])
        result = tool_call(secret, "read_pool_events", {"pool_id": own.pool_id, "cursor": cursor})
        assert error_code(result) == "invalid_cursor", (cursor, json.dumps(result)[:300])
