from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable

from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.response import SimpleTemplateResponse

from core import metrics
from core.db_router import read_scope
from core.errors import (
    EngramError,
    ServiceUnavailable,
    error_body,
    internal_error_response,
    translate_exception,
)
from core.logging import reset_request_id, set_request_id
from core.parsers import bad_text

logger = logging.getLogger("engram.request")

_VALID_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# Django answers these itself (404, 403, 400): they are not server errors.
_EXPECTED = (Http404, PermissionDenied, BadRequest, SuspiciousOperation)


class ReadScopeMiddleware:
    """Each request is a read scope (core.db_router): its searches may read a replica until
    it writes; from its first write on, it reads the primary."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with read_scope():
            return self.get_response(request)


class RequestIdMiddleware:
    """Tags each request with an id (the caller's ``X-Request-ID`` if sane), echoed back.

    It is also the last line of defence: an exception nothing else handled is logged with its
    traceback and answered for ``/api/`` paths as a JSON 500 carrying only the request id.
    Errors Django or the API map themselves (404, 403, 400, a body too large, a store that is
    down) are not logged as unhandled.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-ID", "")
        request_id = incoming if _VALID_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        token = set_request_id(request_id)
        try:
            response = self._api_input_check(request) or self.get_response(request)
            response["X-Request-ID"] = request_id
            return response
        finally:
            reset_request_id(token)

    @staticmethod
    def _api_input_check(request: HttpRequest) -> HttpResponse | None:
        """A NUL in an API path or query string would reach a database query: 400 instead."""
        if not request.path.startswith("/api/"):
            return None
        problem = bad_text(request.path)
        if problem is None:
            for key, values in request.GET.lists():
                problem = bad_text(key) or next(filter(None, map(bad_text, values)), None)
                if problem:
                    break
        if problem is None:
            return None
        return JsonResponse(error_body("invalid_characters", f"The URL {problem}."), status=400)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        translated = translate_exception(exception)
        if request.path.startswith("/api/") and isinstance(translated, EngramError):
            response = JsonResponse(
                error_body(translated.code, translated.message, translated.details),
                status=translated.status_code,
            )
            retry_after = getattr(translated, "retry_after", None)
            if retry_after:
                response["Retry-After"] = str(retry_after)
            return response
        if isinstance(exception, _EXPECTED):
            return None  # Django's own handler answers 404 / 403 / 400
        if isinstance(translated, ServiceUnavailable):
            # A page (the admin's) whose provider or store is down: 503 with what is down,
            # not a server error.
            logger.warning("unavailable on %s %s: %s", request.method, request.path, translated)
            page = SimpleTemplateResponse(
                "503.html",
                {"message": translated.message, "retry_after": translated.retry_after},
                status=503,
            )
            page["Retry-After"] = str(translated.retry_after)
            return page.render()
        logger.exception("unhandled error on %s %s", request.method, request.path)
        if request.path.startswith("/api/"):
            return internal_error_response(request)
        return None


class RequestMetricsMiddleware:
    """Times every request for ``/metrics`` (``core.metrics``), labelled by its URL pattern
    (bounded: never the raw path), method and status. First in the chain: it sees what every
    other middleware answers, and the time they take."""

    UNRESOLVED = "<unresolved>"  # no URL pattern matched (404s, static files)

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        metrics.HTTP_IN_PROGRESS.inc()
        status = 500
        try:
            response = self.get_response(request)
            status = response.status_code
            return response
        finally:
            metrics.HTTP_IN_PROGRESS.dec()
            match = getattr(request, "resolver_match", None)
            metrics.request_observed(
                route=getattr(match, "route", None) or self.UNRESOLVED,
                method=request.method or "",
                status=status,
                seconds=time.perf_counter() - started,
            )
