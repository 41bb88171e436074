"""The relations we name and their words, offline (no model): the dictionary the matchers of
``rag.graph.relation_patterns`` are compiled from.

- ``CANONICAL``: common relations, each with its active verbs ("runs"), passive participles
  ("is run by"), role nouns ("is the director of", "the library's director is") and phrases
  ("is in charge of"), every form normalised to one direction, the types its ends usually are
  (``born_in``: a person and a place) and whether it is symmetric (``married_to``);
- ``PLURAL_ROLES``: the plurals that state a symmetric relation of two conjuncts ("A and B are
  siblings", "A and B wed");
- the words of the generic fallback: irregular verbs' base forms (``IRREGULAR``), words that
  look like verbs but name no relation (``NOT_RELATIONS``), prepositions, and the words that
  stop a relation between two mentions (``STOP_BETWEEN``: negations, coordination, pronouns).
"""

from __future__ import annotations

from dataclasses import dataclass

PERSON, PLACE, ORGANISATION = "person", "place", "organisation"


@dataclass(frozen=True)
class Canonical:
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


CANONICAL: tuple[Canonical, ...] = (
    Canonical(
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
    Canonical(
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
    Canonical(
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
        reverse_phrases=(
            *_forms("employ|employs|employed", "hire|hires|hired"),
            "the employer of",
            "employer of",
        ),
    ),
    Canonical(
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
    Canonical(
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
    Canonical(
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
    Canonical(
        "moved_to",
        PERSON,
        PLACE,
        phrases=("moved to", "moves to", "move to", "relocated to", "emigrated to"),
    ),
    Canonical(
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
    Canonical(
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
        reverse_phrases=("the alma mater of", "alma mater of"),
    ),
    Canonical(
        "member_of",
        PERSON,
        ORGANISATION,
        active=_forms("join|joins|joined", "play for|plays for|played for"),
        roles=_forms(
            "member|player|singer|drummer|guitarist|bassist|cellist|violinist|pianist|vocalist",
            "keyboardist|saxophonist|trumpeter|violist|goalkeeper|striker|forward|defender",
        ),
    ),
    Canonical(
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
    Canonical(
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
    Canonical(
        "married_to",
        PERSON,
        PERSON,
        active=_forms("marry|marries|married", "wed|weds|wedded"),
        roles=_forms("wife|husband|spouse|partner|fiancee|fiance|widow|widower"),
        phrases=("married to", "engaged to", "wed to"),
        symmetric=True,
    ),
    Canonical(
        "sibling_of",
        PERSON,
        PERSON,
        roles=_forms("brother|sister|sibling|twin|twin brother|twin sister"),
        symmetric=True,
    ),
    Canonical(
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
    Canonical(
        "friend_of",
        PERSON,
        PERSON,
        active=_forms("befriend|befriends|befriended"),
        roles=_forms("friend|best friend|close friend|neighbour|neighbor|roommate"),
        phrases=("friends with", "best friends with", "close friends with"),
        symmetric=True,
    ),
    Canonical(
        "colleague_of",
        PERSON,
        PERSON,
        roles=_forms("colleague|coworker|co-worker|collaborator"),
        phrases=("works with", "worked with", "working with", "collaborates with"),
        symmetric=True,
    ),
    Canonical(
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
    Canonical(
        "owns",
        None,
        None,
        active=_forms(
            "own|owns|owned", "acquire|acquires|acquired", "buy|buys|bought", "purchased"
        ),
        passive=_forms("owned|acquired|bought|purchased"),
        roles=_forms("owner|proprietor|parent company"),
    ),
    Canonical(
        "wrote",
        PERSON,
        None,
        active=_forms("write|writes|wrote", "author|authors|authored", "pen|pens|penned"),
        passive=_forms("written|authored|penned"),
        roles=_forms("author|writer"),
    ),
    Canonical(
        "designed",
        None,
        None,
        active=_forms("design|designs|designed", "architect|architected"),
        passive=_forms("designed"),
        roles=_forms("architect|designer"),
    ),
    Canonical(
        "built",
        None,
        None,
        active=_forms("build|builds|built", "construct|constructs|constructed"),
        passive=_forms("built|constructed"),
        roles=_forms("builder"),
    ),
    Canonical(
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
    Canonical(
        "discovered",
        None,
        None,
        active=_forms("discover|discovers|discovered", "invent|invents|invented"),
        passive=_forms("discovered|invented"),
        roles=_forms("discoverer|inventor"),
    ),
    Canonical(
        "named_after",
        None,
        None,
        phrases=("named after", "named for", "called after"),
    ),
    Canonical(
        "capital_of",
        PLACE,
        PLACE,
        roles=("capital",),
    ),
)

# The generic fallback's words. Irregular past forms and participles, each with its base form
# ("won't": none, no verb to name a relation by).
_IRREGULAR_TEXT = """
    met:meet won:win lost:lose left:leave built:build bought:buy sold:sell taught:teach
    wrote:write written:write made:make gave:give given:give took:take taken:take kept:keep
    held:hold found:find beat:beat beaten:beat became:become began:begin begun:begin drew:draw
    drawn:draw drove:drive driven:drive fought:fight led:lead ran:run sang:sing sung:sing
    spoke:speak spoken:speak stole:steal stolen:steal struck:strike threw:throw thrown:throw
    wore:wear worn:wear sent:send spent:spend paid:pay told:tell thought:think brought:bring
    caught:catch chose:choose chosen:choose flew:fly flown:fly grew:grow grown:grow knew:know
    known:know saw:see seen:see shot:shoot shown:show sat:sit stood:stand swam:swim
    understood:understand hid:hide hidden:hide broke:break broken:break froze:freeze
    frozen:freeze rode:ride ridden:ride forgave:forgive forgot:forget forgotten:forget
    overtook:overtake shook:shake dug:dig fed:feed hung:hang lent:lend meant:mean quit:quit
    rang:ring rose:rise risen:rise sought:seek slept:sleep spun:spin swore:swear sworn:swear
    woke:wake woken:wake wove:weave woven:weave"""
IRREGULAR = {past: base for past, base in (pair.split(":") for pair in _IRREGULAR_TEXT.split())}
IRREGULAR["won't"] = ""
# Words that look like verbs by their ending but connect nothing, or are too vague to name a
# relation ("is", "has", "says").
_NOT_RELATIONS_TEXT = """
    is was are were be been being has have had does did do says said tells told asks asked
    thinks thought knows knew sees saw gets got makes made takes took goes went comes came
    means meant seems seemed feels felt wants wanted needs needed lets let uses used calls
    called plus versus vs thus this his its hers theirs ours yours as us gas bus news series
    species always sometimes perhaps whereas besides towards afterwards various previous
    famous serious numerous during across unless its alas bias chaos lens yes less"""
NOT_RELATIONS = frozenset(_NOT_RELATIONS_TEXT.split())
_PREPOSITIONS_TEXT = "in at on to for with from into onto about against over under near after by of"
PREPOSITIONS = frozenset(_PREPOSITIONS_TEXT.split())
_STOP_BETWEEN_TEXT = """
    and or but not never no nor n't without because although though if when while whom whose
    where which what why how i you we she he they it me him us them my your our"""
STOP_BETWEEN = frozenset(_STOP_BETWEEN_TEXT.split())


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
