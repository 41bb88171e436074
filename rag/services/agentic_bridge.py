"""Bridge entities for agentic RAG (docs/rag.md, "Agentic RAG"): a multi-hop question
describes an entity by a relation instead of naming it ("Where was *the person who runs the
Harbor Library* born?"); the passage that answers names the entity ("Jonas Lind was born in
Kiruna") and shares no word with the question. A round's best hits name the entity next to
the question's own ("The Harbor Library is run by Jonas Lind"): that is the bridge, and the
next round asks the question with the name put in place of the description ("Where was Jonas
Lind born?").

Offline, no model:

1. **The description** (``question_description``): the span of the question that describes an
   entity by its relation to a named one, innermost first when they nest ("the founder of *the
   company that employs Jonas Lind*"):

   - a relative clause: "the <noun> who / that / which / whom / where <clause>" ("the person
     who runs the Harbor Library", "the company that Jonas Lind founded", "the city where
     Jonas Lind lives");
   - a role of a named entity: "the <role> of <Name>" ("the director of the Harbor Library");
   - a possessive: "<Name>'s <role>" ("the Harbor Library's director").

   The noun says what kind of entity is wanted (``HEAD_TYPES``: "person", "founder" a person;
   "city" a place; "company" an organisation; "book" anything); a noun outside that list, or a
   description naming no entity, is no description (a claim such as "the protein that binds
   DNA" asks no hop).
2. **Candidates**: the entities of the round's best hits (``BRIDGE_RESULTS``), from the offline
   extractor (``rag.graph.entities.text_entities``) and from the graph's mentions of the hits
   (``rag.graph.bridges.unit_entities``: the nodes the searcher may see), that share a sentence
   with the description's named entity, are not named by the question, and are not the named
   entity itself.
3. **Score**: the hit's weight (1 / (1 + its rank)) x the type factor (1 when the candidate is of
   the wanted type; ``TYPE_MISMATCH`` otherwise; a name typed an organisation only because "by"
   or "at" came before it counts as a person) x (1 + ``RELATION_BONUS`` x the share of the
   description's relation words, "runs", "director", in that sentence); a candidate's best.
4. **Reformulation** (``substitute``): the description replaced by the name. When what is left
   asks nothing but the name ("Who is the director of the Harbor Library?" -> "Who is Jonas
   Lind?"), the bridge is the answer and no further round is needed.

With an LLM configured, the model names the bridge and writes the next query (validated JSON;
the bridge must be named by one of the passages it was shown and not by the question);
anything else falls back to the offline path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from core.search import MAX_QUERY_CHARS
from rag.graph.bridges import MentionedEntity
from rag.graph.entities import (
    ORGANISATION,
    PERSON,
    PLACE,
    name_key,
    sentences,
    text_entities,
)
from rag.keyword import analyze

# The round's best hits whose entities may be the bridge.
BRIDGE_RESULTS = 5
# A candidate of another type than the description asks for keeps this share of its score.
TYPE_MISMATCH = 0.25
# A sentence that also holds the description's relation words ("runs", "director").
RELATION_BONUS = 1.0
ANY = ""

_PERSON_NOUNS = """
    person man woman men women people one someone individual founder cofounder co-founder
    director owner head leader manager chair chairman chairwoman chairperson president ceo cto
    cfo curator editor author writer creator inventor designer architect captain coach teacher
    mentor student pupil employee member partner spouse wife husband mother father parent son
    daughter child brother sister sibling friend neighbour neighbor boss colleague mayor
    governor principal dean chef doctor researcher scientist artist singer musician player
    composer painter poet actor actress host guide pilot keeper librarian administrator
    supervisor assistant successor predecessor uncle aunt cousin grandmother grandfather
    grandson granddaughter fiance fiancee roommate landlord tenant operator trainer tutor
    advisor adviser producer conductor commander minister secretary treasurer organiser
    organizer instructor professor lecturer nurse surgeon lawyer judge banker investor
    sponsor donor patron resident citizen native inhabitant winner champion rival student
    apprentice boyfriend girlfriend husband partner heir king queen prince princess emperor
    """
_PLACE_NOUNS = """
    place city town village country state region island capital birthplace hometown location
    district province county neighbourhood neighborhood street port harbour harbor valley
    mountain river lake area suburb municipality nation continent
    """
_ORGANISATION_NOUNS = """
    company firm organisation organization institution business employer school university
    college band team club group studio agency startup lab laboratory library museum hospital
    charity publisher label bank newspaper magazine restaurant cafe shop store brand
    department ministry party orchestra choir theatre theater gallery foundation institute
    academy factory brewery bakery hotel airline manufacturer retailer corporation society
    association council committee union network station channel
    """
_THING_NOUNS = """
    book novel film movie song album play painting ship boat car project product dish language
    instrument sport game pet dog cat horse building bridge ship event festival award prize
    """
HEAD_TYPES: dict[str, str] = {
    **{w: ANY for w in _THING_NOUNS.split()},
    **{w: ORGANISATION for w in _ORGANISATION_NOUNS.split()},
    **{w: PLACE for w in _PLACE_NOUNS.split()},
    **{w: PERSON for w in _PERSON_NOUNS.split()},
}
_DETERMINERS = frozenset({"the", "a", "an"})
_RELATIVES = {"who": PERSON, "whom": PERSON, "that": ANY, "which": ANY, "where": PLACE}
_CONNECTORS = frozenset({"of", "de", "da", "van", "von", "del", "la", "le", "for", "the"})
# Capitalised words of a question that name nothing.
_NOT_NAMES_TEXT = """
    what where when who whom whose which why how is was are were did does do has have had
    can could would should will in on at to from for with by of as if the a an and but or
    i it its this that these those there here tell name list please"""
_NOT_NAMES = frozenset(_NOT_NAMES_TEXT.split())
# Words after a relative clause's name that continue it ("the company that Lind works for").
_PARTICLES = frozenset({"for", "at", "in", "with", "on", "to", "from", "by", "up", "into", "of"})
_AUXILIARIES_TEXT = """
    is was are were be been being has have had does did do the a an of by at in to for on
    with from that who which whom where"""
_AUXILIARIES = frozenset(_AUXILIARIES_TEXT.split())
_ASKS_NOTHING = _NOT_NAMES | _AUXILIARIES | {"name", "named", "called", "full", "person", "exactly"}
_TOKEN = re.compile(r"[^\W_][\w\-]*(?:['’][sS]\b)?|[^\W_]", re.UNICODE)
_ORG_WORDS_TEXT = """
    inc corp corporation ltd llc co company university college school academy institute bank
    foundation group club association society church hospital clinic center centre museum
    agency studio studios labs lab team council department ministry party festival library
    gallery cafe restaurant hotel organization organisation charity shelter committee
    commission board trust federation union network service services press journal"""
_ORG_WORDS = frozenset(_ORG_WORDS_TEXT.split())


@dataclass(frozen=True)
class Description:
    """A span of a question (``start``..``end``, characters) that describes an entity by its
    relation to the named ``anchors``; ``wanted``: the entity type it asks for ("" any);
    ``relation``: the stems of the words that state the relation."""

    start: int
    end: int
    text: str
    head: str
    wanted: str
    anchors: tuple[str, ...]
    relation: tuple[str, ...]


@dataclass(frozen=True)
class Bridge:
    """The entity a round found for a description: its name and type, the chunk that names it
    next to the description's entity, and what found it (``offline`` or ``llm``)."""

    name: str
    entity_type: str
    replaces: str
    chunk_id: int | None
    found_by: str
    score: float = 0.0


