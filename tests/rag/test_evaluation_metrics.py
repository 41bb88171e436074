"""Retrieval metrics against the reference trec_eval (via pytrec_eval), case by case and at random.

pytrec_eval is the reference on purpose: published BEIR/MTEB numbers come from it, and our
figures are only comparable with theirs if every per-query value agrees, ties included.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

import numpy as np
import pytest
import pytrec_eval

from rag.evaluation.beir import load_beir
from rag.evaluation.metrics import (
    evaluate,
    evaluate_per_query,
    mean_of_per_query,
    ndcg_cut,
    percentiles,
    recall_cut,
    reciprocal_rank_cut,
    trec_ranking,
)
from tests.support.data import SCIFACT

REFERENCE_MEASURES = {"ndcg_cut_10", "recall_10", "recall_100", "recip_rank"}
TOLERANCE = 1e-9

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]


def reference(run: Run, qrels: Qrels) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values (only for queries in both run and qrels, its default)."""
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, REFERENCE_MEASURES)
    return evaluator.evaluate(run)


def top_k_by_trec_order(scores: Mapping[str, float], k: int) -> dict[str, float]:
    # Written independently of trec_ranking: float32 score desc, then doc id desc.
    ordered = sorted(
        scores.items(), key=lambda item: (float(np.float32(item[1])), item[0]), reverse=True
    )
    return dict(ordered[:k])


def assert_matches_reference(run: Run, qrels: Qrels) -> dict[str, dict[str, float]]:
    """Compare every judged query's metrics with pytrec_eval; return ours for further checks."""
    ours = evaluate_per_query(run, qrels)
    theirs = reference(run, qrels)
    truncated = {qid: top_k_by_trec_order(scores, 10) for qid, scores in run.items()}
    theirs_rr_at_10 = reference(truncated, qrels)
    zeros = {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    assert list(ours) == list(qrels)
    for qid, values in ours.items():
        if qid not in theirs:
            # pytrec_eval skips queries the run lacks; we score them 0.
            assert values == zeros, qid
            continue
        ref = theirs[qid]
        assert values["ndcg@10"] == pytest.approx(ref["ndcg_cut_10"], abs=TOLERANCE), qid
        assert values["recall@10"] == pytest.approx(ref["recall_10"], abs=TOLERANCE), qid
        assert values["recall@100"] == pytest.approx(ref["recall_100"], abs=TOLERANCE), qid
        assert values["mrr@10"] == pytest.approx(
            theirs_rr_at_10[qid]["recip_rank"], abs=TOLERANCE
        ), qid
        # Independent of the truncation above: recip_rank over the full run is 1/rank of the
        # first relevant document, so MRR@10 is that value when the rank is <= 10, else 0.
        full_rr = ref["recip_rank"]
        expected_mrr = full_rr if full_rr > 1 / 11 else 0.0
        assert values["mrr@10"] == pytest.approx(expected_mrr, abs=TOLERANCE), qid
    return ours


# --- hand-made cases with known values -------------------------------------------------------


def test_perfect_graded_ranking_scores_one() -> None:
    qrels = {"q": {"a": 2, "b": 1, "c": 0}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0, "x": 0.5}}
    values = assert_matches_reference(run, qrels)["q"]
    assert values == {"ndcg@10": 1.0, "recall@10": 1.0, "recall@100": 1.0, "mrr@10": 1.0}


def test_nothing_relevant_retrieved_scores_zero() -> None:
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"b": 2.0, "x": 1.0}}
    values = assert_matches_reference(run, qrels)["q"]
    assert values == {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}


def test_graded_gain_is_linear_and_ideal_comes_from_qrels() -> None:
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    values = assert_matches_reference(run, qrels)["q"]
    # Linear gain: DCG = 1/log2(2) + 2/log2(3); ideal = 2/log2(2) + 1/log2(3).
    expected = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert values["ndcg@10"] == pytest.approx(expected, abs=1e-15)
    assert values["mrr@10"] == 1.0


def test_unretrieved_relevant_documents_lower_ideal_ratio_and_recall() -> None:
    qrels = {"q": {"a": 1, "b": 1}}
    run = {"q": {"a": 1.0}}
    values = assert_matches_reference(run, qrels)["q"]
    assert values["ndcg@10"] == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-15)
    assert values["recall@10"] == 0.5


