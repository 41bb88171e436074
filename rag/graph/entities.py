"""Entities in text, offline: what the graph is built from when no LLM is configured (and the
name normalisation every extractor's entities are merged by).

``text_entities`` finds, sentence by sentence, with no model:

- **Proper names**: runs of capitalised words ("Marie Curie", "Bank of England"), connectors
  allowed inside. A sentence's first word counts only when the text uses it capitalised
  elsewhere mid-sentence, or when the run has more than one word. Typed by their surroundings:
  a suffix such as "University" or "Inc", or "at / for / join" before them, an organisation;
  "in / to / from / near" before them, a place; otherwise a person.
- **Terms**: acronyms and words mixing letters and digits ("BRCA1", "IL-6", "COVID-19").
- **Key phrases** (RAKE, Rose et al. 2010): the runs of content words between stop words and
  punctuation, two to four words long, scored by the sum of their words' degree / frequency in
  the text; the best few are concepts ("insulin resistance", "pottery class").

Past forms ("called", "discovered") end a key phrase: without a part-of-speech tagger, that
keeps most verbs out of the concepts. Each entity gets a salience in 0..1 (its rank among
the unit's entities by occurrences, kind and position): co-occurrence edges join a unit's most
salient entities only.

What it misses, by design: lower-case names, names at the start of a sentence used nowhere
else, one-word concepts ("diabetes"), synonyms and paraphrase (two phrases for one thing are two
nodes unless an alias or the LLM extractor joins them), anything not in English.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

PERSON, PLACE, ORGANISATION, TERM, CONCEPT = "person", "place", "organisation", "term", "concept"
ENTITY_TYPES = (PERSON, PLACE, ORGANISATION, TERM, CONCEPT)
# Per unit: entities kept, and how many of the most salient are joined by co-occurrence.
MAX_ENTITIES_PER_UNIT = 12
MAX_KEYPHRASES_PER_UNIT = 5
MAX_NAME_CHARS = 200

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W\d_][\w'\-]*|\d[\w\-]*", re.UNICODE)
_CONNECTORS = frozenset({"of", "de", "da", "van", "von", "the", "del", "la", "le", "and", "for"})
_STOPWORDS_TEXT = """
    a about above after again against all almost also am among an and any are as at be because
    been before being below between both but by can could did do does doing done down during
    each either else even ever every few for from further get gets got had has have having he
    her here hers herself him himself his how however i if in into is it its itself just least
    less like made make many may me might more most much must my myself neither never no nor not
    now of off often on once one only or other others otherwise our ours ourselves out over own
    per perhaps quite rather really same several shall she should since so some such than that
    the their theirs them themselves then there therefore these they this those though through
    thus to too toward towards under until up upon us used using very via was we well were what
    whatever when where whether which while who whom whose why will with within without would
    yet you your yours yourself yourselves yes yeah oh ok okay hey hi hello thanks thank wow
    great good nice cool awesome amazing sure lot lots thing things something anything
    everything nothing someone anyone everyone way ways time times also still already again
    always usually sometimes new old first last next week month year day days today yesterday
    tomorrow go going went gone come came take took see saw know knew think thought feel felt
    want wanted need needed say said tell told let lets i'm i've i'll i'd it's that's don't
    didn't can't won't isn't aren't wasn't there's what's you're we're they're he's she's"""
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_NOT_NAMES_TEXT = """
    I I'm I've I'll I'd It It's Its The A An And But Or So Yes No Oh Ok Okay Hey Hi Hello Thanks
    Thank Wow Well Yeah Sure Great Good Nice Cool Awesome Amazing Really Very Just Also Not My
    Your Our Their His Her We You They He She This That These Those There Here What When Where
    Why How Who Which Let Lol Haha Mr Mrs Ms Dr Sorry Please Congrats Congratulations In On At
    To From For With By Of As If Then However Although Because Since While After Before During
    Our Both Each All Some Most Many Few Such Other Another Only Even Still Yet Here"""
_NOT_NAMES = frozenset(_NOT_NAMES_TEXT.split())
_ORG_SUFFIXES_TEXT = """
    Inc Corp Corporation Ltd LLC Co Company University College School Academy Institute Bank
    Foundation Group Club Association Society Church Hospital Clinic Center Centre Museum Agency
    Studio Studios Labs Lab Team Council Department Ministry Party Festival Library Gallery Cafe
    Restaurant Hotel Organization Organisation Charity Shelter Committee Commission Board Trust
    Federation Union Network Service Services Press Journal"""
_ORG_SUFFIXES = frozenset(_ORG_SUFFIXES_TEXT.split())
_PLACE_CUES = frozenset({"in", "to", "from", "near", "visit", "visited", "visiting", "around"})
_ORG_CUES = frozenset({"at", "for", "join", "joined", "joining", "by"})
_MONTHS_DAYS_TEXT = """
    January February March April May June July August September October November December Monday
    Tuesday Wednesday Thursday Friday Saturday Sunday"""
_MONTHS_DAYS = frozenset(_MONTHS_DAYS_TEXT.split())


def name_key(name: str) -> str:
    """A name as entities are merged by: Unicode-normalised, case-folded, its words (letters
    and digits) joined by single spaces, a leading "the" dropped ("The  Beatles!" and
    "beatles" are one entity)."""
    words = re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", name).casefold())
    if len(words) > 1 and words[0] == "the":
        words = words[1:]
    return " ".join(words)[:500]


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


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _is_term(word: str) -> bool:
    """An acronym or a letters-and-digits token: "BRCA1", "IL-6", "NASA", "COVID-19"."""
    letters = [c for c in word if c.isalpha()]
    if len(word) < 2 or not letters:
        return False
    has_digit = any(c.isdigit() for c in word)
    upper = sum(1 for c in letters if c.isupper())
    return (upper >= 2 and upper >= len(letters) - 1) or (has_digit and upper >= 1)


