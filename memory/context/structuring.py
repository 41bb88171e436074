"""The memory tools' structuring step (seed 004): an agent's free text becomes a memory (name,
text, entry type, tags) or a refusal with a reason. Pure functions; the service adds what needs
the database (duplicates) and the LLM (``memory/context/services/tools.py``).

The offline step is deterministic and honest about its limits: it refuses by rules that can be
checked (empty or trivial text, personal data, text about nothing but the moment) and names the
memory after its leading words. It cannot judge whether a statement is true or worth keeping
the way a model can; with an LLM configured, the model decides, within the same rules (personal
data is refused before any model sees the text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memory.models import MemoryEntry
from memory.tuning import TUNING
from rag import keyword

# Reasons a write is refused (the API's ``reason`` codes).
EMPTY, TRIVIAL, DUPLICATE, PERSONAL_DATA, NOT_GENERAL = (
    "empty",
    "trivial",
    "duplicate",
    "personal_data",
    "not_general",
)
REASONS = (EMPTY, TRIVIAL, DUPLICATE, PERSONAL_DATA, NOT_GENERAL)
MAX_TEXT_CHARS = 10_000
# A memory's name's words and the distinct content words it needs (after stop words and
# fillers) are tunables: ``TUNING.structuring`` (memory.tuning).

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# Card numbers: 13 to 19 digits, spaces or dashes between groups, passing the Luhn check.
_CARD = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")
# Phone numbers: an optional +country code, then 9 or more digits in groups.
_PHONE = re.compile(r"(?<![\w.])\+?\d{1,3}?[ .-]?\(?\d{2,4}\)?(?:[ .-]?\d{2,4}){2,4}(?![\w.])")
_FILLERS = frozenset(
    keyword.analyze(
        "ok okay yes no thanks thank you please hello hi hey sure great cool fine good bye "
        "hmm yeah yep nope lol right done noted got"
    )
)
# Words that tie a statement to the moment it is said, not to anything that lasts.
_MOMENT = re.compile(
    r"\b(right now|just now|at the moment|currently|today|tonight|this (morning|afternoon|"
    r"evening)|in a (minute|moment|sec|second)|brb|be right back|going to (lunch|bed|sleep))\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
ENTRY_TYPE_WORDS: dict[str, tuple[str, ...]] = {
    MemoryEntry.EntryType.DECISION: ("decided", "decide", "decision", "chose", "we will", "agreed"),
    MemoryEntry.EntryType.PLAN: ("plan", "next step", "todo", "to do", "will need", "roadmap"),
    MemoryEntry.EntryType.REFLECTION: ("learned", "lesson", "realised", "realized", "insight"),
    MemoryEntry.EntryType.OBSERVATION: ("noticed", "observed", "saw", "seems", "appears"),
}


@dataclass(frozen=True)
class Structured:
    """The step's answer: a memory to write (``refused`` empty), or a refusal."""

    name: str = ""
    text: str = ""
    entry_type: str = MemoryEntry.EntryType.FACT
    tags: tuple[str, ...] = ()
    refused: str = ""
    detail: str = ""
    method: str = "offline"
    extra: dict[str, Any] = field(default_factory=dict)


def _luhn(digits: str) -> bool:
    total, double = 0, False
    for char in reversed(digits):
        n = int(char)
        if double:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
        double = not double
    return total % 10 == 0


def personal_data(text: str) -> list[str]:
    """The kinds of personal data in ``text``: email, card, phone (empty: none)."""
    found = []
    if _EMAIL.search(text):
        found.append("email")
    cards = [re.sub(r"\D", "", m.group()) for m in _CARD.finditer(text)]
    if any(13 <= len(d) <= 19 and _luhn(d) for d in cards):
        found.append("card")
    for match in _PHONE.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 9 <= len(digits) <= 15 and not (len(digits) >= 13 and _luhn(digits)):
            found.append("phone")
            break
    return found


def content_terms(text: str) -> set[str]:
    return {t for t in keyword.analyze(text) if t not in _FILLERS and not t.isdigit()}


def refusal(text: str) -> tuple[str, str]:
    """(reason, detail) when the rules refuse ``text`` before anything else is asked; else
    ("", "")."""
    if not text.strip():
        return EMPTY, "The text is empty."
    kinds = personal_data(text)
    if kinds:
        return PERSONAL_DATA, f"The text holds personal data ({', '.join(kinds)})."
    terms = content_terms(text)
    least = TUNING.structuring.min_content_terms
    if len(terms) < least:
        return TRIVIAL, f"Fewer than {least} content words."
    if _MOMENT.search(text) and len(content_terms(_MOMENT.sub(" ", text))) < 2 * least:
        return NOT_GENERAL, "The text is about the moment, not something that lasts."
    return "", ""


