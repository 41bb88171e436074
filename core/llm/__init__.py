"""LLM completions: the provider interface and the process-wide provider chosen by settings.

Importing this package imports no client library; the backend is built on the first
``get_llm_provider()`` call.

Settings (all optional): LLM_PROVIDER ("offline" | "openai", default "offline"), LLM_MODEL
(required for "openai"), LLM_BASE_URL, LLM_API_KEY, LLM_TIMEOUT (seconds per attempt, default
60) and LLM_MAX_RETRIES (retries of transient failures, default 2).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from django.conf import settings

from core.llm.base import InvalidJSONError, JSONSchema, LLMError, LLMProvider

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

_lock = threading.Lock()
_provider: LLMProvider | None = None
_provider_pid: int | None = None


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
    """The provider configured in settings, built once per process and shared by all threads.

    A forked child (Celery prefork, gunicorn) builds its own, as connection pools do not
    survive a fork.
    """
    global _provider, _provider_pid
    with _lock:
        if _provider is None or _provider_pid != os.getpid():
            _provider = _provider_from_settings()
            _provider_pid = os.getpid()
        return _provider


def reset_llm_provider() -> None:
    """Forget the cached provider so the next call rebuilds it (for tests and reconfiguration)."""
    global _provider, _provider_pid
    with _lock:
        _provider = None
        _provider_pid = None


def _provider_from_settings() -> LLMProvider:
    def setting(name: str, default: Any) -> Any:
        value = getattr(settings, name, None)
        return default if value is None else value

    return create_llm_provider(
        setting("LLM_PROVIDER", "offline"),
        model=setting("LLM_MODEL", None),
        base_url=setting("LLM_BASE_URL", None),
        api_key=setting("LLM_API_KEY", None),
        timeout=float(setting("LLM_TIMEOUT", DEFAULT_TIMEOUT)),
        max_retries=int(setting("LLM_MAX_RETRIES", DEFAULT_MAX_RETRIES)),
    )