def name_runs(
    words: Sequence[str], *, skip: Callable[[str], bool], connectors: Collection[str]
) -> list[tuple[int, list[str]]]:
    """Runs of capitalised words ("New York", "University of Oslo": a lower-case connector
    inside a run is kept when a capitalised word follows), each with the index of its first
    word; ``skip``: capitalised words that are no names (sentence openers, months). Used for
    documents here and for conversations (``memory.extraction.offline``)."""
    runs: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    for index, word in enumerate(words):
        if word[:1].isupper() and not skip(word):
            if not current:
                start = index
            current.append(word)
        elif (
            current
            and word.lower() in connectors
            and index + 1 < len(words)
            and words[index + 1][:1].isupper()
        ):
            current.append(word)
        else:
            if current:
                runs.append((start, current))
            current = []
    if current:
        runs.append((start, current))
    return [(s, r[:-1] if r[-1].lower() in connectors else r) for s, r in runs if r]


def _name_runs(words: list[str]) -> list[tuple[int, list[str]]]:
    return name_runs(
        words, skip=lambda word: word in _NOT_NAMES or word in _MONTHS_DAYS, connectors=_CONNECTORS
    )


def _name_type(run: list[str], before: str) -> str:
    if len(run) == 1 and _is_term(run[0]):
        return TERM
    if any(word in _ORG_SUFFIXES for word in run):
        return ORGANISATION
    if before in _PLACE_CUES:
        return PLACE
    if before in _ORG_CUES:
        return ORGANISATION
    return PERSON


def _keyphrases(parts: list[list[str]]) -> list[tuple[str, float]]:
    """RAKE over the sentences' words: candidate phrases of 2-4 content words, scored by the
    sum of degree / frequency of their words, best first."""
    candidates: list[list[str]] = []
    for words in parts:
        current: list[str] = []
        for word in words:
            lower = word.lower()
            # Stop words, numbers and past forms ("called", "discovered": no POS tagger)
            # end a phrase.
            if (
                lower in _STOPWORDS
                or lower.isdigit()
                or len(lower) < 2
                or (len(lower) > 4 and lower.endswith("ed"))
            ):
                if current:
                    candidates.append(current)
                current = []
            else:
                current.append(lower)
        if current:
            candidates.append(current)
    frequency: Counter[str] = Counter()
    degree: Counter[str] = Counter()
    for phrase in candidates:
        for word in phrase:
            frequency[word] += 1
            degree[word] += len(phrase)
    scored: dict[str, float] = {}
    for phrase in candidates:
        if not 2 <= len(phrase) <= 4:
            continue
        text = " ".join(phrase)
        score = sum(degree[w] / frequency[w] for w in phrase)
        scored[text] = max(scored.get(text, 0.0), score)
    return sorted(scored.items(), key=lambda pair: (-pair[1], pair[0]))


def text_entities(text: str, *, known_names: Iterable[str] = ()) -> TextEntities:
    """The entities of one unit's text (at most ``MAX_ENTITIES_PER_UNIT``), most salient first.
    ``known_names``: names to accept at the start of a sentence (a conversation's speakers)."""
    known = {name_key(n) for n in known_names if n.strip()}
    split = [_WORD.findall(sentence) for sentence in sentences(text)]
    mid_sentence: set[str] = set()
    for words in split:
        for start, run in _name_runs(words):
            if start > 0:
                mid_sentence.add(name_key(" ".join(run)))
    found: dict[str, tuple[str, str]] = {}  # key -> (name, type)
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    kind_bonus: dict[str, float] = {}
    position = 0
    for words in split:
        for start, run in _name_runs(words):
            name = " ".join(run)
            key = name_key(name)
            if start == 0 and len(run) == 1 and key not in mid_sentence | known:
                continue
            if len(key) < 2 or key.isdigit():
                continue
            before = words[start - 1].lower() if start > 0 else ""
            found.setdefault(key, (name[:MAX_NAME_CHARS], _name_type(run, before)))
            counts[key] += 1
            first_seen.setdefault(key, position + start)
            kind_bonus[key] = 1.0
        for index, word in enumerate(words):
            if _is_term(word) and name_key(word) not in found:
                key = name_key(word)
                found[key] = (word[:MAX_NAME_CHARS], TERM)
                counts[key] += 1
                first_seen.setdefault(key, position + index)
                kind_bonus[key] = 1.0
        position += len(words)
    for phrase, score in _keyphrases(split)[:MAX_KEYPHRASES_PER_UNIT]:
        key = name_key(phrase)
        if key in found:
            continue
        found[key] = (phrase[:MAX_NAME_CHARS], CONCEPT)
        counts[key] += max(1, text.lower().count(phrase))
        first_seen.setdefault(key, position)
        kind_bonus[key] = min(1.0, score / 10)
    total = max(1, position)
    ranked = sorted(
        found,
        key=lambda k: (-(counts[k] + kind_bonus[k] + 1 - first_seen[k] / total), k),
    )[:MAX_ENTITIES_PER_UNIT]
    entities = [
        Entity(
            name=found[key][0],
            entity_type=found[key][1],
            salience=round(1.0 / (1 + 0.25 * rank), 4),
            occurrences=counts[key],
        )
        for rank, key in enumerate(ranked)
    ]
    return TextEntities(entities=entities)