def _entry_type(text: str) -> str:
    lowered = text.lower()
    for entry_type, words in ENTRY_TYPE_WORDS.items():
        if any(re.search(rf"\b{re.escape(word)}\b", lowered) for word in words):
            return entry_type
    return MemoryEntry.EntryType.FACT


def _name(text: str) -> str:
    first = _SENTENCE.split(text.strip(), maxsplit=1)[0]
    words = re.findall(r"[\w'-]+", first)
    most = TUNING.structuring.name_words
    name = " ".join(words[:most])
    return name + ("..." if len(words) > most else "")


def _tags(text: str, limit: int = 5) -> tuple[str, ...]:
    """The text's most repeated content words (then the first), as tags."""
    counts: dict[str, int] = {}
    order: dict[str, int] = {}
    for position, word in enumerate(re.findall(r"[A-Za-z][A-Za-z'-]{3,}", text)):
        lowered = word.lower()
        if keyword.analyze(lowered) and keyword.analyze(lowered)[0] in _FILLERS:
            continue
        if lowered in keyword.STOP_WORDS:
            continue
        counts[lowered] = counts.get(lowered, 0) + 1
        order.setdefault(lowered, position)
    ranked = sorted(counts, key=lambda w: (-counts[w], order[w]))
    return tuple(ranked[:limit])


def offline_structure(text: str) -> Structured:
    """The deterministic step: refuse by the rules, or keep the text as it is, named after its
    first words, typed by its verbs (decided, plan, learned, noticed), tagged with its most
    repeated words."""
    reason, detail = refusal(text)
    if reason:
        return Structured(refused=reason, detail=detail)
    clean = " ".join(text.split())[:MAX_TEXT_CHARS]
    return Structured(
        name=_name(clean), text=clean, entry_type=_entry_type(clean), tags=_tags(clean)
    )


# The LLM's answer: validated before use (``llm_structured``).
LLM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["write", "refuse"]},
        "reason": {"type": "string", "enum": [TRIVIAL, NOT_GENERAL, ""]},
        "name": {"type": "string", "maxLength": 200},
        "text": {"type": "string", "maxLength": MAX_TEXT_CHARS},
        "entry_type": {"type": "string", "enum": list(MemoryEntry.EntryType.values)},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 100}, "maxItems": 10},
    },
    "required": ["decision", "name", "text", "entry_type", "tags"],
}
LLM_SYSTEM = (
    "You turn an AI agent's note into a durable memory for later runs. Keep only what is "
    "general and worth remembering: facts, decisions, lessons, plans. Refuse (decision "
    "'refuse') small talk or anything only about the present moment (reason 'not_general'), "
    "and notes with nothing to keep (reason 'trivial'). Otherwise write a short name and a "
    "self-contained text in the note's language, choose the entry type and up to five tags."
)


def llm_structured(answer: dict[str, Any], method: str) -> Structured:
    """The model's answer as a ``Structured``, or a ``ValueError`` naming what is wrong with it
    (the caller falls back to the offline step)."""
    decision = answer.get("decision")
    if decision == "refuse":
        reason = answer.get("reason") or NOT_GENERAL
        if reason not in (TRIVIAL, NOT_GENERAL):
            raise ValueError(f"unknown refusal reason {reason!r}")
        return Structured(refused=reason, detail="The model found nothing to keep.", method=method)
    if decision != "write":
        raise ValueError(f"decision must be write or refuse, not {decision!r}")
    text, name = answer.get("text"), answer.get("name")
    if not isinstance(text, str) or not text.strip() or not isinstance(name, str):
        raise ValueError("name and text must be strings, text not empty")
    entry_type = answer.get("entry_type")
    if entry_type not in MemoryEntry.EntryType.values:
        raise ValueError(f"unknown entry type {entry_type!r}")
    tags = answer.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ValueError("tags must be a list of strings")
    if personal_data(text):
        raise ValueError("the model's text holds personal data")
    return Structured(
        name=name.strip()[:200] or _name(text),
        text=" ".join(text.split())[:MAX_TEXT_CHARS],
        entry_type=str(entry_type),
        tags=tuple(t.strip()[:100] for t in tags[:10] if t.strip()),
        method=method,
    )
