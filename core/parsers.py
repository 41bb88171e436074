"""Request body parsing that refuses what the database or the rest of the stack cannot hold.

A JSON body is rejected with 400 before any view code runs when it is nested too deeply
(``invalid_json``: deep nesting otherwise ends in a RecursionError), uses ``NaN``/``Infinity`` or
numbers that overflow a float (``invalid_json``), or holds a NUL character or a lone surrogate in
any key or string (``invalid_characters``: PostgreSQL text and JSONB cannot store them). A body
larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is refused with 413 ``request_too_large`` before it
is read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework.parsers import JSONParser

from core.errors import EngramError, PayloadTooLarge, ValidationFailed

# Far deeper than any legitimate request (filters nest three levels), far shallower than
# Python's recursion limit.
MAX_JSON_DEPTH = 64


class InvalidCharacters(EngramError):
    status_code = 400
    code = "invalid_characters"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} overflows a 64-bit float")
    return value


def bad_text(value: str) -> str | None:
    """Why ``value`` cannot be stored as text, or None when it can."""
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (invalid Unicode)"
    return None


def too_deep(max_depth: int) -> ValidationFailed:
    return ValidationFailed(
        f"The JSON body is nested deeper than {max_depth} levels.",
        code="invalid_json",
        details={"max_depth": max_depth},
    )


def check_json_value(
    value: Any,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    characters: bool = True,
    root: str = "(body)",
    path: str = "",
) -> None:
    """Walk a decoded JSON value without recursion: its depth (400 ``invalid_json``) and, with
    ``characters``, every string's and key's characters (400 ``invalid_characters``, with the
    path of the value in ``details.path``: below ``path``, the value's own name if any; a
    problem in the value itself, not below it, is named ``path`` or else ``root``)."""
    stack: list[tuple[Any, int, str]] = [(value, 1, path)]
    while stack:
        item, depth, path = stack.pop()
        if depth > max_depth:
            raise too_deep(max_depth)
        if isinstance(item, str):
            problem = bad_text(item) if characters else None
            if problem:
                raise InvalidCharacters(f"A string {problem}.", details={"path": path or root})
        elif isinstance(item, Mapping):
            for key, child in item.items():
                problem = bad_text(key) if characters and isinstance(key, str) else None
                if problem:
                    raise InvalidCharacters(f"A key {problem}.", details={"path": path or root})
                stack.append((child, depth + 1, f"{path}.{key}" if path else str(key)))
        elif isinstance(item, list):
            for index, child in enumerate(item):
                stack.append((child, depth + 1, f"{path}[{index}]"))


def body_size_check(meta: Mapping[str, Any]) -> None:
    """413 before reading a body whose declared size is over the limit."""
    try:
        length = int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is not None and length > limit:
        raise PayloadTooLarge(
            f"Request bodies are limited to {limit} bytes.",
            code="request_too_large",
            details={"limit": limit, "size": length},
        )


class StrictJSONParser(JSONParser):
    """DRF's JSON parser with the checks described in the module docstring."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        request = (parser_context or {}).get("request")
        if request is not None:
            body_size_check(request.META)
        raw = stream.read() if stream is not None else b""
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        return json_loads(raw, encoding=encoding, characters=True)


def json_loads(
    raw: bytes | str,
    *,
    encoding: str = "utf-8",
    max_depth: int = MAX_JSON_DEPTH,
    characters: bool = False,
) -> Any:
    """Decode JSON text as the API does: 400 ``invalid_json`` for bytes that are not text in
    ``encoding``, text that is not JSON, ``NaN``/``Infinity``, a number that overflows a float,
    or nesting deeper than ``max_depth`` (however deep: the decoder's RecursionError is caught).
    With ``characters``, a NUL or a lone surrogate anywhere is 400 ``invalid_characters``.
    Shared by the API's parser, ``/mcp`` and the stdio server."""
    try:
        text = raw.decode(encoding) if isinstance(raw, bytes) else raw
    except (UnicodeDecodeError, LookupError) as exc:
        raise ValidationFailed("The body is not valid UTF-8 JSON.", code="invalid_json") from exc
    try:
        data = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError as exc:
        raise too_deep(max_depth) from exc
    except ValueError as exc:
        raise ValidationFailed(f"The body is not valid JSON: {exc}", code="invalid_json") from exc
    check_json_value(data, max_depth=max_depth, characters=characters)
    return data
