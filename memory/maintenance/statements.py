"""Statements: what a memory says, one claim at a time (docs/memory/maintenance.md, "Nothing
automatic loses a fact").

Upkeep may archive an entry into another only when every statement of the archived entry is
still said by what stays current; the review queue highlights the statements a change would
archive. Both need the same split, which is this module's: a text's sentences (rag's splitter,
which keeps "Dr. Lind", "3.5" and "e.g." whole), each cut further into clauses at ";", at
"but" and at an "and" that joins two predicates ("... works at Acme and is allergic to
peanuts"), not two nouns ("salt and pepper", "Tom and Jerry").

A clause cut at "and" or "but" often has no subject of its own ("is allergic to peanuts"):
``standalone_of`` gives each statement a text that reads alone, the subject of its sentence
carried in front ("Maria Lind is allergic to peanuts"); upkeep compares and carries that text.

Pure functions on text; the offsets let a caller mark a statement inside the text it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.chunking.sentences import sentence_spans

# A clause boundary: a semicolon, "but" (with or without a comma before it), or "and" after a
# comma or between words. Whether an "and" really starts a clause is decided on what follows.
_BOUNDARY = re.compile(r"\s*;\s*|,?\s+\b(?P<word>but|and)\b\s+", re.IGNORECASE)
# An "and" starts a clause when at least this many words follow it before the next boundary
# ("... and is allergic to peanuts"), or when its first word opens a clause by itself.
_AND_CLAUSE_WORDS = 3
# fmt: off
_PRONOUNS = frozenset({"i", "you", "he", "she", "we", "they", "it", "there", "this", "that"})
_PERSONAL_PRONOUNS = frozenset({"he", "she", "they", "his", "her", "their", "him", "them"})
_AUXILIARIES = frozenset({
    "is", "was", "are", "were", "am", "has", "had", "have", "does", "did", "do", "will",
    "would", "can", "cannot", "can't", "could", "should", "must", "may", "might", "shall",
    "isn't", "wasn't", "doesn't", "didn't", "won't", "hasn't", "hadn't",
})
# Adverbs that may stand between a carried subject and its verb ("... and never drinks tea").
_PREDICATE_ADVERBS = frozenset({
    "never", "always", "also", "often", "usually", "still", "sometimes", "rarely", "now",
    "then", "only", "already", "mostly", "seldom",
})
_CLAUSE_OPENERS = _PRONOUNS | _AUXILIARIES | _PREDICATE_ADVERBS
# Common English verbs (base forms): their third-person and past forms start a predicate
# ("... and dislikes espresso", "... but reported it"). A closed list, not a tagger: a word
# that is only a noun here ("drinks") cuts a clause too much, never too little.
_VERBS = """
accept achieve act add admit affect afford agree aim allow announce answer appear apply approve
argue arrange arrive ask assume attach attack attend avoid bake base bear beat become beg begin
believe belong bend bet bite blame block blow boil book borrow bother break breathe bring build
burn buy call cancel care carry catch cause celebrate change charge chat check choose claim clean
clear climb close coach collect combine come commit commute compare compete complain complete
concern confirm connect consider consist contact contain continue contribute control convert cook
copy correct cost count cover crash create cross cry cut cycle damage dance deal debug decide
declare decrease define delay delete deliver demand deny depend deploy describe deserve design
destroy detect determine develop die differ dig dine direct disappear discover discuss dislike
divide do download drag draw dream dress drink drive drop dry earn eat edit educate email employ
enable encourage end enjoy ensure enter escape establish estimate examine exist expand expect
experience explain explore express extend fail fall fear feed feel fetch fight fill find finish
fit fix fly focus fold follow forget forgive form freeze gain gather get give go grab graduate
greet grow guess handle hang happen hate head hear heat help hide hire hit hold hope host hunt
hurry hurt identify ignore imagine improve include increase indicate inform insist install intend
introduce invest investigate invite involve iron join judge jump keep kick kill kiss knit knock
know label land last laugh launch lay lead lean learn leave lend let lie lift like limit link
list listen live load locate lock log look lose love maintain make manage mark marry match matter
measure meet melt mention merge migrate mind miss mix monitor move name need note notice obtain
occur offer open operate order organise organize own pack paint park participate pass pay perform
permit phone pick place plan plant play point pour practise practice pray predict prefer prepare
present press prevent print produce program promise protect prove provide publish pull punch
purchase push put qualify question race rain raise reach react read realise realize receive
recognise recognize recommend record recover reduce refer reflect refuse regard register reject
relate relax release rely remain remember remind remove rent repair repeat replace reply report
represent request require research reserve resign resolve respond rest restart retire return
reveal review ride ring rise risk roll rule run rush sail save say scan schedule score search see
seem select sell send serve set settle shake shape share shift shine shoot shop shout show shut
sign sing sink sit ski skip sleep slide slip smell smile smoke snow solve sort sound speak spell
spend spill split spread stand stare start state stay steal step stick sting stop store study
submit succeed suffer suggest suit supply support suppose surf surprise survive suspect swim
switch take talk taste teach tear tell tend test thank think throw tie tour trade train transfer
translate travel treat trust try turn type understand undergo unite update upgrade upload urge
use value vary verify visit vote wait wake walk want warn wash waste watch water wave wear weigh
welcome win wish wonder work worry wrap write yell
"""
_IRREGULAR_PAST = """
became began bought brought built came caught chose did drank drove ate fell felt fought found
flew forgot got gave went grew had heard held hurt kept knew led learnt left lent lay lost made
meant met paid put read rode rang rose ran said saw sold sent set shook sang sat slept spoke
spent stood swam took taught told thought threw understood woke wore won wrote been done gone
seen taken given known written eaten driven ridden spoken broken chosen forgotten grown shown
"""
# fmt: on


def _inflections(base: str) -> set[str]:
    if base.endswith("e"):
        past = {base + "d"}
    elif base.endswith("y") and base[-2:-1] not in set("aeiou"):
        past = {base[:-1] + "ied"}
    else:
        past = {base + "ed", base + base[-1] + "ed"}
    if base.endswith(("s", "sh", "ch", "x", "o")):
        third = base + "es"
    elif base.endswith("y") and base[-2:-1] not in set("aeiou"):
        third = base[:-1] + "ies"
    else:
        third = base + "s"
    return {third, *past}


# Finite verb forms that start a predicate: third person and past (the base form is also a
# noun too often: "at work", "the plan").
_FINITE_VERBS = frozenset(
    {form for base in _VERBS.split() for form in _inflections(base)}
    | set(_IRREGULAR_PAST.split())
    | _AUXILIARIES
)
# Every form of the verbs above (base, third person, past, -ing): ``verb_form``.
_VERB_FORMS = _FINITE_VERBS | frozenset(
    {base for base in _VERBS.split()}
    | {
        (base[:-1] if base.endswith("e") and base != "be" else base) + "ing"
        for base in _VERBS.split()
    }
    | {base + base[-1] + "ing" for base in _VERBS.split()}
)
# A carried subject is at most this many words ("My sister Anna Lind"); longer: the sentence.
_MAX_SUBJECT_WORDS = 6
_WORD = re.compile(r"[\w'’-]+")
# What is left of a clause that is only punctuation or a leading conjunction is not a statement.
_TRIM = " \t\r\n,;:-–—"


@dataclass(frozen=True)
class Statement:
    """One statement of a text: its words and where it stands (``text[start:end]``)."""

    text: str
    start: int
    end: int


def _opens_clause(text: str, at: int, stop: int) -> bool:
    words = _WORD.findall(text[at:stop])
    if not words:
        return False
    first = words[0].lower()
    return first in _CLAUSE_OPENERS or first in _FINITE_VERBS or len(words) >= _AND_CLAUSE_WORDS


def _clauses(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of the clauses of the sentence ``text[start:end]``."""
    cuts: list[tuple[int, int]] = []  # (end of the clause before, start of the next)
    matches = list(_BOUNDARY.finditer(text, start, end))
    for n, match in enumerate(matches):
        stop = matches[n + 1].start() if n + 1 < len(matches) else end
        if (match.group("word") or "").lower() == "and" and not _opens_clause(
            text, match.end(), stop
        ):
            continue
        cuts.append((match.start(), match.end()))
    spans: list[tuple[int, int]] = []
    position = start
    for clause_end, next_start in cuts:
        spans.append((position, clause_end))
        position = next_start
    spans.append((position, end))
    return spans


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start] in _TRIM:
        start += 1
    while end > start and text[end - 1] in _TRIM + ".!?":
        end -= 1
    if not _WORD.search(text, start, end):
        return None
    return start, end


