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

from rag.graph.relation_patterns import (
    PLURAL_ROLES,
    RELATION_VERBS,
    Found,
    is_symmetric,
    relation_between,
    role_before,
)

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
    Federation Union Network Service Services Press Journal Quartet Trio Quintet Orchestra Choir
    Ensemble Band Media Systems Technologies Solutions Partners Holdings Industries Airlines
    Motors Records Games Pictures Films Publishing Publishers Capital Ventures Conservatory
    Seminary Observatory Theatre Theater Opera Ballet Parliament Senate Police Army Navy
    Robotics Pharmaceuticals Laboratories Institution Bureau Office Authority Agency Guild
    Playhouse Textiles Analytics Books Logistics Foods Brewery Bakery Farms Mills Shipping
    Freight Energy Mining Software Consulting Engineering Construction Airways Telecom Pharma
    Biotech Electronics Instruments Supplies Brands Retail Cinema Gymnasium Seminary Kitchen
    Workshop Collective Cooperative Co-op Fund Alliance Coalition Council Institute"""
_ORG_SUFFIXES = frozenset(_ORG_SUFFIXES_TEXT.split())
_PLACE_CUES = frozenset({"in", "to", "from", "near", "visit", "visited", "visiting", "around"})
_ORG_CUES = frozenset({"at", "for", "join", "joined", "joining"})
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


# Abbreviations a sentence does not end at ("Dr. Lind", "St. Paul", "J. Smith").
_ABBREVIATIONS_TEXT = (
    "dr prof mr mrs ms mx st jr sr mt ft no vs etc e.g i.e approx dept univ inc ltd co corp"
)
_ABBREVIATIONS = frozenset(_ABBREVIATIONS_TEXT.split())


def sentences(text: str) -> list[str]:
    """The text's sentences: split after ".", "!" or "?" and at line breaks, but not after a
    title, an abbreviation or an initial ("Dr. Lind", "J. R. Tolkien")."""
    out: list[str] = []
    for piece in _SENTENCE.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if out and out[-1].endswith("."):
            last = out[-1].rsplit(None, 1)[-1][:-1]
            if last.lower() in _ABBREVIATIONS or (len(last) == 1 and last.isupper()):
                out[-1] = f"{out[-1]} {piece}"
                continue
        out.append(piece)
    return out


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


TITLES_TEXT = """
    Dr Prof Professor Mr Mrs Ms Mx Miss Sir Dame Lord Lady Doctor Judge Justice Captain Capt
    Rev Reverend Father Sister Brother Senator Governor Mayor Coach Uncle Aunt Auntie Grandma
    Grandpa Officer Sergeant Lieutenant Colonel General Detective Inspector"""
TITLES = frozenset(TITLES_TEXT.split())
# Titles written with a full stop when abbreviated ("Dr. Lind").
_ABBREVIATED_TITLES_TEXT = "Dr Prof Mr Mrs Ms Mx Capt Rev"
_ABBREVIATED_TITLES = frozenset(_ABBREVIATED_TITLES_TEXT.split())
_PLACE_WORDS_TEXT = """
    City Town Village River Lake Mount Mountain Mountains Island Islands County Province
    State Valley Bay Coast Street Road Avenue Square Park Beach Peninsula Gulf Sea Ocean Desert
    Forest Canyon Falls Harbour Strait Fjord Hills District Region Republic Kingdom Airport
    Station Stadium Arena Bridge Plaza Heights Springs"""
_PLACE_WORDS = frozenset(_PLACE_WORDS_TEXT.split())
_DOC_CONNECTORS = _CONNECTORS - {"and"}
# Verbs a capitalised run may swallow in a title-cased line ("Jonas Lind Runs ..."): dropped.
_NAME_ENDING_VERBS_TEXT = "is was are were has had says said runs leads works lives founded"
_NAME_ENDING_VERBS = frozenset(_NAME_ENDING_VERBS_TEXT.split())
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
# How many sentences back a pronoun looks for its antecedent.
PRONOUN_WINDOW = 4
_TOKEN = re.compile(r"[^\W_][\w\-]*(?:['\u2019](?![sS]\b)\w+)?|['\u2019][sS]\b|[,;:()]", re.UNICODE)


def _tokens(sentence: str) -> list[str]:
    """A sentence's words, with "," ";" ":" "(" ")" and a possessive "'s" as words of their
    own ("Library's" -> "Library", "'s")."""
    return [t.replace("\u2019", "'") for t in _TOKEN.findall(sentence)]


def _name_runs(words: list[str]) -> list[tuple[int, list[str]]]:
    return name_runs(
        words,
        skip=lambda word: word in _NOT_NAMES or word in _MONTHS_DAYS,
        connectors=_DOC_CONNECTORS,
    )


def shape_type(run: Sequence[str], title: str) -> str | None:
    """The type a name's own words say: a term, an organisation's or a place's word (its head
    first: "Tidewater Street Playhouse" is an organisation, "Bank Street" a place), a person's
    title; None when they say nothing."""
    if len(run) == 1 and _is_term(run[0]):
        return TERM
    head = run[: run.index("of")] if "of" in run else run
    if head and head[-1] in _ORG_SUFFIXES:
        return ORGANISATION
    if head and head[-1] in _PLACE_WORDS:
        return PLACE
    if any(word in _ORG_SUFFIXES for word in run):
        return ORGANISATION
    if any(word in _PLACE_WORDS for word in run):
        return PLACE
    if title:
        return PERSON
    return None


def _cue_type(before: str) -> str | None:
    """The type the word before a name suggests: "in Kiruna" a place, "at Volvo" and "the
    Skylark Hall" an organisation (a person's name takes no article); "by" says nothing."""
    if before in _PLACE_CUES:
        return PLACE
    if before in _ORG_CUES or before == "the":
        return ORGANISATION
    return None


