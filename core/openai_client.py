"""One way to build a client for any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, ...)."""

from __future__ import annotations

import openai

# The client refuses to start without a key; keyless local servers ignore this one.
KEYLESS_PLACEHOLDER = "unused"


def openai_client(
    *, base_url: str | None, api_key: str | None, timeout: float, max_retries: int
) -> openai.OpenAI:
    """A client that retries only transient failures (connection errors, timeouts, 408, 409, 429,
    5xx; the library's own policy) ``max_retries`` times, each attempt bounded by ``timeout``."""
    return openai.OpenAI(
        api_key=api_key or KEYLESS_PLACEHOLDER,
        base_url=base_url,
        timeout=timeout,
        max_retries=max_retries,
    )
