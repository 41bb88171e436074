"""Relations between two entities of a sentence, named from the words between them, offline
(no model): what ``rag.graph.entities`` calls for each pair of neighbouring mentions.

Two ways to name a relation, tried in this order:

- **The dictionary** (``CANONICAL``, ``rag.graph.relation_lexicon``): common relations, each
  with its active verbs ("runs"), passive participles ("is run by"), role nouns ("is the
  director of", "the library's director is") and phrases ("is in charge of"), compiled here
  into patterns, every form normalised to one direction: "The Harbor
  Library is run by Jonas Lind", "Jonas Lind runs the Harbor Library" and "Jonas Lind, the
  director of the Harbor Library" are all ``Jonas Lind -leads-> Harbor Library``. Each relation
  says what its ends usually are (``born_in``: a person and a place), which types the
  entities (``rag.graph.entities`` takes it over its weaker cues).
- **The generic fallback**: a short verb phrase between the two names, named by the verb
  ("sponsors" -> ``sponsors``, "was buried in" -> ``buried_in``, "is sponsored by" ->
  ``sponsors`` the other way round, "is the capital of" -> ``capital_of``).

Anything else (a long clause, a negation, a conjunction, a verb we cannot tell from a noun)
names no relation: the entities stay joined by ``co_occurs`` only. English only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.graph.relation_lexicon import (
    CANONICAL,
    IRREGULAR,
    NOT_RELATIONS,
    PREPOSITIONS,
    STOP_BETWEEN,
    Canonical,
)


@dataclass(frozen=True)
class Found:
    """A relation between the mention before the words and the one after them."""

    relation_type: str
    reverse: bool  # True: the second mention is the relation's subject
    subject_type: str | None = None
    object_type: str | None = None
    canonical: bool = False  # from the dictionary (not the generic fallback)


_AUX = (
    r"(?:(?:is|was|are|were|be|been|being|has|have|had|will|would|may|might|can|could|shall|"
    r"should|must|has been|have been|had been|will be|would be|also|still|now|currently|later|"
    r"then|once|formerly|originally|first|eventually|recently|already|soon|long|jointly|"
    r"previously|since|briefly|officially|proudly|famously|today|together|became|becomes|"
    r"become|remains|remained|served as|serves as|works as|worked as|acts as|acted as)\s+)*"
)
_DET = r"(?:\s+(?:the|a|an|his|her|their|its))?"
_REL = r"(?:,\s+)?(?:(?:who|which|that)\s+)?"
_ROLE_DET = r"(?:(?:the|a|an|one of the|its|their|his|her)\s+)?"
_ADJ = r"(?:(?:new|former|current|founding|first|longtime|long-time|chief|acting|senior|head)\s+)?"


def _alternatives(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


def _compile() -> list[tuple[re.Pattern[str], Canonical, bool]]:
    """Each canonical relation's forms as full-match patterns over the words between two
    mentions (lower case, single spaces, commas and "'s" as words)."""
    compiled: list[tuple[re.Pattern[str], Canonical, bool]] = []
    for rel in CANONICAL:
        if rel.active:
            verbs = _alternatives(rel.active)
            compiled.append((re.compile(rf"{_REL}{_AUX}(?:{verbs}){_DET}"), rel, False))
        if rel.passive:
            parts = _alternatives(rel.passive)
            compiled.append((re.compile(rf"{_REL}{_AUX}(?:{parts}) by{_DET}"), rel, True))
        if rel.phrases:
            phrases = _alternatives(rel.phrases)
            compiled.append((re.compile(rf"{_REL}{_AUX}(?:{phrases}){_DET}"), rel, False))
        if rel.reverse_phrases:
            phrases = _alternatives(rel.reverse_phrases)
            compiled.append((re.compile(rf"{_REL}{_AUX}(?:{phrases}){_DET}"), rel, True))
        if rel.roles:
            roles = _alternatives(rel.roles)
            # "X is the director of Y", "X, the director of Y", "X, director of Y"
            compiled.append(
                (
                    re.compile(rf"{_REL}{_AUX}{_ROLE_DET}{_ADJ}(?:{roles}) (?:of|at|for|to){_DET}"),
                    rel,
                    False,
                )
            )
            # "Y has a sibling, X", "Y has a mentor called X"
            compiled.append(
                (
                    re.compile(
                        rf"{_REL}(?:has|had|have) (?:a|an|one) {_ADJ}(?:{roles})"
                        rf"(?: ,| named| called)?"
                    ),
                    rel,
                    True,
                )
            )
            # "Y's director is X", "Y's director, X", "Y's director X"
            compiled.append(
                (re.compile(rf"'s {_ADJ}(?:{roles})(?: (?:is|was)| ,)?{_DET}"), rel, True)
            )
    return compiled


_PATTERNS = _compile()
_ROLE_WORDS = {role: rel for rel in CANONICAL for role in rel.roles}

_MAX_BETWEEN_WORDS = 7


def _lemma(verb: str) -> str:
    """A verb's base form by its ending (no dictionary beyond the irregular ones): "sponsors"
    -> "sponsor", "studied" -> "study", "stopped" -> "stop", "danced" -> "dance"."""
    if verb in IRREGULAR:
        return IRREGULAR[verb]
    if verb.endswith("ied") or verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith("eed"):
        return verb[:-1]
    if verb.endswith("ed"):
        stem = verb[:-2]
        if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
            return stem[:-1]
        if stem.endswith(("c", "v", "z", "u", "at", "ag", "ur", "ir")) or re.search(
            r"[aeiou]s$", stem
        ):
            return stem + "e"
        return stem
    if verb.endswith(("ches", "shes", "sses", "xes", "zes")):
        return verb[:-2]
    if verb.endswith("s") and not verb.endswith("ss"):
        return verb[:-1]
    return verb


def third_person(lemma: str) -> str:
    """ "sponsor" -> "sponsors", "teach" -> "teaches", "carry" -> "carries"."""
    if lemma.endswith(("s", "sh", "ch", "x", "z", "o")):
        return lemma + "es"
    if re.search(r"[^aeiou]y$", lemma):
        return lemma[:-1] + "ies"
    return lemma + "s"


def _verb_like(word: str) -> bool:
    """A word that reads as a finite verb or a participle by its form (no tagger): an
    irregular past, or a regular "-s" / "-ed" form of at least four letters."""
    if word in NOT_RELATIONS or (not word.isalpha() and "-" not in word):
        return False
    if word in IRREGULAR:
        return bool(IRREGULAR[word])
    if len(word) >= 5 and word.endswith("ed"):
        return True
    return (
        len(word) >= 4
        and word.endswith("s")
        and not word.endswith(("ss", "us", "is", "ous", "ics", "ness"))
    )


_GENERIC_COPULA = re.compile(
    r"(?:,|(?:,\s+)?(?:(?:who|which|that)\s+)?(?:is|was|are|were|has been|had been|became|becomes))"
    r"\s+(?:the|a|an)\s+([a-z][a-z\-]+)\s+(of|in|at|for|to)" + _DET
)
_GENERIC_PASSIVE = re.compile(
    r"(?:,\s+)?(?:(?:who|which|that)\s+)?" + _AUX + r"([a-z][a-z\-]+)\s+(by|in|at|to|from|for|"
    r"with|on|into)" + _DET
)
_GENERIC_ACTIVE = re.compile(
    r"(?:,\s+)?(?:(?:who|which|that)\s+)?" + _AUX + r"([a-z][a-z\-]+)(?:\s+(up|out|down|off))?"
    r"(?:\s+(in|at|to|from|for|with|on|into|about|against|over|under|near|after))?" + _DET
)


def _generic(between: str) -> Found | None:
    match = _GENERIC_COPULA.fullmatch(between)
    if match:
        noun, preposition = match.group(1), match.group(2)
        if noun in NOT_RELATIONS or noun in STOP_BETWEEN or len(noun) < 3:
            return None
        if preposition == "in":
            return Found("located_in", False)
        return Found(f"{noun}_{preposition}", False)
    match = _GENERIC_PASSIVE.fullmatch(between)
    if match and re.search(r"\b(?:is|was|are|were|been|be|being)\b", between):
        verb, preposition = match.group(1), match.group(2)
        if verb in IRREGULAR or (len(verb) >= 5 and verb.endswith(("ed", "en"))):
            if preposition == "by":
                lemma = _lemma(verb)
                return Found(third_person(lemma), True) if lemma else None
            return Found(f"{verb}_{preposition}", False)
        return None
    match = _GENERIC_ACTIVE.fullmatch(between)
    if match:
        verb = match.group(1)
        if not _verb_like(verb):
            return None
        lemma = _lemma(verb)
        if not lemma or len(lemma) < 3:
            return None
        name = third_person(lemma)
        for extra in (match.group(2), match.group(3)):
            if extra:
                name += f"_{extra}"
        return Found(name, False)
    return None


_APPOSITIVE = re.compile(r", (?:a|an|the) [a-z][a-z\-]+(?: (?:that|which) (?:is|was))? (.+)")


def relation_between(between: list[str]) -> Found | None:
    """The relation that the words between two mentions state (lower case; punctuation
    "," and "'s" as words), or None. The dictionary first, then the generic verb phrase."""
    if not between or len(between) > _MAX_BETWEEN_WORDS:
        return None
    # A relative clause states the relation of the mention before it: "X, who runs Y".
    words = between[1:] if between[0] == "," and between[1:2] in (["who"], ["which"]) else between
    words = words[1:] if words[:1] in (["who"], ["which"], ["that"]) else words
    if not words or any(word in STOP_BETWEEN or word.endswith("n't") for word in words):
        return None  # negations, coordination and other clauses: "X and Y", "X did not run Y"
    text = " ".join(between)
    for pattern, rel, reverse in _PATTERNS:
        if pattern.fullmatch(text):
            return Found(rel.name, reverse, rel.subject_type, rel.object_type, True)
    found = _generic(text)
    if found is None:
        # "Polar Instruments, a firm headquartered in Tromso": the words after the noun.
        appositive = _APPOSITIVE.fullmatch(text)
        if appositive:
            return relation_between(appositive.group(1).split())
    return found


def role_before(before: list[str]) -> Found | None:
    """ "The director of Y is X": the role named before the first mention ("the director of")
    when the words between the two are a bare copula; the relation runs from X to Y."""
    while before and before[-1] in ("the", "a", "an"):
        before = before[:-1]
    if len(before) >= 2 and before[-1] == "of":
        rel = _ROLE_WORDS.get(before[-2])
        if rel is not None:
            return Found(rel.name, True, rel.subject_type, rel.object_type, True)
    return None


def is_symmetric(relation_type: str) -> bool:
    return any(rel.symmetric and rel.name == relation_type for rel in CANONICAL)


# Verb forms of the dictionary: words no key phrase or name may end with.
RELATION_VERBS = frozenset(
    word
    for rel in CANONICAL
    for form in (*rel.active, *rel.passive)
    for word in form.split()
    if word not in PREPOSITIONS and word not in ("the", "up")
)
