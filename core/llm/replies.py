"""Checks of a model's JSON reply, field by field: a reply that does not hold raises
``InvalidJSONError`` (which callers count as a failed call, never as data). Conversation
extraction (``memory.conversations.extraction.llm``) and the entity graph
(``rag.graph.entities_llm``) read their replies with them."""

from __future__ import annotations

from typing import Any

from core.llm.base import InvalidJSONError


def reply_text(value: Any, what: str, limit: int) -> str:
    """A non-empty string, its white space folded, at most ``limit`` characters."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidJSONError(f"{what} must be a non-empty string")
    return " ".join(value.split())[:limit]


def reply_numbers(value: Any, what: str, known: set[int]) -> list[int]:
    """A list of integers citing what the prompt numbered (turns, passages): those in ``known``,
    first mention first, each once. Citing only numbers that were not given is an error."""
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise InvalidJSONError(f"{what} must be a list of integers")
    kept = [v for v in dict.fromkeys(value) if v in known]
    if value and not kept:
        raise InvalidJSONError(f"{what} {value} were not given")
    return kept


def reply_objects(answer: dict[str, Any], name: str, limit: int) -> list[Any]:
    """``answer[name]``: a list of objects, at most ``limit`` of them."""
    value = answer.get(name)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InvalidJSONError(f"{name} must be a list of objects")
    return value[:limit]
