"""Domain errors and the one API error shape.

Every API error is ``{"error": {"code": ..., "message": ..., "details": {...}}}``: 4xx for the
caller's mistakes, 503 with ``Retry-After`` when a provider (embeddings, LLM, reranker) or a store
(PostgreSQL, Redis) is unavailable. Anything unexpected is a 500 carrying only the request id
(the traceback goes to the log).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response

from core.logging import current_request_id

logger = logging.getLogger("engram.errors")

# What a 503 asks clients to wait before retrying.
RETRY_AFTER_SECONDS = 10
# 401 responses name the scheme clients must use (RFC 9110 section 11.6.1).
WWW_AUTHENTICATE = 'Bearer realm="engram"'


class EngramError(Exception):
    """Base of every error domain code raises on purpose."""

    status_code = 400
    code = "bad_request"

    def __init__(
        self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details or {}


class ValidationFailed(EngramError):
    status_code = 400
    code = "validation_error"


class NotAuthenticated(EngramError):
    status_code = 401
    code = "not_authenticated"


class PermissionDenied(EngramError):
    status_code = 403
    code = "permission_denied"


class NotFound(EngramError):
    status_code = 404
    code = "not_found"


class Conflict(EngramError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(EngramError):
    status_code = 413
    code = "payload_too_large"


class UnsupportedMediaType(EngramError):
    status_code = 415
    code = "unsupported_media_type"


class ServiceUnavailable(EngramError):
    status_code = 503
    code = "service_unavailable"
    retry_after = RETRY_AFTER_SECONDS


class ProviderUnavailable(ServiceUnavailable):
    """An embedding, LLM or rerank provider failed or timed out."""

    code = "provider_unavailable"


class StoreUnavailable(ServiceUnavailable):
    """PostgreSQL or Redis could not be reached."""

    code = "store_unavailable"


class Throttled(EngramError):
    status_code = 429
    code = "throttled"


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


# DRF's own exception classes carry default codes; name the ones clients should branch on.
_DRF_CODES: dict[type[drf.APIException], str] = {
    drf.ParseError: "malformed_request",
    drf.AuthenticationFailed: "authentication_failed",
    drf.NotAuthenticated: "not_authenticated",
    drf.PermissionDenied: "permission_denied",
    drf.NotFound: "not_found",
    drf.MethodNotAllowed: "method_not_allowed",
    drf.NotAcceptable: "not_acceptable",
    drf.UnsupportedMediaType: "unsupported_media_type",
    drf.Throttled: "throttled",
}


def _drf_code(exc: drf.APIException) -> str:
    codes = exc.get_codes()
    # Our authentication and permission classes raise with specific codes (e.g. "key_revoked").
    if isinstance(codes, str) and codes not in {
        "error",
        "invalid",
        "parse_error",
        "authentication_failed",
        "not_authenticated",
        "permission_denied",
        "not_found",
    }:
        return codes
    for cls, code in _DRF_CODES.items():
        if isinstance(exc, cls):
            return code
    return "bad_request"


def _leaf_codes(detail: Any) -> set[str]:
    if isinstance(detail, dict):
        return set().union(*(_leaf_codes(v) for v in detail.values())) if detail else set()
    if isinstance(detail, list):
        return set().union(*(_leaf_codes(v) for v in detail)) if detail else set()
    return {str(getattr(detail, "code", "invalid"))}


# Field problems worth the error's own code, in this order of precedence: a misspelt name, a
# search query over the bound every search shares (core.search.MAX_QUERY_CHARS).
_PROMOTED_CODES = ("unknown_field", "query_too_long")


def _validation_code(detail: Any) -> str:
    """``unknown_field`` when any field was unknown, ``query_too_long`` when a search's query
    is; every other problem is a ``validation_error`` whose details name each field's problem."""
    codes = _leaf_codes(detail)
    return next((code for code in _PROMOTED_CODES if code in codes), "validation_error")


def translate_exception(exc: Exception) -> Exception:
    """Turn errors raised below the API (Django, providers, stores) into Engram errors."""
    from django.core.exceptions import (
        BadRequest,
        RequestDataTooBig,
        TooManyFieldsSent,
        TooManyFilesSent,
    )
    from django.db import DatabaseError

    from core.embeddings.base import EmbeddingError
    from core.llm.base import LLMError

    if isinstance(exc, RequestDataTooBig):
        from django.conf import settings

        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return PayloadTooLarge(
            f"Request bodies are limited to {limit} bytes.",
            code="request_too_large",
            details={"limit": limit},
        )
    if isinstance(exc, TooManyFieldsSent | TooManyFilesSent):
        return PayloadTooLarge(str(exc), code="request_too_large")
    if isinstance(exc, BadRequest):
        return ValidationFailed(str(exc) or "Bad request.", code="bad_request")
    if isinstance(exc, EmbeddingError):
        return ProviderUnavailable(
            "The embedding provider is unavailable.",
            details={"provider": "embeddings", "reason": str(exc)[:300]},
        )
    if isinstance(exc, LLMError):
        return ProviderUnavailable(
            "The LLM provider is unavailable.",
            details={"provider": "llm", "reason": str(exc)[:300]},
        )
    if isinstance(exc, DatabaseError):
        translated = _database_error(exc)
        if translated is not None:
            return translated
    try:
        import redis
    except ImportError:  # pragma: no cover - a hard dependency
        return exc
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        logger.warning("redis unavailable: %s", exc)
        return StoreUnavailable("Redis is unavailable.", details={"store": "redis"})
    return exc


