"""The client agrees with the server's OpenAPI schema: every method of the client sends an
operation the schema has, with only the fields and parameters the schema lists and every one it
requires; the TypedDicts and the async resources are what the generator makes from the schema and
the sync resources today (clients/python/scripts/generate.py)."""

from __future__ import annotations

import importlib.util
import inspect
from functools import cache
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.clients.conftest import CLIENT

import engram_client  # isort: skip
from engram_client import _async_resources, _resources  # isort: skip
from engram_client._base import AsyncResource, Operation, Resource, operation_of  # isort: skip

PAGE_PARAMETERS = {"cursor", "page_size"}


@cache
def _schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "engram_generate", CLIENT / "scripts" / "generate.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _fields(schema: dict[str, Any], node: dict[str, Any]) -> tuple[set[str], set[str]]:
    """A body's properties and the ones it requires; of a ``oneOf``, the properties of any
    option and the fields every option requires."""
    shape = _resolve(schema, node)
    properties, required = set(shape.get("properties", {})), set(shape.get("required", []))
    for part in shape.get("allOf", []):
        more, must = _fields(schema, part)
        properties, required = properties | more, required | must
    options = [_fields(schema, option) for option in shape.get("oneOf", shape.get("anyOf", []))]
    if options:
        properties |= set().union(*(more for more, _ in options))
        required |= set.intersection(*(must for _, must in options))
    return properties, required


def _pages(schema: dict[str, Any], spec: dict[str, Any]) -> bool:
    """Whether the operation's 200 answer is (or may be) a page with ``next`` and ``results``."""
    answer = _resolve(schema, spec["responses"]["200"]["content"]["application/json"]["schema"])
    shapes = [_resolve(schema, option) for option in answer.get("oneOf", [answer])]
    return any({"next", "results"} <= set(shape.get("properties", {})) for shape in shapes)


def _methods(module: Any, base: type) -> list[tuple[str, Operation]]:
    found = []
    for name, cls in vars(module).items():
        if isinstance(cls, type) and issubclass(cls, base) and cls is not base:
            for attribute, member in vars(cls).items():
                operation = operation_of(member)
                if operation is not None:
                    found.append((f"{name}.{attribute}", operation))
    return found


SYNC = _methods(_resources, Resource)
ASYNC = _methods(_async_resources, AsyncResource)


def test_the_client_covers_the_agent_loop_and_the_common_tasks() -> None:
    sent = {(operation.method, operation.path) for _, operation in SYNC}
    assert len(sent) >= 100
    for must in [
        ("POST", "/api/v1/memory/conversations"),
        ("POST", "/api/v1/memory/conversations/{conversation_id}/messages"),
        ("POST", "/api/v1/memory/context"),
        ("POST", "/api/v1/memory/search"),
        ("PUT", "/api/v1/memory/working/{session_id}/{key}"),
        ("PUT", "/api/v1/memory/short-term/{session_id}/{key}"),
        ("POST", "/api/v1/memory/entries"),
        ("PUT", "/api/v1/memory/pools/{pool_id}/data/{path}"),
        ("PUT", "/api/v1/knowledge/{base}/items/{key}"),
        ("POST", "/api/v1/rag/knowledge-bases/{kb_id}/documents"),
        ("POST", "/api/v1/rag/search"),
        ("POST", "/api/v1/content/pages"),
        ("POST", "/api/v1/skills/discover"),
        ("GET", "/api/v1/graph/nodes/{node_id}/neighbors"),
    ]:
        assert must in sent, must


@pytest.mark.parametrize(("name", "operation"), SYNC, ids=[name for name, _ in SYNC])
def test_each_method_sends_an_operation_of_the_schema(name: str, operation: Operation) -> None:
    schema = _schema()
    item = schema["paths"].get(operation.path)
    assert item is not None, f"{name}: no path {operation.path} in the schema"
    spec = item.get(operation.method.lower())
    assert spec is not None, f"{name}: {operation.method} {operation.path} is not in the schema"
    parameters = spec.get("parameters", []) + item.get("parameters", [])
    path_parameters = {p["name"] for p in parameters if p["in"] == "path"}
    assert set(operation.fields("path")) == path_parameters, name
    query = {p["name"]: p.get("required", False) for p in parameters if p["in"] == "query"}
    sent_query = operation.fields("query")
    assert set(sent_query) <= set(query), f"{name}: {set(sent_query) - set(query)} not parameters"
    if operation.paged:
        assert _pages(schema, spec), f"{name}: the answer is not a page (next, results)"
    body = operation.fields("body")
    content = spec.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        assert not body, f"{name}: sends {set(body)} to an operation without a JSON body"
        return
    properties, required = _fields(schema, content["schema"])
    assert set(body) <= set(properties), f"{name}: {set(body) - set(properties)} not in the body"
    for field in required:  # the method may require more (``upload_many``'s ``documents``)
        assert body.get(field) is True, f"{name}: the schema requires {field}"
    for field, must in sent_query.items():
        assert not query[field] or must, f"{name}: the schema requires ?{field}"


