"""LLM completions: the provider interface and the process-wide provider chosen by settings.

Importing this package imports no client library; the backend is built on the first
``get_llm_provider()`` call.

Settings (all optional): LLM_PROVIDER ("offline" | "openai", default "offline"), LLM_MODEL
(required for "openai"), LLM_BASE_URL, LLM_API_KEY, LLM_TIMEOUT (seconds per attempt, default
60) and LLM_MAX_RETRIES (retries of transient failures, default 2).
"""

from __future__ import annotations

from django.conf import settings

from core.llm.base import InvalidJSONError, JSONSchema, LLMError, LLMProvider
from core.process_cache import PerProcess

__all__ = [
    "InvalidJSONError",
    "JSONSchema",
    "LLMError",
    "LLMProvider",
    "create_llm_provider",
    "get_llm_provider",
    "reset_llm_provider",
]

PROVIDERS = ("offline", "openai")
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2


def create_llm_provider(
    provider: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> LLMProvider:
    """Build a new provider from explicit arguments; reads no settings and sends nothing.

    ``provider`` is "offline" (all other arguments ignored) or "openai" (``model`` required).
    Raises LLMError for an unknown provider or a missing model.
    """
    if provider == "offline":
        from core.llm.offline import OfflineLLMProvider

        return OfflineLLMProvider()
    if provider == "openai":
        from core.llm.openai_compat import OpenAILLMProvider

        return OpenAILLMProvider(
            model=model or "",
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
        )
    raise LLMError(f"Unknown LLM provider {provider!r}; expected one of {', '.join(PROVIDERS)}.")


def get_llm_provider() -> LLMProvider:
    """The provider configured in settings, built once per process and shared by its threads."""
    return _cached.get()


def reset_llm_provider() -> None:
    """Forget the cached provider so the next call rebuilds it (for tests and reconfiguration)."""
    _cached.reset()


def _provider_from_settings() -> LLMProvider:
    return create_llm_provider(
        settings.LLM_PROVIDER,
        model=settings.LLM_MODEL,
        base_url=settings.LLM_BASE_URL,
        api_key=settings.LLM_API_KEY,
        timeout=settings.LLM_TIMEOUT,
        max_retries=settings.LLM_MAX_RETRIES,
    )


_cached: PerProcess[LLMProvider] = PerProcess(_provider_from_settings)
