"""Entities and relations of text units by a model (OpenAI-compatible, through ``core.llm``):
numbered passages in, JSON out: each entity (name, type, aliases, the passages mentioning it,
in the order of its importance) and the relations between them (source, snake_case type,
target, passages). A reply whose shape does not hold (not lists, an entity or relation that is
not an object, passages that were never given) raises ``InvalidJSONError`` and the caller
falls back to the offline extractor (``rag.graph.entities``) for those units.

What the model says is checked and normalised, item by item:

- an entity type outside the list is mapped by its meaning ("organization", "company" ->
  organisation; "location", "city" -> place), else it is a concept;
- a relation type is snake_case; one the offline dictionary knows, in any voice, is named and
  directed as the offline extractor would ("run_by" from the library to Lind is ``leads`` from
  Lind to the library, ``rag.graph.relation_patterns``), so both extractors make one edge;
- a relation whose end the model did not list as an entity gets that end as an entity of the
  relation's passages (an edge needs both nodes); a relation citing no passage is given the
  passages that mention both ends; a relation with an empty end or to itself is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from core.llm import InvalidJSONError, LLMProvider
from core.llm.replies import reply_numbers, reply_text
from rag.graph.entities import (
    MAX_NAME_CHARS,
    Entity,
    Relation,
    TextEntities,
)
from rag.graph.names import (
    CONCEPT,
    ENTITY_TYPES,
    ORGANISATION,
    PERSON,
    PLACE,
    TERM,
    name_key,
)
from rag.graph.relation_patterns import is_symmetric, relation_between
from rag.tuning import TUNING

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


# Entity types a model may say for the ones we keep.
_TYPE_SYNONYMS = {
    "organization": ORGANISATION,
    "org": ORGANISATION,
    "company": ORGANISATION,
    "institution": ORGANISATION,
    "business": ORGANISATION,
    "group": ORGANISATION,
    "team": ORGANISATION,
    "location": PLACE,
    "city": PLACE,
    "country": PLACE,
    "region": PLACE,
    "gpe": PLACE,
    "loc": PLACE,
    "people": PERSON,
    "human": PERSON,
    "per": PERSON,
    "acronym": TERM,
    "technical_term": TERM,
    "gene": TERM,
    "protein": TERM,
}


def entity_type_of(value: object) -> str:
    """A model's entity type as one of ``ENTITY_TYPES`` (by meaning; concept otherwise)."""
    if not isinstance(value, str):
        return CONCEPT
    kind = "_".join(re.findall(r"[a-z0-9]+", value.lower()))
    if kind in ENTITY_TYPES:
        return kind
    return _TYPE_SYNONYMS.get(kind, CONCEPT)


def relation_of(source: str, kind: str, target: str) -> Relation | None:
    """A model's relation, named and directed as the offline dictionary names it when it
    knows the type ("run_by", "is located in"), else its snake_case type; None when it
    names no type or joins a name to itself."""
    words = re.findall(r"[a-z0-9']+", kind.lower())
    relation_type = "_".join(words)[:100]
    if not relation_type or name_key(source) == name_key(target):
        return None
    found = relation_between(words) if len(words) <= 6 else None
    if found is not None and found.canonical:
        relation_type = found.relation_type
        if found.reverse:
            source, target = target, source
    if is_symmetric(relation_type) and name_key(target) < name_key(source):
        source, target = target, source
    return Relation(source=source, target=target, relation_type=relation_type)


def batches(texts: Sequence[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Units in batches whose passages fit one call (``TUNING.build.llm_input_chars``)."""
    out: list[list[tuple[int, str]]] = [[]]
    size = 0
    for unit_id, text in texts:
        length = min(len(text), TUNING.build.llm_input_chars) + 16
        if out[-1] and size + length > TUNING.build.llm_input_chars:
            out.append([])
            size = 0
        out[-1].append((unit_id, text[: TUNING.build.llm_input_chars]))
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
    mentioned: dict[str, set[int]] = {}  # an entity's key -> the passages naming it
    for entity in raw_entities[:MAX_ENTITIES]:
        if not isinstance(entity, dict):
            raise InvalidJSONError("an entity must be an object")
        kind = entity_type_of(entity.get("type"))
        aliases = entity.get("aliases") or []
        if not isinstance(aliases, list):
            raise InvalidJSONError("aliases must be a list")
        name = reply_text(entity.get("name"), "an entity's name", MAX_NAME_CHARS)
        cleaned = tuple(
            " ".join(a.split())[:MAX_NAME_CHARS]
            for a in aliases
            if isinstance(a, str) and a.strip()
        )
        for number in reply_numbers(entity.get("passages"), "passages", known):
            mentioned.setdefault(name_key(name), set()).add(number)
            for alias in cleaned:
                mentioned.setdefault(name_key(alias), set()).add(number)
            _entity_add(
                found[numbered[number]], Entity(name=name, entity_type=kind, aliases=cleaned)
            )
    for relation in raw_relations[:MAX_RELATIONS]:
        if not isinstance(relation, dict):
            raise InvalidJSONError("a relation must be an object")
        ends = [relation.get(k) for k in ("source", "type", "target")]
        if not all(isinstance(v, str) and v.strip() for v in ends):
            continue  # an incomplete relation: dropped, the rest kept
        made = relation_of(
            *(reply_text(v, "a relation's end or type", MAX_NAME_CHARS) for v in ends)
        )
        if made is None:
            continue
        numbers = reply_numbers(relation.get("passages") or [], "passages", known)
        if not numbers:  # no passage cited: those naming both ends
            both = mentioned.get(name_key(made.source), set()) & mentioned.get(
                name_key(made.target), set()
            )
            numbers = sorted(both)
        for number in numbers:
            unit = found[numbered[number]]
            for end in (made.source, made.target):  # an end the model did not list
                if not any(_names(e, end) for e in unit.entities):
                    _entity_add(unit, Entity(name=end, entity_type=CONCEPT))
            if made not in unit.relations:
                unit.relations.append(made)
    return found


def _names(entity: Entity, name: str) -> bool:
    key = name_key(name)
    return name_key(entity.name) == key or any(name_key(a) == key for a in entity.aliases)


def _entity_add(unit: TextEntities, entity: Entity) -> None:
    """An entity of a unit, ranked after those already there (at most
    ``TUNING.build.entities_per_unit``; one per name)."""
    if len(unit.entities) >= TUNING.build.entities_per_unit or any(
        _names(e, entity.name) for e in unit.entities
    ):
        return
    rank = len(unit.entities)
    unit.entities.append(
        Entity(
            name=entity.name,
            entity_type=entity.entity_type,
            salience=round(1.0 / (1 + 0.25 * rank), 4),
            aliases=entity.aliases,
        )
    )
