from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from core.errors import internal_error_response
from core.logging import reset_request_id, set_request_id

logger = logging.getLogger("engram.request")

_VALID_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class RequestIdMiddleware:
    """Tags each request with an id (the caller's ``X-Request-ID`` if sane), echoed back.

    It is also the last line of defence: an exception nothing else handled is logged with its
    traceback and answered for ``/api/`` paths as a JSON 500 carrying only the request id.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-ID", "")
        request_id = incoming if _VALID_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        token = set_request_id(request_id)
        try:
            response = self.get_response(request)
            response["X-Request-ID"] = request_id
            return response
        finally:
            reset_request_id(token)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        logger.exception("unhandled error on %s %s", request.method, request.path)
        if request.path.startswith("/api/"):
            return internal_error_response(request)
        return None
