"""Serializers and schema pieces the memory tiers' APIs share."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.request import Request

from core import serializers as strict
from core.schema import ErrorResponse
from core.views import ApiView

TTL_HELP = "Seconds to live: 1 to the tier's maximum (400 invalid_ttl otherwise)."


class ValueInput(strict.InputSerializer):
    """``{"value": <any JSON>, "ttl": <seconds>}``."""

    value = serializers.JSONField(allow_null=True, help_text="Any JSON value.")
    ttl = serializers.IntegerField(required=False, help_text=TTL_HELP)


MEMORY_UNAVAILABLE = OpenApiResponse(
    response=ErrorResponse,
    description="memory_unavailable: working memory's Redis cannot be reached (the other "
    "tiers keep answering); see Retry-After. Also store_unavailable for the database.",
)


class MethodFiltersApiView(ApiView):
    """An ApiView whose query parameters differ per method (``method_filters``)."""

    method_filters: dict[str, type[strict.FilterSerializer]] = {}

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        chosen = self.method_filters.get((request.method or "").lower())
        if chosen is not None:
            self.FilterSerializer = chosen
        super().initial(request, *args, **kwargs)
