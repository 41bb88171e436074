"""The tools' JSON Schemas, generated from their serializers by drf-spectacular.

The API's OpenAPI schema and the tools' schemas come from the same serializers through the same
generator (``core.schema.EngramAutoSchema``: request bodies refuse unknown properties), so a
tool states the bounds, enums and patterns its API operation states. Each tool becomes one
operation of a small schema of its own; its request body is the input schema and its answer
the output schema, both made self-contained (references inlined) and turned from OpenAPI 3.0
into JSON Schema (``nullable`` becomes a ``null`` type). Made once per process, on first use.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterable
from typing import Any

from django.urls import path
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from core.mcp.examples import exemplify
from core.mcp.registry import Job, Tool, tools
from core.schema import EngramAutoSchema
from core.serializers import InputSerializer

JsonSchema = dict[str, Any]
# Keys that only matter to OpenAPI tooling, and descriptions that only repeat what the schema
# says (drf-spectacular describes each enum as a list of its choices).
_DROPPED = {"x-spec-enum-id", "readOnly", "writeOnly"}
_BOILERPLATE = {(InputSerializer.__doc__ or "").strip()}
_ENUM_LISTING = re.compile(r"(\n\n)?\* `.*", re.DOTALL)


class _ToolSchema(EngramAutoSchema):
    """Components named after their tool, so two tools' serializers never share a name."""

    def get_serializer_name(self, serializer: Any, direction: Any) -> str:
        tool = getattr(self.view, "mcp_tool", "tool")
        return f"{tool}__{super().get_serializer_name(serializer, direction)}"


def _operation_view(name: str, job: Job) -> Any:
    @extend_schema(request=job.input, responses={200: job.output}, operation_id=name)
    def post(self: APIView, request: Any) -> None:  # pragma: no cover - never served
        raise NotImplementedError

    attrs = {
        "post": post,
        "mcp_tool": name,
        "schema": _ToolSchema(),
        "permission_classes": [AllowAny],
        "authentication_classes": [],
    }
    view: Any = type(f"McpTool_{name}", (APIView,), attrs)
    return view.as_view()


def _job_name(tool: Tool, job: Job) -> str:
    return f"{tool.name}__{job.value}" if job.value else tool.name


def generate(chosen: Iterable[Tool]) -> dict[str, tuple[JsonSchema, JsonSchema]]:
    """Input and output schema of each tool, by name: a tool of several jobs takes the union
    of its jobs' parameters, the selector among them, and states each job's own parameters
    and required ones in a ``oneOf`` branch; its answer is one of its jobs' answers."""
    chosen = list(chosen)
    patterns = [
        path(f"mcp-tools/{_job_name(tool, job)}", _operation_view(_job_name(tool, job), job))
        for tool in chosen
        for job in tool.jobs
    ]
    document = SchemaGenerator(patterns=patterns).get_schema(request=None, public=True)
    components = document.get("components", {}).get("schemas", {})
    found: dict[str, tuple[JsonSchema, JsonSchema]] = {}
    for tool in chosen:
        made = []
        for job in tool.jobs:
            operation = document["paths"][f"/mcp-tools/{_job_name(tool, job)}"]["post"]
            content = operation.get("requestBody", {}).get("content", {})
            body = content.get("application/json", {})
            answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
            input_schema = _object(_json_schema(body.get("schema", {}), components))
            for name, hint in {**tool.hints, **job.hints}.items():
                if name in input_schema["properties"]:
                    input_schema["properties"][name]["description"] = hint
            exemplify(input_schema["properties"], {**tool.examples, **job.examples})
            input_schema.update(copy.deepcopy(dict(job.schema_extra)))
            made.append((job, input_schema, _object(_json_schema(answer, components))))
        if not tool.selector:
            found[tool.name] = (made[0][1], made[0][2])
        else:
            found[tool.name] = (_union_input(tool, made), _union_output(made))
    return found


