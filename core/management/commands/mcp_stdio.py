"""``manage.py mcp_stdio`` (``./engram mcp``): Engram's MCP tools over stdio (core/mcp/stdio.py)."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.errors import error_answer

KEY_VARIABLE = "ENGRAM_API_KEY"


class Command(BaseCommand):
    help = (
        "Serve Engram's MCP tools over stdin/stdout, for desktop clients that launch a command "
        f"(docs/mcp.md). The agent's API key comes from {KEY_VARIABLE}."
    )
    requires_system_checks: list[str] = []  # start fast; stdout belongs to the protocol

    def handle(self, *args: Any, **options: Any) -> None:
        from core.mcp.auth import authenticate_key
        from core.mcp.stdio import serve

        secret = os.environ.get(KEY_VARIABLE, "").strip()
        if not secret:
            raise CommandError(
                f"{KEY_VARIABLE} is not set: give the MCP server an agent's API key, e.g. "
                f"{KEY_VARIABLE}=eng_... ./engram mcp (create one with "
                "./engram manage create_agent)."
            )
        try:
            authenticate_key(secret, "read")
        except Exception as exc:
            answer = error_answer(exc)
            if answer is None:
                raise
            error = answer.body["error"]
            raise CommandError(f"{KEY_VARIABLE}: {error['message']} ({error['code']})") from exc
        serve(secret)
