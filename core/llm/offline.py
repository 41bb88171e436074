"""A deterministic, network-free stand-in for an LLM, used when no model is configured.

It lets every feature run end to end without a model: the same input always yields the same
output. The behaviour here is the baseline; features that need a more useful offline answer
(e.g. a heuristic extractor) build it on top of this provider rather than changing it.
"""

from __future__ import annotations

import math
import re
from typing import Any

from core.llm.base import JSONSchema, LLMError

#: Words in a generated string value; long enough to carry meaning, short enough for a label.
STRING_VALUE_WORDS = 32

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class OfflineLLMProvider:
    """Extractive "completions": no model, no network, fully deterministic.

    ``system`` and ``temperature`` are accepted for interface compatibility and ignored.
    """

    model_id = "offline:extractive"

    def complete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> str:
        """The prompt's leading sentences, whitespace-collapsed, within ``max_tokens`` words.

        Words stand in for tokens. Whole sentences are kept while they fit; if even the first
        does not, it is cut at ``max_tokens`` words. An empty prompt gives an empty string.
        """
        return leading_sentences(prompt, max_words=max_tokens)

    def complete_json(
        self,
        prompt: str,
        *,
        schema: JSONSchema,
        system: str | None = None,
        max_tokens: int = 1024,
    ) -> dict[str, Any]:
        """An object built from ``schema`` alone, with each required property filled in.

        Values by schema: ``const`` or the first ``enum`` entry if given; strings are the
        prompt's leading sentences within 32 words (cut to ``maxLength``); integers and numbers
        are 0 moved into ``[minimum, maximum]``; booleans false; null None; arrays hold
        ``minItems`` generated items (so usually none); objects recurse; ``anyOf``/``oneOf``
        use their first branch; a type list uses its first non-null type. Optional properties
        are left out. Raises LLMError if ``schema`` does not describe an object.
        """
        value = _SchemaFiller(leading_sentences(prompt, max_words=STRING_VALUE_WORDS)).fill(schema)
        if not isinstance(value, dict):
            raise LLMError("complete_json needs a schema that describes a JSON object.")
        return value


def leading_sentences(text: str, *, max_words: int) -> str:
    """The leading whole sentences of ``text`` that fit in ``max_words`` words (see complete)."""
    if max_words <= 0:
        return ""
    sentences = _SENTENCE_END.split(" ".join(text.split()))
    kept: list[str] = []
    used = 0
    for sentence in sentences:
        words = sentence.split()
        if used + len(words) > max_words:
            if not kept:
                kept.append(" ".join(words[:max_words]))
            break
        kept.append(sentence)
        used += len(words)
    return " ".join(kept)


class _SchemaFiller:
    """Builds the minimal deterministic instance of a JSON schema (see complete_json)."""

    def __init__(self, text: str) -> None:
        self._text = text

    def fill(self, schema: JSONSchema) -> Any:
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return schema["enum"][0]
        for combinator in ("anyOf", "oneOf"):
            if schema.get(combinator):
                return self.fill(schema[combinator][0])
        schema_type = _primary_type(schema)
        if schema_type == "object":
            properties: dict[str, JSONSchema] = schema.get("properties", {})
            return {
                name: self.fill(properties.get(name, {})) for name in schema.get("required", ())
            }
        if schema_type == "array":
            item_schema: JSONSchema = schema.get("items", {})
            return [self.fill(item_schema) for _ in range(schema.get("minItems", 0))]
        if schema_type == "string":
            max_length = schema.get("maxLength")
            return self._text if max_length is None else self._text[:max_length]
        if schema_type in ("integer", "number"):
            return _number_near_zero(schema, integer=schema_type == "integer")
        if schema_type == "boolean":
            return False
        return None


def _primary_type(schema: JSONSchema) -> str | None:
    """The schema's type, taking the first non-null one from a list; inferred for objects."""
    declared = schema.get("type")
    if isinstance(declared, list):
        non_null = [name for name in declared if name != "null"]
        declared = non_null[0] if non_null else "null"
    if declared is None and ("properties" in schema or "required" in schema):
        return "object"
    return declared if isinstance(declared, str) else None


def _number_near_zero(schema: JSONSchema, *, integer: bool) -> int | float:
    """0, or the nearest value inside the schema's inclusive ``minimum``/``maximum``."""
    low: int | float | None = schema.get("minimum")
    high: int | float | None = schema.get("maximum")
    if integer:
        low = None if low is None else math.ceil(low)
        high = None if high is None else math.floor(high)
    value: int | float = 0
    if low is not None:
        value = max(value, low)
    if high is not None:
        value = min(value, high)
    return value
