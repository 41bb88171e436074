"""The registry of tools and the schemas made from their serializers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from drf_spectacular.drainage import GENERATOR_STATS
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from rest_framework import serializers

from core.mcp import Call, Tool
from core.mcp.registry import route_of_message, tools
from core.mcp.schemas import generate, tool_schemas
from core.serializers import InputSerializer
from tests.support.mcp import CONTRACT, NEWER

# Tools every job of which writes; memory_consolidate and conversation have read jobs too.
WRITE_TOOLS = {
    "memory_write",
    "memory_consolidate",
    "create_memory_pool",
    "write_shared_memory",
    "delete_memory_pool",
    "add_document",
    "process_document",
    "propose_skill",
    "record_skill_usage",
    "write_page",
}


def _walk(schema: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(schema, dict):
        found.append(schema)
        for value in schema.values():
            found.extend(_walk(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_walk(value))
    return found


def test_the_tool_set_is_the_contract_and_two_more() -> None:
    assert set(tools()) == CONTRACT | NEWER
    assert len(tools()) <= 30


def test_writes_need_the_write_scope_and_reads_the_read_scope() -> None:
    writing = {name for name, tool in tools().items() if any(j.scope == "write" for j in tool.jobs)}
    assert {name for name, tool in tools().items() if tool.read_only} == set(tools()) - writing
    assert writing >= WRITE_TOOLS
    assert writing - WRITE_TOOLS == {"conversation"}
    assert all(job.scope in ("read", "write") for tool in tools().values() for job in tool.jobs)


def test_every_tool_and_job_names_its_rest_operation() -> None:
    for tool in tools().values():
        for job in tool.jobs:
            method, _, url = job.rest.partition(" ")
            assert method in ("GET", "POST", "PUT", "PATCH", "DELETE"), (tool.name, job.value)
            assert url.startswith("/api/v1/"), (tool.name, job.value)


def _undescribed(schema: dict[str, Any], at: str) -> list[str]:
    found = []
    for parameter, sub in schema.get("properties", {}).items():
        if not sub.get("description"):
            found.append(f"{at}{parameter}")
        found += _undescribed(sub, f"{at}{parameter}.")
        if isinstance(sub.get("items"), dict):
            found += _undescribed(sub["items"], f"{at}{parameter}[].")
    return found


def test_every_parameter_has_a_description_nested_ones_too() -> None:
    for name, (given, _) in tool_schemas().items():
        assert _undescribed(given, "") == [], name


def test_memory_write_states_its_two_modes_and_its_required_fields() -> None:
    given = tool_schemas()["memory_write"][0]
    check = Draft202012Validator(given)
    assert check.is_valid({"tier": "long_term", "content": "The office is in Lisbon."})
    assert check.is_valid({"tier": "working", "key": "k", "value": 1, "session_id": "s"})
    assert not check.is_valid({"tier": "long_term", "key": "k", "content": "both"})
    assert not check.is_valid({"tier": "long_term"})
    assert check.is_valid({"content": "tier long_term, the default"})
    assert not check.is_valid({"tier": "long_term", "key": "k"})  # a key needs a value
    assert check.is_valid(
        {"kind": "knowledge_item", "base": "facts", "key": "tide", "content": "noon"}
    )
    assert not check.is_valid({"kind": "knowledge_item", "base": "facts", "tier": "long_term"})
    assert given["properties"]["kind"]["enum"] == [
        "memory",
        "structured",
        "knowledge_item",
        "knowledge_relationship",
    ]


def test_schemas_are_valid_self_contained_json_schema_without_generator_warnings() -> None:
    GENERATOR_STATS.reset()
    made = generate(tools().values())
    assert not GENERATOR_STATS, "drf-spectacular warned while making the tools' schemas"
    assert made == tool_schemas()
    for name, (given, answered) in made.items():
        for schema in (given, answered):
            Draft202012Validator.check_schema(schema)
            nodes = _walk(schema)
            assert not [n for n in nodes if "$ref" in n or "nullable" in n], name
            assert not [n for n in nodes if "x-spec-enum-id" in n], name
            text = json.dumps(schema)
            assert "A request body: known fields only" not in text and "* `" not in text
        assert given["additionalProperties"] is False, name
        # Nested inputs refuse unknown fields too (as the API's request bodies do).
        for node in _walk(given):
            if node.get("type") == "object" and "properties" in node:
                assert node.get("additionalProperties") is False, (name, node)


def test_nullable_fields_accept_null_and_any_json_stays_any() -> None:
    schemas = tool_schemas()
    answer = schemas["memory_search"][1]["anyOf"][0]  # kind memory's answer
    hit = answer["properties"]["results"]["items"]["properties"]
    Draft202012Validator(hit["context_id"]).validate(None)
    Draft202012Validator(hit["context_id"]).validate(3)
    Draft202012Validator(hit["content"]).validate(None)
    Draft202012Validator(hit["content"]).validate({"any": ["json"]})
    skill_context = schemas["get_skill_context"][1]["properties"]["version"]
    Draft202012Validator(skill_context).validate(None)
    assert Draft202012Validator(skill_context).is_valid({"id": 1}) is False


def test_a_blank_default_of_a_field_that_refuses_blanks_is_left_out() -> None:
    session = tool_schemas()["memory_read"][0]["properties"]["session_id"]
    assert "default" not in session and session["minLength"] == 1


def test_two_tools_may_use_serializers_of_the_same_name() -> None:
    class Input(InputSerializer):
        n = serializers.IntegerField(max_value=3)

    class Other(InputSerializer):
        text = serializers.CharField()

    Other.__name__ = Other.__qualname__ = "Input"

    def run(call: Call) -> dict[str, Any]:
        return {}

    first = Tool("first", "First", "d", "read", Input, Input, run)
    second = Tool("second", "Second", "d", "read", Other, Other, run)
    made = generate([first, second])
    assert set(made["first"][0]["properties"]) == {"n"}
    assert set(made["second"][0]["properties"]) == {"text"}


def test_tool_names_follow_the_specification() -> None:
    with pytest.raises(ValueError, match="invalid MCP tool name"):
        Tool("has space", "x", "d", "read", InputSerializer, InputSerializer, lambda c: {})


@pytest.mark.parametrize(
    ("body", "method", "tool", "scope"),
    [
        ({"method": "tools/call", "params": {"name": "memory_write"}}, "tools/call", "w", "write"),
        ({"method": "tools/call", "params": {"name": "memory_search"}}, "tools/call", "r", "read"),
        (
            {
                "method": "tools/call",
                "params": {
                    "name": "memory_consolidate",
                    "arguments": {"action": "maintenance_status", "job_id": 1},
                },
            },
            "tools/call",
            "w",
            "read",
        ),
        ({"method": "tools/call", "params": {"name": "nope"}}, "tools/call", None, "read"),
        ({"method": "tools/list"}, "tools/list", None, "read"),
        ([1, 2], None, None, "read"),
        (
            [
                {"method": "tools/call", "params": {"name": "memory_search"}},
                {"method": "tools/call", "params": {"name": "write_page"}},
            ],
            None,
            None,
            "write",
        ),
        ("text", None, None, "read"),
    ],
)
def test_a_request_counts_as_its_tools_scope(
    body: Any, method: str | None, tool: str | None, scope: str
) -> None:
    route = route_of_message(body)
    assert route.method == method
    assert (route.tool.scope[0] if route.tool else None) == tool
    assert route.scope == scope


def test_every_parameter_has_an_example_valid_against_its_schema() -> None:
    missing, invalid = [], []
    for name, (given, _) in tool_schemas().items():
        for parameter, schema in given["properties"].items():
            examples = schema.get("examples")
            if not examples:
                missing.append(f"{name}.{parameter}")
                continue
            bare = {k: v for k, v in schema.items() if k != "examples"}
            for example in examples:
                if list(Draft202012Validator(bare).iter_errors(example)):
                    invalid.append(f"{name}.{parameter}={example!r}")
    assert missing == []
    assert invalid == []


def test_a_tools_own_example_wins_over_the_shared_one() -> None:
    given, _ = tool_schemas()["write_shared_memory"]
    assert given["properties"]["key"]["examples"] == ["agent_bulletin.market_regime"]
    searched, _ = tool_schemas()["memory_search"]
    assert searched["properties"]["query"]["examples"] == ["Where did Ana move in May?"]
    # An enum's example is one of its choices, not a name's shared example.
    assert searched["properties"]["mode"]["examples"][0] in searched["properties"]["mode"]["enum"]
