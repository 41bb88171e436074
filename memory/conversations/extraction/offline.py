"""The offline extractor: deterministic, no model, honest about its limits.

What it finds, sentence by sentence:

- **Facts** from plain first-person statements only: "my X is Y", "I like / love / enjoy /
  prefer / hate X", "I work at / for X", "I moved to X", "I live in X", "I am a X" ("I'm an
  X"). The speaker is the message's ``name`` (first person = the speaker). Each becomes a
  third-person sentence ("Caroline moved to Lisbon.") under a key derived from the speaker and
  the predicate (``caroline.moved_to``; preferences ``caroline.preference.pottery``, so a later
  "I hate pottery" is a new version of the same item), with a low confidence
  (``TUNING.extraction.offline_confidence``).
- **Entities**: runs of capitalised words that do not start a sentence (a sentence's first
  word counts only when the batch uses it capitalised elsewhere, or it is a speaker's name),
  typed by their own words first (``rag.graph.names.shape_type``: a head word such as
  "University" or "Cafe" an organisation, "Street" or "Lake" a place, a title such as "Dr." or
  "Ms." a person), then by their surroundings: after "in / to / from / near / visit" a place,
  after "at / for / join" an organisation, otherwise a person ("by" says nothing: "a talk by
  Ann Lee" is a person). Within the batch, a lone surname or title and surname ("Lee",
  "Dr. Lee") is the full name ("Ann Lee") when the batch names exactly one person so.
  **Dates** by pattern: month names with an optional day and year, ISO and slashed dates, years,
  weekdays and relative phrases ("last week", "two years ago"), kept as the text said, never
  resolved to a calendar date.

What it misses, by design: questions and conditionals are skipped; negations ("I don't like
X") are not facts; third-person statements ("she moved to Paris"), pronouns, paraphrase and
anything implied are never facts; a lower-case name is no entity; a capitalised common word
mid-sentence ("the Beach") is taken for one; "at Google" and "at Lisbon" are both
organisations; a first name alone is never joined to a full name (two friends may share it);
the English patterns find nothing in other languages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memory.tuning import TUNING
from rag.graph.names import TITLES, name_runs, shape_type
from rag.graph.names import sentences as text_sentences

# The confidence of what it finds and the longest object are tunables: ``TUNING.extraction``.
MAX_SLUG_CHARS = 60

PERSON, PLACE, ORGANISATION, DATE = "person", "place", "organisation", "date"
ENTITY_TYPES = (PERSON, PLACE, ORGANISATION, DATE)

_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_WEEKDAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_NUMBER_WORDS = "a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|several|\\d+"
_DATE = re.compile(
    rf"\b(?:(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\.?(?:,?\s+\d{{4}})?)"
    rf"|(?:(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?)"
    rf"|(?:(?:{_MONTHS})\.?\s+\d{{4}})"
    rf"|(?:\d{{4}}-\d{{2}}-\d{{2}})|(?:\d{{1,2}}/\d{{1,2}}/\d{{2,4}})"
    rf"|(?:(?:last|next|this)\s+(?:week|weekend|month|year|summer|winter|spring|autumn|fall|"
    rf"night|{_WEEKDAYS}))"
    rf"|(?:(?:{_NUMBER_WORDS})\s+(?:days?|weeks?|months?|years?)\s+ago)"
    rf"|(?:yesterday|today|tomorrow|tonight)"
    rf"|(?:(?:on\s+)?(?:{_WEEKDAYS}))|(?:(?<=in\s)(?:{_MONTHS}))|(?:(?<=since\s)(?:{_MONTHS}))"
    rf"|(?:(?<=\bin\s)(?:19|20)\d{{2}})|(?:(?<=\bsince\s)(?:19|20)\d{{2}}))\b",
    re.IGNORECASE,
)
_MONTH_OR_DAY = re.compile(rf"(?:{_MONTHS}|{_WEEKDAYS})\.?", re.IGNORECASE)

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*|\d+")
_CONNECTORS = frozenset({"of", "de", "da", "van", "von", "the", "del", "la", "le"})
_NOT_NAMES_TEXT = """I I'm I've I'll I'd Im Ive It It's Its The A An And But Or So Yes No Oh Ok
    Okay Hey Hi Hello Thanks Thank Wow Well Yeah Sure Great Good Nice Cool Awesome Amazing Really
    Very Just Also Not My Your Our Their His Her We You They He She This That These Those There
    Here What When Where Why How Who Which Let Lol Haha Mr Mrs Ms Dr Sorry Please Congrats
    Congratulations"""
_NOT_NAMES = frozenset(_NOT_NAMES_TEXT.split())
_ORG_SUFFIX_TEXT = """Inc Corp Corporation Ltd LLC Co Company University College School Academy
    Institute Bank Foundation Group Club Association Society Church Hospital Clinic Center Centre
    Museum Agency Studio Studios Labs Lab Team Council Department Ministry Party Festival Library
    Gallery Cafe Restaurant Hotel Organization Organisation Charity Shelter"""
_ORG_SUFFIXES = frozenset(_ORG_SUFFIX_TEXT.split())
_PLACE_CUES = frozenset({"in", "to", "from", "near", "visit", "visited", "visiting", "around"})
_ORG_CUES = frozenset({"at", "for", "join", "joined", "joining"})

# The object of a statement ends at punctuation, a conjunction, a preposition that starts
# another clause or a time phrase.
_OBJECT_STOP = re.compile(
    r"\s+(?:and|but|because|since|so|when|while|which|who|where|though|although|as|if|"
    r"with|after|before|until|last|next|this|every|ago|yesterday|today|tomorrow|now|"
    r"for|in|on|at|from|during|about|to)\b.*$|[,;:!?.()\"].*$",
    re.IGNORECASE,
)
_OBJECT_STOP_LOOSE = re.compile(
    r"\s+(?:and|but|because|since|so|when|while|which|who|though|although|if|"
    r"last|next|every|ago|yesterday|today|tomorrow|now)\b.*$|[,;:!?.()\"].*$",
    re.IGNORECASE,
)
# "I" or "my" as a word of its own (after whatever precedes it: "and", "so", a name).
_LEAD = r"(?:^|(?<=[\s,;(]))"
_ADVERB = r"(?:(?:really|also|just|absolutely|totally|still|recently|finally|actually)\s+)?"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("moved_to", re.compile(_LEAD + rf"I\s+{_ADVERB}(?:moved|relocated)\s+to\s+(?P<obj>.+)", re.I)),
    (
        "lives_in",
        re.compile(
            _LEAD + rf"I\s+{_ADVERB}(?:live|am\s+living|'m\s+living)\s+in\s+(?P<obj>.+)", re.I
        ),
    ),
    (
        "works_at",
        re.compile(
            _LEAD + rf"I\s+{_ADVERB}(?:work|am\s+working|'m\s+working)\s+(?:at|for)\s+(?P<obj>.+)",
            re.I,
        ),
    ),
    (
        "preference",
        re.compile(
            _LEAD
            + rf"I\s+{_ADVERB}(?P<verb>like|love|enjoy|prefer|hate|dislike|adore)\s+(?P<obj>.+)",
            re.I,
        ),
    ),
    ("is_a", re.compile(_LEAD + rf"(?:I\s+am|I'm|Im)\s+{_ADVERB}(?:a|an)\s+(?P<obj>.+)", re.I)),
    (
        "my",
        re.compile(
            _LEAD + r"my\s+(?P<attr>[a-z][a-z' ]{1,40}?)"
            r"\s+(?:is|are)\s+(?P<obj>.+)",
            re.I,
        ),
    ),
)
_VERB_3RD = {
    "like": "likes",
    "love": "loves",
    "enjoy": "enjoys",
    "prefer": "prefers",
    "hate": "hates",
    "dislike": "dislikes",
    "adore": "adores",
}
_SKIP_OBJECTS = frozenset({"it", "that", "this", "them", "you", "him", "her", "to", "so", "the"})


@dataclass(frozen=True)
class Fact:
    """A statement the speaker made about themselves."""

    speaker: str
    predicate: str  # moved_to, lives_in, works_at, preference, is_a, or the "my X" attribute
    value: str
    text: str  # third person: "Caroline moved to Lisbon."
    key: str  # "caroline.moved_to"
    when: str = ""  # a time phrase of the sentence, as said
    confidence: float = field(default_factory=lambda: TUNING.extraction.offline_confidence)


@dataclass(frozen=True)
class Entity:
    name: str
    entity_type: str  # person, place, organisation, date


def slug(text: str) -> str:
    """A key segment: lower-case letters and digits joined by "_" (empty if none)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "_".join(words)[:MAX_SLUG_CHARS].strip("_")


