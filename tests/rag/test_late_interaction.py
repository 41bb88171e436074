"""Late interaction (``rag.late_interaction``): MaxSim over the local model's token states, and
the re-scoring of a search's best candidates."""

from __future__ import annotations

import numpy as np
import pytest

from core.embeddings.local import LocalEmbeddingProvider
from rag import late_interaction
from rag.late_interaction import StateCache, late_rerank, late_scores, rarity_weights
from rag.search import RankedHit

# Real embeddings: a ranking by the model's token states.
pytestmark = pytest.mark.real_embeddings


def test_token_states_are_the_tokens_without_markers_unit_length_in_input_order() -> None:
    provider = LocalEmbeddingProvider(batch_tokens=16)  # several batches
    texts = ["Pottery class", "A much longer sentence about painting sunsets by the lake.", "x"]
    found = provider.token_states(texts)
    assert found[0][0] == ["pottery", "class"]
    for text, (tokens, states) in zip(texts, found, strict=True):
        assert "[CLS]" not in tokens and "[SEP]" not in tokens
        assert states.shape == (len(tokens), 384) and states.dtype == np.float32
        assert np.allclose(np.linalg.norm(states, axis=1), 1, atol=1e-5)
        alone_tokens, alone = provider.token_states([text])[0]
        assert alone_tokens == tokens and np.allclose(alone, states, atol=1e-4)
    assert provider.token_states([]) == []


def test_a_candidate_naming_what_the_query_asks_scores_higher() -> None:
    scores = late_scores(
        "Which instruments does Melanie play?",
        ["Melanie: I play the violin and the clarinet.", "Melanie: We had pasta for dinner."],
    )
    assert scores[0] > scores[1]
    assert all(-1 <= score <= 1 for score in scores)
    assert late_scores("anything", []) == []


def test_query_tokens_weigh_by_their_rarity_among_the_candidates() -> None:
    candidates = [["melanie", ":", "pottery"], ["melanie", ":", "camping"], ["melanie", "paints"]]
    weights = rarity_weights(["activities", "melanie", "pottery"], candidates)
    assert weights.sum() == pytest.approx(1)
    # Every candidate has "melanie": the least; none has "activities": the most.
    assert weights[0] > weights[2] > weights[1]
    assert weights[1] / weights[0] == pytest.approx(np.log(4 / 3.5) / np.log(4 / 0.5), rel=1e-5)
    # Among many candidates, a word all of them have weighs the floor.
    many = rarity_weights(["melanie", "pottery"], [["melanie", str(i)] for i in range(30)])
    assert many[0] / many[1] == pytest.approx(0.1 / np.log(31 / 0.5), rel=1e-5)
    # Equal rarity: the plain mean.
    assert np.allclose(rarity_weights(["a", "b"], [["c"], ["d"]]), [0.5, 0.5])


def test_a_word_every_candidate_shares_does_not_decide_the_order() -> None:
    """The named speaker is in every turn; what the question asks about decides."""
    texts = [
        "Melanie: I took my kids camping in the mountains last weekend.",
        "Melanie: Melanie here, Melanie says hi from Melanie's house.",
        "Melanie: I signed up for a pottery class.",
    ]
    scores = late_scores("What activities does Melanie partake in?", texts)
    assert scores[1] < scores[0] and scores[1] < scores[2]


def _hits(*scores: float) -> list[RankedHit]:
    return [RankedHit(unit_id=i, score=s) for i, s in enumerate(scores, start=1)]


def test_rerank_lifts_the_best_late_scores_within_depth_and_keeps_the_scale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    late = {"one": 0.2, "two": 0.9, "three": 0.5, "four": 0.99}
    monkeypatch.setattr(
        late_interaction, "late_scores", lambda q, texts, reads=None: [late[t] for t in texts]
    )
    texts = {1: "one", 2: "two", 3: "three", 4: "four"}
    ranked = late_rerank(_hits(1.0, 0.9, 0.8, 0.7), texts, query="q", weight=1.0, depth=3)
    assert [hit.unit_id for hit in ranked] == [2, 3, 1, 4]
    assert ranked[0].score == pytest.approx(1.0)  # divided by the best, which passed 1
    assert [hit.late_score for hit in ranked] == [0.9, 0.5, 0.2, None]  # 4: below the depth
    # Off, or with one candidate only, nothing is read or moved.
    unchanged = late_rerank(_hits(1.0, 0.9), texts, query="q", weight=0.0)
    assert [(h.unit_id, h.score, h.late_score) for h in unchanged] == [
        (1, 1.0, None),
        (2, 0.9, None),
    ]
    single = late_rerank(_hits(1.0), texts, query="q", weight=1.0)
    assert single[0].late_score is None


