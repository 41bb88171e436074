"""``/mcp`` as the URLconf names it (``core.mcp.http`` serves it).

The MCP SDK is about a second of imports. Every process that loads the URLconf would pay it: the
Celery worker and beat do (Celery's Django fixup runs the system checks, which load it), and so
does each management command. So the URLconf names this view, which imports the SDK on the first
request; the web server imports it at start-up (``config.wsgi``), before its workers serve."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    from core.mcp.http import mcp_endpoint as serve

    return serve(request)