def speaker_slug(speaker: str, role: str) -> str:
    return slug(speaker) or slug(role) or "someone"


def sentences(text: str) -> list[str]:
    """The text's sentences, not split after a title or an initial ("Mr. Brown")."""
    return text_sentences(text)


def _clean_object(raw: str, loose: bool) -> str:
    value = (_OBJECT_STOP_LOOSE if loose else _OBJECT_STOP).sub("", raw.strip())
    words = value.split()
    if words and words[0].lower() == "to":  # "I like to paint"
        words = words[1:]
    value = " ".join(words[: TUNING.extraction.max_object_words]).strip(" '\"")
    if not value or value.lower() in _SKIP_OBJECTS:
        return ""
    return value


def facts_of(text: str, speaker: str, role: str = "user") -> list[Fact]:
    """The plain first-person statements of one message, in order (one per predicate and
    value)."""
    shown = speaker.strip() or role.capitalize() or "Someone"
    who = speaker_slug(speaker, role)
    found: list[Fact] = []
    seen: set[str] = set()
    for sentence in sentences(text):
        if sentence.endswith("?") or re.match(r"\s*(?:if|when|whether)\b", sentence, re.I):
            continue
        when_match = _DATE.search(sentence)
        when = when_match.group(0) if when_match else ""
        for predicate, pattern in _PATTERNS:
            match = pattern.search(sentence)
            if match is None:
                continue
            # Preferences and "my X is Y" may be long noun phrases; places and employers end
            # at the next preposition.
            loose = predicate in ("preference", "is_a", "my")
            value = _clean_object(match.group("obj"), loose)
            if not value:
                continue
            if predicate == "preference":
                verb = match.group("verb").lower()
                item = slug(value)
                if not item:
                    continue
                key, text_out = (
                    f"{who}.preference.{item}",
                    f"{shown} {_VERB_3RD[verb]} {value}.",
                )
            elif predicate == "my":
                attr = " ".join(match.group("attr").split()).lower()
                if not slug(attr):
                    continue
                key, text_out = f"{who}.{slug(attr)}", f"{shown}'s {attr} is {value}."
                predicate = slug(attr)
            elif predicate == "is_a":
                article = "an" if value[:1].lower() in "aeiou" else "a"
                key, text_out = f"{who}.is_a", f"{shown} is {article} {value}."
            else:
                phrase = {
                    "moved_to": "moved to",
                    "lives_in": "lives in",
                    "works_at": "works at",
                }[predicate]
                key, text_out = f"{who}.{predicate}", f"{shown} {phrase} {value}."
            if key in seen:
                continue
            seen.add(key)
            found.append(Fact(shown, predicate, value, text_out, key, when))
    return found