def test_states_of_texts_scored_lately_are_not_computed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(late_interaction, "_cache", StateCache(10_000))
    model = late_interaction.late_model()
    asked: list[list[str]] = []
    real = model.token_states

    def counted(texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        asked.append(list(texts))
        return real(texts)

    monkeypatch.setattr(model, "token_states", counted)
    texts = ["Caroline: I went to a pride parade.", "Melanie: I love pottery."]
    question = "What events has Caroline joined?"
    first = late_scores(question, texts)
    again = late_scores(question, [texts[1], texts[0]])
    assert again == first[::-1]  # the same, cached or not
    late_scores(question, [texts[1], "Jon: I dance.", texts[0]])
    # The query goes with the texts the cache lacks; cached texts are not asked for again.
    assert asked == [[question, *texts], [question], [question, "Jon: I dance."]]


def test_the_cache_drops_the_least_recently_used_past_its_size() -> None:
    cache = StateCache(max_tokens=5)
    states = {name: np.ones((2, 384), dtype=np.float32) for name in "abc"}
    cache.put("a", ["a", "x"], states["a"])
    cache.put("b", ["b", "x"], states["b"])
    assert cache.get("a") is not None  # "a" used last: "b" goes first
    cache.put("c", ["c", "x"], states["c"])
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    assert cache.tokens == 4 and len(cache) == 2
    kept = cache.get("c")
    assert kept is not None and kept[0] == ("c", "x") and kept[1].dtype == np.float32
    assert np.allclose(kept[1], 1.0)
    cache.put("huge", list("abcdef"), np.ones((6, 384), dtype=np.float32))  # larger than it
    assert cache.get("huge") is None and len(cache) == 2


def test_a_query_embedded_by_the_local_model_keeps_its_token_states() -> None:
    model = late_interaction.late_model()
    query = "Which pottery class did Melanie take in the spring?"
    vector = model.embed_query(query)
    assert np.allclose(vector, model.embed_documents([query])[0], atol=1e-5)
    kept = model.query_token_states(query)
    assert kept is not None
    tokens, states = model.token_states([query])[0]
    assert kept[0] == tokens and np.allclose(kept[1], states, atol=1e-5)
    assert model.query_token_states("a query never embedded") is None


def test_quantised_states_come_back_within_half_a_step() -> None:
    rng = np.random.default_rng(7)
    states = rng.normal(size=(12, 384)).astype(np.float32)
    states /= np.linalg.norm(states, axis=1, keepdims=True)
    values, scales = late_interaction.quantise(states)
    assert values.dtype == np.int8 and scales.dtype == np.float32
    restored = late_interaction.dequantise(values, scales)
    assert np.all(np.abs(restored - states) <= scales[:, None] / 254 + 1e-7)
    assert np.array_equal(late_interaction.rounded(restored), restored)


def test_stored_reads_are_used_instead_of_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(late_interaction, "_cache", StateCache(10_000))
    texts = ["Caroline: I went to a pride parade.", "Melanie: I love pottery."]
    question = "What events has Caroline joined?"
    computed = late_scores(question, texts)
    reads = dict(zip(texts, late_interaction.read_texts(texts), strict=True))
    monkeypatch.setattr(late_interaction, "_cache", StateCache(10_000))
    model = late_interaction.late_model()
    real = model.token_states
    asked: list[list[str]] = []

    def counted(batch: list[str]) -> list[tuple[list[str], np.ndarray]]:
        asked.append(list(batch))
        return real(batch)

    monkeypatch.setattr(model, "token_states", counted)
    assert late_scores(question, texts, reads) == computed
    assert all(text not in call for call in asked for text in texts)
