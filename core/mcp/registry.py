"""The one registry of MCP tools: each app declares its tools in ``<app>/mcp.py`` as ``TOOLS``.

A tool is thin like an API view: its input serializer validates the arguments (the API's own
serializers where the operation is the API's, so bounds and error codes are identical), ``run``
makes one service or selector call with the caller's actor and returns the structured answer
(rendered by the API's output serializers), and ``summary`` says in one line what it found.
The registry finds the modules by name at run time (``core.jobs.app_modules``), as the periodic
jobs and the daily digests are found: ``core`` never imports the apps above it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from rest_framework import serializers

from core.actors import Actor
from core.models import ApiKey

Scope = Literal["read", "write", "admin"]
# The MCP specification's rule for tool names (1 to 128 of these characters).
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


@dataclass(frozen=True)
class Call:
    """One call of a tool: who calls (the actor, and the key for scope rules a tool states
    itself) and the validated arguments."""

    actor: Actor
    key: ApiKey
    data: dict[str, Any]


@dataclass(frozen=True)
class Tool:
    """A tool as models see it (``name``, ``title``, ``description``, the input and output
    schemas made from the serializers) and how it runs.

    ``scope`` is what the key needs, as ``required_scope`` is for an API view: a tool that
    writes needs ``write``. ``hints`` give the input schema's properties descriptions written
    for a model where the serializer's own help text is missing or written for HTTP.
    """

    name: str
    title: str
    description: str
    scope: Scope
    input: type[serializers.Serializer]
    output: type[serializers.BaseSerializer]
    run: Callable[[Call], Mapping[str, Any]]
    summary: Callable[[Mapping[str, Any]], str] = lambda out: "Done."
    hints: Mapping[str, str] = field(default_factory=dict)
    destructive: bool = False
    idempotent: bool = False

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"invalid MCP tool name {self.name!r}")
        if self.scope not in ("read", "write", "admin"):
            raise ValueError(f"{self.name}: unknown scope {self.scope!r}")

    @property
    def read_only(self) -> bool:
        return self.scope == "read"


@functools.cache
def tools() -> dict[str, Tool]:
    """Every app's tools by name, listed from the top app down (memory's first: the tools
    agents use most, where a client shows the list)."""
    from core.jobs import app_modules

    found: dict[str, Tool] = {}
    for label, module in reversed(list(app_modules("mcp"))):
        for tool in getattr(module, "TOOLS", ()):
            if not isinstance(tool, Tool):
                raise TypeError(f"{label}.mcp.TOOLS holds {tool!r}, not a Tool")
            if tool.name in found:
                raise ValueError(f"MCP tool names must be unique: {tool.name} ({label})")
            found[tool.name] = tool
    return found


def tool_named(name: str) -> Tool | None:
    return tools().get(name)


def route_of_request(body: bytes, headers: Mapping[str, str]) -> tuple[str | None, Tool | None]:
    """The JSON-RPC method of an HTTP request to the endpoint, and the tool it calls (None for
    anything but a call of a known tool). The 2026-07-28 revision names both in headers
    (``Mcp-Method``, ``Mcp-Name``); older ones only in the body."""
    method, name = headers.get("mcp-method"), headers.get("mcp-name")
    if method is None:
        try:
            message = json.loads(body) if body else None
        except ValueError:  # not JSON: the SDK answers the parse error
            return None, None
        if not isinstance(message, dict):
            return None, None
        method = message.get("method")
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
    if not isinstance(method, str):
        return None, None
    if method != "tools/call" or not isinstance(name, str):
        return method, None
    return method, tool_named(name)