def dates_of(text: str) -> list[str]:
    """The time phrases of a text, as said (deduplicated, case kept from first use)."""
    found: list[str] = []
    for match in _DATE.finditer(text):
        phrase = " ".join(match.group(0).split())
        if phrase.lower().startswith("on "):
            phrase = phrase[3:]
        if phrase.lower() not in {p.lower() for p in found}:
            found.append(phrase)
    return found


def _name_runs(sentence: str) -> list[tuple[int, list[str]]]:
    """Runs of capitalised words (connectors allowed inside), with the index of each run's
    first word in the sentence (``rag.graph.names.name_runs``)."""
    return name_runs(
        _WORD.findall(sentence),
        skip=lambda word: word in _NOT_NAMES or bool(_MONTH_OR_DAY.fullmatch(word)),
        connectors=_CONNECTORS,
    )


def _entity_type(run: list[str], before: str, speakers: set[str], title: str = "") -> str:
    name = " ".join(run)
    if name.lower() in speakers:
        return PERSON
    if run[-1] in _ORG_SUFFIXES or (len(run) == 1 and run[0].isupper() and len(run[0]) >= 2):
        return ORGANISATION
    shape = shape_type(run, title)
    if shape in (PERSON, PLACE, ORGANISATION):
        return shape
    if before in _PLACE_CUES:
        return PLACE
    if before in _ORG_CUES:
        return ORGANISATION
    return PERSON


