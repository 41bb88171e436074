"""Engram over the Model Context Protocol (docs/mcp.md).

``/mcp`` (``core.mcp.http``) and ``./engram mcp`` (``core.mcp.stdio``) serve the tools each app
declares in ``<app>/mcp.py`` (``core.mcp.registry``), on the official Python SDK
(``core.mcp.server``), with the API's keys, scopes, rate limits and error codes
(``core.mcp.auth``, ``core.mcp.calls``).
"""

from core.mcp.paging import CursorInput, page, paged
from core.mcp.registry import Call, Scope, Tool

__all__ = ["Call", "CursorInput", "Scope", "Tool", "page", "paged"]
