"""Embeddings from any server speaking OpenAI's `POST /v1/embeddings` (OpenAI, vLLM, Ollama)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import openai

from core import metrics
from core.embeddings.base import (
    EmbeddingError,
    EmbeddingMatrix,
    EmbeddingVector,
    as_text_list,
    empty_matrix,
)
from core.openai_client import openai_client

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 2
#: Inputs per request; far below OpenAI's 2048-input limit so one request stays small.
DEFAULT_BATCH_SIZE = 256


class OpenAIEmbeddingProvider:
    """Remote embeddings through the ``openai`` client.

    Transient failures (connection errors, timeouts, 408/409/429 and 5xx) are retried by the
    client itself, ``max_retries`` times with backoff; other errors raise EmbeddingError at once.
    """

    def __init__(
        self,
        *,
        model: str,
        dimensions: int,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        batch_size: int = DEFAULT_BATCH_SIZE,
        request_dimensions: bool = False,
    ) -> None:
        """Preconditions: ``model`` is non-empty; ``dimensions`` and ``batch_size`` are positive.

        ``dimensions`` is the width every returned vector must have; 0: the width of the first
        answer, which every later one must have (``EMBEDDING_NEXT_DIMENSIONS`` unset).
        ``request_dimensions`` also sends it as the ``dimensions`` parameter, which asks models
        that support it (OpenAI's text-embedding-3 family) to shorten their vectors; many
        servers reject it.
        ``base_url`` (e.g. ``http://localhost:11434/v1``) defaults to OpenAI's API.
        """
        if not model:
            raise EmbeddingError("An OpenAI-compatible embedding provider needs a model name.")
        if dimensions < 0 or batch_size <= 0:
            raise ValueError("dimensions must not be negative, and batch_size must be positive")
        self.model_id = f"openai:{model}"
        self.dimensions = dimensions
        self._model = model
        self._batch_size = batch_size
        self._request_dimensions = request_dimensions
        self._timeout = timeout
        self._client = openai_client(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    @metrics.embedding_timed("openai", "documents")
    def embed_documents(self, texts: Sequence[str]) -> EmbeddingMatrix:
        """Embed ``texts`` in requests of at most ``batch_size`` inputs, in input order.

        Precondition: no text is empty (OpenAI-compatible servers reject empty inputs).
        """
        return self._embed_texts(texts)

    def _embed_texts(self, texts: Sequence[str]) -> EmbeddingMatrix:
        text_list = as_text_list(texts)
        if not text_list:
            return empty_matrix(self.dimensions)
        empty_at = [i for i, text in enumerate(text_list) if not text]
        if empty_at:
            raise EmbeddingError(f"Cannot embed empty texts (positions {empty_at[:10]}).")
        first = self._embed_batch(text_list[: self._batch_size])
        vectors = np.empty((len(text_list), self.dimensions), dtype=np.float32)
        vectors[: len(first)] = first
        for start in range(self._batch_size, len(text_list), self._batch_size):
            batch = text_list[start : start + self._batch_size]
            vectors[start : start + len(batch)] = self._embed_batch(batch)
        return vectors

    @metrics.embedding_timed("openai", "query")
    def embed_query(self, text: str) -> EmbeddingVector:
        """Embed one query; see EmbeddingProvider.embed_query."""
        vector: EmbeddingVector = self._embed_texts([text])[0]
        return vector

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    def _embed_batch(self, texts: list[str]) -> EmbeddingMatrix:
        data = self._request(texts)
        vectors: EmbeddingMatrix | None = None
        # Servers may answer out of order; each item says which input it belongs to.
        seen: set[int] = set()
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            embedding = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not isinstance(embedding, list):
                raise EmbeddingError("Embedding endpoint returned a malformed item.")
            if not 0 <= index < len(texts) or index in seen:
                raise EmbeddingError(
                    f"Embedding endpoint returned an unexpected index {index}"
                    f" for a batch of {len(texts)} inputs."
                )
            if not self.dimensions and embedding:
                self.dimensions = len(embedding)  # learned from the first answer
            if len(embedding) != self.dimensions:
                raise EmbeddingError(
                    f"Model {self._model!r} returned {len(embedding)}-dimensional vectors,"
                    f" but {self.dimensions} are configured (EMBEDDING_DIMENSIONS)."
                )
            seen.add(index)
            if vectors is None:
                vectors = np.empty((len(texts), self.dimensions), dtype=np.float32)
            try:
                vectors[index] = embedding
            except (TypeError, ValueError) as exc:
                raise EmbeddingError("Embedding endpoint returned a non-numeric vector.") from exc
        if len(seen) != len(texts) or vectors is None:
            raise EmbeddingError(
                f"Embedding endpoint returned {len(seen)} vectors for {len(texts)} inputs."
            )
        return vectors

    def _request(self, texts: list[str]) -> list[Any]:
        """The answer's ``data`` items as plain JSON: the SDK's typed models validate every
        number of every vector, which cost about 90 % of a migration's time at 1,536
        dimensions (bench/rag/embedding_migration.py); the checks above are the ones that
        matter. Retries, timeouts and error mapping stay the SDK's."""
        try:
            raw = self._client.embeddings.with_raw_response.create(
                model=self._model,
                input=texts,
                encoding_format="float",
                dimensions=self.dimensions
                if self._request_dimensions and self.dimensions
                else openai.omit,
            )
            try:
                body = raw.http_response.json()
            except ValueError as exc:
                raise EmbeddingError("Embedding endpoint answered with invalid JSON.") from exc
            data = body.get("data") if isinstance(body, dict) else None
            if not isinstance(data, list):
                raise EmbeddingError("Embedding endpoint answered without a data list.")
            return data
        except openai.APITimeoutError as exc:
            raise EmbeddingError(
                f"Embedding request to {self._client.base_url} timed out after"
                f" {self._timeout}s per attempt."
            ) from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingError(
                f"Cannot reach the embedding endpoint {self._client.base_url}: {exc}"
            ) from exc
        except openai.APIStatusError as exc:
            raise EmbeddingError(
                f"Embedding endpoint answered HTTP {exc.status_code}: {exc.message}",
                status_code=exc.status_code,
            ) from exc
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"Embedding request failed: {exc}") from exc
