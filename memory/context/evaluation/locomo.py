"""LoCoMo (Maharana et al., ACL 2024) in its original JSON layout, for ``memory_eval``.

A file is a list of conversations. Each has ``sample_id``, a ``conversation`` object with the two
speakers' names, numbered sessions (``session_1``: a list of turns) and their dates
(``session_1_date_time``: "1:56 pm on 8 May, 2023"), and ``qa``: questions with an answer, the
``evidence`` turns (``dia_id`` such as ``D1:3``) and a ``category`` 1-5 (5 is adversarial: the
answer is not in the conversation). A turn has ``speaker``, ``dia_id``, ``text`` and, when the
speaker shared a picture, ``blip_caption``. Other keys (summaries, observations) are ignored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
_SESSION = re.compile(r"^session_(\d+)$")
# A few evidence entries name two turns in one string ("D8:6; D9:17").
_EVIDENCE_SEPARATOR = re.compile(r"[;,\s]+")
_DATE = re.compile(
    r"^\s*(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<ampm>am|pm)\s+on\s+"
    r"(?P<day>\d{1,2})\s+(?P<month>[A-Za-z]+),?\s+(?P<year>\d{4})\s*$",
    re.IGNORECASE,
)


class LocomoFormatError(ValueError):
    """The file is not in LoCoMo's layout; the message says where."""


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str  # with the shared picture's caption, as a reader of the chat would see it
    session: int
    position: int  # within its session
    occurred_at: datetime | None


@dataclass(frozen=True)
class Question:
    id: str  # "<sample_id>:<index>"
    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def session_date(value: str) -> datetime | None:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an aware datetime (UTC: the data names no zone)."""
    match = _DATE.match(value or "")
    if match is None:
        return None
    hour = int(match["hour"]) % 12 + (12 if match["ampm"].lower() == "pm" else 0)
    try:
        month = datetime.strptime(match["month"][:3].title(), "%b").month
        return datetime(
            int(match["year"]), month, int(match["day"]), hour, int(match["minute"]), tzinfo=UTC
        )
    except ValueError:
        return None


def _evidence(raw: Any) -> tuple[str, ...]:
    ids: list[str] = []
    for entry in raw:
        ids.extend(part for part in _EVIDENCE_SEPARATOR.split(str(entry)) if part)
    return tuple(dict.fromkeys(ids))


def load_locomo(path: Path, *, sample_ids: set[str] | None = None) -> list[Conversation]:
    """The conversations of ``path`` (only ``sample_ids`` when given, in the file's order)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LocomoFormatError(f"{path}: cannot read it as JSON ({exc})") from exc
    if not isinstance(raw, list):
        raise LocomoFormatError(f"{path}: expected a list of conversations")
    conversations = [_conversation(item, index) for index, item in enumerate(raw)]
    if sample_ids is not None:
        known = {c.sample_id for c in conversations}
        missing = sorted(sample_ids - known)
        if missing:
            raise LocomoFormatError(f"{path}: no conversation {', '.join(missing)}")
        conversations = [c for c in conversations if c.sample_id in sample_ids]
    return conversations


def _conversation(item: Any, index: int) -> Conversation:
    where = f"conversation #{index}"
    if not isinstance(item, dict) or not isinstance(item.get("conversation"), dict):
        raise LocomoFormatError(f"{where}: expected an object with a 'conversation' object")
    sample_id = str(item.get("sample_id") or f"conv-{index}")
    body = item["conversation"]
    sessions = sorted(
        int(m.group(1))
        for key in body
        if (m := _SESSION.match(key)) and isinstance(body[key], list)
    )
    turns: list[Turn] = []
    for number in sessions:
        date = session_date(str(body.get(f"session_{number}_date_time", "")))
        for position, turn in enumerate(body[f"session_{number}"]):
            if not isinstance(turn, dict) or not {"dia_id", "speaker", "text"} <= set(turn):
                raise LocomoFormatError(
                    f"{sample_id} session {number} turn {position}: "
                    "expected dia_id, speaker and text"
                )
            text = str(turn["text"])
            if turn.get("blip_caption"):
                text = f"{text} [shares a picture: {turn['blip_caption']}]"
            turns.append(
                Turn(
                    dia_id=str(turn["dia_id"]),
                    speaker=str(turn["speaker"]),
                    text=text,
                    session=number,
                    position=position,
                    occurred_at=date,
                )
            )
    questions = []
    for number, qa in enumerate(item.get("qa") or []):
        if not isinstance(qa, dict) or "question" not in qa:
            raise LocomoFormatError(f"{sample_id} question {number}: expected a 'question'")
        category = qa.get("category")
        if category not in CATEGORIES:
            raise LocomoFormatError(f"{sample_id} question {number}: unknown category {category!r}")
        questions.append(
            Question(
                id=f"{sample_id}:{number}",
                question=str(qa["question"]),
                # Adversarial questions carry their answer as adversarial_answer.
                answer=str(qa.get("answer", qa.get("adversarial_answer", ""))),
                evidence=_evidence(qa.get("evidence") or ()),
                category=int(category),
            )
        )
    speakers = (str(body.get("speaker_a", "")), str(body.get("speaker_b", "")))
    return Conversation(sample_id, speakers, tuple(turns), tuple(questions))
