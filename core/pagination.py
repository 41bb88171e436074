"""Cursor pagination for every list: ``{"next", "previous", "results"}``.

List views declare ``pagination_class`` (so the OpenAPI schema documents the envelope and the
``cursor`` / ``page_size`` parameters) and answer through ``paginated_response``. A malformed
cursor or page size is the caller's mistake: 400, not a 404 or a silent default.

Cursors are signed (``django.core.signing``, salted with the list's ordering): DRF's cursor is
base64 of ``o=<offset>&r=<reverse>&p=<position>``, and it read anything it could not parse
(``aGVsbG8=``, base64 of "hello") as the first page, and a position of the caller's choosing as
a filter value. A cursor this list did not hand out, or one changed since, is 400
``invalid_cursor`` before any query runs. The tools' pages (``core.mcp.paging``) are this class's.
"""

from __future__ import annotations

import binascii
from base64 import b64decode, b64encode
from typing import Any
from urllib.parse import parse_qs, urlencode

from django.core import signing
from django.db.models import QuerySet
from rest_framework.pagination import Cursor, CursorPagination, _positive_int
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.utils.urls import replace_query_param

from core.errors import ValidationFailed

# A cursor this API hands out is a few dozen characters; a longer one is not one of them.
MAX_CURSOR_CHARS = 1000


def invalid_cursor() -> ValidationFailed:
    return ValidationFailed("The cursor is not one this list returned.", code="invalid_cursor")


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

    def _signer(self) -> signing.Signer:
        ordering = self.ordering if isinstance(self.ordering, (list, tuple)) else [self.ordering]
        return signing.Signer(salt=f"engram.cursor:{','.join(map(str, ordering))}")

    def encode_cursor(self, cursor: Cursor) -> str:
        tokens: dict[str, str] = {}
        if cursor.offset != 0:
            tokens["o"] = str(cursor.offset)
        if cursor.reverse:
            tokens["r"] = "1"
        if cursor.position is not None:
            tokens["p"] = str(cursor.position)
        encoded = b64encode(urlencode(tokens, doseq=True).encode("ascii")).decode("ascii")
        assert self.base_url is not None
        return replace_query_param(
            self.base_url, self.cursor_query_param, self._signer().sign(encoded)
        )

    def decode_cursor(self, request: Request) -> Cursor | None:
        """The cursor of ``?cursor=`` (None without one); 400 ``invalid_cursor`` for one this
        list did not hand out (see the module's docstring)."""
        raw = request.query_params.get(self.cursor_query_param)
        if raw is None:
            return None
        if len(raw) > MAX_CURSOR_CHARS:
            raise invalid_cursor()
        try:
            encoded = self._signer().unsign(raw)
            tokens = parse_qs(
                b64decode(encoded.encode("ascii")).decode("ascii"), strict_parsing=False
            )
            offset = _positive_int(tokens.get("o", ["0"])[0], cutoff=self.offset_cutoff)
            reverse = bool(int(tokens.get("r", ["0"])[0]))
            position: Any = tokens.get("p", [None])[0]  # a string (the stubs say int)
        except (signing.BadSignature, binascii.Error, TypeError, ValueError) as exc:
            raise invalid_cursor() from exc
        return Cursor(offset=offset, reverse=reverse, position=position)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_page_size,
                }
            elif parameter["name"] == self.cursor_query_param:
                parameter["schema"] = {**parameter["schema"], "maxLength": MAX_CURSOR_CHARS}
        return parameters


def page_parameters_check(
    pagination_class: type[CreatedCursorPagination], request: Request
) -> None:
    """``page_size`` and ``cursor`` checked as a list checks them, for an answer of a listing
    operation that is not a page (a search, the last messages): 400 ``invalid_page_size`` /
    ``invalid_cursor`` alike."""
    paginator = pagination_class()
    paginator.get_page_size(request)
    paginator.decode_cursor(request)


def paginated_response(
    view: Any, request: Request, queryset: QuerySet[Any], serializer_class: type[BaseSerializer]
) -> Response:
    """One page of ``queryset`` rendered with ``serializer_class``, in the envelope."""
    paginator = view.pagination_class()
    page = paginator.paginate_queryset(queryset, request, view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)