def test_every_required_query_parameter_is_required_by_the_method() -> None:
    schema = _schema()
    for name, operation in SYNC:
        spec = schema["paths"][operation.path][operation.method.lower()]
        for parameter in spec.get("parameters", []):
            if parameter["in"] == "query" and parameter.get("required"):
                assert operation.fields("query").get(parameter["name"]) is True, name


def test_the_async_client_sends_what_the_sync_client_sends() -> None:
    assert len(ASYNC) == len(SYNC)
    for (sync_name, sync), (async_name, asynchronous) in zip(SYNC, ASYNC, strict=True):
        assert async_name == "Async" + sync_name
        assert sync == asynchronous, sync_name
    for _, cls in inspect.getmembers(_async_resources, inspect.isclass):
        if issubclass(cls, AsyncResource) and cls is not AsyncResource:
            for attribute, member in vars(cls).items():
                if inspect.isfunction(member) and not attribute.startswith("_"):
                    assert inspect.iscoroutinefunction(member), (cls.__name__, attribute)


def test_the_generated_files_are_what_the_schema_and_the_sync_resources_make() -> None:
    """A change to the API's objects (or to _resources.py) without regenerating fails here:
    run ``python scripts/generate.py SCHEMA`` in clients/python."""
    generate = _generator()
    package = CLIENT / "src" / "engram_client"
    types = generate.tidy(generate.types_source(_schema()), package / "types.py")
    assert types == (package / "types.py").read_text(), "types.py is stale"
    async_resources = generate.tidy(
        generate.async_source((package / "_resources.py").read_text()),
        package / "_async_resources.py",
    )
    assert async_resources == (package / "_async_resources.py").read_text(), "async is stale"


def test_every_type_the_client_names_is_a_component_with_those_fields() -> None:
    components = _schema()["components"]["schemas"]
    generate = _generator()
    by_name = {generate._name(component): component for component in components}
    for name in engram_client.types.__all__:
        declared = getattr(engram_client.types, name).__annotations__
        component = components[by_name[name]]
        assert set(declared) == set(component.get("properties", {})), name


def _answers(schema: dict[str, Any], spec: dict[str, Any]) -> set[str]:
    """The type names (as the generator names components) a successful answer may have; a page's
    items by their own name; ``None`` for an answer without a body."""
    names: set[str] = set()
    for status, response in spec["responses"].items():
        if not status.startswith("2"):
            continue
        content = response.get("content", {}).get("application/json")
        if content is None:
            names.add("None")
            continue
        stack = [content["schema"]]
        while stack:
            node = stack.pop()
            if node.get("type") == "array":
                stack.append(node["items"])
                continue
            if "$ref" in node:
                component = node["$ref"].rsplit("/", 1)[-1]
                names.add(_generator()._name(component))
                node = _resolve(schema, node)
            stack.extend(node.get("oneOf", []))
            results = node.get("properties", {}).get("results")
            if results and "next" in node.get("properties", {}):
                stack.append(results["items"])
    return names


@pytest.mark.parametrize(("name", "operation"), SYNC, ids=[name for name, _ in SYNC])
def test_each_method_returns_the_type_of_its_answer(name: str, operation: Operation) -> None:
    cls_name, attribute = name.split(".")
    method = getattr(getattr(_resources, cls_name), attribute)
    annotation = str(inspect.signature(method).return_annotation)
    inner = annotation.removeprefix("SyncPage[").removeprefix("builtins.list[").rstrip("]")
    if inner == "JSON":
        return  # graph retrieve: a free-form answer
    declared = getattr(_resources, inner, None)
    type_name = "None" if inner == "None" else getattr(declared, "__name__", inner)
    spec = _schema()["paths"][operation.path][operation.method.lower()]
    assert type_name in _answers(_schema(), spec), f"{name} returns {annotation}"
