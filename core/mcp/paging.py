"""Lists as tools: the API's cursor pages, with the cursor itself in the answer.

A list tool takes ``cursor`` and ``page_size`` (the API's query parameters, with the same bounds
and errors: 400 ``invalid_cursor``, ``invalid_page_size``) and answers ``{"results": [...],
"next_cursor": ...}``: the API answers ``next`` as a URL, a tool the cursor to pass back. The
pages are the API view's own pagination class, so the order and the cursors are the API's.
"""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.http import QueryDict
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core import serializers as strict
from core.pagination import MAX_CURSOR_CHARS, CreatedCursorPagination

_BASE_URL = "http://mcp.invalid/"


@extend_schema_field(
    {"type": "integer", "minimum": 1, "maximum": CreatedCursorPagination.max_page_size}
)
class PageSizeField(serializers.IntegerField):
    """An integer; its range is the pagination's to check (400 ``invalid_page_size``, as the
    API answers), the schema states it."""


class CursorInput(strict.InputSerializer):
    """The paging arguments every list tool takes."""

    cursor = strict.ServiceBoundedCharField(
        max_length=MAX_CURSOR_CHARS,
        required=False,
        help_text="next_cursor of the previous page; omit for the first page.",
    )
    page_size = PageSizeField(required=False, help_text="Items per page, 1 to 500.")


class _Request:
    """What DRF's cursor pagination reads of a request: its query parameters and its URL."""

    def __init__(self, cursor: str | None, page_size: int | None) -> None:
        self.query_params = QueryDict(mutable=True)
        if cursor is not None:
            self.query_params["cursor"] = cursor
        if page_size is not None:
            self.query_params["page_size"] = str(page_size)

    def build_absolute_uri(self) -> str:
        return _BASE_URL


def _cursor_of(link: str | None) -> str | None:
    if link is None:
        return None
    return parse_qs(urlsplit(link).query).get("cursor", [None])[0]


def page(
    items: Any,
    data: dict[str, Any],
    *,
    pagination: type[CreatedCursorPagination] = CreatedCursorPagination,
) -> tuple[list[Any], str | None]:
    """One page of ``items`` (a queryset) after ``data["cursor"]``, and the next cursor."""
    paginator = pagination()
    request: Any = _Request(data.get("cursor"), data.get("page_size"))
    rows: list[Any] | None = paginator.paginate_queryset(items, request, view=None)
    return list(rows or []), _cursor_of(paginator.get_next_link())


@functools.cache
def paged(item: type[serializers.BaseSerializer]) -> type[serializers.Serializer]:
    """The output serializer of a list tool whose items ``item`` renders."""
    name = item.__name__.removesuffix("Serializer").removesuffix("Output")
    return type(
        f"{name}Page",
        (serializers.Serializer,),
        {
            "__doc__": "One page of a list.",
            "__module__": __name__,
            "results": item(many=True),
            "next_cursor": serializers.CharField(
                allow_null=True, help_text="Pass as cursor for the next page; null at the end."
            ),
        },
    )
