"""Extraction by a model (OpenAI-compatible, through ``core.llm``), in two calls per batch:

1. ``propose``: the transcript (each message with its turn number) in, JSON out: facts (a
   self-contained sentence each, with an optional key, a confidence and the turns it comes
   from), entities (name, type, turns) and relations (source, type, target, turns).
2. ``decide``: each fact with the most similar current knowledge items (numbered candidates)
   in, one decision per fact out: ``add``, ``update`` (a new version of a candidate),
   ``invalidate`` (a candidate is no longer true) or ``none`` (known already).

Replies are validated here beyond the schema's required keys: an answer that does not hold
(unknown decision, a candidate that was not offered, a turn outside the batch) raises
``InvalidJSONError``, and the caller falls back (the offline extractor for the first call,
``add`` for the second).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.llm import InvalidJSONError, LLMProvider
from core.llm.replies import reply_numbers, reply_objects, reply_text
from memory.conversations.extraction.offline import DATE, ENTITY_TYPES, ORGANISATION, PERSON, PLACE
from memory.tuning import TUNING

MAX_FACTS = 50
MAX_ENTITIES = 100
MAX_RELATIONS = 50
MAX_TEXT = 1000
DECISIONS = ("add", "update", "invalidate", "none")
_TYPES = {"organization": ORGANISATION, "location": PLACE, "time": DATE}

_TURNS: dict[str, Any] = {"type": "array", "items": {"type": "integer"}, "maxItems": 50}
PROPOSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": MAX_FACTS,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT},
                    "key": {"type": "string", "maxLength": 200},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "turns": _TURNS,
                },
                "required": ["text", "turns"],
            },
        },
        "entities": {
            "type": "array",
            "maxItems": MAX_ENTITIES,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 200},
                    "type": {"type": "string", "enum": list(ENTITY_TYPES)},
                    "turns": _TURNS,
                },
                "required": ["name", "type", "turns"],
            },
        },
        "relations": {
            "type": "array",
            "maxItems": MAX_RELATIONS,
            "items": {
                "type": "object",
                "properties": {
                    "source": {"type": "string", "minLength": 1, "maxLength": 200},
                    "type": {"type": "string", "minLength": 1, "maxLength": 100},
                    "target": {"type": "string", "minLength": 1, "maxLength": 200},
                    "turns": _TURNS,
                },
                "required": ["source", "type", "target", "turns"],
            },
        },
    },
    "required": ["facts", "entities", "relations"],
}
PROPOSE_SYSTEM = (
    "Extract durable knowledge from this conversation: facts about the people (each a short, "
    "self-contained sentence naming its subject, e.g. 'Caroline moved to Lisbon.'), with a "
    "key 'subject.attribute' in lower case when one fits, a confidence from 0 to 1 and the "
    "turn numbers it comes from; the entities mentioned (person, place, organisation, date); "
    "and relations between entities (source, relation type in snake_case, target). Use only "
    "what the conversation says."
)

DECIDE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decisions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "fact": {"type": "integer"},
                    "decision": {"type": "string", "enum": list(DECISIONS)},
                    "candidate": {"type": ["integer", "null"]},
                    "text": {"type": "string", "maxLength": MAX_TEXT},
                },
                "required": ["fact", "decision"],
            },
        }
    },
    "required": ["decisions"],
}
DECIDE_SYSTEM = (
    "You keep a knowledge base current. For each new fact, compare it with its numbered "
    "candidate items (the most similar ones already known) and decide: 'add' when it is new; "
    "'update' when it refines or changes a candidate (give that candidate's number and the "
    "item's new text); 'invalidate' when it says a candidate is no longer true (give the "
    "candidate's number); 'none' when a candidate says it already. One decision per fact."
)


@dataclass(frozen=True)
class Line:
    turn: int
    speaker: str
    text: str


@dataclass(frozen=True)
class ProposedFact:
    text: str
    key: str
    confidence: float
    turns: list[int]


@dataclass(frozen=True)
class ProposedEntity:
    name: str
    entity_type: str
    turns: list[int]


@dataclass(frozen=True)
class ProposedRelation:
    source: str
    relation_type: str
    target: str
    turns: list[int]


@dataclass
class Proposal:
    facts: list[ProposedFact] = field(default_factory=list)
    entities: list[ProposedEntity] = field(default_factory=list)
    relations: list[ProposedRelation] = field(default_factory=list)


@dataclass(frozen=True)
class Candidate:
    item_id: int
    key: str
    content: str


@dataclass(frozen=True)
class Decision:
    decision: str
    candidate: Candidate | None = None
    text: str = ""


def propose(provider: LLMProvider, lines: Sequence[Line]) -> Proposal:
    """The model's facts, entities and relations of the stretch (InvalidJSONError for a reply
    that does not hold, LLMError when none came)."""
    transcript = "\n".join(
        f"[turn {line.turn}] {line.speaker or 'unknown'}: {line.text}" for line in lines
    )[-TUNING.llm.input_chars :]
    answer = provider.complete_json(
        transcript, schema=PROPOSE_SCHEMA, system=PROPOSE_SYSTEM, max_tokens=2000
    )
    turns = {line.turn for line in lines}
    proposal = Proposal()
    for fact in reply_objects(answer, "facts", MAX_FACTS):
        confidence = fact.get("confidence", 0.7)
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            raise InvalidJSONError("confidence must be a number")
        key = fact.get("key") or ""
        proposal.facts.append(
            ProposedFact(
                text=reply_text(fact.get("text"), "a fact's text", MAX_TEXT),
                key=key.strip().lower() if isinstance(key, str) else "",
                confidence=min(1.0, max(0.0, float(confidence))),
                turns=sorted(reply_numbers(fact.get("turns"), "turns", turns)),
            )
        )
    for entity in reply_objects(answer, "entities", MAX_ENTITIES):
        kind = str(entity.get("type") or "").strip().lower()
        kind = _TYPES.get(kind, kind)
        proposal.entities.append(
            ProposedEntity(
                name=reply_text(entity.get("name"), "an entity's name", 200),
                entity_type=kind if kind in ENTITY_TYPES else PERSON,
                turns=sorted(reply_numbers(entity.get("turns"), "turns", turns)),
            )
        )
    for relation in reply_objects(answer, "relations", MAX_RELATIONS):
        proposal.relations.append(
            ProposedRelation(
                source=reply_text(relation.get("source"), "a relation's source", 200),
                relation_type=reply_text(relation.get("type"), "a relation's type", 100),
                target=reply_text(relation.get("target"), "a relation's target", 200),
                turns=sorted(reply_numbers(relation.get("turns"), "turns", turns)),
            )
        )
    return proposal


def decide(
    provider: LLMProvider,
    facts: Sequence[ProposedFact],
    candidates: Sequence[Sequence[Candidate]],
) -> list[Decision]:
    """One decision per fact against its candidates (InvalidJSONError for a reply that does not
    hold: an unknown fact or decision, a candidate not offered for that fact, a missing text)."""
    prompt = json.dumps(
        [
            {
                "fact": index,
                "text": fact.text,
                "candidates": [
                    {"candidate": number, "key": c.key, "text": c.content[:MAX_TEXT]}
                    for number, c in enumerate(offered)
                ],
            }
            for index, (fact, offered) in enumerate(zip(facts, candidates, strict=True))
        ],
        ensure_ascii=False,
    )
    answer = provider.complete_json(
        prompt, schema=DECIDE_SCHEMA, system=DECIDE_SYSTEM, max_tokens=2000
    )
    decided: dict[int, Decision] = {}
    for row in reply_objects(answer, "decisions", len(facts) * 2):
        index, decision = row.get("fact"), row.get("decision")
        if not isinstance(index, int) or not 0 <= index < len(facts) or decision not in DECISIONS:
            raise InvalidJSONError("each decision needs a fact number and a known decision")
        number, offered = row.get("candidate"), candidates[index]
        valid = isinstance(number, int) and not isinstance(number, bool)
        chosen = offered[number] if valid and 0 <= number < len(offered) else None
        if chosen is None and (decision in ("update", "invalidate") or number is not None):
            raise InvalidJSONError(f"fact {index}: not a candidate offered ({number!r})")
        text = row.get("text") or facts[index].text
        decided.setdefault(
            index, Decision(decision, chosen, reply_text(text, "a decision's text", MAX_TEXT))
        )
    return [decided.get(i, Decision("add", None, fact.text)) for i, fact in enumerate(facts)]
