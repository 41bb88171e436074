"""Entities and relations in text, offline: what the graph is built from when no LLM is
configured. The words that make names, their types and the key phrases are found by
``rag.graph.names``; the relations between neighbouring mentions are named by
``rag.graph.relation_patterns``.

``document_entities`` reads a document's units (its chunks in order; a conversation's
messages), sentence by sentence, with no model:

- **Names** (proper names and terms) are resolved over the whole document: a surname or a
  title and surname is the document's one full name with that surname, kept as its alias;
  a name's type is what its own words say, else the slots of the relations it takes, else the
  words before it, else a person.
- **Coreference**: a pronoun subject ("She was born in Kiruna"), a possessive ("Her brother,
  Ivan Kovac") or a definite description ("The company ...") stands for the latest compatible
  name within ``TUNING.build.pronoun_window`` sentences.
- **Relations** between neighbouring mentions of a sentence, shared by conjuncts ("A and B
  live in C") and kept past an apposition ("A, the director of B, is married to C").
- **Concepts**: the unit's best few key phrases ("insulin resistance", "pottery class").

Each entity gets a salience in 0..1 (its rank among the unit's entities by occurrences, kind
and position): co-occurrence edges join a unit's most salient entities only.

What it misses, by design: lower-case names, names at the start of a sentence used nowhere
else, one-word concepts ("diabetes"), synonyms and paraphrase (two phrases for one thing are two
nodes unless an alias or the LLM extractor joins them), anything not in English.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rag.graph.names import (
    CONCEPT,
    DOC_CONNECTORS,
    ORG_SUFFIXES,
    ORGANISATION,
    PERSON,
    PLACE,
    STOPWORDS,
    TERM,
    NameRun,
    cue_type,
    is_term,
    is_verb_word,
    keyphrases,
    name_key,
    sentence_names,
    sentences,
    shape_type,
    tokens,
    with_title,
)
from rag.graph.relation_lexicon import PLURAL_ROLES
from rag.graph.relation_patterns import Found, is_symmetric, relation_between, role_before
from rag.tuning import TUNING

MAX_NAME_CHARS = 200


@dataclass(frozen=True)
class Entity:
    name: str
    entity_type: str
    salience: float = 1.0
    occurrences: int = 1
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Relation:
    """A typed relation between two entities of a unit, by name."""

    source: str
    target: str
    relation_type: str


@dataclass
class TextEntities:
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)


# Pronouns that may stand for a named entity as a subject, and the types they may stand for.
_PRONOUNS = {
    "he": (PERSON,),
    "she": (PERSON,),
    "they": (PERSON, ORGANISATION),
    "it": (ORGANISATION,),
}
_POSSESSIVES = {"his": (PERSON,), "her": (PERSON,), "their": (PERSON, ORGANISATION)}
_POSSESSIVES["its"] = (ORGANISATION,)
_PLURAL_ADJECTIVES = frozenset({"close", "best", "old", "good", "happily", "now", "also"})
# Mentions kept only when a relation of the dictionary takes them.
_WEAK = ("weak", "possessive")
# "The company ...": a definite description standing for the last organisation or place.
_DESCRIPTIONS = {
    "company": ORGANISATION,
    "firm": ORGANISATION,
    "organisation": ORGANISATION,
    "organization": ORGANISATION,
    "business": ORGANISATION,
    "group": ORGANISATION,
    "charity": ORGANISATION,
    "band": ORGANISATION,
    "team": ORGANISATION,
    "city": PLACE,
    "town": PLACE,
    "village": PLACE,
    "country": PLACE,
}


@dataclass
class _Name:
    """A name as the document writes it, merged with its aliases."""

    name: str
    shape: str | None = None  # the type its own words say
    cues: Counter[str] = field(default_factory=Counter)
    slots: Counter[str] = field(default_factory=Counter)
    aliases: dict[str, str] = field(default_factory=dict)  # key -> alias as written

    def entity_type(self, *, with_slots: bool = True) -> str:
        if self.shape:
            return self.shape
        if with_slots and self.slots:
            return self.slots.most_common(1)[0][0]
        if self.cues:
            return self.cues.most_common(1)[0][0]
        return PERSON


@dataclass(frozen=True)
class _Mention:
    key: str  # the canonical name's key
    start: int
    end: int  # exclusive
    kind: str  # "name", "term" or "pronoun"


def document_entities(
    texts: Sequence[str], *, known_names: Iterable[str] = (), pronouns_across_units: bool = True
) -> list[TextEntities]:
    """The entities and relations of each unit of one document (its chunks in order; a
    conversation's messages), each unit's at most ``TUNING.build.entities_per_unit``, most salient
    first. Names are resolved over the whole document: a surname or a title and surname
    ("Lind", "Dr. Lind") is the full name ("Jonas Lind") when the document writes exactly one
    full name with that surname, and the full name keeps them as aliases; a pronoun subject
    ("She was born in Kiruna") is the last compatible name within ``TUNING.build.pronoun_window``
    sentences (of the same unit unless ``pronouns_across_units``). ``known_names``: names to
    accept at the start of a sentence (a conversation's speakers)."""
    known = {name_key(n) for n in known_names if n.strip()}
    units = [[tokens(sentence) for sentence in sentences(text)] for text in texts]
    runs = [[sentence_names(words) for words in unit] for unit in units]
    # The document's names: those written mid-sentence, the full names of people, and which
    # full names a lone word (surname or given name) can stand for.
    mid_sentence: set[str] = set()
    full: dict[str, list[str]] = {}  # key -> words
    for unit_runs in runs:
        for sentence_runs in unit_runs:
            for run in sentence_runs:
                key = name_key(" ".join(run.words))
                if run.start > 0 or run.title:
                    mid_sentence.add(key)
                if (
                    2 <= len(run.words) <= 4
                    and shape_type(run.words, run.title) in (None, PERSON)
                    and not any(w.lower() in DOC_CONNECTORS for w in run.words)
                    and cue_type(run.before) != PLACE
                ):
                    full.setdefault(key, run.words)
    surnames: dict[str, set[str]] = {}
    for key, words in full.items():
        surnames.setdefault(name_key(words[-1]), set()).add(key)

    names: dict[str, _Name] = {}

    def canonical(run: NameRun) -> tuple[str, bool] | None:
        """The key of the name a run stands for, and whether it is weak (a sentence's lone
        first word, a name only if a relation of the dictionary takes it); None: no name."""
        text = " ".join(run.words)
        key = name_key(text)
        if len(key) < 2 or key.isdigit() or len(text) > MAX_NAME_CHARS:
            return None
        target = key
        if len(run.words) == 1 and key not in full:
            by_surname = surnames.get(key, set())
            if len(by_surname) == 1:
                target = next(iter(by_surname))
        weak = False
        if (
            target == key
            and run.start == 0
            and not run.title
            and len(run.words) == 1
            and key not in mid_sentence
            and key not in known
        ):
            if key in STOPWORDS or run.words[0].isupper():
                return None
            weak = True
        entry = names.get(target)
        if entry is None:
            written = " ".join(full[target]) if target in full else text
            entry = names[target] = _Name(written[:MAX_NAME_CHARS])
        shape = shape_type(run.words, run.title)
        if shape and (entry.shape is None or target == key):
            entry.shape = shape
        cue = cue_type(run.before)
        if cue:
            entry.cues[cue] += 1
        if target != key:
            if target in surnames.get(key, set()):
                entry.aliases.setdefault(key, text)
            if run.title:
                alias = with_title(run.title, text)
                entry.aliases.setdefault(name_key(alias), alias)
        elif run.title and len(run.words) >= 1:
            alias = with_title(run.title, text)
            entry.aliases.setdefault(name_key(alias), alias)
        return target, weak

    # Pass 1: every sentence's mentions (names, terms), document-wide.
    mentions: list[list[list[_Mention]]] = []
    for unit, unit_runs in zip(units, runs, strict=True):
        unit_mentions: list[list[_Mention]] = []
        for words, sentence_runs in zip(unit, unit_runs, strict=True):
            found: list[_Mention] = []
            taken: set[int] = set()
            for run in sentence_runs:
                resolved = canonical(run)
                if resolved is None:
                    continue
                key, weak = resolved
                # A title belongs to the mention: "headed by Prof. Lind" ends at "by".
                titled = run.title and run.start > 0 and words[run.start - 1] == run.title
                start = run.start - 1 if titled else run.start
                found.append(_Mention(key, start, run.end, "weak" if weak else "name"))
                taken.update(range(run.start, run.end))
            for index, word in enumerate(words):
                if index not in taken and is_term(word):
                    key = name_key(word)
                    names.setdefault(key, _Name(word[:MAX_NAME_CHARS], shape=TERM))
                    found.append(_Mention(key, index, index + 1, "term"))
            unit_mentions.append(sorted(found, key=lambda m: m.start))
        mentions.append(unit_mentions)

    # Pass 2: pronouns and definite descriptions, then relations, in document order.
    recent: list[tuple[str, int]] = []  # (key, sentence number), the latest last
    sentence_number = 0
    relations: list[list[Relation]] = []
    boundaries: list[list[set[int]]] = []
    for unit, unit_mentions in zip(units, mentions, strict=True):
        if not pronouns_across_units:
            recent = []
        unit_relations: list[Relation] = []
        unit_boundaries: list[set[int]] = []
        for words, found in zip(unit, unit_mentions, strict=True):
            sentence_number += 1
            with_pronouns = list(found)
            taken = {i for m in found for i in range(m.start, m.end)}
            for index, word in enumerate(words):
                if index in taken:
                    continue
                lower = word.lower()
                wanted: tuple[str, ...] = ()
                head = ""
                kind = "pronoun"
                if lower in _PRONOUNS and (lower != "it" or index == 0):
                    wanted = _PRONOUNS[lower]
                elif (
                    lower in _POSSESSIVES and index + 1 < len(words) and words[index + 1].islower()
                ):
                    # "Her brother, Ivan Kovac": kept if a relation takes it.
                    wanted, kind = _POSSESSIVES[lower], "possessive"
                elif (
                    index == 0
                    and lower == "the"
                    and len(words) > 1
                    and words[1].islower()
                    and (words[1] in _DESCRIPTIONS or words[1].capitalize() in ORG_SUFFIXES)
                ):
                    head = words[1]
                    wanted = (_DESCRIPTIONS.get(head, ORGANISATION),)
                if not wanted:
                    continue
                # The names before it in its own sentence count as the latest ("Ann Lee, she
                # runs ..."), its first name first.
                here = [(m.key, sentence_number) for m in reversed(found) if m.start < index]
                here = [pair for pair in here if names[pair[0]].shape != TERM]
                antecedent = _antecedent([*recent, *here], names, wanted, head, sentence_number)
                if antecedent:
                    end = index + (2 if head else 1)
                    with_pronouns.append(_Mention(antecedent, index, end, kind))
            with_pronouns.sort(key=lambda m: m.start)
            sentence_relations, kept = _sentence_relations(words, with_pronouns, names)
            found[:] = [m for m in with_pronouns if m.kind not in _WEAK or m in kept]
            unit_relations.extend(sentence_relations)
            # Latest sentence first, and in it the first mention first (the subject); only
            # the window's sentences kept (a long document stays linear).
            recent = [p for p in recent if sentence_number - p[1] < TUNING.build.pronoun_window]
            recent.extend((m.key, sentence_number) for m in reversed(found) if m.kind != "term")
            unit_boundaries.append(
                {i for m in with_pronouns for i in range(m.start, m.end)}
                | {i for i, w in enumerate(words) if is_verb_word(w)}
            )
        relations.append(unit_relations)
        boundaries.append(unit_boundaries)

    out: list[TextEntities] = []
    for unit, unit_mentions, unit_relations, unit_boundaries, text in zip(
        units, mentions, relations, boundaries, texts, strict=True
    ):
        out.append(
            _unit_entities(unit, unit_mentions, unit_relations, unit_boundaries, names, text)
        )
    return out


def _antecedent(
    recent: list[tuple[str, int]],
    names: dict[str, _Name],
    wanted: tuple[str, ...],
    head: str,
    sentence_number: int,
) -> str | None:
    """The latest name within ``TUNING.build.pronoun_window`` sentences of a type in ``wanted``, the
    first-mentioned of its sentence (the subject) first; a description's head word in its name
    first ("the library" -> "Harbor Library"). ``recent``: the latest sentence last, each
    sentence's mentions last to first."""
    window = [
        key
        for key, number in reversed(recent)
        if sentence_number - number <= TUNING.build.pronoun_window
    ]
    if head:
        for key in window:
            if head in names[key].name.lower().split():
                return key
    for key in window:
        if names[key].entity_type() in wanted:
            return key
    return None


def _sentence_relations(
    words: list[str], found: list[_Mention], names: dict[str, _Name]
) -> tuple[list[Relation], set[_Mention]]:
    """The relations between neighbouring mentions of a sentence (``relation_patterns``),
    and the weak mentions a relation of the dictionary took. The ends of a relation get its
    slot types. Conjuncts share a relation ("A and B live in C", "C was founded by A and B");
    an apposition's head keeps the subject ("A, the director of B, is married to C")."""
    lower = [w.lower() for w in words]
    out: list[Relation] = []
    kept: set[_Mention] = set()
    # For each mention: the mentions it stands with (conjuncts), and the relation it was the
    # second end of (to give its conjuncts), by index.
    group: dict[int, list[int]] = {}
    second_of: dict[int, tuple[int, Found]] = {}
    head: dict[int, int] = {}  # an apposition's second mention -> its head
    last_subject: list[int | None] = [None]  # the subject of the latest relation

    def add(subject: _Mention, target: _Mention, rel: Found) -> None:
        if subject.key == target.key:
            return
        if (subject.kind in _WEAK or target.kind in _WEAK) and not rel.canonical:
            return
        for mention in (subject, target):
            if mention.kind in _WEAK:
                kept.add(mention)
        last_subject[0] = found.index(subject)
        if rel.subject_type and names[subject.key].shape is None:
            names[subject.key].slots[rel.subject_type] += 1
        if rel.object_type and names[target.key].shape is None:
            names[target.key].slots[rel.object_type] += 1
        ends = [subject.key, target.key]
        if is_symmetric(rel.relation_type):
            ends.sort()
        out.append(Relation(names[ends[0]].name, names[ends[1]].name, rel.relation_type))

    for index in range(len(found) - 1):
        first, second = found[index], found[index + 1]
        if second.start < first.end:
            continue
        between = lower[first.end : second.start]
        if between in (["and"], [","], [",", "and"], ["or"]):
            group.setdefault(index + 1, []).extend([*group.get(index, []), index])
            rest = [w for w in lower[second.end : second.end + 4] if w not in _PLURAL_ADJECTIVES]
            if rest[:1] in (["are"], ["were"], ["got"], ["have"]) and len(rest) > 1:
                rest = rest[1:]
            if between == ["and"] and rest:
                plural = PLURAL_ROLES.get(rest[0])  # "A and B are siblings", "A and B wed"
                if plural:
                    add(first, second, Found(plural, False, PERSON, PERSON, True))
            if index in second_of:  # "C was founded by A and B": B too
                other, shared = second_of[index]
                ends = (found[index + 1], found[other])
                add(*(ends if shared.reverse else ends[::-1]), shared)
                second_of[index + 1] = second_of[index]
            continue
        if first.kind == "possessive":
            between = ["'s", *between]
        if not between:
            continue
        after = lower[second.end] if second.end < len(lower) else ""
        if after.isalpha() and after not in STOPWORDS and not is_verb_word(after):
            continue  # the name qualifies a noun: "manages the Zagreb branch"
        rel = relation_between(between)
        if rel is None and between in (["is"], ["was"]):
            rel = role_before(lower[: first.start])
        if rel is None and between[0] == "and" and last_subject[0] is not None:
            # "He was raised in Visby and studied at Lund University": the same subject.
            again = relation_between(between[1:])
            if again is not None and not again.reverse:
                add(found[last_subject[0]], second, again)
            continue
        if rel is None:
            continue
        left = index
        if between[0] == "," and between[1:2] not in (["who"], ["which"]) and index in head:
            left = head[index]  # "A, the director of B, is married to C": A
        elif between[0] == ",":
            head[index + 1] = left
        lefts = [left, *(group.get(left, []) if not rel.reverse else [])]
        for one in lefts:
            ends = (found[index + 1], found[one]) if rel.reverse else (found[one], found[index + 1])
            add(*ends, rel)
        second_of[index + 1] = (left, rel)
    return out, kept


def _unit_entities(
    unit: list[list[str]],
    unit_mentions: list[list[_Mention]],
    unit_relations: list[Relation],
    unit_boundaries: list[set[int]],
    names: dict[str, _Name],
    text: str,
) -> TextEntities:
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    kind_bonus: dict[str, float] = {}
    found: dict[str, tuple[str, str]] = {}  # key -> (name, type)
    position = 0
    for words, sentence_mentions in zip(unit, unit_mentions, strict=True):
        for mention in sentence_mentions:
            entry = names[mention.key]
            found.setdefault(mention.key, (entry.name, entry.entity_type()))
            counts[mention.key] += 1
            first_seen.setdefault(mention.key, position + mention.start)
            kind_bonus[mention.key] = 1.0
        position += len(words)
    for phrase, score in keyphrases(unit, unit_boundaries)[: TUNING.build.keyphrases_per_unit]:
        key = name_key(phrase)
        if key in found or any(key in names[k].aliases for k in found if k in names):
            continue
        found[key] = (phrase[:MAX_NAME_CHARS], CONCEPT)
        counts[key] += max(1, text.lower().count(phrase))
        first_seen.setdefault(key, position)
        kind_bonus[key] = min(1.0, score / 10)
    total = max(1, position)
    ranked = sorted(
        found,
        key=lambda k: (-(counts[k] + kind_bonus[k] + 1 - first_seen[k] / total), k),
    )[: TUNING.build.entities_per_unit]
    entities = [
        Entity(
            name=found[key][0],
            entity_type=found[key][1],
            salience=round(1.0 / (1 + 0.25 * rank), 4),
            occurrences=counts[key],
            aliases=tuple(names[key].aliases.values()) if key in names else (),
        )
        for rank, key in enumerate(ranked)
    ]
    kept = {name_key(e.name) for e in entities}
    relations = [
        r
        for r in dict.fromkeys(unit_relations)
        if name_key(r.source) in kept and name_key(r.target) in kept
    ]
    return TextEntities(entities=entities, relations=relations)


def text_entities(text: str, *, known_names: Iterable[str] = ()) -> TextEntities:
    """The entities and relations of one unit's text read alone (``document_entities``)."""
    return document_entities([text], known_names=known_names)[0]
