"""The base of every API view.

Query parameters go through the view's nested ``FilterSerializer`` before the handler runs
(``self.filters`` holds the validated values); a view that declares none accepts none, so a
misspelt parameter is a 400 ``unknown_field``, never a silently unfiltered answer.
"""

from __future__ import annotations

import functools
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework.request import Request
from rest_framework.views import APIView

from core.serializers import FilterSerializer


class ApiView(APIView):
    filters: dict[str, Any]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # authentication, permissions, throttles
        if not hasattr(self, (request.method or "").lower()):
            self.filters = {}
            return  # dispatch answers 405 for a method the view does not implement
        filter_class = getattr(self, "FilterSerializer", FilterSerializer)
        if not getattr(self, "pagination_class", None):
            filter_class = _without_pagination(filter_class)
        if not request.query_params and not filter_class._declared_fields:
            # Nothing given, nothing declared: validation could only answer {} (the hot
            # endpoints, working memory's, take no parameters).
            self.filters = {}
            return
        serializer = filter_class(data=request.query_params)
        serializer.is_valid(raise_exception=True)
        self.filters = dict(serializer.validated_data)


@functools.cache
def _without_pagination(filter_class: type[FilterSerializer]) -> type[FilterSerializer]:
    """Views that do not page accept no cursor or page_size either (one class per filter class,
    made once: a class per request cost more than the validation)."""

    class Unpaged(filter_class):  # type: ignore[valid-type,misc]
        def extra_allowed_fields(self) -> set[str]:
            return set()

    return Unpaged


def landing(request: HttpRequest) -> HttpResponse:
    """``/`` (and the admin's "View site"): links to the admin, the API docs and the MCP
    endpoint, for a person who opened Engram's address."""
    return render(request, "landing.html", {"mcp_url": request.build_absolute_uri("/mcp")})
