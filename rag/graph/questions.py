"""Questions that describe an entity instead of naming it, read by graph search's chain gate
(``rag.graph.gate.chain_relations``: each hop's relations) and by agentic RAG (docs/rag.md,
"Agentic RAG"): ``question_descriptions`` finds the spans, ``substitute`` puts a name in place of
one (``rag.agentic.bridge`` finds the name). Offline, no model:

- a relative clause: "the <noun> who / that / which / whom / where <clause>" ("the person who
  runs the Harbor Library", "the company that Jonas Lind founded", "the city where Jonas Lind
  lives"), its pronoun left out ("the person Jonas Lind married") or reduced to a participle
  ("the club started by Jonas Lind"), and "whoever <clause>";
- a role of a named entity: "the <role> of <Name>" ("the director of the Harbor Library"; "the
  film A Burning Bridge" is that film);
- a possessive: "<Name>'s <role>" ("the Harbor Library's director").

The noun says what kind of entity is wanted (``HEAD_TYPES``); a noun outside that list, an
indefinite "a" ("a member of X" describes no one entity), or a description naming no entity is
no description (a claim such as "the protein that binds DNA" asks no hop). Descriptions that
nest ("the founder of *the company that employs Jonas Lind*") are resolved inner first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from core.search import MAX_QUERY_CHARS
from rag.graph.names import ORGANISATION, PERSON, PLACE
from rag.keyword import analyze

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
    place city town village country state island capital birthplace hometown location
    district province county neighbourhood neighborhood street port harbour harbor valley
    mountain river lake suburb municipality nation continent
    """
_ORGANISATION_NOUNS = """
    company firm organisation organization institution business employer school university
    college band team club group studio agency startup lab laboratory library museum hospital
    charity publisher label bank newspaper magazine restaurant cafe shop store brand
    department ministry party orchestra choir theatre theater gallery foundation institute
    academy factory brewery bakery hotel airline manufacturer retailer corporation society
    association council committee union network station channel house funder sponsor backer
    mater theatre playhouse
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
    commission board trust federation union network service services press journal theatre
    theater playhouse books publishing publishers shipping textiles robotics analytics
    materials industries systems holdings media records pictures films motors airlines energy
    partners ventures technologies software foods brewing labs institute"""
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
    if index == 0 or not token.word[:1].isupper():
        return False  # a question's first word is capitalised whatever it is
    if token.lower in _NOT_NAMES:
        # A title's article ("the film A Burning Bridge") opens a name.
        return (
            token.word in ("A", "An", "The")
            and index + 1 < len(tokens)
            and _is_name_word(tokens, index + 1)
        )
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
    if index < len(tokens) and tokens[index].word in _DETERMINERS:  # "the", not "The"
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


_NESTED = "nested"
# Verbs after a name that open a relative clause without its pronoun ("the person Jonas Lind
# married", "the book Hidden Tide is based on"); a past or present form ends in -ed or -s.
_VERB_FORMS_TEXT = """
    is was are were has had have does did wrote ran led met won made built began became
    taught left found chose gave took drew sang"""
_VERB_FORMS = frozenset(_VERB_FORMS_TEXT.split())
_BE_HAVE = frozenset({"is", "was", "are", "were", "has", "had", "have", "been"})


@dataclass(frozen=True)
class _Clause:
    """What follows a description's head: the named entity's run and the last token."""

    anchor: tuple[int, int]
    last: int
    relation: tuple[int, ...]


def _head_of(tokens: list[_Token], index: int) -> int | None:
    """The head noun of the description starting at ``index`` (a determiner, or "whoever"):
    at most two modifiers after the determiner."""
    if index >= len(tokens):
        return None
    if tokens[index].lower == "whoever":
        return index
    if tokens[index].lower != "the":  # "a member of X" describes no one entity
        return None
    for head in range(index + 1, min(index + 4, len(tokens))):
        if _is_name_word(tokens, head):
            return None
        if tokens[head].lower in HEAD_TYPES:
            return head
        if tokens[head].lower in _AUXILIARIES:
            return None
    return None


def _verb_phrase(tokens: list[_Token], first: int) -> int:
    """The last token of the verb phrase starting at ``first`` ("married", "is a member of",
    "works for", "grew up in"): determiners and particles continue it, and so does any word
    after a determiner or a form of be / have."""
    last = first
    while last + 1 < len(tokens):
        following = tokens[last + 1]
        if following.word[:1].isupper():
            break
        continues = following.lower in _PARTICLES or following.lower in _DETERMINERS
        if not continues and tokens[last].lower not in _DETERMINERS | _BE_HAVE:
            break
        last += 1
    return last


def _opens_clause(tokens: list[_Token], index: int, wanted: str) -> bool:
    """Does the word at ``index`` open a relative clause's verb phrase (after a name)?"""
    if index >= len(tokens) or tokens[index].word[:1].isupper():
        return False
    word = tokens[index].lower
    if word in _BE_HAVE or word in {"does", "did"}:
        return True
    if wanted == ANY:  # "the film A Burning Bridge" is the film: only be / have open one
        return False
    return word in _VERB_FORMS or (len(word) > 3 and (word.endswith("ed") or word.endswith("s")))