def test_negative_and_zero_judgments_give_no_gain_and_are_not_relevant() -> None:
    qrels = {"q": {"a": -2, "b": 2, "c": 1, "d": 0}}
    run = {"q": {"a": 4.0, "d": 3.0, "b": 2.0, "c": 1.0}}
    values = assert_matches_reference(run, qrels)["q"]
    expected = (2 / math.log2(4) + 1 / math.log2(5)) / (2 + 1 / math.log2(3))
    assert values["ndcg@10"] == pytest.approx(expected, abs=1e-15)
    assert values["mrr@10"] == pytest.approx(1 / 3)


def test_query_without_relevant_judgments_scores_zero() -> None:
    qrels = {"q": {"a": 0, "b": -1}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    values = assert_matches_reference(run, qrels)["q"]
    assert values == {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}


def test_ties_break_by_doc_id_descending() -> None:
    # Equal scores: "b" ranks above "a", and as strings "9" ranks above "10".
    assert trec_ranking({"a": 1.0, "b": 1.0, "c": 2.0}) == ["c", "b", "a"]
    assert trec_ranking({"10": 0.5, "9": 0.5}) == ["9", "10"]
    assert assert_matches_reference({"q": {"a": 1.0, "b": 1.0}}, {"q": {"a": 1}})["q"][
        "mrr@10"
    ] == pytest.approx(0.5)
    assert assert_matches_reference({"q": {"10": 1.0, "9": 1.0}}, {"q": {"9": 1}})["q"][
        "mrr@10"
    ] == pytest.approx(1.0)


def test_scores_tie_at_float32_precision_like_trec_eval() -> None:
    # trec_eval keeps scores as C floats: 1 + 5e-8 rounds to 1.0 (a tie, "b" wins on id), while
    # 1 + 7e-8 rounds up to the next float32 and outranks 1.0.
    qrels = {"q": {"a": 1}}
    tied = {"q": {"a": 1.0 + 5e-8, "b": 1.0}}
    apart = {"q": {"a": 1.0 + 7e-8, "b": 1.0}}
    assert assert_matches_reference(tied, qrels)["q"]["mrr@10"] == pytest.approx(0.5)
    assert assert_matches_reference(apart, qrels)["q"]["mrr@10"] == 1.0
    # Beyond the float32 range both overflow to inf and tie as well; -0.0 ties with 0.0.
    assert trec_ranking({"a": 1e40, "b": 1e39}) == ["b", "a"]
    assert trec_ranking({"a": 0.0, "b": -0.0}) == ["b", "a"]


def test_cutoffs_truncate_the_ranking() -> None:
    qrels = {"q": {"rel": 1}}
    # Eleven better-scored non-relevant documents push the relevant one to rank 12.
    scores = {f"n{i:02d}": 100.0 - i for i in range(11)}
    scores["rel"] = 1.0
    values = assert_matches_reference({"q": scores}, qrels)["q"]
    assert values == {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 1.0, "mrr@10": 0.0}


def test_single_query_functions_agree_with_evaluate() -> None:
    scores = {"a": 0.3, "b": 0.9, "c": 0.9, "d": 0.1}
    judgments = {"a": 2, "c": 1, "z": 3}
    per_query = evaluate_per_query({"q": scores}, {"q": judgments}, ks=(2, 10))["q"]
    assert ndcg_cut(scores, judgments, k=10) == per_query["ndcg@10"]
    assert recall_cut(scores, judgments, k=2) == per_query["recall@2"] == pytest.approx(1 / 3)
    assert reciprocal_rank_cut(scores, judgments, k=10) == per_query["mrr@10"] == 1.0
    assert reciprocal_rank_cut(scores, judgments, k=1) == 1.0  # "c" beats "b" on the tie


def test_trec_ranking_depth_is_the_prefix_of_the_full_ranking() -> None:
    rng = random.Random(7)
    scores = {f"d{i}": rng.choice([0.1, 0.2, 0.3]) for i in range(50)}
    full = trec_ranking(scores)
    for depth in (0, 1, 5, 49, 50, 80):
        assert trec_ranking(scores, depth=depth) == full[:depth]


def test_nan_scores_and_bad_cutoffs_are_rejected() -> None:
    with pytest.raises(ValueError, match="'b' is NaN"):
        trec_ranking({"a": 1.0, "b": float("nan")})
    with pytest.raises(ValueError, match="positive int"):
        ndcg_cut({"a": 1.0}, {"a": 1}, k=0)
    with pytest.raises(ValueError, match="recall cutoff"):
        evaluate({"q": {}}, {"q": {"a": 1}}, ks=())
    with pytest.raises(ValueError, match="positive int"):
        evaluate({"q": {}}, {"q": {"a": 1}}, ks=(10, -1))


# --- averaging rule ------------------------------------------------------------------------


def test_mean_is_over_every_judged_query_and_missing_runs_count_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 1}}
    run = {
        "q1": {"a": 1.0},  # perfect
        "q2": {"x": 1.0, "b": 0.5},  # relevant at rank 2
        "q3": {},  # answered with nothing
        # q4 missing altogether; "extra" is not judged and must not count.
        "extra": {"a": 1.0},
    }
    means = evaluate(run, qrels)
    assert set(means) == {"ndcg@10", "recall@10", "recall@100", "mrr@10"}
    assert means["recall@10"] == pytest.approx(2 / 4)
    assert means["mrr@10"] == pytest.approx((1 + 0.5) / 4)
    assert means["ndcg@10"] == pytest.approx((1 + 1 / math.log2(3)) / 4)
    # pytrec_eval by default averages only the queries present in the run (q3's empty answer
    # counts there, q4's absence does not).
    theirs = reference(run, qrels)
    assert set(theirs) == {"q1", "q2", "q3"}
    assert np.mean([v["recip_rank"] for v in theirs.values()]) == pytest.approx(1.5 / 3)
    # ... and our mean is exactly the per-query mean over all four.
    assert means == mean_of_per_query(evaluate_per_query(run, qrels))