# A conflict's 409 asks clients to wait this long before they try again.
CONFLICT_RETRY_AFTER_SECONDS = 1


class ConcurrentUpdate(Conflict):
    """Concurrent transactions kept colliding (deadlock, serialisation failure, lock not
    available) after the retries: the request changed nothing; sending it again may succeed."""

    code = "concurrent_update"
    retry_after = CONFLICT_RETRY_AFTER_SECONDS


class QueryTimeout(ServiceUnavailable):
    """A statement ran past the database's ``statement_timeout`` and was cancelled."""

    code = "query_timeout"


def _database_error(exc: Exception) -> Exception | None:
    """A database error as the API answers it (``core.transactions.database_error_kind``), or
    None for one that is a bug (a 500)."""
    from core.transactions import (
        CONFLICT,
        INTEGRITY,
        INVALID_DATA,
        OUTAGE,
        OVERLOADED,
        TIMEOUT,
        database_error_kind,
        sqlstate_of,
    )

    kind = database_error_kind(exc)
    if kind == OUTAGE:
        logger.warning("database unavailable: %s", exc)
        return StoreUnavailable("The database is unavailable.", details={"store": "database"})
    if kind == OVERLOADED:
        logger.warning("database out of resources: %s", exc)
        return StoreUnavailable(
            "The database cannot take more work right now.",
            code="store_overloaded",
            details={"store": "database", "sqlstate": sqlstate_of(exc)},
        )
    if kind == CONFLICT:
        logger.warning("concurrent update: %s", exc)
        return ConcurrentUpdate(
            "Concurrent requests changed the same data; nothing was changed: send it again.",
            details={"sqlstate": sqlstate_of(exc)},
        )
    if kind == TIMEOUT:
        logger.warning("statement timeout: %s", exc)
        return QueryTimeout(
            "The database took too long to answer and cancelled the request.",
            details={"store": "database"},
        )
    if kind == INVALID_DATA:
        logger.error("a value the database refused reached it unchecked: %s", exc)
        return ValidationFailed(
            "A value in the request cannot be stored.",
            code="invalid_value",
            details={"sqlstate": sqlstate_of(exc)},
        )
    if kind == INTEGRITY:
        logger.error("a constraint no service mapped was violated: %s", exc)
        return Conflict(
            "The request conflicts with data already stored; nothing was changed.",
            code="constraint_conflict",
            details={"sqlstate": sqlstate_of(exc)},
        )
    return None


@dataclass(frozen=True)
class ErrorAnswer:
    """What an error answers: its HTTP status, the one error body and the headers to send
    (``Retry-After`` for 429 and 503, ``WWW-Authenticate`` for 401)."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str]


def error_answer(exc: Exception) -> ErrorAnswer | None:
    """The answer to ``exc`` as the API gives it, or None for an unexpected error (a bug: the
    caller logs it and answers 500 ``internal_error``). The API's exception handler and the MCP
    endpoint's tool errors both answer through it, so an error has one code everywhere."""
    exc = translate_exception(exc)
    if isinstance(exc, Http404):
        exc = NotFound(str(exc) or "Not found.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = PermissionDenied(str(exc) or "Permission denied.")
    elif isinstance(exc, DjangoValidationError):
        django_details: dict[str, Any] = (
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
        exc = ValidationFailed("Invalid input.", details=django_details)

    headers: dict[str, str] = {}
    if isinstance(exc, EngramError):
        status, body = exc.status_code, error_body(exc.code, exc.message, exc.details)
        retry_after = getattr(exc, "retry_after", None)
        if retry_after:
            headers["Retry-After"] = str(int(retry_after))
    elif isinstance(exc, drf.ValidationError):
        detail: Any = exc.detail
        fields = detail if isinstance(detail, dict) else {"non_field_errors": detail}
        status, body = 400, error_body(_validation_code(detail), "Invalid input.", fields)
    elif isinstance(exc, drf.APIException):
        wait = getattr(exc, "wait", None)
        if wait:
            headers["Retry-After"] = str(max(1, math.ceil(wait)))
        status, body = exc.status_code, error_body(_drf_code(exc), str(exc.detail))
    else:
        return None
    if status == 401:
        headers["WWW-Authenticate"] = WWW_AUTHENTICATE
    return ErrorAnswer(status, body, headers)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF ``EXCEPTION_HANDLER``: map every error to the one shape with the right status."""
    answer = error_answer(exc)
    if answer is None:
        return None  # Unexpected: RequestIdMiddleware turns it into a logged 500.

    # Imported here: rest_framework.views imports the permission classes, which import this module.
    from rest_framework.views import set_rollback

    set_rollback()
    return Response(answer.body, status=answer.status, headers=answer.headers)


def internal_error_response(request: HttpRequest) -> JsonResponse:
    request_id = current_request_id()
    body = error_body(
        "internal_error",
        "An unexpected error occurred; it has been logged.",
        {"request_id": request_id},
    )
    return JsonResponse(body, status=500)


def json_404(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(error_body("not_found", "No such endpoint."), status=404)


def json_500(request: HttpRequest) -> JsonResponse:
    return internal_error_response(request)