def _union_input(tool: Tool, made: list[tuple[Job, JsonSchema, JsonSchema]]) -> JsonSchema:
    selector = {
        "type": "string",
        "enum": [job.value for job, _, _ in made],
        "default": tool.default,
        "examples": [tool.default],
        "description": f"Which job: {'; '.join(f'{j.value}: {j.description}' for j in tool.jobs)}",
    }
    properties: dict[str, JsonSchema] = {tool.selector: selector}
    users: dict[str, list[str]] = {}
    variants: dict[str, list[JsonSchema]] = {}
    branches = []
    for job, given, _ in made:
        for name, schema in given["properties"].items():
            users.setdefault(name, []).append(job.value)
            if schema not in variants.setdefault(name, []):
                variants[name].append(schema)
        const = {tool.selector: {"const": job.value}}
        required = list(given.get("required", ()))
        if job.value != tool.default:
            required = [tool.selector, *required]
        branch: JsonSchema = {"properties": {**const, **given["properties"]}}
        if required:
            branch["required"] = required
        branch["additionalProperties"] = False
        branch.update(
            {
                k: v
                for k, v in given.items()
                if k not in ("type", "properties", "required", "additionalProperties")
            }
        )
        branches.append(branch)
    everyone = [job.value for job, _, _ in made]
    for name, schemas in variants.items():
        schema = copy.deepcopy(schemas[0]) if len(schemas) == 1 else {"anyOf": schemas}
        example = next((s["examples"] for s in schemas if "examples" in s), None)
        if len(schemas) > 1 and example is not None:
            schema["examples"] = example
        described = next((s["description"] for s in schemas if "description" in s), "")
        if users[name] != everyone:
            described = f"{described} ({tool.selector}: {', '.join(users[name])})".strip()
        if described:
            schema["description"] = described
        properties[name] = schema
    common = set.intersection(*(set(given.get("required", ())) for _, given, _ in made))
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if common:
        schema["required"] = sorted(common)
    schema["oneOf"] = branches
    return schema


def _union_output(made: list[tuple[Job, JsonSchema, JsonSchema]]) -> JsonSchema:
    return {"type": "object", "anyOf": [answer for _, _, answer in made]}


@functools.cache
def tool_schemas() -> dict[str, tuple[JsonSchema, JsonSchema]]:
    """Every registered tool's input and output schema, made once per process."""
    return generate(tools().values())


def _object(schema: JsonSchema) -> JsonSchema:
    """MCP wants an object at the root, with ``properties`` (a tool without arguments too);
    the required ones are listed first, where a model reads first."""
    schema.setdefault("type", "object")
    properties = schema.setdefault("properties", {})
    required = set(schema.get("required", ()))
    schema["properties"] = {
        **{k: v for k, v in properties.items() if k in required},
        **{k: v for k, v in properties.items() if k not in required},
    }
    schema.pop("description", None)  # the tool's description says it
    return schema


def _json_schema(schema: Any, components: dict[str, Any], depth: int = 0) -> Any:
    """``schema`` without references (inlined) and in JSON Schema's terms."""
    if depth > 50:
        raise ValueError("the tool schema nests too deeply (a recursive serializer?)")
    if isinstance(schema, list):
        return [_json_schema(item, components, depth + 1) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        target = components[schema["$ref"].rsplit("/", 1)[-1]]
        merged = {**copy.deepcopy(target), **{k: v for k, v in schema.items() if k != "$ref"}}
        return _json_schema(merged, components, depth + 1)
    out: JsonSchema = {}
    for key, value in schema.items():
        if key in _DROPPED:
            continue
        if key == "description":
            value = _ENUM_LISTING.sub("", value).strip()
            if not value or value in _BOILERPLATE:
                continue
        if key in ("properties", "patternProperties"):
            out[key] = {k: _json_schema(v, components, depth + 1) for k, v in value.items()}
        else:
            out[key] = _json_schema(value, components, depth + 1)
    if out.get("default") == "" and out.get("minLength", 0) > 0:
        del out["default"]  # a blank default of a field that refuses blanks: "absent"
    return _nullable(_single(out))


def _single(schema: JsonSchema) -> JsonSchema:
    """``allOf`` of one schema (how OpenAPI 3.0 annotates a reference) is that schema."""
    parts = schema.get("allOf")
    if isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], dict):
        rest = {k: v for k, v in schema.items() if k != "allOf"}
        return {**parts[0], **rest}
    return schema


def _nullable(schema: JsonSchema) -> JsonSchema:
    """OpenAPI 3.0's ``nullable: true`` in JSON Schema: ``null`` is one more allowed type."""
    if not schema.pop("nullable", False):
        return schema
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
        if "enum" in schema and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    if isinstance(kind, list):
        if "null" not in kind:
            schema["type"] = [*kind, "null"]
        return schema
    if "enum" in schema:
        schema["enum"] = [*schema["enum"], None] if None not in schema["enum"] else schema["enum"]
        return schema
    if not schema or set(schema) <= {"description", "default", "title"}:
        return schema  # any JSON value: null included
    annotations: dict[str, Any] = {
        k: schema.pop(k) for k in ("description", "default", "title") if k in schema
    }
    return {"anyOf": [schema, {"type": "null"}], **annotations}
