"""The suite's stand-in embedder (tests/support/embedder.py): the provider contract, and which
tests get it."""

from __future__ import annotations

import numpy as np
import pytest

from core.embeddings import get_embedding_provider
from core.embeddings.local import LocalEmbeddingProvider
from tests.support import embedder
from tests.support.embedder import MODEL_ID, HashedEmbeddingProvider


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_rows_are_unit_float32_of_the_configured_width_and_deterministic() -> None:
    provider = HashedEmbeddingProvider(384)
    texts = ["Deploys run on Fridays.", "", "!!!", "Cats sleep most of the day."]
    vectors = provider.embed_documents(texts)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(HashedEmbeddingProvider(384).embed_documents(texts), vectors)
    np.testing.assert_array_equal(provider.embed_query(texts[0]), vectors[0])
    assert provider.embed_documents([]).shape == (0, 384)
    with pytest.raises(TypeError):
        provider.embed_documents("a lone string")


def test_shared_words_are_near_and_unrelated_texts_far() -> None:
    provider = HashedEmbeddingProvider(384)
    deploy, deploys, cats = provider.embed_documents(
        [
            "When does the billing service deploy?",
            "The billing service deploys on Fridays.",
            "Cats sleep.",
        ]
    )
    assert cosine(deploy, deploys) > 0.4
    assert abs(cosine(deploy, cats)) < 0.2
    assert cosine(deploy, deploys) > cosine(deploy, cats) + 0.3


def test_an_unmarked_test_gets_the_stand_in_under_its_own_model_id() -> None:
    if embedder.REAL_EVERYWHERE:
        pytest.skip("ENGRAM_TEST_REAL_EMBEDDINGS is set: every test runs on the real model")
    provider = get_embedding_provider()
    assert isinstance(provider, HashedEmbeddingProvider)
    assert provider.model_id == MODEL_ID and provider.dimensions == 384


@pytest.mark.real_embeddings
def test_a_marked_test_gets_the_real_model() -> None:
    provider = get_embedding_provider()
    assert isinstance(provider, LocalEmbeddingProvider)
    assert provider.model_id == "local:all-MiniLM-L6-v2"