def statements_of(text: str) -> list[Statement]:
    """The statements of ``text``, in order, each without its closing punctuation."""
    found: list[Statement] = []
    for sentence_start, sentence_end in sentence_spans(text):
        for clause_start, clause_end in _clauses(text, sentence_start, sentence_end):
            span = _trimmed(text, clause_start, clause_end)
            if span is not None:
                found.append(Statement(text[span[0] : span[1]], span[0], span[1]))
    return found


def _predicate_led(words: list[str]) -> bool:
    """A clause that starts with its verb (or an adverb, then its verb): it has no subject."""
    lowered = [w.lower() for w in words]
    while lowered and lowered[0] in _PREDICATE_ADVERBS:
        lowered = lowered[1:]
    return bool(lowered) and lowered[0] in _FINITE_VERBS


def _subject(clause: str) -> str | None:
    """The subject of a sentence's first clause: its words before the first finite verb, after
    a leading phrase closed by a comma ("In Bergen, Tom Berg works ..." -> "Tom Berg"); None
    when there is no such verb or the subject is too long to be one."""
    for match in _WORD.finditer(clause):
        if match.group(0).lower() not in _FINITE_VERBS:
            continue
        subject = clause[: match.start()].rsplit(",", 1)[-1].strip()
        words = _WORD.findall(subject)
        if not words or len(words) > _MAX_SUBJECT_WORDS:
            return None
        return subject
    return None


