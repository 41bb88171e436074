"""The LoCoMo loader reads the original layout; the shared development file loads whole."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.context.evaluation.locomo import LocomoFormatError, load_locomo, session_date
from tests.support.data import LOCOMO

SAMPLE = [
    {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_2_date_time": "9:05 am on 12 June, 2023",
            "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Back from Lisbon."}],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi!"},
                {
                    "speaker": "Bo",
                    "dia_id": "D1:2",
                    "text": "Look at this.",
                    "blip_caption": "a photo of a red bike",
                },
            ],
        },
        "qa": [
            {"question": "Where was Bo?", "answer": "Lisbon", "evidence": ["D2:1"], "category": 4},
            {"question": "Both?", "answer": "x", "evidence": ["D1:1; D2:1"], "category": 1},
            {"question": "Who owns a blue car?", "adversarial_answer": "Bo", "category": 5},
        ],
        "event_summary": {},
    }
]


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    return path


def test_turns_in_session_order_with_dates_and_captions(tmp_path: Path) -> None:
    (conv,) = load_locomo(write(tmp_path, SAMPLE))
    assert conv.sample_id == "conv-x" and conv.speakers == ("Ann", "Bo")
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conv.turns[1].text == "Look at this. [shares a picture: a photo of a red bike]"
    assert conv.turns[0].occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert conv.turns[2].occurred_at == datetime(2023, 6, 12, 9, 5, tzinfo=UTC)
    assert (conv.turns[2].session, conv.turns[2].position) == (2, 0)
    first, joined, adversarial = conv.questions
    assert first.evidence == ("D2:1",) and first.category == 4 and first.id == "conv-x:0"
    assert joined.evidence == ("D1:1", "D2:1")
    assert adversarial.answer == "Bo" and adversarial.evidence == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12:00 am on 1 January, 2024", datetime(2024, 1, 1, 0, 0, tzinfo=UTC)),
        ("12:30 pm on 3 Sept, 2023", datetime(2023, 9, 3, 12, 30, tzinfo=UTC)),
        ("not a date", None),
        ("", None),
    ],
)
def test_session_dates(text: str, expected: datetime | None) -> None:
    assert session_date(text) == expected


@pytest.mark.parametrize(
    "data",
    [
        {"not": "a list"},
        [{"sample_id": "c"}],
        [{"conversation": {"session_1": [{"speaker": "A"}]}}],
        [{"conversation": {}, "qa": [{"question": "q", "category": 9}]}],
    ],
)
def test_malformed_files_say_where(tmp_path: Path, data: object) -> None:
    with pytest.raises(LocomoFormatError):
        load_locomo(write(tmp_path, data))


def test_selecting_unknown_conversations_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LocomoFormatError, match="conv-404"):
        load_locomo(write(tmp_path, SAMPLE), sample_ids={"conv-404"})


@pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo development data not found at {LOCOMO}")
def test_the_shared_development_conversations_load_whole() -> None:
    conversations = load_locomo(LOCOMO)
    assert [c.sample_id for c in conversations] == ["conv-26", "conv-30"]
    assert sum(len(c.questions) for c in conversations) == 304
    turn_ids = {t.dia_id for c in conversations for t in c.turns}
    evidence = {e for c in conversations for q in c.questions for e in q.evidence}
    assert evidence <= turn_ids  # "D8:6; D9:17" is split into its two turns
    assert all(t.occurred_at is not None for c in conversations for t in c.turns)
