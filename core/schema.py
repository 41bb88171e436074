"""OpenAPI generation: component names for nested view serializers, the API key scheme, and
the error responses every operation can give.

The schema is the truth (schemathesis checks the live server against it in CI), so each
operation lists the error statuses it can return, all with the one error shape:
400 (invalid input, characters, cursor), 401 / 403 (key missing, invalid or lacking the scope),
404 (an id in the path that is missing or another account's), 409 (conflicting writes),
413 / 415 (bodies too large or of the wrong type), 414 (a URL longer than the web server reads,
answered by gunicorn itself), 429 (throttled) and 503 (a provider or store is down). 500 is never
documented: it is a bug.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import uritemplate
from django.urls.converters import get_converters
from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import AllowAny

from core.serializers import InputSerializer, ObjectField, ServiceBoundedCharField


class ErrorBody(serializers.Serializer):
    code = serializers.CharField(help_text="Machine-readable, e.g. unknown_field, not_found.")
    message = serializers.CharField(help_text="For people.")
    details = serializers.DictField(help_text="Machine-readable specifics (fields, limits, ids).")


class ErrorResponse(serializers.Serializer):
    error = ErrorBody()


_ERROR_DESCRIPTIONS = {
    "400": "Invalid input: validation_error, unknown_field, invalid_type, invalid_json, "
    "invalid_characters, invalid_cursor, or a domain rule.",
    "401": "No, malformed, revoked or expired API key.",
    "403": "The key lacks the scope (insufficient_scope) or the role is missing.",
    "404": "No such object in the caller's account.",
    "409": "The write conflicts with the current state (e.g. name_taken, invalid_transition).",
    "413": "The body or the document is too large.",
    "414": "The URL is too long (answered by the web server, without a JSON body).",
    "415": "Unsupported content type.",
    "429": "Too many requests for this key; see Retry-After.",
    "503": "A provider or store is unavailable (provider_unavailable, store_unavailable); "
    "see Retry-After.",
}
_BODY_METHODS = {"POST", "PUT", "PATCH"}
# ``<converter:name>`` in a Django route (as django.urls.resolvers reads it).
_PATH_PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<parameter>[^>]+)>")
_WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


class EngramAutoSchema(AutoSchema):
    def get_serializer_name(
        self, serializer: Any, direction: Literal["request", "response"]
    ) -> str:
        """Views nest ``InputSerializer`` / ``OutputSerializer``: name them after their view
        (``MeApi.OutputSerializer`` becomes ``MeOutput``) so components never collide."""
        outer, _, inner = type(serializer).__qualname__.rpartition(".")
        if outer:
            return outer.removesuffix("Api") + inner.removesuffix("Serializer")
        return str(super().get_serializer_name(serializer, direction))

    def _map_serializer(
        self, serializer: Any, direction: Any, bypass_extensions: bool = False
    ) -> Any:
        """Request bodies refuse unknown fields (core.serializers.InputSerializer): say so."""
        schema = super()._map_serializer(serializer, direction, bypass_extensions)
        if direction == "request" and isinstance(serializer, InputSerializer):
            schema["additionalProperties"] = False
        return schema

    def _map_serializer_field(
        self, field: Any, direction: Any, bypass_extensions: bool = False
    ) -> Any:
        """A list of objects (``many=True``) states its ``min_length`` / ``max_length``; a
        string the service bounds (``ServiceBoundedCharField``) its ``max_length``; a free-form
        object (``ObjectField``) its ``max_properties`` and ``max_bytes``."""
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if isinstance(field, ServiceBoundedCharField):
            schema["maxLength"] = field.max_length
        if isinstance(field, ObjectField):
            schema["maxProperties"] = field.max_properties
            if field.max_bytes is not None:
                schema["x-max-bytes"] = field.max_bytes
        if isinstance(field, serializers.ListSerializer) and schema.get("type") == "array":
            # ListSerializer takes max_length / min_length (DRF 3.15); the stubs do not know them.
            most, least = getattr(field, "max_length", None), getattr(field, "min_length", None)
            if most is not None:
                schema["maxItems"] = most
            if least is not None:
                schema["minItems"] = least
        return schema

    def _get_parameters(self) -> Any:
        """A path parameter's schema is its converter's (``core.converters``): its type and its
        bound, the same whether drf-spectacular derived it or a view described it."""
        parameters = super()._get_parameters()
        converters = get_converters()
        used = {m["parameter"]: m["converter"] for m in _PATH_PARAMETER.finditer(self.path_regex)}
        for parameter in parameters:
            converter = converters.get(used.get(parameter["name"]) or "")
            schema = getattr(converter, "openapi_schema", None)
            if parameter["in"] == "path" and schema is not None:
                parameter["schema"] = dict(schema)
        return parameters

    def _error_statuses(self) -> list[str]:
        statuses = ["400", "503"]
        if not all(isinstance(p, AllowAny) for p in self.view.get_permissions()):
            statuses += ["401", "403", "429"]
        # Ids in the path, or in a body (an agent, knowledge bases to search), may be unknown;
        # a view naming objects in its query parameters says so (``ids_in_query = True``).
        if (
            uritemplate.variables(self.path)
            or self.method in _BODY_METHODS
            or getattr(self.view, "ids_in_query", False)
        ):
            statuses.append("404")
        # A read may also refuse because of the object's state (an export not finished yet):
        # such a view says so (``conflicts_on_read = True``).
        if self.method in _WRITE_METHODS or getattr(self.view, "conflicts_on_read", False):
            statuses.append("409")
        if self.method in _BODY_METHODS:
            statuses += ["413", "415"]
        return sorted(statuses)

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        responses["414"] = {"description": _ERROR_DESCRIPTIONS["414"]}
        for status in self._error_statuses():
            if status not in responses:
                responses[status] = self._get_response_for_code(
                    OpenApiResponse(
                        response=ErrorResponse, description=_ERROR_DESCRIPTIONS[status]
                    ),
                    status,
                    direction=direction,
                )
        return responses


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "core.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent API key, eng_<prefix>_<secret> (also accepted as X-API-Key).",
        }


def _component(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """Follow a $ref (and the first object member of a oneOf) to an object schema."""
    for _ in range(5):
        if "$ref" in schema:
            schema = components.get(schema["$ref"].rsplit("/", 1)[-1], {})
        elif "oneOf" in schema:
            schema = next((s for s in schema["oneOf"] if "$ref" in s or "properties" in s), {})
        else:
            break
    return schema


def add_resource_links(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """OpenAPI links from each create operation to the operations on what it created.

    A create (``POST`` answering 201 with an ``id``) on ``/things`` links to every operation
    under ``/things/{param}``, and to every operation with a ``{thing_id}`` path parameter
    elsewhere (``/documents/{document_id}`` for a document created under a knowledge base).
    Clients and stateful testers (schemathesis) follow them from a new object to its uses.
    """
    components = result.get("components", {}).get("schemas", {})
    operations = [
        (path, method, operation)
        for path, item in result.get("paths", {}).items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "operationId" in operation
    ]
    for path, method, operation in operations:
        created = operation.get("responses", {}).get("201")
        if method != "post" or not created:
            continue
        body = created.get("content", {}).get("application/json", {}).get("schema", {})
        if "id" not in _component(body, components).get("properties", {}):
            continue
        noun = path.rstrip("/").rsplit("/", 1)[-1].removesuffix("s").replace("-", "_")
        links: dict[str, Any] = {}
        for target_path, _target_method, target in operations:
            parameters = uritemplate.variables(target_path)
            name = None
            if target_path.startswith(path + "/{"):
                name = target_path[len(path) + 2 :].split("}", 1)[0]
            elif f"{noun}_id" in parameters:
                name = f"{noun}_id"
            # The link can only supply that one parameter.
            if name is None or set(parameters) - {name} - set(uritemplate.variables(path)):
                continue
            links[target["operationId"]] = {
                "operationId": target["operationId"],
                "parameters": {
                    name: "$response.body#/id",
                    **{
                        p: f"$request.path.{p}"
                        for p in uritemplate.variables(path)
                        if p in parameters
                    },
                },
            }
        if links:
            created["links"] = links
    return result


class ServiceBoundedJSONFieldExtension(OpenApiSerializerFieldExtension):
    """Any JSON value, bounded in size (``core.serializers.ServiceBoundedJSONField``)."""

    target_class = "core.serializers.ServiceBoundedJSONField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        limit = self.target.max_bytes
        # A string value takes its two quotes besides its characters.
        return {"maxLength": limit - 2, "x-max-bytes": limit}
