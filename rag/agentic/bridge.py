"""Bridge entities for agentic RAG (docs/rag.md, "Agentic RAG"): a multi-hop question
describes an entity by a relation instead of naming it ("Where was *the person who runs the
Harbor Library* born?"); the passage that answers names the entity ("Jonas Lind was born in
Kiruna") and shares no word with the question. A round's best hits name the entity next to
the question's own ("The Harbor Library is run by Jonas Lind"): that is the bridge, and the
next round asks the question with the name put in place of the description ("Where was Jonas
Lind born?").

Offline, no model:

1. **The description** (``rag.graph.questions``): the span of the question that
   describes an entity by its relation to a named one, and the kind of entity it asks for.
2. **Candidates**: the names in the round's best hits (``TUNING.agentic.bridge_results``): the
   offline extractor's (``rag.graph.entities.text_entities``), the graph's mentions of the hits
   (``rag.graph.bridges.unit_entities``: the nodes the searcher may see) and every capitalised
   run, that share a sentence with the description's named entity (or its surname; a sentence
   opening with a pronoun continues the one before it), are not named by the question, are not
   the named entity itself and were no earlier bridge.
3. **Score**: the sentence's weight (its cosine similarity to the description, given by the
   caller; else 1 / (1 + its hit's rank)) x the type factor (1 when the candidate is of the
   wanted kind, ``TUNING.agentic.type_mismatch`` otherwise; the kind read from the candidate's
   contexts in the round's results, ``_context_type``, else the extractor's type) x (1 +
   ``TUNING.agentic.relation_bonus`` x the share of the description's relation words, "runs",
   "director", in that sentence); a candidate's best.
4. **Reformulation** (``substitute``): the description replaced by the name. When what is left
   asks nothing but the name ("Who is the director of the Harbor Library?" -> "Who is Jonas
   Lind?"), the bridge is the answer and no further round is needed.

With an LLM configured, the model names the bridge and writes the next query (validated JSON;
the bridge must be named by one of the passages it was shown and not by the question);
anything else falls back to the offline path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rag.graph.bridges import MentionedEntity
from rag.graph.entities import text_entities
from rag.graph.names import CONCEPT, ORGANISATION, PERSON, PLACE, name_key
from rag.graph.questions import (
    _NOT_NAMES,
    _ORG_WORDS,
    Description,
    _is_name_word,
    _name_run,
    _text,
    _Token,
    _tokens,
)
from rag.keyword import analyze
from rag.tuning import TUNING


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


def _key_in(key: str, text_key: str) -> bool:
    return bool(key) and f" {key} " in f" {text_key} "


_TITLES = frozenset({"dr", "mr", "mrs", "ms", "prof", "sir", "dame", "miss"})
_PRONOUNS = frozenset({"he", "she", "they", "it", "his", "her", "its", "their"})
_THING = "thing"


def _clean(name: str) -> list[str]:
    """A candidate's names: "Nina Marshdal and Prof" is "Nina Marshdal"; titles dropped."""
    out = []
    for part in re.split(r"\s+and\s+", name):
        words = [w for w in part.split() if w.lower().rstrip(".") not in _TITLES]
        if words:
            out.append(" ".join(words))
    return out


# What follows a name says what it is: a person is born, marries, studies; a place is home to
# something; an organisation employs, funds, publishes.
_FOLLOWING_CUES = {
    PERSON: (
        "was born",
        "is a native",
        "grew up",
        "married",
        "wed ",
        "and her",
        "and his",
        "studied",
        "graduated",
        "lives",
        "resides",
        "has made a home",
        "mentored",
        "was raised",
        "spent",
        "took a degree",
        "is an alumnus",
        "is married",
        "came into the world",
        "is a sibling",
        "trained under",
        "was mentored",
    ),
    PLACE: ("is home to", "is where", "is the birthplace"),
    ORGANISATION: (
        "employs",
        "funds",
        "published",
        "sponsors",
        "is headquartered",
        "is based in",
        "has its head office",
        "keeps its head office",
        "brought out",
        "includes",
        "has paid for",
        "is funded",
        "receives its money",
    ),
}


def _first_run(tokens: list[_Token]) -> tuple[int, int] | None:
    """The capitalised run that opens a sentence ("Quillholt runs ...", "Dr. Lind ...")."""
    first = 0
    while first < len(tokens) and tokens[first].lower.rstrip(".") in _TITLES:
        first += 1
    if first >= len(tokens) or not tokens[first].word[:1].isupper():
        return None
    if tokens[first].lower in _NOT_NAMES or tokens[first].lower in _PRONOUNS:
        return None
    last = first
    while last + 1 < len(tokens) and _is_name_word(tokens, last + 1):
        last += 1
    return first, last