@dataclass(frozen=True)
class BridgeHit:
    """What the bridge finder reads of a hit: its chunk, text and the graph's entities."""

    chunk_id: int
    text: str
    entities: Sequence[MentionedEntity] = ()


@dataclass(frozen=True)
class _Token:
    word: str
    start: int
    end: int
    possessive: bool

    @property
    def lower(self) -> str:
        return self.word.lower()


def _tokens(text: str) -> list[_Token]:
    out = []
    for match in _TOKEN.finditer(text):
        word = match.group()
        possessive = len(word) > 2 and word[-2] in "'’" and word[-1] in "sS"
        end = match.end()
        if possessive:
            word = word[:-2]
        out.append(_Token(word, match.start(), end, possessive))
    return out


def _is_name_word(tokens: list[_Token], index: int) -> bool:
    token = tokens[index]
    if not token.word[:1].isupper() or token.lower in _NOT_NAMES:
        return False
    if index == 0:
        return False  # a question's first word is capitalised whatever it is
    # A role written in capitals after a determiner ("the CEO of ...", "the Director who")
    # is a description's head, no name ("the Harbor Library" is a name).
    following = tokens[index + 1].lower if index + 1 < len(tokens) else ""
    return not (
        token.lower in HEAD_TYPES
        and tokens[index - 1].lower in _DETERMINERS
        and (following == "of" or following in _RELATIVES or not following)
    )


