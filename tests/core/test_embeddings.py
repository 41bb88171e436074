"""Embedding providers: the real local model, and the OpenAI client against a local stand-in."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.embeddings import (
    EmbeddingError,
    create_embedding_provider,
    get_embedding_provider,
    local,
    reset_embedding_provider,
)
from core.embeddings.local import (
    DIMENSIONS,
    LocalEmbeddingProvider,
    default_model_path,
    default_tokenizer_path,
    plan_batches,
)
from core.embeddings.openai_compat import OpenAIEmbeddingProvider
from tests.support.openai_standin import (
    OpenAIStandIn,
    fake_embedding,
    openai_standin_fixture,  # noqa: F401 (pytest collects fixtures from module globals)
)

MIXED_LENGTH_TEXTS = [
    "Short note.",
    "The deployment failed because the database migration timed out after ten minutes, so the "
    "release was rolled back and the on-call engineer opened an incident. " * 6,
    "Alice prefers tea.",
    "Quarterly revenue grew by twelve percent, driven mostly by the new enterprise plan.",
    "word " * 400,  # far past the 256-token limit
    "ok",
    "Remember to renew the TLS certificate before it expires next month.",
]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- local model -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_provider() -> LocalEmbeddingProvider:
    provider = LocalEmbeddingProvider()
    provider.load()
    return provider


def test_local_provider_loads_nothing_until_first_use() -> None:
    provider = LocalEmbeddingProvider()

    assert not provider.is_loaded
    assert provider.model_id == "local:all-MiniLM-L6-v2"
    assert provider.dimensions == DIMENSIONS == 384


def test_local_vectors_are_unit_length_float32(local_provider: LocalEmbeddingProvider) -> None:
    vectors = local_provider.embed_documents(["Alice prefers tea.", "Bob drinks coffee."])

    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_local_query_matches_document_embedding(local_provider: LocalEmbeddingProvider) -> None:
    query = local_provider.embed_query("Where is the office?")

    assert query.shape == (384,)
    assert query.dtype == np.float32
    np.testing.assert_array_equal(
        query, local_provider.embed_documents(["Where is the office?"])[0]
    )


def test_local_rejects_a_lone_string(local_provider: LocalEmbeddingProvider) -> None:
    with pytest.raises(TypeError, match="not a single str"):
        local_provider.embed_documents("Alice prefers tea.")


def test_local_empty_input_returns_empty_matrix() -> None:
    provider = LocalEmbeddingProvider()

    result = provider.embed_documents([])

    assert result.shape == (0, 384)
    assert result.dtype == np.float32
    assert not provider.is_loaded


def test_local_embeddings_are_deterministic(local_provider: LocalEmbeddingProvider) -> None:
    first = local_provider.embed_documents(MIXED_LENGTH_TEXTS)
    second = LocalEmbeddingProvider().embed_documents(MIXED_LENGTH_TEXTS)

    np.testing.assert_array_equal(first, second)


def test_local_paraphrases_are_closer_than_unrelated_text(
    local_provider: LocalEmbeddingProvider,
) -> None:
    anchor, paraphrase, unrelated = local_provider.embed_documents(
        [
            "How do I reset my password?",
            "What are the steps to change my login password?",
            "The recipe calls for two cups of flour and a pinch of salt.",
        ]
    )

    assert cosine(anchor, paraphrase) > cosine(anchor, unrelated) + 0.3


def test_local_token_cap_batching_matches_one_at_a_time(
    local_provider: LocalEmbeddingProvider,
) -> None:
    one_at_a_time = np.stack([local_provider.embed_query(text) for text in MIXED_LENGTH_TEXTS])
    # 300 padded tokens forces several batches of different widths, and the 256-token text
    # exceeds the cap on its own.
    small_batches = LocalEmbeddingProvider(batch_tokens=300).embed_documents(MIXED_LENGTH_TEXTS)
    one_batch = LocalEmbeddingProvider(batch_tokens=100_000).embed_documents(MIXED_LENGTH_TEXTS)

    np.testing.assert_allclose(small_batches, one_at_a_time, atol=1e-5)
    np.testing.assert_allclose(one_batch, one_at_a_time, atol=1e-5)


def test_local_truncates_at_256_tokens(local_provider: LocalEmbeddingProvider) -> None:
    # [CLS] + words + [SEP]: 253 words plus one more fill exactly 256 tokens.
    prefix = "hello " * 253
    fits_a, fits_b, cut_a, cut_b = local_provider.embed_documents(
        [prefix + "river", prefix + "mountain", prefix + "hello river", prefix + "hello mountain"]
    )

    assert not np.allclose(fits_a, fits_b)
    np.testing.assert_array_equal(cut_a, cut_b)


def test_local_concurrent_first_use_loads_once_and_agrees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sessions_loaded: list[object] = []
    real_load_session = local._load_session

    def counting_load_session(*args: Any, **kwargs: Any) -> Any:
        sessions_loaded.append(object())
        return real_load_session(*args, **kwargs)

    monkeypatch.setattr(local, "_load_session", counting_load_session)
    provider = LocalEmbeddingProvider()
    results: list[np.ndarray] = []
    barrier = threading.Barrier(4)

    def embed() -> None:
        barrier.wait()
        results.append(provider.embed_query("concurrent first use"))

    threads = [threading.Thread(target=embed) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(sessions_loaded) == 1
    assert len(results) == 4
    for vector in results[1:]:
        np.testing.assert_array_equal(vector, results[0])


def test_local_rejects_tokenizer_with_wrong_checksum(tmp_path: Path) -> None:
    # Still valid JSON, so only the checksum can catch the change.
    tampered = tmp_path / "tokenizer.json"
    tampered.write_bytes(default_tokenizer_path().read_bytes() + b"\n")
    provider = LocalEmbeddingProvider(tokenizer_path=tampered)

    with pytest.raises(EmbeddingError, match=r"tokenizer.*sha256"):
        provider.embed_query("anything")
    assert not provider.is_loaded


def test_local_rejects_model_with_wrong_checksum(tmp_path: Path) -> None:
    corrupted = tmp_path / "model.onnx"
    data = bytearray(default_model_path().read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupted.write_bytes(bytes(data))

    with pytest.raises(EmbeddingError, match=r"model.*sha256"):
        LocalEmbeddingProvider(model_path=corrupted).load()


def test_local_reports_missing_tokenizer(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="Cannot read"):
        LocalEmbeddingProvider(tokenizer_path=tmp_path / "absent.json").load()


def test_shipped_tokenizer_carries_its_notice() -> None:
    notice = default_tokenizer_path().parent / "NOTICE"

    assert "Apache License" in notice.read_text()


@pytest.mark.parametrize(
    ("lengths", "cap", "expected"),
    [
        ([], 100, []),
        ([10, 50, 20, 50], 100, [[1, 3], [2, 0]]),
        ([300, 5], 100, [[0], [1]]),
        ([4, 4, 4, 4, 4], 8, [[0, 1], [2, 3], [4]]),
    ],
)
def test_plan_batches_respects_cap_and_covers_every_index(
    lengths: list[int], cap: int, expected: list[list[int]]
) -> None:
    assert plan_batches(lengths, cap) == expected


# --- OpenAI-compatible endpoint ----------------------------------------------------------------


def make_openai_provider(
    server: OpenAIStandIn,
    *,
    dimensions: int = 8,
    batch_size: int = 256,
    max_retries: int = 0,
    request_dimensions: bool = False,
) -> OpenAIEmbeddingProvider:
    return OpenAIEmbeddingProvider(
        model="text-embedding-test",
        dimensions=dimensions,
        base_url=server.base_url,
        api_key="sk-test",
        timeout=5.0,
        max_retries=max_retries,
        batch_size=batch_size,
        request_dimensions=request_dimensions,
    )


def test_openai_request_shape(openai_standin: OpenAIStandIn) -> None:
    provider = make_openai_provider(openai_standin)

    vectors = provider.embed_documents(["alpha", "beta"])

    (request,) = openai_standin.requests_to("/v1/embeddings")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body == {
        "model": "text-embedding-test",
        "input": ["alpha", "beta"],
        "encoding_format": "float",
    }
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[0], fake_embedding("alpha", 8), rtol=1e-6)
    assert provider.model_id == "openai:text-embedding-test"


def test_openai_sends_dimensions_only_when_asked(openai_standin: OpenAIStandIn) -> None:
    make_openai_provider(openai_standin, request_dimensions=True).embed_query("alpha")

    assert openai_standin.requests[-1].body["dimensions"] == 8


def test_openai_batches_and_keeps_input_order(openai_standin: OpenAIStandIn) -> None:
    openai_standin.reverse_embedding_order = True
    texts = [f"text number {i}" for i in range(5)]

    vectors = make_openai_provider(openai_standin, batch_size=2).embed_documents(texts)

    batches = [request.body["input"] for request in openai_standin.requests_to("/v1/embeddings")]
    assert batches == [texts[0:2], texts[2:4], texts[4:5]]
    expected = np.array([fake_embedding(text, 8) for text in texts], dtype=np.float32)
    np.testing.assert_array_equal(vectors, expected)


def test_openai_query_vector(openai_standin: OpenAIStandIn) -> None:
    vector = make_openai_provider(openai_standin).embed_query("alpha")

    assert vector.shape == (8,)
    assert vector.dtype == np.float32


def test_openai_dimension_mismatch_raises(openai_standin: OpenAIStandIn) -> None:
    provider = make_openai_provider(openai_standin, dimensions=16)

    with pytest.raises(EmbeddingError, match="returned 8-dimensional vectors, but 16"):
        provider.embed_documents(["alpha"])


def test_openai_empty_input_sends_nothing(openai_standin: OpenAIStandIn) -> None:
    result = make_openai_provider(openai_standin).embed_documents([])

    assert result.shape == (0, 8)
    assert openai_standin.requests == []


def test_openai_rejects_empty_text_before_sending(openai_standin: OpenAIStandIn) -> None:
    with pytest.raises(EmbeddingError, match="empty"):
        make_openai_provider(openai_standin).embed_documents(["fine", ""])
    assert openai_standin.requests == []


def test_openai_retries_transient_errors(openai_standin: OpenAIStandIn) -> None:
    openai_standin.fail(503)
    openai_standin.fail(429)

    vectors = make_openai_provider(openai_standin, max_retries=2).embed_documents(["alpha"])

    assert len(openai_standin.requests) == 3
    assert vectors.shape == (1, 8)


def test_openai_client_error_is_not_retried(openai_standin: OpenAIStandIn) -> None:
    openai_standin.fail(401)

    with pytest.raises(EmbeddingError, match="HTTP 401") as raised:
        make_openai_provider(openai_standin, max_retries=2).embed_documents(["alpha"])

    assert raised.value.status_code == 401
    assert len(openai_standin.requests) == 1


def test_openai_timeout_raises(openai_standin: OpenAIStandIn) -> None:
    openai_standin.stall(3.0)
    provider = OpenAIEmbeddingProvider(
        model="m", dimensions=8, base_url=openai_standin.base_url, timeout=0.3, max_retries=0
    )

    with pytest.raises(EmbeddingError, match="timed out"):
        provider.embed_documents(["alpha"])


# --- factory -----------------------------------------------------------------------------------


@pytest.fixture
def fake_settings(settings: Any) -> Iterator[Any]:
    """The real Django settings (restored after the test), with the provider cache cleared."""
    namespace = settings
    reset_embedding_provider()
    yield namespace
    reset_embedding_provider()


@pytest.mark.real_embeddings  # the configured default is the subject
@pytest.mark.usefixtures("fake_settings")
def test_factory_defaults_to_local_model_and_caches() -> None:
    provider = get_embedding_provider()

    assert isinstance(provider, LocalEmbeddingProvider)
    assert not provider.is_loaded
    assert get_embedding_provider() is provider
    reset_embedding_provider()
    assert get_embedding_provider() is not provider


def test_factory_builds_openai_provider_from_settings(
    fake_settings: Any, openai_standin: OpenAIStandIn
) -> None:
    fake_settings.EMBEDDING_PROVIDER = "openai"
    fake_settings.EMBEDDING_MODEL = "text-embedding-test"
    fake_settings.EMBEDDING_BASE_URL = openai_standin.base_url
    fake_settings.EMBEDDING_API_KEY = "sk-settings"
    fake_settings.EMBEDDING_DIMENSIONS = 8

    provider = get_embedding_provider()
    provider.embed_query("alpha")

    assert provider.model_id == "openai:text-embedding-test"
    assert provider.dimensions == 8
    assert openai_standin.requests[0].headers["authorization"] == "Bearer sk-settings"


@pytest.mark.parametrize(
    ("provider", "model", "dimensions", "message"),
    [
        ("magic", None, 384, "Unknown embedding provider"),
        ("local", None, 768, "384-dimensional"),
        ("local", "bge-small", 384, "only serves"),
        ("openai", None, 384, "needs a model"),
    ],
)
def test_factory_rejects_bad_configuration(
    provider: str, model: str | None, dimensions: int, message: str
) -> None:
    with pytest.raises(EmbeddingError, match=message):
        create_embedding_provider(provider, model=model, dimensions=dimensions)
