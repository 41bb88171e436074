"""LLM providers: the OpenAI client against a local stand-in, and the offline provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from core.llm import (
    InvalidJSONError,
    LLMError,
    create_llm_provider,
    get_llm_provider,
    reset_llm_provider,
)
from core.llm.base import json_instructions, parse_json_object
from core.llm.offline import OfflineLLMProvider, leading_sentences
from core.llm.openai_compat import OpenAILLMProvider
from tests.support.openai_standin import (
    DEFAULT_REPLY,
    OpenAIStandIn,
    openai_standin_fixture,  # noqa: F401 (pytest collects fixtures from module globals)
)

CHAT = "/v1/chat/completions"

FACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "subject": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["subject", "confidence"],
}


def make_provider(
    server: OpenAIStandIn, *, timeout: float = 5.0, max_retries: int = 0
) -> OpenAILLMProvider:
    return OpenAILLMProvider(
        model="test-model",
        base_url=server.base_url,
        api_key="sk-test",
        timeout=timeout,
        max_retries=max_retries,
    )


# --- OpenAI-compatible endpoint ----------------------------------------------------------------


def test_complete_sends_chat_request_and_returns_text(openai_standin: OpenAIStandIn) -> None:
    openai_standin.reply_with("Paris.")
    provider = make_provider(openai_standin)

    reply = provider.complete(
        "Capital of France?", system="Answer briefly.", max_tokens=20, temperature=0.5
    )

    assert reply == "Paris."
    assert provider.model_id == "openai:test-model"
    (request,) = openai_standin.requests_to(CHAT)
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body["model"] == "test-model"
    assert request.body["messages"] == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Capital of France?"},
    ]
    assert request.body["max_tokens"] == 20
    assert request.body["temperature"] == 0.5
    assert "response_format" not in request.body


def test_complete_without_system_sends_only_the_prompt(openai_standin: OpenAIStandIn) -> None:
    assert make_provider(openai_standin).complete("Hi") == DEFAULT_REPLY

    assert openai_standin.requests[0].body["messages"] == [{"role": "user", "content": "Hi"}]


def test_keyless_server_needs_no_api_key(openai_standin: OpenAIStandIn) -> None:
    provider = OpenAILLMProvider(model="local-model", base_url=openai_standin.base_url)

    assert provider.complete("Hi") == DEFAULT_REPLY


def test_complete_json_uses_json_mode_and_schema_prompt(openai_standin: OpenAIStandIn) -> None:
    openai_standin.reply_with('{"subject": "Alice", "confidence": 0.9}')

    result = make_provider(openai_standin).complete_json(
        "Alice likes tea.", schema=FACT_SCHEMA, system="Extract one fact."
    )

    assert result == {"subject": "Alice", "confidence": 0.9}
    (request,) = openai_standin.requests_to(CHAT)
    assert request.body["response_format"] == {"type": "json_object"}
    system, user = request.body["messages"]
    assert system["role"] == "system"
    assert system["content"].startswith("Extract one fact.")
    assert json.dumps(FACT_SCHEMA, indent=2) in system["content"]
    assert user == {"role": "user", "content": "Alice likes tea."}


def test_complete_json_repairs_one_bad_reply(openai_standin: OpenAIStandIn) -> None:
    bad = "Sure! The subject is Alice."
    openai_standin.reply_with(bad, '{"subject": "Alice", "confidence": 1}')

    result = make_provider(openai_standin).complete_json("Alice likes tea.", schema=FACT_SCHEMA)

    assert result == {"subject": "Alice", "confidence": 1}
    first, second = openai_standin.requests_to(CHAT)
    repair_turns = second.body["messages"][len(first.body["messages"]) :]
    assert repair_turns[0] == {"role": "assistant", "content": bad}
    assert repair_turns[1]["role"] == "user"
    assert "not valid JSON" in repair_turns[1]["content"]


def test_complete_json_repairs_missing_required_key(openai_standin: OpenAIStandIn) -> None:
    openai_standin.reply_with('{"subject": "Alice"}', '{"subject": "Alice", "confidence": 0}')

    result = make_provider(openai_standin).complete_json("Alice likes tea.", schema=FACT_SCHEMA)

    assert result["confidence"] == 0
    assert "confidence" in openai_standin.requests[1].body["messages"][-1]["content"]


def test_complete_json_gives_up_after_one_repair(openai_standin: OpenAIStandIn) -> None:
    openai_standin.reply_with("not json", "[1, 2, 3]")

    with pytest.raises(InvalidJSONError, match=r"after one repair attempt.*array, not an object"):
        make_provider(openai_standin).complete_json("Alice likes tea.", schema=FACT_SCHEMA)

    assert len(openai_standin.requests) == 2


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_errors_are_retried(openai_standin: OpenAIStandIn, status: int) -> None:
    openai_standin.fail(status, times=2)
    openai_standin.reply_with("Recovered.")

    reply = make_provider(openai_standin, max_retries=2).complete("Hi")

    assert reply == "Recovered."
    assert len(openai_standin.requests) == 3


def test_retries_are_bounded(openai_standin: OpenAIStandIn) -> None:
    openai_standin.fail(500, times=5)

    with pytest.raises(LLMError, match="HTTP 500") as raised:
        make_provider(openai_standin, max_retries=1).complete("Hi")

    assert raised.value.status_code == 500
    assert len(openai_standin.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(openai_standin: OpenAIStandIn, status: int) -> None:
    openai_standin.fail(status)

    with pytest.raises(LLMError, match=f"HTTP {status}") as raised:
        make_provider(openai_standin, max_retries=3).complete("Hi")

    assert raised.value.status_code == status
    assert len(openai_standin.requests) == 1


def test_timeout_raises_llm_error(openai_standin: OpenAIStandIn) -> None:
    openai_standin.stall(3.0)

    with pytest.raises(LLMError, match=r"timed out after 0\.3s") as raised:
        make_provider(openai_standin, timeout=0.3).complete("Hi")

    assert raised.value.status_code is None


def test_timeout_is_retried(openai_standin: OpenAIStandIn) -> None:
    openai_standin.stall(3.0)
    openai_standin.reply_with("Second time lucky.")

    reply = make_provider(openai_standin, timeout=0.3, max_retries=1).complete("Hi")

    assert reply == "Second time lucky."
    assert len(openai_standin.requests) == 2


def test_unreachable_endpoint_raises_llm_error() -> None:
    with OpenAIStandIn() as server:
        base_url = server.base_url
    # The server has stopped: nothing listens on its port any more.
    provider = OpenAILLMProvider(model="m", base_url=base_url, timeout=1.0, max_retries=0)

    with pytest.raises(LLMError, match="Cannot reach"):
        provider.complete("Hi")


# --- JSON helpers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        '{"subject": "x", "confidence": 1}',
        '  ```json\n{"subject": "x", "confidence": 1}\n```  ',
        '```\n{"subject": "x", "confidence": 1}\n```',
    ],
)
def test_parse_json_object_accepts_plain_and_fenced_objects(reply: str) -> None:
    assert parse_json_object(reply, FACT_SCHEMA) == {"subject": "x", "confidence": 1}


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("", "not valid JSON"),
        ('{"subject": "x",', "not valid JSON"),
        ('"just a string"', "string, not an object"),
        ("null", "null, not an object"),
        ('{"subject": "x"}', "lacks required keys: confidence"),
    ],
)
def test_parse_json_object_names_the_problem(reply: str, problem: str) -> None:
    with pytest.raises(InvalidJSONError, match=problem):
        parse_json_object(reply, FACT_SCHEMA)


def test_json_instructions_without_system_prompt() -> None:
    instructions = json_instructions({"type": "object"})

    assert instructions.startswith("Reply with a single JSON object")
    assert instructions.endswith('{\n  "type": "object"\n}')


# --- offline provider --------------------------------------------------------------------------

PROMPT = (
    "Alice moved to Berlin in 2021. She works as a data engineer! Does she like it? "
    "Her manager is Bob."
)


def test_offline_complete_is_extractive_and_deterministic() -> None:
    provider = OfflineLLMProvider()

    first = provider.complete(PROMPT, system="ignored", temperature=1.0)

    assert first == " ".join(PROMPT.split())
    assert provider.complete(PROMPT) == first
    assert provider.model_id == "offline:extractive"


@pytest.mark.parametrize(
    ("max_tokens", "expected"),
    [
        (6, "Alice moved to Berlin in 2021."),
        (12, "Alice moved to Berlin in 2021. She works as a data engineer!"),
        (3, "Alice moved to"),
        (0, ""),
    ],
)
def test_offline_complete_keeps_leading_sentences_within_budget(
    max_tokens: int, expected: str
) -> None:
    assert OfflineLLMProvider().complete(PROMPT, max_tokens=max_tokens) == expected


def test_leading_sentences_collapses_whitespace() -> None:
    assert leading_sentences("  One.\n\n  Two\tthree.  ", max_words=10) == "One. Two three."
    assert leading_sentences("", max_words=10) == ""


NESTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 12},
        "count": {"type": "integer"},
        "score": {"type": "number", "minimum": 0.5, "maximum": 2},
        "rank": {"type": "integer", "minimum": 1.5},
        "debt": {"type": "number", "maximum": -3},
        "active": {"type": "boolean"},
        "kind": {"type": "string", "enum": ["fact", "preference"]},
        "version": {"const": 2},
        "labels": {"type": "array", "items": {"type": "string"}},
        "pair": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
        "note": {"type": ["null", "string"]},
        "nothing": {"type": "null"},
        "either": {"anyOf": [{"type": "boolean"}, {"type": "string"}]},
        "owner": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
            "required": ["name"],
        },
        "optional": {"type": "string"},
    },
    "required": [
        "title", "count", "score", "rank", "debt", "active", "kind", "version", "labels",
        "pair", "note", "nothing", "either", "owner",
    ],
}  # fmt: skip


def test_offline_complete_json_satisfies_schema() -> None:
    result = OfflineLLMProvider().complete_json(PROMPT, schema=NESTED_SCHEMA)

    jsonschema.validate(result, NESTED_SCHEMA)
    assert result == {
        "title": PROMPT[:12],
        "count": 0,
        "score": 0.5,
        "rank": 2,
        "debt": -3,
        "active": False,
        "kind": "fact",
        "version": 2,
        "labels": [],
        "pair": [0, 0],
        "note": PROMPT,
        "nothing": None,
        "either": False,
        "owner": {"name": PROMPT},
    }


def test_offline_complete_json_is_deterministic() -> None:
    provider = OfflineLLMProvider()

    assert provider.complete_json(PROMPT, schema=FACT_SCHEMA) == provider.complete_json(
        PROMPT, schema=FACT_SCHEMA
    )
    jsonschema.validate(provider.complete_json(PROMPT, schema=FACT_SCHEMA), FACT_SCHEMA)


def test_offline_complete_json_rejects_non_object_schema() -> None:
    with pytest.raises(LLMError, match="describes a JSON object"):
        OfflineLLMProvider().complete_json(PROMPT, schema={"type": "array"})


# --- factory -----------------------------------------------------------------------------------


@pytest.fixture
def fake_settings(settings: Any) -> Iterator[Any]:
    """The real Django settings (restored after the test), with the provider cache cleared."""
    namespace = settings
    reset_llm_provider()
    yield namespace
    reset_llm_provider()


@pytest.mark.usefixtures("fake_settings")
def test_factory_defaults_to_offline_and_caches() -> None:
    provider = get_llm_provider()

    assert isinstance(provider, OfflineLLMProvider)
    assert get_llm_provider() is provider
    reset_llm_provider()
    assert get_llm_provider() is not provider


def test_factory_builds_openai_provider_from_settings(
    fake_settings: Any, openai_standin: OpenAIStandIn
) -> None:
    fake_settings.LLM_PROVIDER = "openai"
    fake_settings.LLM_MODEL = "test-model"
    fake_settings.LLM_BASE_URL = openai_standin.base_url
    fake_settings.LLM_API_KEY = "sk-settings"
    fake_settings.LLM_TIMEOUT = 5.0
    fake_settings.LLM_MAX_RETRIES = 0

    reply = get_llm_provider().complete("Hi")

    assert reply == DEFAULT_REPLY
    assert openai_standin.requests[0].headers["authorization"] == "Bearer sk-settings"


@pytest.mark.parametrize(
    ("provider", "model", "message"),
    [("magic", None, "Unknown LLM provider"), ("openai", None, "needs a model name")],
)
def test_factory_rejects_bad_configuration(provider: str, model: str | None, message: str) -> None:
    with pytest.raises(LLMError, match=message):
        create_llm_provider(provider, model=model)


def test_reply_checks_refuse_what_does_not_hold() -> None:
    from core.llm import InvalidJSONError
    from core.llm.replies import reply_numbers, reply_objects, reply_text

    assert reply_text("  two\n words ", "a name", 5) == "two w"
    assert reply_numbers([3, 1, 3, 9], "turns", {1, 2, 3}) == [3, 1]
    assert reply_numbers([], "turns", {1}) == []
    assert reply_objects({"facts": [{}, {}, {}]}, "facts", 2) == [{}, {}]
    for bad in (
        lambda: reply_text("   ", "a name", 5),
        lambda: reply_text(7, "a name", 5),
        lambda: reply_numbers([True], "turns", {1}),
        lambda: reply_numbers("1", "turns", {1}),
        lambda: reply_numbers([8], "turns", {1}),
        lambda: reply_objects({"facts": [1]}, "facts", 2),
        lambda: reply_objects({}, "facts", 2),
    ):
        with pytest.raises(InvalidJSONError):
            bad()
