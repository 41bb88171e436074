"""Errors: every answer of 400 or above is an ``APIError`` carrying the API's machine-readable
``code`` (docs/api.md, "Errors"), its HTTP ``status``, the ``message`` for people and the
``details``; a subclass per status family lets a caller catch what it can handle."""

from __future__ import annotations

from typing import Any

import httpx


class EngramError(Exception):
    """The root of every error the client raises."""


class APIConnectionError(EngramError):
    """The server could not be reached, or did not answer in time."""


class APIError(EngramError):
    """The server answered with an error status: ``{"error": {"code", "message", "details"}}``."""

    def __init__(
        self,
        *,
        status: int,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
        response: httpx.Response | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, Any] = details or {}
        self.request_id = request_id
        self.retry_after = retry_after
        self.response = response


class BadRequestError(APIError):
    """400: a field missing, unknown or out of range (``code`` names which rule)."""


class AuthenticationError(APIError):
    """401: no key, a malformed, unknown, revoked or expired key."""


class PermissionDeniedError(APIError):
    """403: the key lacks the scope, or the agent the right (``insufficient_scope``, ...)."""


class NotFoundError(APIError):
    """404: missing, or another account's (``context_not_found``, ``node_not_found``, ...)."""


class ConflictError(APIError):
    """409: a name taken, a version conflict, an invalid transition, ..."""


class PayloadTooLargeError(APIError):
    """413: a body, upload, value or batch over its limit."""


class RateLimitError(APIError):
    """429 ``throttled``: over the key's budget; ``retry_after`` says when to try again."""


class ServiceUnavailableError(APIError):
    """503: a provider or store is unavailable (``provider_unavailable``, ``store_unavailable``,
    ...); ``retry_after`` says when to try again."""


class InternalServerError(APIError):
    """500 and other 5xx: a bug in Engram; quote ``request_id`` when reporting it."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


def error_from_response(response: httpx.Response) -> APIError:
    """The exception for an error answer (one without the JSON shape keeps its status)."""
    code, message = "http_error", response.reason_phrase or "HTTP error"
    details: dict[str, Any] = {}
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        code = str(error.get("code", code))
        message = str(error.get("message", message))
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
    retry_after: float | None = None
    if "Retry-After" in response.headers:
        try:
            retry_after = float(response.headers["Retry-After"])
        except ValueError:
            retry_after = None
    status = response.status_code
    kind = _BY_STATUS.get(status)
    if kind is None:
        kind = InternalServerError if status >= 500 else APIError
    return kind(
        status=status,
        code=code,
        message=message,
        details=details,
        request_id=response.headers.get("X-Request-ID"),
        retry_after=retry_after,
        response=response,
    )
