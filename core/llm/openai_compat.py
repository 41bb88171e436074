"""Completions from any server that speaks OpenAI's chat completions API (OpenAI, vLLM, Ollama)."""

from __future__ import annotations

from typing import Any

import openai
from openai.types.chat import ChatCompletionMessageParam

from core.llm.base import (
    InvalidJSONError,
    JSONSchema,
    LLMError,
    json_instructions,
    parse_json_object,
)
from core.openai_client import openai_client

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2


class OpenAILLMProvider:
    """Chat completions through the ``openai`` client.

    Transient failures (connection errors, timeouts, 408/409/429 and 5xx) are retried by the
    client itself, ``max_retries`` times with backoff. Other HTTP errors (400, 401, 404, ...)
    are not retried and raise LLMError carrying the status code.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        """Precondition: ``model`` is non-empty; ``timeout`` (seconds) applies to each attempt.

        ``base_url`` (e.g. ``http://localhost:8000/v1`` for vLLM) defaults to OpenAI's API.
        """
        if not model:
            raise LLMError("An OpenAI-compatible LLM provider needs a model name (LLM_MODEL).")
        self.model_id = f"openai:{model}"
        self._model = model
        self._timeout = timeout
        self._client = openai_client(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    def complete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> str:
        """See LLMProvider.complete. A reply cut short by ``max_tokens`` is returned as is."""
        messages: list[ChatCompletionMessageParam] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": prompt})
        return self._chat(messages, max_tokens=max_tokens, temperature=temperature, json_mode=False)

    def complete_json(
        self,
        prompt: str,
        *,
        schema: JSONSchema,
        system: str | None = None,
        max_tokens: int = 1024,
    ) -> dict[str, Any]:
        """See LLMProvider.complete_json.

        Uses JSON mode with the schema in the system prompt. If the reply is not a JSON object
        with the required keys, the model is shown its reply and the problem once and asked
        again; a second bad reply raises LLMError.
        """
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": json_instructions(schema, system)},
            {"role": "user", "content": prompt},
        ]
        reply = self._chat(messages, max_tokens=max_tokens, temperature=0.0, json_mode=True)
        try:
            return parse_json_object(reply, schema)
        except InvalidJSONError as first:
            messages.append({"role": "assistant", "content": reply})
            messages.append(
                {
                    "role": "user",
                    "content": f"That reply was unusable: {first}. Reply again with only the"
                    " JSON object, conforming to the schema.",
                }
            )
        reply = self._chat(messages, max_tokens=max_tokens, temperature=0.0, json_mode=True)
        try:
            return parse_json_object(reply, schema)
        except InvalidJSONError as second:
            raise InvalidJSONError(
                f"Model {self._model!r} returned invalid JSON after one repair attempt: {second}."
            ) from second

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    def _chat(
        self,
        messages: list[ChatCompletionMessageParam],
        *,
        max_tokens: int,
        temperature: float,
        json_mode: bool,
    ) -> str:
        try:
            completion = self._client.chat.completions.create(
                model=self._model,
                messages=messages,
                # max_tokens rather than max_completion_tokens: vLLM and Ollama understand it.
                max_tokens=max_tokens,
                temperature=temperature,
                response_format={"type": "json_object"} if json_mode else openai.omit,
            )
        except openai.APITimeoutError as exc:
            raise LLMError(
                f"LLM request to {self._client.base_url} timed out after"
                f" {self._timeout}s per attempt."
            ) from exc
        except openai.APIConnectionError as exc:
            raise LLMError(f"Cannot reach the LLM endpoint {self._client.base_url}: {exc}") from exc
        except openai.APIStatusError as exc:
            raise LLMError(
                f"LLM endpoint answered HTTP {exc.status_code}: {exc.message}",
                status_code=exc.status_code,
            ) from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"LLM request failed: {exc}") from exc
        if not completion.choices:
            raise LLMError(f"Model {self._model!r} returned no choices.")
        message = completion.choices[0].message
        if message.content is None:
            detail = f" (refusal: {message.refusal})" if message.refusal else ""
            raise LLMError(f"Model {self._model!r} returned no text{detail}.")
        return message.content