def test_evaluate_key_names_follow_the_cutoffs() -> None:
    means = evaluate({"q": {"a": 1.0}}, {"q": {"a": 1}}, ks=(1, 5, 1000), ndcg_k=5, mrr_k=3)
    assert means == {
        "ndcg@5": 1.0,
        "recall@1": 1.0,
        "recall@5": 1.0,
        "recall@1000": 1.0,
        "mrr@3": 1.0,
    }


def test_evaluate_without_judged_queries_is_an_error() -> None:
    with pytest.raises(ValueError, match="no query"):
        evaluate({"q": {"a": 1.0}}, {})


# --- randomized property test against pytrec_eval -------------------------------------------


def random_case(seed: int, n_queries: int = 200) -> tuple[Run, Qrels]:
    rng = random.Random(seed)
    # Ids of different lengths so that string order and numeric order disagree ("d10" < "d9").
    pool = [f"d{i}" for i in range(400)]
    qrels: Qrels = {}
    run: Run = {}
    for q in range(n_queries):
        qid = f"q{q}"
        judged = rng.sample(pool, rng.randint(1, 25))
        # Mostly graded positives, some zeros and the odd negative judgment.
        qrels[qid] = {doc: rng.choice([-1, 0, 0, 1, 1, 1, 2, 2, 3]) for doc in judged}
        kind = rng.random()
        if kind < 0.05:
            continue  # run misses the query entirely
        if kind < 0.08:
            run[qid] = {}
            continue
        retrieved = rng.sample(pool, rng.randint(1, 160))
        # Half of the judged docs retrieved on purpose, so metrics are rarely all zero.
        retrieved += [doc for doc in judged if rng.random() < 0.5 and doc not in retrieved]
        # A coarse score grid makes ties common; some scores differ only below float32
        # precision, and some are spread wide.
        scores: dict[str, float] = {}
        for doc in retrieved:
            roll = rng.random()
            if roll < 0.6:
                scores[doc] = rng.randint(0, 12) / 4
            elif roll < 0.8:
                scores[doc] = 1.0 + rng.choice([0.0, 2e-8, 5e-8, 7e-8, 1.2e-7])
            else:
                scores[doc] = rng.uniform(-5.0, 5.0)
        run[qid] = scores
    # Runs for queries nobody judged must be ignored by both implementations.
    run["unjudged"] = {"d1": 1.0}
    return run, qrels


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_runs_match_pytrec_eval_per_query(seed: int) -> None:
    run, qrels = random_case(seed)
    ours = assert_matches_reference(run, qrels)
    assert len(ours) == 200
    # The generator must actually exercise the interesting paths.
    assert sum(1 for qid in qrels if not run.get(qid)) > 0
    assert sum(1 for values in ours.values() if 0 < values["ndcg@10"] < 1) > 50
    means = evaluate(run, qrels)
    for name in means:
        assert means[name] == pytest.approx(np.mean([v[name] for v in ours.values()]))


