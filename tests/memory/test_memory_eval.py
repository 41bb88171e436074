"""memory_eval on a tiny LoCoMo-format file: turns are written through the services, questions
scored against their evidence turns, and nothing is left behind."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from core.models import Account
from memory.context.evaluation.retrieval import score_question
from memory.models import MemoryEntry

# Real embeddings: recall is the subject.
pytestmark = [pytest.mark.django_db, pytest.mark.real_embeddings]

SAMPLE = [
    {
        "sample_id": "conv-t",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a greyhound, Zephyr."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! Mine is a tabby cat."},
            ],
            "session_2_date_time": "9:05 am on 12 June, 2023",
            "session_2": [
                {"speaker": "Bo", "dia_id": "D2:1", "text": "I went to Lisbon for a marathon."},
            ],
        },
        "qa": [
            # The evidence turn is in the conversation: search returns it (3 entries, top 10).
            {
                "question": "What is the name of Ann's greyhound?",
                "answer": "Zephyr",
                "evidence": ["D1:1"],
                "category": 4,
            },
            # Evidence that names no turn of the conversation can never be retrieved.
            {
                "question": "Which city did Bo run a marathon in?",
                "answer": "Lisbon",
                "evidence": ["D9:9"],
                "category": 2,
            },
            {"question": "What car does Bo drive?", "adversarial_answer": "x", "category": 5},
        ],
    }
]


def test_memory_eval_scores_retrieved_and_missing_evidence(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(SAMPLE))
    accounts_before = Account.objects.count()
    out = StringIO()
    call_command("memory_eval", "--dataset", str(path), "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["conversations"] == ["conv-t"] and report["entries"] == 3
    # The adversarial question has no evidence: not scored.
    assert report["questions_scored"] == 2
    single_hop, temporal = report["categories"]["4"], report["categories"]["2"]
    assert single_hop["questions"] == 1
    assert single_hop["recall@5"] == single_hop["recall@10"] == 1.0
    assert 0 < single_hop["ndcg@10"] <= 1.0
    assert temporal["recall@5"] == temporal["recall@10"] == temporal["ndcg@10"] == 0.0
    assert "5" not in report["categories"]
    overall = report["overall_1_4"]
    assert overall["questions"] == 2 and overall["recall@10"] == 0.5
    assert set(report["latency_ms"]) == {"p50", "p95"}
    # Every mode the API offers, from the one write of the conversation; the main report is the
    # mode asked (by default long-term search's own: graph).
    from rag.search import SEARCH_MODES

    assert report["mode"] == "graph" and set(report["modes"]) == set(SEARCH_MODES)
    assert report["modes"]["graph"]["overall_1_4"] == overall
    for block in report["modes"].values():
        assert block["overall_1_4"]["questions"] == 2 and "categories" in block
    # The evaluation's accounts and entries are gone.
    assert Account.objects.count() == accounts_before
    assert not MemoryEntry.objects.exists()


def test_memory_eval_table(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(SAMPLE))
    out = StringIO()
    call_command("memory_eval", "--dataset", str(path), "--conversations", "conv-t", stdout=out)
    text = out.getvalue()
    assert "4 single-hop" in text and "overall 1-4" in text and "p95" in text
    assert "mode prf" in text and "mode vector" in text


def test_memory_eval_refuses_an_unknown_mode(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(SAMPLE))
    with pytest.raises(CommandError, match="psychic"):
        call_command("memory_eval", "--dataset", str(path), "--modes", "hybrid,psychic")


def test_score_question_ranks() -> None:
    assert score_question(["D1:1", "D1:2"], ["D1:1"]) == {
        "recall@5": 1.0,
        "recall@10": 1.0,
        "ndcg@10": 1.0,
    }
    # Found at rank 6: outside the top 5, inside the top 10; nDCG = 1 / log2(7).
    ranking = ["a", "b", "c", "d", "e", "D1:1"]
    scores = score_question(ranking, ["D1:1"])
    assert scores["recall@5"] == 0.0 and scores["recall@10"] == 1.0
    assert scores["ndcg@10"] == pytest.approx(1 / 2.807354922057604)
    # Two evidence turns, one found.
    assert score_question(["x", "D2:1"], ["D2:1", "D3:1"])["recall@10"] == 0.5
    assert score_question([], ["D1:1"])["recall@10"] == 0.0


def test_memory_eval_context_scores_evidence_among_the_contexts_turns(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(SAMPLE))
    accounts_before = Account.objects.count()
    out = StringIO()
    call_command(
        "memory_eval", "--dataset", str(path), "--context", "--budget", "300", "--json", stdout=out
    )
    report = json.loads(out.getvalue())
    assert report["budget"] == 300 and report["questions_scored"] == 2
    # The greyhound's turn is among the context's turns; "D9:9" names no turn at all.
    assert report["categories"]["4"]["evidence_recall"] == 1.0
    assert report["categories"]["2"]["evidence_recall"] == 0.0
    assert report["overall_1_4"]["evidence_recall"] == 0.5
    assert 0 < report["tokens_max"] <= 300
    assert Account.objects.count() == accounts_before
    text = StringIO()
    call_command("memory_eval", "--dataset", str(path), "--context", "--budget", "300", stdout=text)
    assert "evidence recall" in text.getvalue() and "overall 1-4" in text.getvalue()


def test_memory_eval_context_refuses_a_budget_out_of_range(tmp_path: Path) -> None:
    from django.core.management.base import CommandError

    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(SAMPLE))
    with pytest.raises(CommandError, match="--budget"):
        call_command("memory_eval", "--dataset", str(path), "--context", "--budget", "50")