def _proper(name: str, text: str) -> bool:
    """Is ``name`` written in ``text`` as a proper name (capitalised)?"""
    match = re.search(r"\b" + re.escape(name) + r"\b", text, re.IGNORECASE)
    return match is not None and match.group()[:1].isupper()


def _context_type(name: str, texts: Sequence[str]) -> str:
    """The type the contexts of ``name`` in the round's results give it, "" when they say
    nothing: an organisation's word in it; a title before it or its surname ("Dr. Lind") a
    person; "in / from / near / around" before it a place; a lower-case "the" or a capital article
    before it ("the Wren Clinic", "A Distant Atlas") a thing or an organisation, no person."""
    words = name.split()
    if {w.lower() for w in words} & _ORG_WORDS:
        return ORGANISATION
    if len(words) > 1 and words[0] in ("A", "An", "The"):
        return _THING  # a title: "A Distant Atlas"
    votes: dict[str, int] = {}
    pattern = re.compile(r"(\S+)\s+" + re.escape(name) + r"\b")
    surname = re.compile(r"(\S+)\s+" + re.escape(words[-1]) + r"\b") if len(words) > 1 else None
    for text in texts:
        for match in pattern.finditer(text):
            before = match.group(1)
            lower = before.lower().rstrip(".,;:")
            if lower in _TITLES:
                votes[PERSON] = votes.get(PERSON, 0) + 2
            elif lower in ("in", "from", "near", "around"):
                votes[PLACE] = votes.get(PLACE, 0) + 1
            elif before in ("the", "A", "An", "The") or lower in ("at", "by"):
                kind = _THING if before in ("A", "An", "The") else ORGANISATION
                if lower == "by":
                    continue  # "run by Jonas Lind", "founded by the Puffin Trust": both
                votes[kind] = votes.get(kind, 0) + 1
        if surname is not None:
            for match in surname.finditer(text):
                if match.group(1).lower().rstrip(".") in _TITLES:
                    votes[PERSON] = votes.get(PERSON, 0) + 2
        for match in re.finditer(re.escape(name) + r"\b([^.!?]{0,40})", text):
            following = " " + match.group(1).lower()
            for kind, cues in _FOLLOWING_CUES.items():
                if any(following.startswith(f" {cue}") for cue in cues):
                    votes[kind] = votes.get(kind, 0) + 1
        for match in re.finditer(re.escape(name) + r"\b[^.!?]*[.!?]\s+(\w+)", text):
            pronoun = match.group(1).lower()
            if pronoun in ("he", "she", "his", "her"):
                votes[PERSON] = votes.get(PERSON, 0) + 1
    if not votes:
        return ""
    return max(votes, key=lambda k: (votes[k], k))


def _compatible(entity_type: str, known: str, name: str, wanted: str) -> bool:
    """Is a candidate of the type the description asks for? ``known``: the type its
    contexts give it (``_context_type``), which decides when it says anything."""
    if not wanted:
        return True
    if known:
        return known == wanted
    if entity_type == wanted or not entity_type:
        return True
    words = {w.lower() for w in name.split()}
    if wanted == PERSON:
        # The offline typer calls a name after "by" or "at" an organisation; without an
        # organisation's word in it, it may well be a person.
        return entity_type in (ORGANISATION, "organization") and not words & _ORG_WORDS
    if wanted == ORGANISATION:
        return bool(words & _ORG_WORDS) or entity_type == PERSON
    if wanted == PLACE:
        return entity_type in ("location", "city", "country") or (
            entity_type == PERSON and len(words) == 1
        )
    return False


def _anchor_keys(anchors: Sequence[str]) -> list[str]:
    """The description's entities as name keys, with a person's surname ("Lind" for "Jonas
    Lind", as documents shorten a name after its first use)."""
    keys = []
    for anchor in anchors:
        key = name_key(anchor)
        keys.append(key)
        words = anchor.split()
        if (
            len(words) >= 2
            and not {w.lower() for w in words} & _ORG_WORDS
            and words[0][:1].isupper()
            and words[0] not in ("A", "An", "The")
        ):
            keys.append(name_key(words[-1]))
    return [k for k in dict.fromkeys(keys) if len(k) >= 2]


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")


