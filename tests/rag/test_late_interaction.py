"""Late interaction (``rag.late_interaction``): MaxSim over the local model's token states, and
the re-scoring of a search's best candidates."""

from __future__ import annotations

import numpy as np
import pytest

from core.embeddings.local import LocalEmbeddingProvider
from rag import late_interaction
from rag.late_interaction import late_rerank, late_scores
from rag.search import RankedHit


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


def _hits(*scores: float) -> list[RankedHit]:
    return [RankedHit(unit_id=i, score=s) for i, s in enumerate(scores, start=1)]


def test_rerank_lifts_the_best_late_scores_within_depth_and_keeps_the_scale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    late = {"one": 0.2, "two": 0.9, "three": 0.5, "four": 0.99}
    monkeypatch.setattr(late_interaction, "late_scores", lambda q, texts: [late[t] for t in texts])
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
