"""Text embeddings: the provider interface and the process-wide provider chosen by settings.

Importing this package loads no model and imports neither onnxruntime nor openai; the backend
is imported and built on the first ``get_embedding_provider()`` call.

Settings (all optional): EMBEDDING_PROVIDER ("local" | "openai", default "local"),
EMBEDDING_MODEL, EMBEDDING_BASE_URL, EMBEDDING_API_KEY, EMBEDDING_DIMENSIONS (default 384),
EMBEDDING_BATCH_TOKENS (default 2048, local only), EMBEDDING_TIMEOUT (seconds, default 30,
openai only) and EMBEDDING_REQUEST_DIMENSIONS (default False, openai only: send the dimensions
parameter to models that can shorten their vectors).

Modules: ``base`` (the provider interface, vector literals), ``local`` (all-MiniLM-L6-v2 on
ONNX), ``openai_compat`` (any OpenAI-compatible endpoint), ``generations`` (index generations:
migrating to the model ``EMBEDDING_NEXT_*`` configures, cut-over, rollback) and ``schema`` (the
two vector columns every embedded table has, and their migrations).
"""

from __future__ import annotations

import logging

from django.conf import settings

from core.embeddings.base import (
    EmbeddingError,
    EmbeddingMatrix,
    EmbeddingProvider,
    EmbeddingVector,
)
from core.process_cache import PerProcess

__all__ = [
    "EmbeddingError",
    "EmbeddingMatrix",
    "EmbeddingProvider",
    "EmbeddingVector",
    "create_embedding_provider",
    "get_embedding_provider",
    "next_embedding_provider",
    "reset_embedding_provider",
    "settings_embedding_provider",
]

logger = logging.getLogger("engram.embeddings")

PROVIDERS = ("local", "openai")
DEFAULT_DIMENSIONS = 384
DEFAULT_BATCH_TOKENS = 2048
DEFAULT_TIMEOUT = 30.0


def create_embedding_provider(
    provider: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    dimensions: int = DEFAULT_DIMENSIONS,
    batch_tokens: int = DEFAULT_BATCH_TOKENS,
    timeout: float = DEFAULT_TIMEOUT,
    request_dimensions: bool = False,
) -> EmbeddingProvider:
    """Build a new provider from explicit arguments; reads no settings and loads no model.

    ``provider`` is "local" or "openai". "local" serves all-MiniLM-L6-v2 only, at 384
    dimensions; ``model`` defaults to it. "openai" requires ``model``. Raises EmbeddingError
    for an unknown provider or a configuration the provider cannot honour.
    """
    if provider == "local":
        from core.embeddings import local

        if model and model != local.MODEL_NAME:
            raise EmbeddingError(
                f"The local embedding provider only serves {local.MODEL_NAME!r}, not {model!r}."
            )
        if dimensions != local.DIMENSIONS:
            raise EmbeddingError(
                f"{local.MODEL_NAME} produces {local.DIMENSIONS}-dimensional vectors, but"
                f" {dimensions} are configured (EMBEDDING_DIMENSIONS)."
            )
        return local.LocalEmbeddingProvider(batch_tokens=batch_tokens)
    if provider == "openai":
        from core.embeddings.openai_compat import OpenAIEmbeddingProvider

        return OpenAIEmbeddingProvider(
            model=model or "",
            dimensions=dimensions,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            request_dimensions=request_dimensions,
        )
    raise EmbeddingError(
        f"Unknown embedding provider {provider!r}; expected one of {', '.join(PROVIDERS)}."
    )


def get_embedding_provider() -> EmbeddingProvider:
    """The provider of the current embedding generation: the one configured in settings, or the
    next model's (``EMBEDDING_NEXT_*``) once a migration cut over to it
    (``core.embeddings.generations``). Built once per process and shared by its threads."""
    from core.embeddings.generations import query_provider

    return query_provider(_cached.get())


def settings_embedding_provider() -> EmbeddingProvider:
    """The provider ``EMBEDDING_*`` configures, whichever generation is current."""
    return _cached.get()


def next_embedding_provider() -> EmbeddingProvider | None:
    """The provider ``EMBEDDING_NEXT_*`` configures, or None when no next model is."""
    return _next.get().provider


def reset_embedding_provider() -> None:
    """Forget the cached providers so the next call rebuilds them (for tests and
    reconfiguration)."""
    from core.embeddings.generations import forget_state

    _cached.reset()
    _next.reset()
    forget_state()


def _provider_from_settings() -> EmbeddingProvider:
    return create_embedding_provider(
        settings.EMBEDDING_PROVIDER,
        model=settings.EMBEDDING_MODEL,
        base_url=settings.EMBEDDING_BASE_URL,
        api_key=settings.EMBEDDING_API_KEY,
        dimensions=settings.EMBEDDING_DIMENSIONS,
        batch_tokens=settings.EMBEDDING_BATCH_TOKENS,
        timeout=settings.EMBEDDING_TIMEOUT,
        request_dimensions=settings.EMBEDDING_REQUEST_DIMENSIONS,
    )


class _Next:
    """The next model's provider, or None (a holder: ``PerProcess`` keeps only built values)."""

    def __init__(self, provider: EmbeddingProvider | None) -> None:
        self.provider = provider


def _next_from_settings() -> _Next:
    if not (settings.EMBEDDING_NEXT_PROVIDER or settings.EMBEDDING_NEXT_MODEL):
        return _Next(None)
    provider = settings.EMBEDDING_NEXT_PROVIDER or "openai"
    # Unset for an OpenAI-compatible model: learned from its first answer (a migration's start
    # asks for one); the local model has its own.
    dimensions = settings.EMBEDDING_NEXT_DIMENSIONS or (0 if provider == "openai" else None)
    try:
        return _Next(
            create_embedding_provider(
                provider,
                model=settings.EMBEDDING_NEXT_MODEL,
                base_url=settings.EMBEDDING_NEXT_BASE_URL,
                api_key=settings.EMBEDDING_NEXT_API_KEY,
                dimensions=DEFAULT_DIMENSIONS if dimensions is None else dimensions,
                batch_tokens=settings.EMBEDDING_BATCH_TOKENS,
                timeout=settings.EMBEDDING_TIMEOUT,
                request_dimensions=settings.EMBEDDING_REQUEST_DIMENSIONS,
            )
        )
    except EmbeddingError:
        # A next model the settings cannot build never takes searches down with it: no
        # migration can start (``embeddings start`` says the next model is not configured).
        logger.exception("EMBEDDING_NEXT_* does not configure a usable model")
        return _Next(None)


_cached: PerProcess[EmbeddingProvider] = PerProcess(_provider_from_settings)
_next: PerProcess[_Next] = PerProcess(_next_from_settings)
