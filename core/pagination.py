"""Cursor pagination for every list: ``{"next", "previous", "results"}``.

List views declare ``pagination_class`` (so the OpenAPI schema documents the envelope and the
``cursor`` / ``page_size`` parameters) and answer through ``paginated_response``. A malformed
cursor or page size is the caller's mistake: 400, not a 404 or a silent default.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from core.errors import ValidationFailed


class CreatedCursorPagination(CursorPagination):
    """Stable cursor pages over large lists (newest first); ``?page_size=`` 1 to 500."""

    ordering = ("-created_at", "-id")
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            assert self.page_size is not None  # REST_FRAMEWORK["PAGE_SIZE"]
            return self.page_size
        if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= self.max_page_size:
            raise ValidationFailed(
                f"page_size must be an integer from 1 to {self.max_page_size}.",
                code="invalid_page_size",
                details={"page_size": raw[:50]},
            )
        return int(raw)

    def decode_cursor(self, request: Request) -> Cursor | None:
        try:
            return super().decode_cursor(request)
        except NotFound as exc:
            raise ValidationFailed(
                "The cursor is not one this list returned.", code="invalid_cursor"
            ) from exc

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_page_size,
                }
        return parameters


def paginated_response(
    view: Any, request: Request, queryset: QuerySet[Any], serializer_class: type[BaseSerializer]
) -> Response:
    """One page of ``queryset`` rendered with ``serializer_class``, in the envelope."""
    paginator = view.pagination_class()
    page = paginator.paginate_queryset(queryset, request, view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)
