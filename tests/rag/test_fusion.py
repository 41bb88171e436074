from __future__ import annotations

from rag.search import rank_fusion

VECTOR = [(1, 0.9), (2, 0.8), (3, 0.1)]
KEYWORD = [(3, 12.0), (1, 6.0), (4, 3.0)]


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = dict(rank_fusion({"vector": VECTOR, "keyword": KEYWORD}, method="rrf", rrf_k=60))
    assert fused[1] == 1 / 61 + 1 / 62
    assert fused[3] == 1 / 63 + 1 / 61
    assert fused[4] == 1 / 63


def test_rrf_weights_scale_each_list() -> None:
    fused = dict(
        rank_fusion({"vector": VECTOR, "keyword": KEYWORD}, method="rrf", weights={"keyword": 2.0})
    )
    assert fused[4] == 2 / 63


def test_weighted_fusion_of_min_max_normalised_scores() -> None:
    fused = rank_fusion(
        {"vector": VECTOR, "keyword": KEYWORD},
        method="weighted",
        weights={"vector": 0.5, "keyword": 0.5},
    )
    scores = dict(fused)
    assert scores[1] == 0.5 * 1.0 + 0.5 * (6 - 3) / 9
    assert scores[3] == 0.5 * 0.0 + 0.5 * 1.0
    assert scores[2] == 0.5 * (0.8 - 0.1) / 0.8
    assert [item for item, _ in fused] == [1, 3, 2, 4]


def test_simple_fusion_takes_the_best_normalised_score() -> None:
    scores = dict(rank_fusion({"vector": VECTOR, "keyword": KEYWORD}, method="simple"))
    assert scores == {1: 1.0, 2: 0.875, 3: 1.0, 4: 0.0}


def test_ties_break_by_id_and_empty_lists_are_ignored() -> None:
    assert rank_fusion({"vector": [(5, 1.0), (2, 1.0)], "keyword": []}, method="weighted") == [
        (2, 1.0),
        (5, 1.0),
    ]