def _sentences(text: str) -> list[str]:
    """``text``'s sentences, not broken after a title ("Prof. Jessley")."""
    out: list[str] = []
    for piece in _SENTENCE_BREAK.split(text):
        piece = piece.strip()
        if not piece:
            continue
        last = out[-1].rsplit(maxsplit=1)[-1].lower().rstrip(".") if out else ""
        if out and out[-1].endswith(".") and last in _TITLES:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def find_bridge(
    description: Description,
    query: str,
    hits: Sequence[BridgeHit],
    *,
    earlier: Iterable[str] = (),
    similarity: Callable[[list[str]], list[float]] | None = None,
    context: Sequence[str] = (),
) -> Bridge | None:
    """The best bridge entity the hits name for ``description`` (see the module's
    docstring), or None. ``earlier``: names already used as bridges (never again);
    ``similarity``: each sentence's similarity to the description (then a sentence weighs
    that, not its hit's rank); ``context``: more texts of the round whose contexts type the
    candidates."""
    query_key = name_key(query)
    used = {name_key(n) for n in earlier}
    anchors = _anchor_keys(description.anchors)
    texts = [h.text for h in hits[: TUNING.agentic.bridge_results]] + list(context)
    # The sentences naming the description's entity: (hit rank, hit, sentence, candidates).
    found: list[tuple[int, BridgeHit, str, list[tuple[str, str]]]] = []
    for rank, hit in enumerate(hits[: TUNING.agentic.bridge_results]):
        extracted = text_entities(hit.text).entities
        candidates: list[tuple[str, str]] = [
            (name, e.entity_type)
            for e in extracted
            if e.entity_type != CONCEPT  # key phrases are no names
            for name in _clean(e.name)
        ]
        for mentioned in hit.entities:
            if mentioned.entity_type == CONCEPT:
                continue
            for name in (mentioned.name, *mentioned.aliases):
                candidates.extend((n, mentioned.entity_type) for n in _clean(name))
        candidates = [(n, t) for n, t in candidates if _proper(n, hit.text)]
        # The extractor skips a sentence's single first word ("Quillholt runs the library."):
        # every capitalised run of the text is a candidate too, untyped.
        known = {name_key(n) for n, _ in candidates}
        for sentence in _sentences(hit.text):
            tokens = _tokens(sentence)
            index = 0
            while index < len(tokens):
                run = _name_run(tokens, index) if index else _first_run(tokens)
                if run is None:
                    index += 1
                    continue
                name = _text(sentence, tokens, run[0], run[1])
                if name_key(name) not in known and len(name) >= 3:
                    candidates.append((name, ""))
                    known.add(name_key(name))
                index = run[1] + 1
        mentions_anchor = False
        for sentence in _sentences(hit.text):
            first = sentence.split(maxsplit=1)[0].lower() if sentence.split() else ""
            # A sentence opening with a pronoun continues the one before it.
            mentions_anchor = any(_key_in(a, name_key(sentence)) for a in anchors) or (
                mentions_anchor and first in _PRONOUNS
            )
            if mentions_anchor:
                found.append((rank, hit, sentence, candidates))
    if not found:
        return None
    if similarity is not None:
        weights = [
            value / (1 + rank) ** TUNING.agentic.rank_mix
            for (rank, *_), value in zip(
                found, similarity([sentence for _, _, sentence, _ in found]), strict=True
            )
        ]
    else:
        weights = [1.0 / (1 + rank) for rank, *_ in found]
    types: dict[str, str] = {}
    best: dict[str, Bridge] = {}
    for (_, hit, sentence, candidates), weight in zip(found, weights, strict=True):
        sentence_key = name_key(sentence)
        # A surname stands for the full name the same text gives ("Tammgren": "Felix
        # Tammgren").
        full = {name_key(n.split()[-1]): n for n, _ in candidates if len(n.split()) >= 2}
        stems = set(analyze(sentence))
        share = (
            len(stems & set(description.relation)) / len(description.relation)
            if description.relation
            else 0.0
        )
        for written, entity_type in candidates:
            key = name_key(written)
            if (
                len(key) < 2
                or not _key_in(key, sentence_key)
                or _key_in(key, query_key)
                or any(_key_in(key, a) or _key_in(a, key) for a in anchors)
            ):
                continue
            name = full.get(key, written) if len(key.split()) == 1 else written
            key = name_key(name)
            if key in used or _key_in(key, query_key):
                continue
            if key not in types:
                types[key] = _context_type(name, texts)
            compatible = _compatible(entity_type, types[key], name, description.wanted)
            factor = 1.0 if compatible else TUNING.agentic.type_mismatch
            score = weight * factor * (1 + TUNING.agentic.relation_bonus * share)
            if score > best.get(key, Bridge("", "", "", None, "", -1.0)).score:
                best[key] = Bridge(
                    name=name,
                    entity_type=description.wanted or types[key] or entity_type,
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
