"""Names in text, offline: finding and typing them, word by word (no model). What
``rag.graph.entities`` builds a unit's entities from, and the name normalisation every
extractor's entities are merged by (``name_key``).

- **Sentences and words**: ``sentences`` splits a text (not after a title, an abbreviation or
  an initial), ``tokens`` a sentence (punctuation and a possessive "'s" as words of their own).
- **Proper names**: runs of capitalised words ("Marie Curie", "Bank of England"), connectors
  allowed inside (``name_runs``; ``sentence_names``: a sentence's, titles, openers and glued
  verbs taken off, "X of Y" cut in two when it reads as two names).
- **Terms**: acronyms and words mixing letters and digits ("BRCA1", "IL-6", "COVID-19").
- **Types from words**: what a name's own words say (``shape_type``: a suffix such as
  "University" or "Inc" an organisation, "Street" or "Lake" a place, a title a person) and what
  the word before it suggests (``cue_type``: "in / to / from / near" a place, "at / for / join"
  an organisation).
- **Key phrases** (RAKE, Rose et al. 2010, ``keyphrases``): the runs of content words between
  stop words and punctuation, two to four words long, scored by the sum of their words'
  degree / frequency in the text. Past forms ("called", "discovered") end a key phrase: without
  a part-of-speech tagger, that keeps most verbs out of the concepts.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from rag.graph.relation_patterns import RELATION_VERBS

PERSON, PLACE, ORGANISATION, TERM, CONCEPT = "person", "place", "organisation", "term", "concept"
ENTITY_TYPES = (PERSON, PLACE, ORGANISATION, TERM, CONCEPT)

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
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
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
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
ORG_SUFFIXES = frozenset(_ORG_SUFFIXES_TEXT.split())
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


def is_term(word: str) -> bool:
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
    documents here and for conversations (``memory.conversations.extraction.offline``)."""
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
DOC_CONNECTORS = _CONNECTORS - {"and"}
# Verbs a capitalised run may swallow in a title-cased line ("Jonas Lind Runs ..."): dropped.
_NAME_ENDING_VERBS_TEXT = "is was are were has had says said runs leads works lives founded"
_NAME_ENDING_VERBS = frozenset(_NAME_ENDING_VERBS_TEXT.split())
_TOKEN = re.compile(r"[^\W_][\w\-]*(?:['\u2019](?![sS]\b)\w+)?|['\u2019][sS]\b|[,;:()]", re.UNICODE)


def tokens(sentence: str) -> list[str]:
    """A sentence's words, with "," ";" ":" "(" ")" and a possessive "'s" as words of their
    own ("Library's" -> "Library", "'s")."""
    return [t.replace("\u2019", "'") for t in _TOKEN.findall(sentence)]


def _name_runs(words: list[str]) -> list[tuple[int, list[str]]]:
    return name_runs(
        words,
        skip=lambda word: word in _NOT_NAMES or word in _MONTHS_DAYS,
        connectors=DOC_CONNECTORS,
    )


def shape_type(run: Sequence[str], title: str) -> str | None:
    """The type a name's own words say: a term, an organisation's or a place's word (its head
    first: "Tidewater Street Playhouse" is an organisation, "Bank Street" a place), a person's
    title; None when they say nothing."""
    if len(run) == 1 and is_term(run[0]):
        return TERM
    head = run[: run.index("of")] if "of" in run else run
    if head and head[-1] in ORG_SUFFIXES:
        return ORGANISATION
    if head and head[-1] in _PLACE_WORDS:
        return PLACE
    if any(word in ORG_SUFFIXES for word in run):
        return ORGANISATION
    if any(word in _PLACE_WORDS for word in run):
        return PLACE
    if title:
        return PERSON
    return None


def cue_type(before: str) -> str | None:
    """The type the word before a name suggests: "in Kiruna" a place, "at Volvo" and "the
    Skylark Hall" an organisation (a person's name takes no article); "by" says nothing."""
    if before in _PLACE_CUES:
        return PLACE
    if before in _ORG_CUES or before == "the":
        return ORGANISATION
    return None


def is_verb_word(word: str) -> bool:
    """A word a name or a key phrase must not take in (no tagger): a relation's verb, or a
    past or third-person form after a name ("lind runs", "jonas lind was")."""
    lower = word.lower()
    return (
        lower in RELATION_VERBS or lower in STOPWORDS or (len(lower) > 4 and lower.endswith("ed"))
    )


def keyphrases(
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
                or lower in STOPWORDS
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
class NameRun:
    """A name run of one sentence: its words (title stripped), its title, where it starts."""

    words: list[str]
    title: str
    start: int
    end: int
    before: str


def sentence_names(words: list[str]) -> list[NameRun]:
    """The name runs of a sentence's words (``tokens``): a title before or in a run kept
    apart, a sentence opener or a verb glued to a name dropped, "X of Y" two names when "X" is
    no organisation's or place's word."""
    out: list[NameRun] = []
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
                and head[-1] not in ORG_SUFFIXES
                and head[-1] not in _PLACE_WORDS
                and not any(word.lower() in DOC_CONNECTORS for word in tail)
            ):
                out.append(NameRun(head, title, start, start + cut, before))
                out.append(NameRun(tail, "", start + cut + 1, end, "of"))
                continue
        out.append(NameRun(run, title, start, end, before))
    return out


def with_title(title: str, name: str) -> str:
    """A name with its title as written: "Dr. Lind" (an abbreviated title takes a full stop),
    "Professor Lind"."""
    dot = "." if title in _ABBREVIATED_TITLES else ""
    return f"{title}{dot} {name}"
