"""The LLM provider interface and the JSON-reply helpers every backend shares."""

from __future__ import annotations

import json
import re
from typing import Any, Protocol, TypeAlias

#: A JSON schema as a plain dict, e.g. ``{"type": "object", "required": [...], ...}``.
JSONSchema: TypeAlias = dict[str, Any]

# Some models wrap JSON in a Markdown fence even when asked not to.
_CODE_FENCE = re.compile(r"\A```[a-zA-Z]*\s*\n?(?P<body>.*?)\n?```\Z", re.DOTALL)


class LLMError(RuntimeError):
    """A completion could not be produced, or its reply was unusable.

    ``status_code`` is the HTTP status when the endpoint answered with an error, else None.
    """

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class InvalidJSONError(LLMError):
    """A reply that should have been a JSON object matching a schema was not."""


class LLMProvider(Protocol):
    """Text completion with a chat model. Implementations are safe to share between threads."""

    @property
    def model_id(self) -> str:
        """Stable identifier of backend and model, e.g. ``"openai:gpt-4o-mini"``."""
        ...

    def complete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> str:
        """Answer ``prompt`` (the user turn), optionally steered by a ``system`` prompt.

        Precondition: ``max_tokens`` is positive; it bounds the reply's length.
        Raises LLMError if no reply could be obtained.
        """
        ...

    def complete_json(
        self,
        prompt: str,
        *,
        schema: JSONSchema,
        system: str | None = None,
        max_tokens: int = 1024,
    ) -> dict[str, Any]:
        """Answer ``prompt`` with a JSON object meant to conform to ``schema``.

        Precondition: ``schema`` describes an object. The result is guaranteed to be a dict
        holding every key in ``schema["required"]``; deeper conformance is best effort.
        Raises LLMError if no such object could be obtained.
        """
        ...


def json_instructions(schema: JSONSchema, system: str | None = None) -> str:
    """A system prompt asking for one JSON object conforming to ``schema``, after ``system``."""
    instructions = (
        "Reply with a single JSON object and nothing else: no prose, no Markdown code fences. "
        "The object must conform to this JSON schema:\n"
        f"{json.dumps(schema, indent=2, ensure_ascii=False)}"
    )
    return f"{system.rstrip()}\n\n{instructions}" if system else instructions


def parse_json_object(reply: str, schema: JSONSchema) -> dict[str, Any]:
    """Parse ``reply`` as a JSON object that has every key ``schema`` lists as required.

    A single surrounding Markdown code fence is tolerated. Raises InvalidJSONError naming the
    problem, phrased so that it can be shown to the model when asking it to correct itself.
    """
    text = reply.strip()
    fenced = _CODE_FENCE.match(text)
    if fenced:
        text = fenced.group("body").strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidJSONError(f"the reply is not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise InvalidJSONError(f"the reply is a JSON {_json_type_name(value)}, not an object")
    missing = [key for key in schema.get("required", ()) if key not in value]
    if missing:
        raise InvalidJSONError(f"the reply lacks required keys: {', '.join(missing)}")
    return value


def _json_type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array"
