"""Relations between two entities of a sentence, named from the words between them, offline
(no model): what ``rag.graph.entities`` calls for each pair of neighbouring mentions.

Two ways to name a relation, tried in this order:

- **The dictionary** (``CANONICAL``): common relations, each with its active verbs ("runs"),
  passive participles ("is run by"), role nouns ("is the director of", "the library's director
  is") and phrases ("is in charge of"), every form normalised to one direction: "The Harbor
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

PERSON, PLACE, ORGANISATION = "person", "place", "organisation"


@dataclass(frozen=True)
class Found:
    """A relation between the mention before the words and the one after them."""

    relation_type: str
    reverse: bool  # True: the second mention is the relation's subject
    subject_type: str | None = None
    object_type: str | None = None
    canonical: bool = False  # from the dictionary (not the generic fallback)


@dataclass(frozen=True)
class _Canonical:
    name: str
    subject_type: str | None
    object_type: str | None
    active: tuple[str, ...] = ()  # verb forms, subject first: "X runs Y"
    passive: tuple[str, ...] = ()  # participles: "Y is run by X"
    roles: tuple[str, ...] = ()  # "X is the director of Y", "Y's director is X"
    phrases: tuple[str, ...] = ()  # whole connecting phrases after the auxiliary, subject first
    reverse_phrases: tuple[str, ...] = ()  # connecting phrases, object first: "Y employs X"
    symmetric: bool = False


def _forms(*lemmas: str) -> tuple[str, ...]:
    """Verb forms written out: "run|runs|ran|running" as given, space-separated groups."""
    return tuple(form for lemma in lemmas for form in lemma.split("|"))


CANONICAL: tuple[_Canonical, ...] = (
    _Canonical(
        "leads",
        PERSON,
        ORGANISATION,
        active=_forms(
            "run|runs|ran|running",
            "lead|leads|led|leading",
            "head|heads|headed|heading",
            "direct|directs|directed|directing",
            "manage|manages|managed|managing",
            "chair|chairs|chaired|chairing",
            "oversee|oversees|oversaw|overseeing",
            "helm|helms|helmed",
            "coach|coaches|coached|coaching",
            "captain|captains|captained",
        ),
        passive=_forms("run|led|headed|directed|managed|chaired|overseen|helmed|governed"),
        roles=_forms(
            "head|director|leader|chair|chairman|chairwoman|chairperson|president|ceo|manager",
            "principal|boss|chief|captain|dean|rector|curator|editor|coach|conductor|governor",
            "executive director|managing director|chief executive|head coach|mayor",
        ),
        phrases=("in charge of", "at the helm of", "at the head of"),
    ),
    _Canonical(
        "founded",
        None,
        ORGANISATION,
        active=_forms(
            "founded|co-founded|cofounded",
            "establish|establishes|established",
            "start|starts|started",
            "set up|sets up",
            "create|creates|created",
            "launch|launches|launched",
            "open|opens|opened",
        ),
        passive=_forms(
            "founded|co-founded|cofounded|established|started|set up|created|launched|opened"
        ),
        roles=_forms("founder|co-founder|cofounder|creator"),
    ),
    _Canonical(
        "works_at",
        PERSON,
        ORGANISATION,
        active=_forms("work at|works at|worked at|working at", "work for|works for|worked for"),
        roles=_forms(
            "employee|researcher|professor|teacher|lecturer|engineer|scientist|nurse|doctor",
            "librarian|staff member|member of staff|analyst|intern|volunteer|journalist",
            "reporter|lawyer|clerk|accountant|developer|designer|physician|surgeon|pharmacist",
        ),
        phrases=(
            "employed at",
            "employed by",
            "on the staff of",
            "on staff at",
            "hired by",
            "teaches at",
            "taught at",
            "teach at",
            "teaching at",
            "lectures at",
            "lectured at",
        ),
        reverse_phrases=_forms("employ|employs|employed", "hire|hires|hired"),
    ),
    _Canonical(
        "born_in",
        PERSON,
        PLACE,
        phrases=(
            "born in",
            "born at",
            "a native of",
            "native to",
            "came into the world in",
            "'s birthplace is",
            "'s birthplace was",
            "'s place of birth is",
            "'s place of birth was",
        ),
        reverse_phrases=("the birthplace of", "birthplace of"),
    ),
    _Canonical(
        "grew_up_in",
        PERSON,
        PLACE,
        phrases=(
            "grew up in",
            "grows up in",
            "grow up in",
            "raised in",
            "brought up in",
            "spent his childhood in",
            "spent her childhood in",
            "spent their childhood in",
        ),
    ),
    _Canonical(
        "lives_in",
        PERSON,
        PLACE,
        phrases=(
            "lives in",
            "lived in",
            "live in",
            "living in",
            "resides in",
            "resided in",
            "settled in",
            "lives near",
            "a resident of",
            "made a home in",
            "made his home in",
            "made her home in",
            "made their home in",
            "makes a home in",
            "makes his home in",
            "makes her home in",
        ),
    ),
    _Canonical(
        "moved_to",
        PERSON,
        PLACE,
        phrases=("moved to", "moves to", "move to", "relocated to", "emigrated to"),
    ),
    _Canonical(
        "comes_from",
        PERSON,
        PLACE,
        phrases=(
            "from",
            "comes from",
            "came from",
            "hails from",
            "originally from",
            "'s hometown is",
            "'s home town is",
            "'s hometown was",
        ),
    ),
    _Canonical(
        "studied_at",
        PERSON,
        ORGANISATION,
        active=_forms(
            "study at|studies at|studied at|studying at",
            "attend|attends|attended|attending",
            "graduated from|graduates from",
        ),
        passive=("educated at", "trained at"),
        roles=("student", "graduate", "alumnus", "alumna"),
        phrases=(
            "enrolled at",
            "enrolled in",
            "educated at",
            "trained at",
            *(
                f"{verb} {det} degree {prep}"
                for verb in ("took", "takes", "earned", "earns", "received", "obtained", "got")
                for det in ("a", "his", "her", "their")
                for prep in ("at", "from")
            ),
        ),
    ),
    _Canonical(
        "member_of",
        PERSON,
        ORGANISATION,
        active=_forms("join|joins|joined", "play for|plays for|played for"),
        roles=_forms(
            "member|player|singer|drummer|guitarist|bassist|cellist|violinist|pianist|vocalist",
            "keyboardist|saxophonist|trumpeter|violist|goalkeeper|striker|forward|defender",
        ),
    ),
    _Canonical(
        "part_of",
        None,
        None,
        active=_forms("belong to|belongs to|belonged to"),
        roles=_forms("division|unit|branch|subsidiary|department|section|wing|chapter"),
        phrases=("part of", "a part of", "included in"),
        reverse_phrases=_forms(
            "include|includes|included", "contain|contains|contained", "comprises|comprise"
        ),
    ),
    _Canonical(
        "located_in",
        None,
        PLACE,
        active=_forms("lie in|lies in|lay in", "sit in|sits in|sat in", "stand in|stands in"),
        phrases=(
            "in",
            "located in",
            "situated in",
            "based in",
            "headquartered in",
            "located at",
            "based at",
            "found in",
            "near",
            "located near",
            "close to",
            "outside",
            "just outside",
            *(
                f"{verb} {det} {seat} in"
                for verb in ("has", "had", "keeps", "kept", "have")
                for det in ("its", "their", "a")
                for seat in ("head office", "headquarters", "main office", "seat", "base")
            ),
        ),
        reverse_phrases=("home to", "the home of", "home of"),
    ),
    _Canonical(
        "married_to",
        PERSON,
        PERSON,
        active=_forms("marry|marries|married", "wed|weds|wedded"),
        roles=_forms("wife|husband|spouse|partner|fiancee|fiance|widow|widower"),
        phrases=("married to", "engaged to", "wed to"),
        symmetric=True,
    ),
    _Canonical(
        "sibling_of",
        PERSON,
        PERSON,
        roles=_forms("brother|sister|sibling|twin|twin brother|twin sister"),
        symmetric=True,
    ),
    _Canonical(
        "child_of",
        PERSON,
        PERSON,
        roles=_forms("son|daughter|child|stepson|stepdaughter|heir"),
        reverse_phrases=tuple(
            f"{article}{role} of"
            for article in ("the ", "a ", "")
            for role in ("father", "mother", "parent", "stepfather", "stepmother")
        ),
    ),
    _Canonical(
        "friend_of",
        PERSON,
        PERSON,
        active=_forms("befriend|befriends|befriended"),
        roles=_forms("friend|best friend|close friend|neighbour|neighbor|roommate"),
        phrases=("friends with", "best friends with", "close friends with"),
        symmetric=True,
    ),
    _Canonical(
        "colleague_of",
        PERSON,
        PERSON,
        roles=_forms("colleague|coworker|co-worker|collaborator"),
        phrases=("works with", "worked with", "working with", "collaborates with"),
        symmetric=True,
    ),
    _Canonical(
        "mentored",
        PERSON,
        PERSON,
        active=_forms("mentor|mentors|mentored", "train|trains|trained", "teach|teaches|taught"),
        passive=_forms("mentored|trained|taught|coached"),
        roles=_forms("mentor|teacher|tutor|supervisor|advisor|adviser"),
        reverse_phrases=tuple(
            f"{a}{r} of" for a in ("the ", "a ", "") for r in ("student", "pupil", "apprentice")
        ),
    ),
    _Canonical(
        "owns",
        None,
        None,
        active=_forms(
            "own|owns|owned", "acquire|acquires|acquired", "buy|buys|bought", "purchased"
        ),
        passive=_forms("owned|acquired|bought|purchased"),
        roles=_forms("owner|proprietor|parent company"),
    ),
    _Canonical(
        "wrote",
        PERSON,
        None,
        active=_forms("write|writes|wrote", "author|authors|authored", "pen|pens|penned"),
        passive=_forms("written|authored|penned"),
        roles=_forms("author|writer"),
    ),
    _Canonical(
        "designed",
        None,
        None,
        active=_forms("design|designs|designed", "architect|architected"),
        passive=_forms("designed"),
        roles=_forms("architect|designer"),
    ),
    _Canonical(
        "built",
        None,
        None,
        active=_forms("build|builds|built", "construct|constructs|constructed"),
        passive=_forms("built|constructed"),
        roles=_forms("builder"),
    ),
    _Canonical(
        "funds",
        None,
        None,
        active=_forms(
            "fund|funds|funded", "finance|finances|financed", "sponsor|sponsors|sponsored"
        ),
        passive=_forms("funded|financed|sponsored|backed|supported"),
        roles=_forms("sponsor|funder|backer|patron|donor"),
        reverse_phrases=tuple(
            f"{verb} {what} from"
            for verb in ("receives", "received", "gets", "got", "receive")
            for what in ("funding", "its funding", "its money", "money", "support", "its support")
        ),
    ),
    _Canonical(
        "discovered",
        None,
        None,
        active=_forms("discover|discovers|discovered", "invent|invents|invented"),
        passive=_forms("discovered|invented"),
        roles=_forms("discoverer|inventor"),
    ),
    _Canonical(
        "named_after",
        None,
        None,
        phrases=("named after", "named for", "called after"),
    ),
    _Canonical(
        "capital_of",
        PLACE,
        PLACE,
        roles=("capital",),
    ),
)

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


def _compile() -> list[tuple[re.Pattern[str], _Canonical, bool]]:
    """Each canonical relation's forms as full-match patterns over the words between two
    mentions (lower case, single spaces, commas and "'s" as words)."""
    compiled: list[tuple[re.Pattern[str], _Canonical, bool]] = []
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

# The generic fallback.
_IRREGULAR = {
    "met": "meet",
    "won": "win",
    "lost": "lose",
    "left": "leave",
    "built": "build",
    "bought": "buy",
    "sold": "sell",
    "taught": "teach",
    "wrote": "write",
    "written": "write",
    "made": "make",
    "gave": "give",
    "given": "give",
    "took": "take",
    "taken": "take",
    "kept": "keep",
    "held": "hold",
    "found": "find",
    "beat": "beat",
    "beaten": "beat",
    "became": "become",
    "began": "begin",
    "begun": "begin",
    "drew": "draw",
    "drawn": "draw",
    "drove": "drive",
    "driven": "drive",
    "fought": "fight",
    "led": "lead",
    "ran": "run",
    "sang": "sing",
    "sung": "sing",
    "spoke": "speak",
    "spoken": "speak",
    "stole": "steal",
    "stolen": "steal",
    "struck": "strike",
    "threw": "throw",
    "thrown": "throw",
    "wore": "wear",
    "worn": "wear",
    "sent": "send",
    "spent": "spend",
    "paid": "pay",
    "told": "tell",
    "thought": "think",
    "brought": "bring",
    "caught": "catch",
    "chose": "choose",
    "chosen": "choose",
    "flew": "fly",
    "flown": "fly",
    "grew": "grow",
    "grown": "grow",
    "knew": "know",
    "known": "know",
    "saw": "see",
    "seen": "see",
    "shot": "shoot",
    "shown": "show",
    "sat": "sit",
    "stood": "stand",
    "swam": "swim",
    "understood": "understand",
    "won't": "",
    "hid": "hide",
    "hidden": "hide",
    "broke": "break",
    "broken": "break",
    "froze": "freeze",
    "frozen": "freeze",
    "rode": "ride",
    "ridden": "ride",
    "forgave": "forgive",
    "forgot": "forget",
    "forgotten": "forget",
    "overtook": "overtake",
    "shook": "shake",
    "dug": "dig",
    "fed": "feed",
    "hung": "hang",
    "lent": "lend",
    "meant": "mean",
    "quit": "quit",
    "rang": "ring",
    "rose": "rise",
    "risen": "rise",
    "sought": "seek",
    "slept": "sleep",
    "spun": "spin",
    "swore": "swear",
    "sworn": "swear",
    "woke": "wake",
    "woken": "wake",
    "wove": "weave",
    "woven": "weave",
}
# Words that look like verbs by their ending but connect nothing, or are too vague to name a
# relation ("is", "has", "says").
_NOT_RELATIONS_TEXT = """
    is was are were be been being has have had does did do says said tells told asks asked
    thinks thought knows knew sees saw gets got makes made takes took goes went comes came
    means meant seems seemed feels felt wants wanted needs needed lets let uses used calls
    called plus versus vs thus this his its hers theirs ours yours as us gas bus news series
    species always sometimes perhaps whereas besides towards afterwards various previous
    famous serious numerous during across unless its alas bias chaos lens yes less"""
_NOT_RELATIONS = frozenset(_NOT_RELATIONS_TEXT.split())
_PREPOSITIONS_TEXT = "in at on to for with from into onto about against over under near after by of"
_PREPOSITIONS = frozenset(_PREPOSITIONS_TEXT.split())
_STOP_BETWEEN_TEXT = """
    and or but not never no nor n't without because although though if when while whom whose
    where which what why how i you we she he they it me him us them my your our"""
_STOP_BETWEEN = frozenset(_STOP_BETWEEN_TEXT.split())
_MAX_BETWEEN_WORDS = 7


def _lemma(verb: str) -> str:
    """A verb's base form by its ending (no dictionary beyond the irregular ones): "sponsors"
    -> "sponsor", "studied" -> "study", "stopped" -> "stop", "danced" -> "dance"."""
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
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
    if word in _NOT_RELATIONS or (not word.isalpha() and "-" not in word):
        return False
    if word in _IRREGULAR:
        return bool(_IRREGULAR[word])
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
        if noun in _NOT_RELATIONS or noun in _STOP_BETWEEN or len(noun) < 3:
            return None
        if preposition == "in":
            return Found("located_in", False)
        return Found(f"{noun}_{preposition}", False)
    match = _GENERIC_PASSIVE.fullmatch(between)
    if match and re.search(r"\b(?:is|was|are|were|been|be|being)\b", between):
        verb, preposition = match.group(1), match.group(2)
        if verb in _IRREGULAR or (len(verb) >= 5 and verb.endswith(("ed", "en"))):
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
    if not words or any(word in _STOP_BETWEEN or word.endswith("n't") for word in words):
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


# "A and B are siblings": the plural of a symmetric relation's role.
PLURAL_ROLES = {
    f"{role}s": rel.name
    for rel in CANONICAL
    if rel.symmetric
    for role in rel.roles
    if " " not in role
}
PLURAL_ROLES.update(
    {"married": "married_to", "engaged": "married_to", "wed": "married_to", "twins": "sibling_of"}
)


def is_symmetric(relation_type: str) -> bool:
    return any(rel.symmetric and rel.name == relation_type for rel in CANONICAL)


# Verb forms of the dictionary: words no key phrase or name may end with.
RELATION_VERBS = frozenset(
    word
    for rel in CANONICAL
    for form in (*rel.active, *rel.passive)
    for word in form.split()
    if word not in _PREPOSITIONS and word not in ("the", "up")
)
