"""Every input is bounded, and the bounds are one surface (issue 37): the MCP tools' input
schemas and the OpenAPI request bodies and parameters (path and query) state a ``maxLength`` for
each string, a ``minimum`` and a ``maximum`` for each integer, a ``maxItems`` for each list and a
``maxProperties`` for each free-form object; a value over the bound is a 4xx with a
machine-readable code at both doors, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings as django_settings
from drf_spectacular.generators import SchemaGenerator

from content.services import MAX_CONTENT_CHARS as PAGE_MAX_CHARS
from core.api_keys import PREFIX_CHARS
from core.mcp.registry import tools
from core.mcp.schemas import generate
from core.metadata import METADATA_MAX_BYTES, METADATA_MAX_PROPERTIES
from core.search import MAX_ID
from memory import names
from memory.knowledge.models import MAX_BASE_NAME_LENGTH, MAX_KEY_LENGTH
from memory.pools.apis import MAX_OBJECT_PROPERTIES
from skills.services.versions import MAX_VARIANTS
from tests.conftest import AuthedAgent
from tests.support.mcp import error_code, tool_call

POOL_PATH = "/api/v1/memory/pools/{pool_id}/data/{path}"
# Strings whose format bounds them (a date, a file part of a multipart body).
BOUNDED_FORMATS = {"date", "date-time", "time", "duration", "uuid", "email", "binary"}


def _unbounded(schema: Any, where: str, components: dict[str, Any], seen: set[str]) -> list[str]:
    """What in ``schema`` lacks a bound, by where it is."""
    if not isinstance(schema, dict):
        return []
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return []
        return _unbounded(components[name], f"{where}<{name}>", components, seen | {name})
    found: list[str] = []
    for combinator in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(combinator, ()):
            found += _unbounded(branch, where, components, seen)
    kinds = schema.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    bounded_otherwise = "enum" in schema or "const" in schema
    string_bounded = "maxLength" in schema or schema.get("format") in BOUNDED_FORMATS
    if "string" in kinds and not bounded_otherwise and not string_bounded:
        found.append(f"{where}: a string without maxLength")
    integer_bounded = "minimum" in schema and "maximum" in schema
    if "integer" in kinds and not bounded_otherwise and not integer_bounded:
        found.append(f"{where}: an integer without minimum and maximum")
    # A free-form object: any keys, or keys beyond the properties it declares (a serializer's
    # multipart form states its parts, and no ``additionalProperties``).
    extra = schema.get("additionalProperties", "properties" not in schema)
    if "object" in kinds and extra is not False and "maxProperties" not in schema:
        found.append(f"{where}: an object without maxProperties")
    if "array" in kinds:
        if "maxItems" not in schema:
            found.append(f"{where}: a list without maxItems")
        found += _unbounded(schema.get("items", {}), f"{where}[]", components, seen)
    for name, value in schema.get("properties", {}).items():
        found += _unbounded(value, f"{where}.{name}", components, seen)
    if isinstance(schema.get("additionalProperties"), dict):
        found += _unbounded(schema["additionalProperties"], f"{where}{{}}", components, seen)
    return found


def test_every_tool_input_is_bounded() -> None:
    found = []
    for name, (input_schema, _) in generate(tools().values()).items():
        found += _unbounded(input_schema, name, {}, set())
    assert not found, "\n".join(sorted(set(found)))


def _operation_inputs() -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Each input of every operation of the OpenAPI schema: (where, its schema, the schema's
    components), request bodies and parameters (path ones too)."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    components = document["components"]["schemas"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if not isinstance(operation, dict):
                continue
            for media, body in operation.get("requestBody", {}).get("content", {}).items():
                yield f"{method.upper()} {path} ({media})", body.get("schema", {}), components
            for parameter in operation.get("parameters", ()):
                where = f"{method.upper()} {path} ({parameter['in']} {parameter['name']})"
                yield where, parameter.get("schema", {}), components


def test_every_request_body_and_parameter_is_bounded() -> None:
    """Path parameters too: an id beyond a bigint column, a name longer than any stored."""
    found = []
    for where, schema, components in _operation_inputs():
        found += _unbounded(schema, where, components, set())
    assert not found, "\n".join(sorted(set(found)))


def test_the_walk_finds_what_lacks_a_bound() -> None:
    unbounded = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer", "minimum": 0},
            "metadata": {"type": "object", "additionalProperties": {}},
        },
    }
    assert sorted(_unbounded(unbounded, "x", {}, set())) == [
        "x.count: an integer without minimum and maximum",
        "x.metadata: an object without maxProperties",
        "x.name: a string without maxLength",
    ]


def test_the_schemas_state_the_limits_the_services_use() -> None:
    schemas = generate(tools().values())
    write = schemas["memory_write"][0]["properties"]
    assert write["ttl"]["minimum"] == 1
    assert write["ttl"]["maximum"] == max(
        django_settings.WORKING_MEMORY_MAX_TTL, django_settings.SHORT_TERM_MAX_TTL
    )
    value = next(s for s in write["value"]["anyOf"] if "x-max-bytes" in s)
    assert value["x-max-bytes"] == max(
        django_settings.WORKING_MEMORY_MAX_VALUE_BYTES, django_settings.SHORT_TERM_MAX_VALUE_BYTES
    )
    assert schemas["write_shared_memory"][0]["properties"]["key"]["maxLength"] == (
        names.MAX_PATH_CHARS
    )
    assert schemas["read_shared_memory"][0]["properties"]["key"]["maxLength"] == (
        names.MAX_PATH_CHARS
    )
    pool_value = schemas["write_shared_memory"][0]["properties"]["value"]["anyOf"][0]
    assert pool_value["x-max-bytes"] == django_settings.POOL_MAX_BYTES
    item = next(s for s in write["key"]["anyOf"] if "key_too_long" in s.get("description", ""))
    assert item["maxLength"] == MAX_KEY_LENGTH
    assert schemas["write_page"][0]["properties"]["content"]["maxLength"] == PAGE_MAX_CHARS
    assert schemas["add_document"][0]["properties"]["text"]["maxLength"] == (
        django_settings.RAG_MAX_EXTRACTED_CHARS
    )
    metadata = schemas["memory_write"][0]["properties"]["metadata"]
    assert metadata["maxProperties"] == METADATA_MAX_PROPERTIES
    assert metadata["x-max-bytes"] == METADATA_MAX_BYTES
    pool_data = schemas["create_memory_pool"][0]["properties"]["data"]
    assert pool_data["maxProperties"] == MAX_OBJECT_PROPERTIES
    assert pool_data["x-max-bytes"] == django_settings.POOL_MAX_BYTES
    document = SchemaGenerator().get_schema(request=None, public=True)
    components = document["components"]["schemas"]
    assert components["PageInputRequest"]["properties"]["content"]["maxLength"] == PAGE_MAX_CHARS
    traffic = components["SkillTrafficInputRequest"]["properties"]["traffic"]
    assert traffic["maxProperties"] == MAX_VARIANTS
    path = {p["name"]: p["schema"] for p in document["paths"][POOL_PATH]["get"]["parameters"]}
    assert path["pool_id"]["maxLength"] == names.MAX_POOL_ID_CHARS
    assert path["path"]["maxLength"] == names.MAX_PATH_CHARS
    agent = document["paths"]["/api/v1/agents/{agent_id}"]["get"]["parameters"][0]["schema"]
    assert agent == {"type": "integer", "minimum": 1, "maximum": MAX_ID}
    assert components["ValueInputRequest"]["properties"]["ttl"]["maximum"] == (
        django_settings.WORKING_MEMORY_MAX_TTL
    )


# --- over the bound: the same 4xx and code at both doors ------------------------------------


def _code(response: Any) -> str:
    return str(response.json()["error"]["code"])


@pytest.mark.django_db
def test_memory_write_ttl_and_value_over_the_bound(agent_client: AuthedAgent, settings) -> None:
    settings.WORKING_MEMORY_MAX_VALUE_BYTES = 1024
    client, secret = agent_client.client, agent_client.secret
    base = {"tier": "working", "key": "k", "session_id": "s1", "value": 1}
    too_long_ttl = {**base, "ttl": settings.WORKING_MEMORY_MAX_TTL + 1}
    rest = client.post("/api/v1/memory/write", too_long_ttl, format="json")
    assert rest.status_code == 400 and _code(rest) == "invalid_ttl", rest.content
    assert error_code(tool_call(secret, "memory_write", too_long_ttl)) == "invalid_ttl"
    zero = client.post("/api/v1/memory/write", {**base, "ttl": 0}, format="json")
    assert zero.status_code == 400 and _code(zero) == "invalid_ttl"
    big = {**base, "value": "x" * 2000}
    rest = client.post("/api/v1/memory/write", big, format="json")
    assert rest.status_code == 413 and _code(rest) == "value_too_large", rest.content
    assert error_code(tool_call(secret, "memory_write", big)) == "value_too_large"
    short_term = {**big, "tier": "short_term"}
    settings.SHORT_TERM_MAX_VALUE_BYTES = 1024
    rest = client.post("/api/v1/memory/write", short_term, format="json")
    assert rest.status_code == 413 and _code(rest) == "value_too_large", rest.content
    fine = client.post("/api/v1/memory/write", {**base, "ttl": 60}, format="json")
    assert fine.status_code in (200, 201), fine.content


@pytest.mark.django_db
def test_shared_pool_key_over_the_bound(agent_client: AuthedAgent) -> None:
    client, secret = agent_client.client, agent_client.secret
    assert client.post("/api/v1/memory/pools", {"pool_id": "ops"}, format="json").status_code == 201
    too_long = ".".join(["a"] * (names.MAX_PATH_DEPTH + 1))
    assert len(too_long) <= names.MAX_PATH_CHARS  # too deep, within the characters
    longest = ".".join(["a" * names.MAX_SEGMENT_CHARS] * names.MAX_PATH_DEPTH)
    assert len(longest) == names.MAX_PATH_CHARS
    for key in (too_long, longest + "a", "a" * (names.MAX_SEGMENT_CHARS + 1)):
        arguments = {"pool_id": "ops", "key": key, "value": 1}
        assert error_code(tool_call(secret, "write_shared_memory", arguments)) == "invalid_path"
    rest = client.put(
        f"/api/v1/memory/pools/ops/data/{'a' * (names.MAX_SEGMENT_CHARS + 1)}",
        {"value": 1},
        format="json",
    )
    assert rest.status_code == 400 and _code(rest) == "invalid_path", rest.content
    fine = {"pool_id": "ops", "key": "a" * names.MAX_SEGMENT_CHARS, "value": 1}
    assert not tool_call(secret, "write_shared_memory", fine)["isError"]


@pytest.mark.django_db
def test_page_content_over_the_bound(agent_client: AuthedAgent) -> None:
    client, secret = agent_client.client, agent_client.secret
    content = "x" * (PAGE_MAX_CHARS + 1)
    rest = client.post("/api/v1/content/pages", {"title": "Big", "content": content}, format="json")
    assert rest.status_code == 413 and _code(rest) == "content_too_long", rest.content[:300]
    result = tool_call(secret, "write_page", {"title": "Big", "content": content})
    assert error_code(result) == "content_too_long"
    page = client.post("/api/v1/content/pages", {"title": "Small"}, format="json")
    assert page.status_code == 201, page.content
    patched = client.patch(
        f"/api/v1/content/pages/{page.json()['id']}", {"content": content}, format="json"
    )
    assert patched.status_code == 413 and _code(patched) == "content_too_long"


@pytest.mark.django_db
def test_document_text_over_the_bound(
    agent_client: AuthedAgent, settings, django_capture_on_commit_callbacks
) -> None:
    settings.RAG_MAX_EXTRACTED_CHARS = 1000
    client, secret = agent_client.client, agent_client.secret
    kb = client.post("/api/v1/rag/knowledge-bases", {"name": "Docs"}, format="json").json()
    text = "word " * 201
    with django_capture_on_commit_callbacks(execute=False):
        rest = client.post(
            f"/api/v1/rag/knowledge-bases/{kb['id']}/documents", {"text": text}, format="json"
        )
        result = tool_call(secret, "add_document", {"knowledge_base_id": kb["id"], "text": text})
    assert rest.status_code == 413 and _code(rest) == "document_too_large", rest.content
    assert error_code(result) == "document_too_large"


@pytest.mark.django_db
def test_an_over_long_cursor_is_invalid_cursor(agent_client: AuthedAgent) -> None:
    from core.pagination import MAX_CURSOR_CHARS

    cursor = "x" * (MAX_CURSOR_CHARS + 1)
    rest = agent_client.client.get("/api/v1/memory/pools", {"cursor": cursor})
    assert rest.status_code == 400 and _code(rest) == "invalid_cursor"
    result = tool_call(agent_client.secret, "list_memory_pools", {"cursor": cursor})
    assert error_code(result) == "invalid_cursor"


@pytest.mark.django_db
def test_an_updated_entry_is_as_bounded_as_a_new_one(agent_client: AuthedAgent) -> None:
    from memory.long_term.services import MAX_CONTENT_CHARS

    client = agent_client.client
    entry = client.post("/api/v1/memory/entries", {"content": "short"}, format="json")
    assert entry.status_code == 201, entry.content
    patched = client.patch(
        f"/api/v1/memory/entries/{entry.json()['id']}",
        {"content": "x" * (MAX_CONTENT_CHARS + 1)},
        format="json",
    )
    assert patched.status_code == 413 and _code(patched) == "content_too_large", patched.content


@pytest.mark.django_db
def test_memory_names_over_the_bound_keep_their_codes(agent_client: AuthedAgent) -> None:
    client, secret = agent_client.client, agent_client.secret
    long_key = {"key": "k" * (names.MAX_KEY_CHARS + 1), "value": 1}
    rest = client.post("/api/v1/memory/write", long_key, format="json")
    assert rest.status_code == 400 and _code(rest) == "invalid_key", rest.content
    assert error_code(tool_call(secret, "memory_read", {"key": long_key["key"]})) == "invalid_key"
    long_session = {
        "tier": "working",
        "key": "k",
        "value": 1,
        "session_id": "s" * (names.MAX_SESSION_ID_CHARS + 1),
    }
    rest = client.post("/api/v1/memory/write", long_session, format="json")
    assert rest.status_code == 400 and _code(rest) == "invalid_session_id", rest.content
    assert error_code(tool_call(secret, "memory_write", long_session)) == "invalid_session_id"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        f"/api/v1/agents/{MAX_ID}",  # the largest the schema states: fits a bigint, names nothing
        f"/api/v1/agents/{MAX_ID + 1}",
        f"/api/v1/agents/{2**63}",  # beyond PostgreSQL's bigint
        f"/api/v1/rag/documents/{'9' * 40}",
        "/api/v1/memory/contexts/0",
        f"/api/v1/memory/short-term/{'s' * (names.MAX_SESSION_ID_CHARS + 1)}",
        f"/api/v1/memory/pools/{'p' * (names.MAX_POOL_ID_CHARS + 1)}",
        f"/api/v1/memory/runs/{'r' * (names.MAX_RUN_ID_CHARS + 1)}",
    ],
)
def test_path_parameters_over_the_bound_are_404(agent_client: AuthedAgent, path: str) -> None:
    response = agent_client.client.get(path)
    assert response.status_code == 404 and _code(response).endswith("not_found"), response.content


@pytest.mark.django_db
def test_path_names_the_services_check_keep_their_codes(
    make_agent_client: Any, agent_client: AuthedAgent
) -> None:
    client = agent_client.client
    assert client.post("/api/v1/memory/pools", {"pool_id": "ops"}, format="json").status_code == 201
    too_long = ".".join(["a" * names.MAX_SEGMENT_CHARS] * names.MAX_PATH_DEPTH) + "a"
    pool = client.get(f"/api/v1/memory/pools/ops/data/{too_long}")
    assert pool.status_code == 400 and _code(pool) == "invalid_path", pool.content
    long_key = "k" * (MAX_KEY_LENGTH + 1)
    key = client.put(f"/api/v1/knowledge/notes/items/{long_key}", {"content": "x"}, format="json")
    assert key.status_code == 400 and _code(key) == "key_too_long", key.content
    # A read names nothing stored.
    key = client.get(f"/api/v1/knowledge/notes/items/{long_key}")
    assert key.status_code == 404 and _code(key) == "knowledge_base_not_found", key.content
    base = client.get(f"/api/v1/knowledge/{'b' * (MAX_BASE_NAME_LENGTH + 1)}/items")
    assert base.status_code == 404 and _code(base) == "knowledge_base_not_found", base.content
    admin = make_agent_client(scopes=("admin",))
    prefix = admin.client.post(f"/api/v1/keys/{'a' * (PREFIX_CHARS + 1)}/revoke")
    assert prefix.status_code == 404 and _code(prefix) == "not_found", prefix.content


@pytest.mark.django_db
def test_objects_over_their_keys_are_400(agent_client: AuthedAgent) -> None:
    client, secret = agent_client.client, agent_client.secret
    many = {f"k{i}": i for i in range(METADATA_MAX_PROPERTIES + 1)}
    entry = client.post("/api/v1/memory/entries", {"content": "x", "metadata": many}, format="json")
    assert entry.status_code == 400 and _code(entry) == "metadata_too_large", entry.content
    assert entry.json()["error"]["details"]["limit"]["properties"] == METADATA_MAX_PROPERTIES
    item = {"kind": "knowledge_item", "base": "b", "key": "k", "content": "x", "metadata": many}
    assert error_code(tool_call(secret, "memory_write", item)) == "metadata_too_large"
    fine = {"content": "x", "metadata": dict(list(many.items())[:-1])}
    assert client.post("/api/v1/memory/entries", fine, format="json").status_code == 201
    skill = client.post(
        "/api/v1/skills",
        {"name": "big-context", "description": "d", "execution_context": many},
        format="json",
    )
    assert skill.status_code == 400 and _code(skill) == "metadata_too_large", skill.content
    data = {f"k{i}": i for i in range(MAX_OBJECT_PROPERTIES + 1)}
    pool = client.post("/api/v1/memory/pools", {"pool_id": "big", "data": data}, format="json")
    assert pool.status_code == 400 and _code(pool) == "too_many_properties", pool.content
    assert pool.json()["error"]["details"] == {"field": "data", "limit": MAX_OBJECT_PROPERTIES}
    result = tool_call(secret, "create_memory_pool", {"pool_id": "big", "data": data})
    assert error_code(result) == "too_many_properties"
    assert client.post("/api/v1/memory/pools", {"pool_id": "ops"}, format="json").status_code == 201
    merged = client.patch("/api/v1/memory/pools/ops/data", {"value": data}, format="json")
    assert merged.status_code == 400 and _code(merged) == "too_many_properties", merged.content


@pytest.mark.django_db
def test_knowledge_item_keys_over_the_bound_at_both_doors(agent_client: AuthedAgent) -> None:
    client, secret = agent_client.client, agent_client.secret
    key = "k" * (MAX_KEY_LENGTH + 1)
    rest = client.put(f"/api/v1/knowledge/notes/items/{key}", {"content": "x"}, format="json")
    assert rest.status_code == 400 and _code(rest) == "key_too_long", rest.content
    item = {"kind": "knowledge_item", "base": "notes", "key": key, "content": "x"}
    assert error_code(tool_call(secret, "memory_write", item)) == "key_too_long"
    read = tool_call(secret, "memory_read", {"kind": "knowledge_item", "base": "notes", "key": key})
    assert error_code(read) == "validation_error"
