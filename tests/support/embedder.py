"""The test suite's stand-in embedder, and how a test chooses between it and the real model.

all-MiniLM-L6-v2 costs seconds to load in every xdist worker and milliseconds per text (tens of
milliseconds on a loaded two-core machine), and most tests store or fetch vectors without
checking what they mean. Those tests get ``HashedEmbeddingProvider``: a deterministic hashed
bag of words and character trigrams, with the configured model's width (384), unit-length
float32 rows and a model id of its own (``standin:hashed-ngrams``), so every vector it writes is
labelled as what it is and never compared with a real model's. Texts that share words or word
parts are near; unrelated texts are nearly orthogonal. It understands no synonyms: a test whose
subject is ranking or recall by meaning runs on the real model.

Which provider a test gets (``tests/conftest.py``, fixture ``_embedder``):

- the real model when the test (or its module or class) is marked
  ``@pytest.mark.real_embeddings``, or when ``ENGRAM_TEST_REAL_EMBEDDINGS=1`` is set for the run;
- otherwise the stand-in, whenever the settings ask for the local provider (a test that
  configures the OpenAI-compatible provider gets that one, as configured).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from django.conf import settings

from core import embeddings
from core.embeddings import EmbeddingError, EmbeddingMatrix, EmbeddingProvider, EmbeddingVector
from core.embeddings.base import as_text_list, empty_matrix
from core.process_cache import PerProcess

MODEL_ID = "standin:hashed-ngrams"
#: A whole word weighs this much more than each of its character trigrams.
WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.35
_WORD = re.compile(r"\w+")
#: A text with no word at all (empty, punctuation only) still gets a unit vector, its own.
_NOTHING = "\0nothing"

#: Set to 1 (or any non-empty value but 0) to run every test on the real model.
REAL_EVERYWHERE = os.environ.get("ENGRAM_TEST_REAL_EMBEDDINGS", "") not in ("", "0")


@lru_cache(maxsize=65536)
def _slot(feature: str, dimensions: int) -> tuple[int, float]:
    """The dimension a feature lands on and its sign (signed feature hashing)."""
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    number = int.from_bytes(digest, "big")
    return number % dimensions, 1.0 if (number >> 63) & 1 else -1.0


def features(text: str) -> dict[str, float]:
    """Weighted features of ``text``: its lower-cased words, and their character trigrams
    (with word boundaries marked), so "deploy" and "deploys" share most of their weight."""
    weights: dict[str, float] = {}
    for word in _WORD.findall(text.lower()):
        weights["w:" + word] = weights.get("w:" + word, 0.0) + WORD_WEIGHT
        marked = f"<{word}>"
        for start in range(len(marked) - 2):
            gram = "g:" + marked[start : start + 3]
            weights[gram] = weights.get(gram, 0.0) + TRIGRAM_WEIGHT
    return weights or {_NOTHING: 1.0}


class HashedEmbeddingProvider:
    """A deterministic, model-free ``EmbeddingProvider`` (see the module docstring)."""

    model_id = MODEL_ID

    def __init__(self, dimensions: int) -> None:
        if dimensions <= 0:
            raise EmbeddingError(f"dimensions must be positive, got {dimensions}")
        self.dimensions = dimensions

    def embed_documents(self, texts: Sequence[str]) -> EmbeddingMatrix:
        text_list = as_text_list(texts)
        if not text_list:
            return empty_matrix(self.dimensions)
        vectors = np.zeros((len(text_list), self.dimensions), dtype=np.float32)
        for row, text in enumerate(text_list):
            if not isinstance(text, str):
                raise TypeError(f"texts must be str, got {type(text).__name__}")
            for feature, weight in features(text).items():
                index, sign = _slot(feature, self.dimensions)
                vectors[row, index] += sign * weight
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        # A text whose features cancel out exactly (vanishingly rare) falls back to its own slot.
        for empty in np.flatnonzero(norms[:, 0] == 0).tolist():
            index, sign = _slot(_NOTHING + text_list[empty], self.dimensions)
            vectors[empty, index], norms[empty, 0] = sign, 1.0
        normalised: EmbeddingMatrix = (vectors / norms).astype(np.float32)
        return normalised

    def embed_query(self, text: str) -> EmbeddingVector:
        vector: EmbeddingVector = self.embed_documents([text])[0]
        return vector


def _standin_or_configured() -> EmbeddingProvider:
    """The stand-in in place of the local model; any other configured provider as it is."""
    if settings.EMBEDDING_PROVIDER == "local":
        return HashedEmbeddingProvider(settings.EMBEDDING_DIMENSIONS)
    return embeddings._provider_from_settings()


#: The provider caches a test switches between; the real one is the package's own.
REAL = embeddings._cached
STANDIN: PerProcess[EmbeddingProvider] = PerProcess(_standin_or_configured)


def use(*, real: bool) -> None:
    """Make ``get_embedding_provider()`` (and ``reset_embedding_provider()``) use the real
    provider's cache or the stand-in's. Each keeps its instance across tests, so the real model
    loads at most once per worker, and only in a worker that runs a real-model test."""
    embeddings._cached = REAL if real or REAL_EVERYWHERE else STANDIN