# --- SciFact qrels with a synthetic run ------------------------------------------------------


@pytest.fixture(scope="module")
def scifact_qrels() -> tuple[Qrels, list[str]]:
    if not (SCIFACT / "qrels" / "train.tsv").is_file():
        pytest.skip(f"SciFact evaluation data not found at {SCIFACT} (shared evaluation data)")
    dataset = load_beir(SCIFACT, "train")
    return dataset.qrels, sorted(dataset.corpus)


def test_scifact_qrels_with_synthetic_run(scifact_qrels: tuple[Qrels, list[str]]) -> None:
    qrels, doc_ids = scifact_qrels
    rng = random.Random(2020)
    run: Run = {}
    for index, (qid, judgments) in enumerate(qrels.items()):
        if index % 50 == 0:
            continue  # some judged queries get no answer
        distractors = rng.sample(doc_ids, 120)
        scores = {doc: float(rng.randint(0, 40)) for doc in distractors}
        # Relevant documents land anywhere from the top to beyond rank 100 (or nowhere).
        for doc in judgments:
            if rng.random() < 0.85:
                scores[doc] = float(rng.choice([40, 39, 35, 30, 20, 5, 0]))
        run[qid] = scores
    ours = assert_matches_reference(run, qrels)
    means = evaluate(run, qrels)
    assert len(ours) == len(qrels) == 809
    missing = [qid for qid in qrels if qid not in run]
    assert len(missing) == 17
    assert all(ours[qid]["ndcg@10"] == 0.0 for qid in missing)
    theirs = reference(run, qrels)
    # pytrec_eval's default mean covers only answered queries; ours divides by all 809.
    their_mean = np.mean([v["ndcg_cut_10"] for v in theirs.values()])
    assert means["ndcg@10"] == pytest.approx(their_mean * len(theirs) / len(qrels), abs=1e-12)
    assert 0 < means["ndcg@10"] < 1


def test_scifact_perfect_run_scores_one(scifact_qrels: tuple[Qrels, list[str]]) -> None:
    qrels, _ = scifact_qrels
    run = {qid: {doc: 1.0 for doc in judgments} for qid, judgments in qrels.items()}
    assert evaluate(run, qrels) == {
        "ndcg@10": 1.0,
        "recall@10": 1.0,
        "recall@100": 1.0,
        "mrr@10": 1.0,
    }


# --- latency percentiles -------------------------------------------------------------------


def test_percentiles_interpolate_linearly() -> None:
    values = [40.0, 10.0, 30.0, 20.0]
    # Sorted 10, 20, 30, 40: p50 sits halfway between 20 and 30; p95 at index 0.95 * 3 = 2.85.
    result = percentiles(values)
    assert result == pytest.approx({"p50": 25.0, "p95": 38.5, "p99": 39.7})
    assert list(result) == ["p50", "p95", "p99"]
    assert percentiles(np.array([5.0]), (0, 99.9, 100)) == {"p0": 5.0, "p99.9": 5.0, "p100": 5.0}
    assert percentiles(iter([1, 2, 3]), (50,)) == {"p50": 2.0}


def test_percentiles_reject_empty_and_nan_samples() -> None:
    with pytest.raises(ValueError, match="empty"):
        percentiles([])
    with pytest.raises(ValueError, match="NaN"):
        percentiles([1.0, float("nan")])
    with pytest.raises(ValueError):
        percentiles([1.0], (101,))
