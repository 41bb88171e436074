"""The one registry of MCP tools: each app declares its tools in ``<app>/mcp.py`` as ``TOOLS``.

A tool is an adapter over one REST operation (``rest``): its input serializer is the operation's
(so bounds and error codes are identical), ``run`` calls the function the operation's view calls
with the caller's actor and answers what the view answers (the same output serializer), and
``summary`` says in one line what it found. A tool that does several related jobs names them
with one parameter (``selector``, e.g. ``kind`` or ``action``), each job a ``Job`` over its own
REST operation; the tool's own fields are its default job.
The registry finds the modules by name at run time (``core.jobs.app_modules``), as the periodic
jobs and the daily digests are found: ``core`` never imports the apps above it.
"""

from __future__ import annotations

import functools
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
class Job:
    """One job of a tool: the value of the tool's ``selector`` that picks it, what it does, the
    scope it needs, its REST operation and how it runs (as a tool's fields)."""

    value: str
    description: str
    scope: Scope
    rest: str
    input: type[serializers.Serializer]
    output: type[serializers.BaseSerializer]
    run: Callable[[Call], Mapping[str, Any]]
    summary: Callable[[Mapping[str, Any]], str] = lambda out: "Done."
    hints: Mapping[str, str] = field(default_factory=dict)
    # Merged into the input schema: rules across fields a serializer cannot state (``oneOf``).
    schema_extra: Mapping[str, Any] = field(default_factory=dict)
    # Parameters' examples where the shared ones (``core.mcp.examples``) do not fit this job.
    examples: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    """A tool as models see it (``name``, ``title``, ``description``, the input and output
    schemas made from the serializers) and how it runs.

    ``scope`` is what the key needs, as ``required_scope`` is for an API view: a tool that
    writes needs ``write``. ``hints`` give the input schema's properties descriptions written
    for a model where the serializer's own help text is missing or written for HTTP;
    ``examples`` their examples where the shared ones (``core.mcp.examples``) do not fit.
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
    # The REST operation the tool is a door to ("POST /api/v1/memory/search").
    rest: str = ""
    # A tool of several jobs: the parameter that picks one, the default job's value (the
    # tool's own fields) and the other jobs.
    selector: str = ""
    default: str = ""
    more: tuple[Job, ...] = ()
    schema_extra: Mapping[str, Any] = field(default_factory=dict)
    examples: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"invalid MCP tool name {self.name!r}")
        for job in self.jobs:
            if job.scope not in ("read", "write", "admin"):
                raise ValueError(f"{self.name}: unknown scope {job.scope!r}")
        if bool(self.selector) != bool(self.more) or bool(self.selector) != bool(self.default):
            raise ValueError(f"{self.name}: a selector goes with a default and other jobs")

    @functools.cached_property
    def jobs(self) -> tuple[Job, ...]:
        """Every job, the default first."""
        own = Job(
            value=self.default,
            description=self.description,
            scope=self.scope,
            rest=self.rest,
            input=self.input,
            output=self.output,
            run=self.run,
            summary=self.summary,
            hints=self.hints,
            schema_extra=self.schema_extra,
            examples=self.examples,
        )
        return (own, *self.more)

    def job_for(self, arguments: Mapping[str, Any]) -> Job | None:
        """The job the arguments pick (the default without the selector); None for a value
        that names no job."""
        if not self.selector:
            return self.jobs[0]
        value = arguments.get(self.selector, self.default)
        return next((job for job in self.jobs if job.value == value), None)

    @property
    def read_only(self) -> bool:
        return all(job.scope == "read" for job in self.jobs)


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


@dataclass(frozen=True)
class Route:
    """What an HTTP request to the endpoint asks for, read from its JSON-RPC body (never from
    a header a client sets): the method, and the tool a ``tools/call`` names (None for anything
    else, or a tool that does not exist)."""

    method: str | None
    tool: Tool | None
    # The scope of the job the call's arguments pick (None: the tool's own).
    job_scope: Scope | None = None
    # Whether the body is a batch (a JSON array of messages) with a write among its calls.
    batch_writes: bool = False

    @property
    def scope(self) -> Scope:
        """The budget the request counts in: the called job's scope (``write`` and ``admin``
        count as writes), a batch's widest, a read for the rest of the protocol."""
        if self.tool is not None:
            return self.job_scope or self.tool.scope
        return "write" if self.batch_writes else "read"


def _route_of_one(message: Any) -> Route:
    if not isinstance(message, dict):
        return Route(None, None)
    method = message.get("method")
    if not isinstance(method, str):
        return Route(None, None)
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    if method != "tools/call" or not isinstance(name, str):
        return Route(method, None)
    tool = tool_named(name)
    arguments = params.get("arguments") if isinstance(params, dict) else None
    job = tool.job_for(arguments) if tool is not None and isinstance(arguments, dict) else None
    return Route(method, tool, job.scope if job is not None else None)


def route_of_message(message: Any) -> Route:
    """The route of a decoded JSON-RPC body. The 2026-07-28 revision repeats the method and
    the tool in headers (``Mcp-Method``, ``Mcp-Name``); the SDK refuses a request whose headers
    disagree with its body, but a handshake-era request may carry any header, so the body alone
    decides. A batch (which the transport refuses today) counts as a write when any of its
    calls writes."""
    if isinstance(message, list):
        routes = [_route_of_one(item) for item in message]
        writes = any(r.tool is not None and r.scope != "read" for r in routes)
        return Route(None, None, batch_writes=writes)
    return _route_of_one(message)