def verb_form(word: str) -> bool:
    """Whether ``word`` (lower case) is a form of one of the common verbs known here."""
    return word in _VERB_FORMS


def subject_of(text: str) -> str | None:
    """The subject of the first statement of ``text`` (``_subject``), or None."""
    spans = sentence_spans(text)
    if not spans:
        return None
    clause = _clauses(text, *spans[0])[0]
    span = _trimmed(text, *clause)
    return _subject(text[span[0] : span[1]]) if span else None


def pronoun_led(statement: str) -> bool:
    """A statement whose subject is a personal pronoun ("she lives in Kiruna")."""
    words = _WORD.findall(statement)
    return bool(words) and words[0].lower() in _PERSONAL_PRONOUNS


def standalone_of(text: str) -> list[tuple[Statement, str]]:
    """Each statement of ``text`` with a text that reads on its own: a clause that starts with
    its verb ("is allergic to peanuts") gets the subject of its sentence's first clause in
    front ("Maria Lind is allergic to peanuts"); when that subject cannot be found, the whole
    sentence stands for it. Other statements stand as they are (a pronoun stays a pronoun:
    guessing its antecedent could change what the statement says)."""
    found: list[tuple[Statement, str]] = []
    for sentence_start, sentence_end in sentence_spans(text):
        subject: str | None = None
        first = True
        for clause_start, clause_end in _clauses(text, sentence_start, sentence_end):
            span = _trimmed(text, clause_start, clause_end)
            if span is None:
                continue
            statement = Statement(text[span[0] : span[1]], span[0], span[1])
            words = _WORD.findall(statement.text)
            if first:
                subject = _subject(statement.text)
                alone = statement.text
            elif not _predicate_led(words):
                alone = statement.text
            elif subject:
                alone = f"{subject} {statement.text}"
            else:
                sentence = _trimmed(text, sentence_start, sentence_end)
                alone = text[sentence[0] : sentence[1]] if sentence else statement.text
            first = False
            found.append((statement, alone))
    return found
