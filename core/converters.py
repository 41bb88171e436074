"""URL converters of the API's path parameters. Each states its parameter's OpenAPI schema
(``openapi_schema``, which ``core.schema.EngramAutoSchema`` documents), and so its bound: a
path parameter is an input like any other (tests/core/test_input_bounds.py).

``<id:name>`` matches a positive id that fits a bigint column, so a path with an absurd number
answers 404 like any unknown id instead of overflowing a query. A name's converter
(``NameConverter``) matches at most ``max_length`` characters, or any segment that a service
checks itself so that a bad name answers 400 with a code that says why.
"""

from __future__ import annotations

from typing import Any, ClassVar

from core import api_keys
from core.search import MAX_ID


class IdConverter:
    regex = rf"[1-9][0-9]{{0,{len(str(MAX_ID)) - 1}}}"
    openapi_schema: ClassVar[dict[str, Any]] = {"type": "integer", "minimum": 1, "maximum": MAX_ID}

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


class NameConverter:
    """A string parameter of at most ``max_length`` characters: ``regex`` bounds it, or the
    view's service does (``regex`` then takes any one segment, ``[^/]+``, and ``pattern`` is
    what the service checks, for the schema to state)."""

    regex = "[^/]+"
    pattern = ""
    max_length = 0
    openapi_schema: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        pattern = f"^{cls.pattern or cls.regex}$"
        cls.openapi_schema = {"type": "string", "pattern": pattern, "maxLength": cls.max_length}

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class ApiKeyPrefixConverter(NameConverter):
    regex = api_keys.PREFIX
    max_length = api_keys.PREFIX_CHARS