def _name_run(tokens: list[_Token], index: int) -> tuple[int, int] | None:
    """The capitalised run starting at ``index`` (a leading "the" skipped): (first, last)."""
    if index < len(tokens) and tokens[index].lower in _DETERMINERS:
        index += 1
    if index >= len(tokens) or not _is_name_word(tokens, index):
        return None
    last = index
    while last + 1 < len(tokens) and not tokens[last].possessive:
        following = last + 1
        if _is_name_word(tokens, following):
            last = following
        elif (
            tokens[following].lower in _CONNECTORS
            and following + 1 < len(tokens)
            and _is_name_word(tokens, following + 1)
        ):
            last = following + 1
        else:
            break
    return index, last


def _starts_description(tokens: list[_Token], index: int) -> bool:
    """Does a determiner + (modifiers) + head noun + trigger start at ``index``?"""
    if index >= len(tokens) or tokens[index].lower not in _DETERMINERS:
        return False
    for head in range(index + 1, min(index + 4, len(tokens))):
        if _is_name_word(tokens, head):
            return False
        if tokens[head].lower in HEAD_TYPES:
            following = tokens[head + 1].lower if head + 1 < len(tokens) else ""
            return following == "of" or following in _RELATIVES
        if tokens[head].word[:1].isupper():
            return False
    return False


def _text(query: str, tokens: list[_Token], first: int, last: int) -> str:
    end = tokens[last].start + len(tokens[last].word)
    return query[tokens[first].start : end]


def _relation(tokens: list[_Token], words: Iterable[int]) -> tuple[str, ...]:
    stems: list[str] = []
    for index in words:
        if tokens[index].lower not in _AUXILIARIES:
            stems.extend(analyze(tokens[index].word))
    return tuple(dict.fromkeys(stems))


def question_descriptions(query: str) -> list[Description]:
    """Every description of ``query`` that names its entity directly (not through another
    description), in the order they start."""
    tokens = _tokens(query)
    found: list[Description] = []
    for head, token in enumerate(tokens):
        if token.lower not in HEAD_TYPES or _is_name_word(tokens, head):
            continue
        wanted = HEAD_TYPES[token.lower]
        # Back to the determiner or a possessive name, over at most two modifiers.
        start = None
        possessive_run = None
        for back in range(head - 1, max(-1, head - 4), -1):
            if tokens[back].possessive:
                first = back
                while first - 1 >= 0 and (
                    _is_name_word(tokens, first - 1)
                    or (
                        tokens[first - 1].lower in _CONNECTORS
                        and first - 2 >= 0
                        and _is_name_word(tokens, first - 2)
                    )
                ):
                    first -= 1
                if _is_name_word(tokens, first):
                    possessive_run = (first, back)
                    start = first - 1 if first > 0 and tokens[first - 1].lower == "the" else first
                break
            if tokens[back].lower in _DETERMINERS:
                start = back
                break
            if tokens[back].word[:1].isupper() or tokens[back].lower in _AUXILIARIES:
                break
        if start is None:
            continue
        if possessive_run is not None:
            first, last = possessive_run
            found.append(
                Description(
                    start=tokens[start].start,
                    end=tokens[head].end,
                    text=_text(query, tokens, start, head),
                    head=token.lower,
                    wanted=wanted,
                    anchors=(_text(query, tokens, first, last),),
                    relation=_relation(tokens, [head]),
                )
            )
            continue
        if head + 1 >= len(tokens):
            continue
        trigger = tokens[head + 1].lower
        if trigger == "of":
            if _starts_description(tokens, head + 2):
                continue  # nested: the inner description is resolved first
            run = _name_run(tokens, head + 2)
            if run is None:
                continue
            found.append(
                Description(
                    start=tokens[start].start,
                    end=tokens[run[1]].start + len(tokens[run[1]].word),
                    text=_text(query, tokens, start, run[1]),
                    head=token.lower,
                    wanted=wanted,
                    anchors=(_text(query, tokens, run[0], run[1]),),
                    relation=_relation(tokens, [head]),
                )
            )
        elif trigger in _RELATIVES:
            if not wanted and _RELATIVES[trigger]:
                wanted = _RELATIVES[trigger]
            clause = head + 2
            run = _name_run(tokens, clause)
            if run is not None:  # object relative: "the company that Jonas Lind founded"
                last = run[1]
                verb = last + 1
                if verb < len(tokens) and not tokens[verb].word[:1].isupper():
                    last = verb
                    while last + 1 < len(tokens) and tokens[last + 1].lower in _PARTICLES:
                        last += 1
                relation_words = range(run[1] + 1, last + 1)
            else:  # subject relative: "the person who runs the Harbor Library"
                nested = False
                for index in range(clause, len(tokens)):
                    if _starts_description(tokens, index):
                        nested = True
                        break
                    run = _name_run(tokens, index)
                    if run is not None:
                        break
                if nested or run is None:
                    continue
                last = run[1]
                relation_words = range(clause, run[0])
            found.append(
                Description(
                    start=tokens[start].start,
                    end=tokens[last].start + len(tokens[last].word),
                    text=_text(query, tokens, start, last),
                    head=token.lower,
                    wanted=wanted,
                    anchors=(_text(query, tokens, run[0], run[1]),),
                    relation=_relation(tokens, relation_words),
                )
            )
    return found


