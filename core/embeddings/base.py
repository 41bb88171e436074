"""The embedding provider interface shared by every backend."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

#: ``(n, dimensions)`` float32 rows, one per input text, in input order.
EmbeddingMatrix: TypeAlias = npt.NDArray[np.float32]
#: ``(dimensions,)`` float32 vector.
EmbeddingVector: TypeAlias = npt.NDArray[np.float32]


class EmbeddingError(RuntimeError):
    """Embeddings could not be computed: bad configuration, corrupt model files or a failed call.

    ``status_code`` is the HTTP status when a remote endpoint answered with an error, else None.
    """

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class EmbeddingProvider(Protocol):
    """Turns texts into fixed-size float32 vectors.

    Implementations are safe to share between threads and may load their model lazily on first
    use. Every stored vector should be kept next to ``model_id`` so that vectors from different
    models are never compared.
    """

    @property
    def model_id(self) -> str:
        """Stable identifier of the model and backend, e.g. ``"local:all-MiniLM-L6-v2"``."""
        ...

    @property
    def dimensions(self) -> int:
        """Length of every vector this provider returns."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> EmbeddingMatrix:
        """Embed ``texts`` and return a ``(len(texts), dimensions)`` float32 array.

        Preconditions: every item is a ``str``; remote providers also reject empty strings.
        An empty sequence returns a ``(0, dimensions)`` array without doing any work.
        Raises EmbeddingError if the vectors cannot be produced.
        """
        ...

    def embed_query(self, text: str) -> EmbeddingVector:
        """Embed one search query and return a ``(dimensions,)`` float32 vector.

        Raises EmbeddingError if the vector cannot be produced.
        """
        ...


def as_text_list(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, refusing a lone ``str`` (itself a sequence of one-letter strings)."""
    if isinstance(texts, str):
        raise TypeError("embed_documents takes a sequence of texts, not a single str")
    return list(texts)


def empty_matrix(dimensions: int) -> EmbeddingMatrix:
    """The result for an empty input: zero rows of the provider's width."""
    return np.empty((0, dimensions), dtype=np.float32)


def vector_literal(vector: Any) -> str:
    """A vector as a pgvector literal, for raw SQL (cast it: ``%s::vector``). A search passes
    its query's vector to several statements: the last few literals are kept."""
    values = np.asarray(vector)
    return _literal(values.dtype.str, values.tobytes())


@functools.lru_cache(maxsize=8)
def _literal(dtype: str, raw: bytes) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in np.frombuffer(raw, dtype=dtype).tolist()) + "]"
