"""URL converters. ``<id:name>`` matches a positive id that fits a bigint column, so a path
with an absurd number answers 404 like any unknown id instead of overflowing a query."""

from __future__ import annotations


class IdConverter:
    regex = "[1-9][0-9]{0,17}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)