def question_description(query: str) -> Description | None:
    """The description to resolve first (see the module's docstring), or None."""
    found = question_descriptions(query)
    return found[0] if found else None


def substitute(query: str, description: Description, name: str) -> str:
    """``query`` with ``name`` in place of the description."""
    return " ".join(f"{query[: description.start]}{name}{query[description.end :]}".split())[
        :MAX_QUERY_CHARS
    ]


def asks_only_for(query: str, name: str) -> bool:
    """Does ``query`` (the bridge substituted) ask nothing but about the name itself ("Who is
    Jonas Lind?"): then the bridge is the answer, not a step."""
    rest = query.replace(name, " ")
    return all(t.lower in _ASKS_NOTHING for t in _tokens(rest))


def _key_in(key: str, text_key: str) -> bool:
    return bool(key) and f" {key} " in f" {text_key} "


def _compatible(entity_type: str, name: str, wanted: str) -> bool:
    if not wanted or entity_type == wanted:
        return True
    words = {w.lower() for w in name.split()}
    if wanted == PERSON:
        # The offline typer calls a name after "by" or "at" an organisation; without an
        # organisation's word in it, it may well be a person.
        return entity_type in (ORGANISATION, "organization") and not words & _ORG_WORDS
    if wanted == ORGANISATION:
        return bool(words & _ORG_WORDS)
    if wanted == PLACE:
        return entity_type in ("location", "city", "country") or (
            entity_type == PERSON and len(words) == 1
        )
    return False


def find_bridge(
    description: Description,
    query: str,
    hits: Sequence[BridgeHit],
    *,
    earlier: Iterable[str] = (),
) -> Bridge | None:
    """The best bridge entity the hits name for ``description`` (see the module's
    docstring), or None. ``earlier``: names already used as bridges (never again)."""
    query_key = name_key(query)
    used = {name_key(n) for n in earlier}
    anchors = [name_key(a) for a in description.anchors]
    best: dict[str, Bridge] = {}
    for rank, hit in enumerate(hits[:BRIDGE_RESULTS]):
        weight = 1.0 / (1 + rank)
        extracted = text_entities(hit.text).entities
        candidates: list[tuple[str, str]] = [(e.name, e.entity_type) for e in extracted]
        for mentioned in hit.entities:
            candidates.append((mentioned.name, mentioned.entity_type))
            candidates.extend((alias, mentioned.entity_type) for alias in mentioned.aliases)
        for sentence in sentences(hit.text):
            sentence_key = name_key(sentence)
            if not any(_key_in(anchor, sentence_key) for anchor in anchors):
                continue
            stems = set(analyze(sentence))
            share = (
                len(stems & set(description.relation)) / len(description.relation)
                if description.relation
                else 0.0
            )
            for name, entity_type in candidates:
                key = name_key(name)
                if (
                    len(key) < 2
                    or key in used
                    or not _key_in(key, sentence_key)
                    or _key_in(key, query_key)
                    or any(_key_in(key, a) or _key_in(a, key) for a in anchors)
                ):
                    continue
                factor = 1.0 if _compatible(entity_type, name, description.wanted) else 0.0
                if not factor:
                    factor = TYPE_MISMATCH
                score = weight * factor * (1 + RELATION_BONUS * share)
                if score > best.get(key, Bridge("", "", "", None, "", -1.0)).score:
                    best[key] = Bridge(
                        name=name,
                        entity_type=description.wanted or entity_type,
                        replaces=description.text,
                        chunk_id=hit.chunk_id,
                        found_by="offline",
                        score=round(score, 4),
                    )
    if not best:
        return None
    return max(best.values(), key=lambda b: (b.score, -len(b.name), b.name))


def grounded(name: str, passages: Iterable[str], query: str) -> bool:
    """Is ``name`` named by one of the passages and not by the query (the LLM's bridge is
    checked so: no invented entity, no word of the question)?"""
    key = name_key(name)
    if len(key) < 2 or _key_in(key, name_key(query)):
        return False
    return any(_key_in(key, name_key(p)) for p in passages)


def entities_by_chunk(
    mentions: Mapping[int, Sequence[MentionedEntity]], chunk_ids: Sequence[int]
) -> dict[int, Sequence[MentionedEntity]]:
    return {c: mentions.get(c, ()) for c in chunk_ids}
