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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from core.search import MAX_QUERY_CHARS
from rag.graph.bridges import MentionedEntity
from rag.graph.entities import (
    CONCEPT,
    ORGANISATION,
    PERSON,
    PLACE,
    name_key,
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
        first = next(
            (
                back
                for back in range(head - 1, max(-1, head - 4), -1)
                if tokens[back].lower == "the" and _head_of(tokens, back) == head
            ),
            None,
        )
        if first is None:
            continue
        clause = _clause(tokens, head, wanted)
        if isinstance(clause, _Clause):
            trigger = tokens[head + 1].lower if head + 1 < len(tokens) else ""
            if not wanted and trigger in _RELATIVES:
                wanted = _RELATIVES[trigger]
            found.append(_description(query, tokens, first, head, wanted, clause))
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
    texts = [h.text for h in hits[:BRIDGE_RESULTS]] + list(context)
    # The sentences naming the description's entity: (hit rank, hit, sentence, candidates).
    found: list[tuple[int, BridgeHit, str, list[tuple[str, str]]]] = []
    for rank, hit in enumerate(hits[:BRIDGE_RESULTS]):
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
        weights = similarity([sentence for _, _, sentence, _ in found])
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
            factor = 1.0 if compatible else TYPE_MISMATCH
            score = weight * factor * (1 + RELATION_BONUS * share)
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


def entities_by_chunk(
    mentions: Mapping[int, Sequence[MentionedEntity]], chunk_ids: Sequence[int]
) -> dict[int, Sequence[MentionedEntity]]:
    return {c: mentions.get(c, ()) for c in chunk_ids}
