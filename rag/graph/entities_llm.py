"""Entities and relations of text units by a model (OpenAI-compatible, through ``core.llm``):
numbered passages in, JSON out: each entity (name, type, aliases, the passages mentioning it,
in the order of its importance) and the relations between them (source, snake_case type,
target, passages). A reply that does not hold raises ``InvalidJSONError`` and the caller falls
back to the offline extractor (``rag.graph.entities``) for those units."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from core.llm import InvalidJSONError, LLMProvider
from core.llm.replies import reply_numbers, reply_text
from rag.graph.entities import (
    CONCEPT,
    ENTITY_TYPES,
    MAX_ENTITIES_PER_UNIT,
    MAX_NAME_CHARS,
    Entity,
    Relation,
    TextEntities,
)

INPUT_CHARS = 12_000
MAX_ENTITIES = 150
MAX_RELATIONS = 100
_UNITS: dict[str, Any] = {"type": "array", "items": {"type": "integer"}, "maxItems": 100}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
            "maxItems": MAX_ENTITIES,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
                    "type": {"type": "string", "enum": list(ENTITY_TYPES)},
                    "aliases": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
                    "passages": _UNITS,
                },
                "required": ["name", "type", "passages"],
            },
        },
        "relations": {
            "type": "array",
            "maxItems": MAX_RELATIONS,
            "items": {
                "type": "object",
                "properties": {
                    "source": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
                    "type": {"type": "string", "minLength": 1, "maxLength": 100},
                    "target": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
                    "passages": _UNITS,
                },
                "required": ["source", "type", "target", "passages"],
            },
        },
    },
    "required": ["entities", "relations"],
}
SYSTEM = (
    "Build a knowledge graph from the numbered passages. List the entities they mention "
    "(people, places, organisations, technical terms, and the key concepts as short noun "
    "phrases), each with its type, other names it goes by, and the numbers of the passages "
    "mentioning it, most important entities first; and the relations between those entities "
    "(source, relation type in snake_case, target, passages). Use only what the passages say."
)


def batches(texts: Sequence[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Units in batches whose passages fit one call (``INPUT_CHARS``)."""
    out: list[list[tuple[int, str]]] = [[]]
    size = 0
    for unit_id, text in texts:
        length = min(len(text), INPUT_CHARS) + 16
        if out[-1] and size + length > INPUT_CHARS:
            out.append([])
            size = 0
        out[-1].append((unit_id, text[:INPUT_CHARS]))
        size += length
    return [b for b in out if b]


def extract(provider: LLMProvider, units: Sequence[tuple[int, str]]) -> dict[int, TextEntities]:
    """The model's entities and relations of each unit (``(unit id, text)``), by unit id."""
    numbered = {number: unit_id for number, (unit_id, _) in enumerate(units, start=1)}
    prompt = "\n\n".join(f"[{number}] {text}" for number, (_, text) in enumerate(units, start=1))
    answer = provider.complete_json(prompt, schema=SCHEMA, system=SYSTEM, max_tokens=2048)
    known = set(numbered)
    found: dict[int, TextEntities] = {unit_id: TextEntities() for unit_id, _ in units}
    raw_entities = answer.get("entities")
    raw_relations = answer.get("relations")
    if not isinstance(raw_entities, list) or not isinstance(raw_relations, list):
        raise InvalidJSONError("entities and relations must be lists")
    for entity in raw_entities[:MAX_ENTITIES]:
        if not isinstance(entity, dict):
            raise InvalidJSONError("an entity must be an object")
        kind = entity.get("type")
        kind = kind if kind in ENTITY_TYPES else CONCEPT
        aliases = entity.get("aliases") or []
        if not isinstance(aliases, list):
            raise InvalidJSONError("aliases must be a list")
        name = reply_text(entity.get("name"), "an entity's name", MAX_NAME_CHARS)
        for number in reply_numbers(entity.get("passages"), "passages", known):
            unit = found[numbered[number]]
            if len(unit.entities) >= MAX_ENTITIES_PER_UNIT:
                continue
            rank = len(unit.entities)
            unit.entities.append(
                Entity(
                    name=name,
                    entity_type=kind,
                    salience=round(1.0 / (1 + 0.25 * rank), 4),
                    aliases=tuple(
                        " ".join(a.split())[:MAX_NAME_CHARS]
                        for a in aliases
                        if isinstance(a, str) and a.strip()
                    ),
                )
            )
    for relation in raw_relations[:MAX_RELATIONS]:
        if not isinstance(relation, dict):
            raise InvalidJSONError("a relation must be an object")
        made = Relation(
            source=reply_text(relation.get("source"), "a relation's source", MAX_NAME_CHARS),
            target=reply_text(relation.get("target"), "a relation's target", MAX_NAME_CHARS),
            relation_type="_".join(
                re.findall(
                    r"[a-z0-9]+",
                    reply_text(relation.get("type"), "a relation's type", MAX_NAME_CHARS).lower(),
                )
            )[:100]
            or "related_to",
        )
        for number in reply_numbers(relation.get("passages"), "passages", known):
            found[numbered[number]].relations.append(made)
    return found