def entities_of(texts: Sequence[str], speakers: Iterable[str] = ()) -> list[list[Entity]]:
    """The entities each text mentions (people, places, organisations, dates), in order, one
    per name and type. The texts are one batch: a sentence's first word counts as a name when
    the batch uses it capitalised mid-sentence, or it is a speaker's name."""
    speaker_names = {s.strip().lower() for s in speakers if s.strip()}
    mid_sentence: set[str] = set()
    split = [[s for s in sentences(text)] for text in texts]
    for parts in split:
        for sentence in parts:
            for start, run in _name_runs(sentence):
                if start > 0:
                    mid_sentence.add(" ".join(run).lower())
    # The batch's full names of people, by surname: "Lee" and "Dr. Lee" are "Ann Lee" when
    # exactly one full name of the batch ends so.
    surnames: dict[str, set[str]] = {}
    for parts in split:
        for sentence in parts:
            words = _WORD.findall(sentence)
            for start, run in _name_runs(sentence):
                if 2 <= len(run) <= 3 and run[0] not in _NOT_NAMES:
                    before = words[start - 1].lower() if start > 0 else ""
                    if before not in _PLACE_CUES and _entity_type(run, before, set()) == PERSON:
                        surnames.setdefault(run[-1].lower(), set()).add(" ".join(run))
    result: list[list[Entity]] = []
    for parts in split:
        found: list[Entity] = []
        seen: set[tuple[str, str]] = set()
        for sentence in parts:
            words = _WORD.findall(sentence)
            for start, run in _name_runs(sentence):
                name = " ".join(run)
                title = words[start - 1] if start > 0 and words[start - 1] in TITLES else ""
                full = surnames.get(name.lower(), set()) if len(run) == 1 else set()
                if len(full) == 1 and name.lower() not in speaker_names:
                    name = next(iter(full))
                    entity = Entity(name, PERSON)
                    if (name.lower(), PERSON) not in seen:
                        seen.add((name.lower(), PERSON))
                        found.append(entity)
                    continue
                if start == 0 and name.lower() not in mid_sentence | speaker_names:
                    if len(run) == 1:
                        continue
                    run = run[1:] if run[0] in _NOT_NAMES else run
                    name = " ".join(run)
                before = words[start - 1].lower() if start > 0 else ""
                if title:
                    before = words[start - 2].lower() if start > 1 else ""
                if len(name) < 2 or any(w.isdigit() for w in run):
                    continue
                entity = Entity(name, _entity_type(run, before, speaker_names, title))
                if (entity.name.lower(), entity.entity_type) not in seen:
                    seen.add((entity.name.lower(), entity.entity_type))
                    found.append(entity)
            for phrase in dates_of(sentence):
                if (phrase.lower(), DATE) not in seen:
                    seen.add((phrase.lower(), DATE))
                    found.append(Entity(phrase, DATE))
        result.append(found)
    return result
