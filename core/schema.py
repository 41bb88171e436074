"""OpenAPI generation: component names for nested view serializers, the API key scheme."""

from __future__ import annotations

from typing import Any, Literal

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


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


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "core.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent API key, eng_<prefix>_<secret> (also accepted as X-API-Key).",
        }