def _clause(tokens: list[_Token], head: int, wanted: str) -> _Clause | str | None:
    """What follows the head at ``head``: a clause naming its entity directly, ``_NESTED``
    (it names it through another description, resolved first) or None (no description)."""
    after = head + 1
    if tokens[head].lower == "whoever":
        after = head
    if after >= len(tokens) and tokens[head].lower != "whoever":
        return None
    trigger = tokens[after].lower if after < len(tokens) else ""
    if tokens[head].lower == "whoever" or trigger in _RELATIVES:
        clause = after + 1
        if _starts_description(tokens, clause):
            return _NESTED
        run = _name_run(tokens, clause)
        if run is not None:  # object relative: "the company that Jonas Lind founded"
            if not _opens_clause(tokens, run[1] + 1, PERSON):
                return _Clause(run, run[1], ())
            last = _verb_phrase(tokens, run[1] + 1)
            return _Clause(run, last, tuple(range(run[1] + 1, last + 1)))
        for index in range(clause, len(tokens)):  # subject relative: "who runs the X"
            if _starts_description(tokens, index):
                return _NESTED
            run = _name_run(tokens, index)
            if run is not None:
                return _Clause(run, run[1], tuple(range(clause, run[0])))
        return None
    if trigger == "of":
        if _starts_description(tokens, after + 1):
            return _NESTED
        run = _name_run(tokens, after + 1) or _apposition(tokens, after + 1)
        return _Clause(run, run[1], (head,)) if run is not None else None
    if (  # a reduced passive: "the club started by Petra Kellhart"
        after + 2 < len(tokens)
        and not tokens[after].word[:1].isupper()
        and tokens[after + 1].lower == "by"
    ):
        if _starts_description(tokens, after + 2):
            return _NESTED
        run = _name_run(tokens, after + 2)
        return _Clause(run, run[1], (after,)) if run is not None else None
    lower_article = after < len(tokens) and tokens[after].word in _DETERMINERS
    if lower_article and _starts_description(tokens, after):
        # "the person the mentor of X married": the inner description first.
        return _NESTED
    run = _name_run(tokens, after) if not lower_article else None
    if run is not None and _opens_clause(tokens, run[1] + 1, wanted):
        # A relative clause without its pronoun: "the person Jonas Lind married".
        last = _verb_phrase(tokens, run[1] + 1)
        return _Clause(run, last, tuple(range(run[1] + 1, last + 1)))
    return None


def _apposition(tokens: list[_Token], index: int) -> tuple[int, int] | None:
    """The name of "the film A Burning Bridge" at ``index``: the noun names its kind."""
    head = _head_of(tokens, index)
    if head is None or tokens[head].lower == "whoever":
        return None
    return _name_run(tokens, head + 1)


def _starts_description(tokens: list[_Token], index: int) -> bool:
    """Does a description (direct or nested) start at ``index``?"""
    head = _head_of(tokens, index)
    if head is None:
        return False
    wanted = PERSON if tokens[head].lower == "whoever" else HEAD_TYPES[tokens[head].lower]
    return _clause(tokens, head, wanted) is not None


def _text(query: str, tokens: list[_Token], first: int, last: int) -> str:
    end = tokens[last].start + len(tokens[last].word)
    return query[tokens[first].start : end]


def _relation(tokens: list[_Token], words: Iterable[int]) -> tuple[str, ...]:
    stems: list[str] = []
    for index in words:
        if tokens[index].lower not in _AUXILIARIES:
            stems.extend(analyze(tokens[index].word))
    return tuple(dict.fromkeys(stems))


def _possessive(tokens: list[_Token], head: int) -> tuple[int, int, int] | None:
    """ "<Name>'s <role>" ending at ``head``: (the span's first token, the name's run)."""
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
            if not _is_name_word(tokens, first):
                return None
            start = first - 1 if first > 0 and tokens[first - 1].lower == "the" else first
            return start, first, back
        if (
            tokens[back].lower in _DETERMINERS
            or tokens[back].word[:1].isupper()
            or tokens[back].lower in _AUXILIARIES
        ):
            return None
    return None


def question_descriptions(query: str) -> list[Description]:
    """Every description of ``query`` that names its entity directly (not through another
    description), in the order they start."""
    tokens = _tokens(query)
    found: list[Description] = []
    for start, token in enumerate(tokens):
        if token.lower not in HEAD_TYPES or _is_name_word(tokens, start):
            if token.lower == "whoever":
                clause = _clause(tokens, start, PERSON)
                if isinstance(clause, _Clause):
                    found.append(_description(query, tokens, start, start, PERSON, clause))
            continue
        head = start
        wanted = HEAD_TYPES[token.lower]
        possessive = _possessive(tokens, head)
        if possessive is not None:
            first, run_first, run_last = possessive
            found.append(
                _description(
                    query,
                    tokens,
                    first,
                    head,
                    wanted,
                    _Clause((run_first, run_last), head, (head,)),
                )
            )
            continue
        article = next(
            (
                back
                for back in range(head - 1, max(-1, head - 4), -1)
                if tokens[back].lower == "the" and _head_of(tokens, back) == head
            ),
            None,
        )
        if article is None:
            continue
        clause = _clause(tokens, head, wanted)
        if isinstance(clause, _Clause):
            trigger = tokens[head + 1].lower if head + 1 < len(tokens) else ""
            if not wanted and trigger in _RELATIVES:
                wanted = _RELATIVES[trigger]
            found.append(_description(query, tokens, article, head, wanted, clause))
    return found


def _description(
    query: str, tokens: list[_Token], first: int, head: int, wanted: str, clause: _Clause
) -> Description:
    anchor_first, anchor_last = clause.anchor
    return Description(
        start=tokens[first].start,
        end=tokens[clause.last].start + len(tokens[clause.last].word),
        text=_text(query, tokens, first, clause.last),
        head=tokens[head].lower,
        wanted=wanted,
        anchors=(_text(query, tokens, anchor_first, anchor_last),),
        relation=_relation(tokens, clause.relation),
    )


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