def _is_verb_word(word: str) -> bool:
    """A word a name or a key phrase must not take in (no tagger): a relation's verb, or a
    past or third-person form after a name ("lind runs", "jonas lind was")."""
    lower = word.lower()
    return (
        lower in RELATION_VERBS or lower in _STOPWORDS or (len(lower) > 4 and lower.endswith("ed"))
    )


def _keyphrases(
    parts: list[list[str]], boundaries: list[set[int]] | None = None
) -> list[tuple[str, float]]:
    """RAKE over the sentences' words: candidate phrases of 2-4 content words, scored by the
    sum of degree / frequency of their words, best first. ``boundaries``: per sentence, the
    indexes of words that end a phrase (names, pronouns, verbs of relations)."""
    candidates: list[list[str]] = []
    for number, words in enumerate(parts):
        stops = boundaries[number] if boundaries else set()
        current: list[str] = []
        for index, word in enumerate(words):
            lower = word.lower()
            # Stop words, numbers, punctuation, names, verbs of relations and past forms
            # ("called", "discovered": no POS tagger) end a phrase.
            if (
                index in stops
                or lower in _STOPWORDS
                or lower in RELATION_VERBS
                or not lower[:1].isalnum()
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


@dataclass
class _Run:
    """A name run of one sentence: its words (title stripped), its title, where it starts."""

    words: list[str]
    title: str
    start: int
    end: int
    before: str


def _runs(words: list[str]) -> list[_Run]:
    out: list[_Run] = []
    for start, run in _name_runs(words):
        end = start + len(run)
        title = words[start - 1] if start > 0 and words[start - 1] in TITLES else ""
        while len(run) > 1 and run[0] in TITLES:
            title, run, start = run[0], run[1:], start + 1
        # A sentence's opener glued to a name ("Yesterday Jonas Lind ..."): dropped.
        while len(run) > 1 and start == 0 and run[0] in _NOT_NAMES:
            run, start = run[1:], start + 1
        # A verb glued to a name ("Jonas Lind Runs" in a title): dropped.
        while len(run) > 1 and run[-1].lower() in _NAME_ENDING_VERBS:
            run, end = run[:-1], end - 1
        before_index = start - 1 - (1 if title and words[start - 1] == title else 0)
        before = words[before_index].lower() if before_index >= 0 else ""
        # "the Analytical Engine of Charles Babbage": two names ("University of Paris",
        # "Museum of Modern Art", "Gulf of Mexico": one).
        if "of" in run:
            cut = run.index("of")
            head, tail = run[:cut], run[cut + 1 :]
            if (
                head
                and len(tail) >= 2
                and head[-1] not in _ORG_SUFFIXES
                and head[-1] not in _PLACE_WORDS
                and not any(word.lower() in _DOC_CONNECTORS for word in tail)
            ):
                out.append(_Run(head, title, start, start + cut, before))
                out.append(_Run(tail, "", start + cut + 1, end, "of"))
                continue
        out.append(_Run(run, title, start, end, before))
    return out


def document_entities(
    texts: Sequence[str], *, known_names: Iterable[str] = (), pronouns_across_units: bool = True
) -> list[TextEntities]:
    """The entities and relations of each unit of one document (its chunks in order; a
    conversation's messages), each unit's at most ``MAX_ENTITIES_PER_UNIT``, most salient
    first. Names are resolved over the whole document: a surname or a title and surname
    ("Lind", "Dr. Lind") is the full name ("Jonas Lind") when the document writes exactly one
    full name with that surname, and the full name keeps them as aliases; a pronoun subject
    ("She was born in Kiruna") is the last compatible name within ``PRONOUN_WINDOW``
    sentences (of the same unit unless ``pronouns_across_units``). ``known_names``: names to
    accept at the start of a sentence (a conversation's speakers)."""
    known = {name_key(n) for n in known_names if n.strip()}
    units = [[_tokens(sentence) for sentence in sentences(text)] for text in texts]
    runs = [[_runs(words) for words in unit] for unit in units]
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
                    and not any(w.lower() in _DOC_CONNECTORS for w in run.words)
                    and _cue_type(run.before) != PLACE
                ):
                    full.setdefault(key, run.words)
    surnames: dict[str, set[str]] = {}
    for key, words in full.items():
        surnames.setdefault(name_key(words[-1]), set()).add(key)

    names: dict[str, _Name] = {}

    def canonical(run: _Run) -> tuple[str, bool] | None:
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
            if key in _STOPWORDS or run.words[0].isupper():
                return None
            weak = True
        entry = names.get(target)
        if entry is None:
            written = " ".join(full[target]) if target in full else text
            entry = names[target] = _Name(written[:MAX_NAME_CHARS])
        shape = shape_type(run.words, run.title)
        if shape and (entry.shape is None or target == key):
            entry.shape = shape
        cue = _cue_type(run.before)
        if cue:
            entry.cues[cue] += 1
        if target != key:
            if target in surnames.get(key, set()):
                entry.aliases.setdefault(key, text)
            if run.title:
                dot = "." if run.title in _ABBREVIATED_TITLES else ""
                titled = f"{run.title}{dot} {text}"
                entry.aliases.setdefault(name_key(titled), titled)
        elif run.title and len(run.words) >= 1:
            dot = "." if run.title in _ABBREVIATED_TITLES else ""
            titled = f"{run.title}{dot} {text}"
            entry.aliases.setdefault(name_key(titled), titled)
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
                if index not in taken and _is_term(word):
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
                    and (words[1] in _DESCRIPTIONS or words[1].capitalize() in _ORG_SUFFIXES)
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
            recent = [p for p in recent if sentence_number - p[1] < PRONOUN_WINDOW]
            recent.extend((m.key, sentence_number) for m in reversed(found) if m.kind != "term")
            unit_boundaries.append(
                {i for m in with_pronouns for i in range(m.start, m.end)}
                | {i for i, w in enumerate(words) if _is_verb_word(w)}
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
    """The latest name within ``PRONOUN_WINDOW`` sentences of a type in ``wanted``, the
    first-mentioned of its sentence (the subject) first; a description's head word in its name
    first ("the library" -> "Harbor Library"). ``recent``: the latest sentence last, each
    sentence's mentions last to first."""
    window = [key for key, number in reversed(recent) if sentence_number - number <= PRONOUN_WINDOW]
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
        if after.isalpha() and after not in _STOPWORDS and not _is_verb_word(after):
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
    for phrase, score in _keyphrases(unit, unit_boundaries)[:MAX_KEYPHRASES_PER_UNIT]:
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
    )[:MAX_ENTITIES_PER_UNIT]
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
