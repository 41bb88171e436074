"""Synthetic multi-hop retrieval data: seeded worlds of people, organisations, places, works and
events, short documents that state their facts, and 2- and 3-hop bridge questions whose last
evidence document only a hop can find (it shares no content word with the question).

Pure Python, no network, deterministic for a seed; ``bench/rag/multihop.py`` loads it through the
real pipeline and scores the modes. Printing a sample:

    python bench/rag/multihop_data.py --seed 0 --worlds 1 [--json]

A world is identified by its own seed (``world(seed)``); a dataset of ``n`` worlds from seed
``s`` is the worlds ``s .. s+n-1``. Names are built from combinatorial pools (about a thousand
surnames, a thousand place names, several thousand organisation names), so two worlds share few
of them. Folds for cross-validation: ``question_fold(q, k)`` (by world seed: worlds never
straddle folds), ``template_fold(q, k)`` (by the question's final template, so a held-out
fold also holds paraphrases never tuned on) and ``relation_fold(q, k)`` (by the last hop's
relation).

The world, in short:
- Every relation (25 types) has several document templates (active, passive, with a year) and
  the noun phrases / questions that describe one end given the other, only in the direction in
  which the answer is unique (an organisation has one head; a person one birthplace).
- A document is one to three facts about one topic entity; after the first sentence a person is
  "she"/"he", "Lind" or "Dr. Lind", and in some documents the person is only ever named so.
- Lookalike organisations ("Old Harbor Library" beside "Harbor Library", same kind, own head and
  place) and the anchor's other facts are the distractors that share the question's words.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

# ---------------------------------------------------------------------------------------------
# Name pools (combinatorial)


def _words(text: str, sep: str | None = None) -> tuple[str, ...]:
    return tuple(text.split(sep))


FEMALE = _words(
    "Ada Agnes Alma Amira Anya Astrid Beatrix Bianca Carla Chiara Clara Dalia Daria Edith Elif "
    "Elena Elsa Emilia Esme Farah Freya Greta Hana Helena Ida Ilse Ines Irene Isla Jana Johanna "
    "Kaja Karin Lea Leila Lena Liv Lucia Maja Mara Marit Mila Mira Nadia Nina Noor Olga Paula "
    "Petra Rhea Rosa Ruth Sanna Selma Sofia Tanja Tilde Una Vera Wanda Yara Zora"
)
MALE = _words(
    "Aaron Adrian Anders Anton Arvid Bruno Casper Cyril Dario Emil Erik Felix Filip Gustav Hakon "
    "Henrik Hugo Idris Ivan Jakob Jonas Joel Karl Kasimir Lars Leon Linus Luca Magnus Marek Mats "
    "Milo Nils Noah Olaf Omar Oskar Otto Pavel Pieter Rafael Rasmus Ruben Samir Sven Teodor Tobias "
    "Tomas Ulrik Viktor Vilhelm Yusuf Zeno Benedikt Cornel Dominik Espen Florin Gideon"
)
SURNAME_HEADS = _words(
    "Lind Berg Holm Dahl Strand Frost Marsh Thorn Vale Moro Kell Tamm Sorel Aven Quill Pell Rook "
    "Hask Brenn Cald Dorn Eck Falk Grim Hollis Ivar Jess Kro Lor Mell Nord Orm Prest Ran Sand Tov "
    "Ulv Wex Yor Zeller Bram Cor Dalt Fenn Gald Hart Kast Lund"
)
SURNAME_TAILS = (
    "",
    *_words(
        "gren qvist ton wick sen man ley ard ini hart well by ner mark dal vik ova strom feld ing "
        "stad holt ers"
    ),
)
PLACE_HEADS = _words(
    "Kir Vel Ash Tor Mar Bel Dun Ost Lan Sel Quen Har Ril Fen Gal Mor Tav Ul Yar Zel Bram Cor Eld "
    "Hal Ivr Jor Kes Lom Nar Pel Ros Sten Tul Var Wes Ald Bro Cal Dor Esk"
)
PLACE_TAILS = _words(
    "una mora vik ford bridge haven stead holm dale field wick by ton port mouth burg ness gate "
    "ley mere ridge sund stad ora"
)
MODIFIERS = _words(
    "Harbor Granite Cedar Willow Lantern Copper Meridian Silver Oakridge Beacon Falcon Juniper "
    "Amber Orchard Summit Riverbend Northgate Ironwood Larch Heron Saffron Tidewater Bramble "
    "Crescent Marigold Quarry Kestrel Foxglove Alder Pinecrest Seabright Stonebridge Driftwood "
    "Cobalt Indigo Ember Aspen Birch Clover Glacier Hazel Jasper Laurel Maple Nettle Onyx Pebble "
    "Quartz Rowan Sable Thistle Vesper Wren Yarrow Zephyr Bluebell Coral Dawnlight Evergreen "
    "Fairhaven Goldcrest Highmoor Ivory Kingfisher Lowmarsh Moonstone Nightjar Oldmill Puffin "
    "Redwood Skylark Tamarind Upland Violet Westwind"
)
LOOKALIKE = ("Old {m}", "New {m}", "North {m}", "{m} Street", "{m} Point", "Upper {m}")
TITLE_WORDS = _words(
    "Silent Hidden Distant Paper Salt Glass Winter Broken Quiet Golden Northern Hollow Crimson "
    "Patient Burning Last"
)
TITLE_NOUNS = _words(
    "Orchard Map River Lantern Garden Harvest Compass Mirror Shore Choir Letters Atlas Tide "
    "Meadow Archive Signal Bridge Ledger"
)
FESTIVALS = _words(
    "Lantern Festival|Jazz Festival|Book Fair|Film Week|Marathon|Regatta|Folk Festival|"
    "Science Fair|Chess Open|Harvest Fair",
    "|",
)

# Organisation kinds: (kind noun, name patterns; {m} a modifier, {c} a city).
ORG_KINDS: dict[str, tuple[str, ...]] = {
    "library": ("the {m} Library", "the {m} Public Library"),
    "hospital": ("{m} General Hospital", "the {m} Clinic", "{m} Hospital"),
    "museum": ("the {m} Museum", "the {m} Gallery"),
    "theatre": ("the {m} Theatre", "the {m} Playhouse"),
    "company": ("{m} Robotics", "{m} Analytics", "{m} Shipping", "{m} Textiles", "{m} Software"),
    "lab": ("the {m} Materials Lab", "the {m} Genomics Lab", "the {m} Optics Lab"),
    "foundation": ("the {m} Foundation", "the {m} Trust"),
    "publisher": ("{m} Press", "{m} Books"),
    "university": ("the University of {c}", "{c} Institute of Technology"),
    "club": ("the {m} Rowing Club", "the {m} Chess Club", "the {m} Football Club"),
    "cafe": ("the {m} Bakery", "the {m} Cafe"),
}
KIND_NOUN = {
    "person": "person",
    "city": "city",
    "library": "library",
    "hospital": "hospital",
    "museum": "museum",
    "theatre": "theatre",
    "company": "company",
    "lab": "laboratory",
    "foundation": "foundation",
    "publisher": "publisher",
    "university": "university",
    "club": "club",
    "cafe": "cafe",
    "book": "book",
    "film": "film",
    "building": "building",
    "event": "event",
}
LEADABLE = ("library", "hospital", "museum", "theatre", "lab")
EMPLOYERS = ("library", "hospital", "museum", "theatre", "company", "lab", "university")
PLACED = ("library", "hospital", "museum", "theatre", "cafe", "club", "university")

# ---------------------------------------------------------------------------------------------
# Relations. doc: sentence templates ({s} subject, {o} object, {y} a year); np_s: noun phrases for
# the subject given the object (only when the object has one such subject); np_o: for the object
# given the subject (only when the subject has one such object); ask_o / ask_s: questions for the
# object given the subject / the subject given the object, in the same uniqueness.


@dataclass(frozen=True)
class Relation:
    name: str
    domain: tuple[str, ...]
    range: tuple[str, ...]
    doc: tuple[str, ...]
    np_s: tuple[str, ...] = ()
    np_o: tuple[str, ...] = ()
    ask_s: tuple[str, ...] = ()
    ask_o: tuple[str, ...] = ()
    symmetric: bool = False


P = ("person",)
C = ("city",)
RELATIONS: tuple[Relation, ...] = (
    Relation(
        "leads", P, LEADABLE,
        doc=("{o} is run by {s}.", "{s} runs {o}.", "{s} has led {o} since {y}.",
             "{s} is the director of {o}.", "{o} has been headed by {s} since {y}."),
        np_s=("the person who runs {o}", "the director of {o}", "whoever heads {o}",
              "the head of {o}"),
        np_o=("the {okind} that {s} runs", "the {okind} led by {s}"),
        ask_s=("Who runs {o}?", "Who is the director of {o}?", "Who heads {o}?"),
        ask_o=("Which {okind} does {s} run?", "What {okind} is led by {s}?"),
    ),
    Relation(
        "works_at", P, EMPLOYERS,
        doc=("{s} works at {o}.", "{o} employs {s}.", "{s} joined {o} in {y}.",
             "{s} has been on the staff of {o} since {y}."),
        np_o=("the {okind} where {s} works", "the employer of {s}", "the {okind} that employs {s}"),
        ask_o=("Where does {s} work?", "Which {okind} employs {s}?", "Who is the employer of {s}?"),
    ),
    Relation(
        "born_in", P, C,
        doc=("{s} was born in {o}.", "{s} is a native of {o}.", "{o} is the birthplace of {s}.",
             "{s} came into the world in {o} in {y}."),
        np_o=("the city where {s} was born", "the birthplace of {s}", "the hometown of {s}"),
        ask_o=("Where was {s} born?", "In which city was {s} born?",
               "What is the birthplace of {s}?", "Which town is {s} a native of?"),
    ),
    Relation(
        "lives_in", P, C,
        doc=("{s} lives in {o}.", "{s} has made a home in {o}.", "{s} resides in {o}.",
             "These days {s} lives in {o}."),
        np_o=("the city where {s} lives", "the town {s} calls home"),
        ask_o=("Where does {s} live?", "In which city does {s} reside?",
               "Which town is home to {s}?"),
    ),
    Relation(
        "grew_up_in", P, C,
        doc=("{s} grew up in {o}.", "{s} spent a childhood in {o}.", "{s} was raised in {o}.",
             "{o} is where {s} spent the early years."),
        np_o=("the city where {s} grew up", "the town where {s} was raised"),
        ask_o=("Where did {s} grow up?", "In which town was {s} raised?",
               "Which city did {s} spend a childhood in?"),
    ),
    Relation(
        "founded", P, ("company", "club", "foundation", "publisher"),
        doc=("{s} founded {o}.", "{o} was founded by {s} in {y}.", "{s} started {o} in {y}.",
             "{o} owes its existence to {s}, who set it up in {y}."),
        np_s=("the founder of {o}", "the person who founded {o}", "whoever started {o}"),
        np_o=("the {okind} that {s} founded", "the {okind} started by {s}"),
        ask_s=("Who founded {o}?", "Who started {o}?", "Who is the founder of {o}?"),
        ask_o=("Which {okind} did {s} found?",),
    ),
    Relation(
        "part_of", ("lab", "museum"), ("university",),
        doc=("{s} is part of {o}.", "{s} belongs to {o}.", "{o} includes {s}.",
             "{s} is a unit of {o}."),
        np_o=("the university that {s} belongs to", "the university {s} is part of"),
        ask_o=("Which university is {s} part of?", "To which university does {s} belong?"),
    ),
    Relation(
        "married_to", P, P,
        doc=("{s} is married to {o}.", "{s} married {o} in {y}.", "{s} and {o} wed in {y}.",
             "{o} is the spouse of {s}."),
        np_o=("the spouse of {s}", "the person {s} married"),
        ask_o=("Who is {s} married to?", "Who is the spouse of {s}?", "Whom did {s} marry?"),
        symmetric=True,
    ),
    Relation(
        "sibling_of", P, P,
        doc=("{s} is a sibling of {o}.", "{s} and {o} are siblings.",
             "{s} has a sibling, {o}.", "{o} and {s} share the same parents."),
        np_o=("the sibling of {s}",),
        ask_o=("Who is the sibling of {s}?", "Who is the brother or sister of {s}?"),
        symmetric=True,
    ),
    Relation(
        "studied_at", P, ("university",),
        doc=("{s} studied at {o}.", "{s} graduated from {o} in {y}.", "{s} is an alumnus of {o}.",
             "{s} took a degree at {o}."),
        np_o=("the university where {s} studied", "the alma mater of {s}"),
        ask_o=("Where did {s} study?", "Which university did {s} graduate from?",
               "What is the alma mater of {s}?"),
    ),
    Relation(
        "located_in", PLACED, C,
        doc=("{s} is located in {o}.", "{s} stands in {o}.", "{o} is home to {s}.",
             "{s} can be found in {o}."),
        np_o=("the city where {s} is located", "the town that is home to {s}"),
        ask_o=("Where is {s} located?", "In which city is {s}?", "Which town is home to {s}?"),
    ),
    Relation(
        "owns", P, ("cafe",),
        doc=("{s} owns {o}.", "{o} is owned by {s}.", "{s} bought {o} in {y}.",
             "{o} belongs to {s}."),
        np_s=("the owner of {o}", "the person who owns {o}"),
        ask_s=("Who owns {o}?", "Who is the owner of {o}?"),
    ),
    Relation(
        "wrote", P, ("book",),
        doc=("{s} wrote {o}.", "{o} was written by {s}.", "{s} is the author of {o}.",
             "{o} came from the pen of {s} in {y}."),
        np_s=("the author of {o}", "the person who wrote {o}", "the writer of {o}"),
        ask_s=("Who wrote {o}?", "Who is the author of {o}?"),
    ),
    Relation(
        "directed", P, ("film",),
        doc=("{s} directed {o}.", "{o} was directed by {s}.", "{s} made the film {o} in {y}.",
             "{o} is a film by {s}."),
        np_s=("the director of the film {o}", "the person who directed {o}"),
        ask_s=("Who directed {o}?", "Who is the director of the film {o}?"),
    ),
    Relation(
        "member_of", P, ("club",),
        doc=("{s} is a member of {o}.", "{s} joined {o} in {y}.", "{s} belongs to {o}.",
             "{s} has been with {o} since {y}."),
        np_o=("the club {s} belongs to", "the club that {s} is a member of"),
        ask_o=("Which club is {s} a member of?", "What club does {s} belong to?"),
    ),
    Relation(
        "mentored", P, P,
        doc=("{s} mentored {o}.", "{o} was mentored by {s}.", "{s} was a mentor to {o}.",
             "{o} trained under {s}."),
        np_s=("the mentor of {o}", "the person who mentored {o}"),
        ask_s=("Who mentored {o}?", "Who was the mentor of {o}?"),
    ),
    Relation(
        "designed", P, ("building",),
        doc=("{s} designed {o}.", "{o} was designed by {s}.", "{s} is the architect of {o}.",
             "{o} was drawn up by {s} in {y}."),
        np_s=("the architect of {o}", "the person who designed {o}"),
        ask_s=("Who designed {o}?", "Who was the architect of {o}?"),
    ),
    Relation(
        "sponsors", ("company",), ("event",),
        doc=("{s} sponsors {o}.", "{o} is sponsored by {s}.", "{s} has paid for {o} since {y}.",
             "{o} is backed by {s}."),
        np_s=("the sponsor of {o}", "the company that sponsors {o}"),
        ask_s=("Who sponsors {o}?", "Which company is the sponsor of {o}?"),
    ),
    Relation(
        "headquartered_in", ("company", "publisher", "foundation"), C,
        doc=("{s} is headquartered in {o}.", "{s} has its head office in {o}.",
             "{s} is based in {o}.", "{o} is where {s} keeps its head office."),
        np_o=("the city where {s} is headquartered", "the city where {s} is based"),
        ask_o=("Where is {s} headquartered?", "In which city is {s} based?"),
    ),
    Relation(
        "funded_by", ("lab", "museum", "theatre"), ("foundation",),
        doc=("{s} is funded by {o}.", "{o} funds {s}.", "{o} has paid for {s} since {y}.",
             "{s} receives its money from {o}."),
        np_o=("the foundation that funds {s}", "the funder of {s}"),
        ask_o=("Who funds {s}?", "Which foundation is the funder of {s}?"),
    ),
    Relation(
        "coach_of", P, ("club",),
        doc=("{s} coaches {o}.", "{o} is coached by {s}.", "{s} has trained {o} since {y}.",
             "{s} is the coach of {o}."),
        np_s=("the coach of {o}", "the person who coaches {o}"),
        ask_s=("Who coaches {o}?", "Who is the coach of {o}?"),
    ),
    Relation(
        "published_by", ("book",), ("publisher",),
        doc=("{s} was published by {o}.", "{o} published {s} in {y}.", "{o} brought out {s}.",
             "{s} appeared under the imprint of {o}."),
        np_o=("the publisher of {s}", "the house that published {s}"),
        ask_o=("Who published {s}?", "Which publisher brought out {s}?"),
    ),
    Relation(
        "held_in", ("event",), C,
        doc=("{s} is held in {o}.", "{s} takes place in {o}.", "{o} hosts {s} every year.",
             "Every year {o} plays host to {s}."),
        np_o=("the city where {s} is held", "the town that hosts {s}"),
        ask_o=("Where is {s} held?", "In which city does {s} take place?"),
    ),
    Relation(
        "based_on", ("film",), ("book",),
        doc=("{s} is based on {o}.", "{s} adapts {o}.", "{s} is an adaptation of {o}.",
             "{o} was adapted for the screen as {s}."),
        np_s=("the film based on {o}", "the film adaptation of {o}"),
        np_o=("the book {s} is based on", "the book that {s} adapts"),
        ask_s=("Which film is based on {o}?",),
        ask_o=("Which book is {s} based on?", "What book does {s} adapt?"),
    ),
    Relation(
        "stands_in", ("building",), C,
        doc=("{s} stands in {o}.", "{s} was built in {o}.", "{o} is the site of {s}.",
             "{s} rises above the centre of {o}."),
        np_o=("the city where {s} stands", "the town where {s} was built"),
        ask_o=("Where does {s} stand?", "In which city was {s} built?"),
    ),
)  # fmt: skip
RELATION = {r.name: r for r in RELATIONS}

# ---------------------------------------------------------------------------------------------
# Words

# Words that never count as shared: the keyword index's stop words (Lucene's English set) and
# the words by which a question asks (question words, auxiliaries, pronouns), which the
# product's query analysis drops from a question.
STOPWORDS = frozenset(
    _words(
        "a an and are as at be but by for if in into is it no not of on or such that the their "
        "then there these they this to was will with what when where who whom whose which why how "
        "did do does doing done has have had having were been being am can could would should "
        "shall may might must i me my mine you your he him his she her hers we us our they them "
        "its itself any some about from up out over so than too very just also"
    )
)
_WORD = re.compile(r"[A-Za-z]+")


def _norm(word: str) -> str:
    w = word.lower()
    if len(w) > 4 and w.endswith(("ies", "ied")):
        w = w[:-3] + "y"  # cities -> city, married -> marry
    return w


def meets(a: str, b: str) -> bool:
    """Whether two words may be the same word to a stemmer, conservatively: they share their
    first four letters, or the shorter (of three letters or fewer) begins the longer. So "run"
    / "runs", "marry" / "married", "city" / "cities", "founder" / "founded" meet (and so do
    "head" / "headquartered": a false alarm costs a question, never the promise)."""
    a, b = _norm(a), _norm(b)
    if min(len(a), len(b)) >= 4:
        return a[:4] == b[:4]
    short, long_ = sorted((a, b), key=len)
    return long_.startswith(short)


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in STOPWORDS}


@lru_cache(maxsize=4096)
def _profile(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """A text's words as ``meets`` compares them: first four letters (words of four or more),
    short words (three or fewer), and every word's first one to three letters."""
    words = [_norm(w) for w in content_words(text)]
    return (
        frozenset(w[:4] for w in words if len(w) >= 4),
        frozenset(w for w in words if len(w) < 4),
        frozenset(w[:k] for w in words for k in (1, 2, 3)),
    )


def shared_words(question: str, text: str) -> set[str]:
    """The question's content words that meet (``meets``) a content word of ``text``."""
    heads, shorts, prefixes = _profile(text)
    shared = set()
    for word in content_words(question):
        w = _norm(word)
        if len(w) < 4:
            hit = w in prefixes
        else:
            hit = w[:4] in heads or any(w.startswith(short) for short in shorts)
        if hit:
            shared.add(word)
    return shared


# ---------------------------------------------------------------------------------------------
# Data


@dataclass
class Entity:
    id: str
    type: str  # person, city, an organisation kind, book, film, building, event
    name: str  # as written mid-sentence ("the Harbor Library", "Jonas Lind")
    surname: str = ""
    title: str = ""  # Dr., Prof., Ms., Mr.
    gender: str = ""  # f / m


@dataclass
class Fact:
    id: str
    relation: str
    s: str
    o: str
    year: int


@dataclass
class Document:
    id: str
    text: str
    facts: list[str]
    topic: str
    mentions: dict[str, str] = field(default_factory=dict)  # fact id -> how the topic is named


@dataclass
class Question:
    id: str
    text: str
    hops: int
    evidence: list[str]  # document ids, one a hop, in order
    final_doc: str
    chain: list[str]  # relation names, in hop order
    facts: list[str]
    answer: str
    template: str  # the final question template's id (relation:ask_x:index)
    templates: list[str]  # every template used (noun phrases, then the question)
    final_mention: str  # how the bridge entity is named in the final document
    distractors: list[str]  # non-evidence documents sharing two or more content words
    world: int


@dataclass
class World:
    seed: int
    entities: dict[str, Entity]
    facts: dict[str, Fact]
    documents: list[Document]
    questions: list[Question]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


class _Builder:
    def __init__(self, seed: int, persons: int) -> None:
        self.seed = seed
        self.rng = random.Random(f"multihop-world-{seed}")
        self.persons = persons
        self.entities: dict[str, Entity] = {}
        self.facts: dict[str, Fact] = {}
        self.used_names: set[str] = set()
        self.used_surnames: set[str] = set()

    # entities --------------------------------------------------------------------------------
    def _add(self, type_: str, name: str, **extra: str) -> Entity:
        entity = Entity(id=f"e{len(self.entities)}", type=type_, name=name, **extra)
        self.entities[entity.id] = entity
        self.used_names.add(name.lower().removeprefix("the "))
        return entity

    def _fresh(self, make: Any) -> str:
        for _ in range(200):
            name = make()
            if name.lower().removeprefix("the ") not in self.used_names:
                return str(name)
        raise RuntimeError("name pool exhausted")

    def person(self) -> Entity:
        rng = self.rng
        gender = rng.choice("fm")
        for _ in range(200):
            surname = rng.choice(SURNAME_HEADS) + rng.choice(SURNAME_TAILS)
            if surname not in self.used_surnames:
                break
        self.used_surnames.add(surname)
        first = rng.choice(FEMALE if gender == "f" else MALE)
        title = rng.choice(("Dr.", "Prof.", "Ms." if gender == "f" else "Mr."))
        return self._add(
            "person", f"{first} {surname}", surname=surname, title=title, gender=gender
        )

    def city(self) -> Entity:
        rng = self.rng
        return self._add(
            "city", self._fresh(lambda: rng.choice(PLACE_HEADS) + rng.choice(PLACE_TAILS))
        )

    def org(self, kind: str, modifier: str | None = None) -> Entity:
        rng = self.rng
        cities = [e for e in self.entities.values() if e.type == "city"]

        def make() -> str:
            pattern = rng.choice(ORG_KINDS[kind])
            return pattern.format(m=modifier or rng.choice(MODIFIERS), c=rng.choice(cities).name)

        return self._add(kind, self._fresh(make))

    def work(self, kind: str) -> Entity:
        rng = self.rng
        if kind == "building":
            nouns: tuple[str, ...] = ("Tower", "Pavilion", "Hall", "Bridge", "Arcade")
            pattern = "the {m} {n}"
        elif kind == "event":
            nouns, pattern = FESTIVALS, "the {m} {n}"
        else:
            nouns, pattern = TITLE_NOUNS, "{a}{w} {n}"

        def make() -> str:
            return pattern.format(
                m=rng.choice(MODIFIERS), n=rng.choice(nouns), w=rng.choice(TITLE_WORDS),
                a=rng.choice(("The ", "A ", "")),
            )  # fmt: skip

        return self._add(kind, self._fresh(make))

    # facts -----------------------------------------------------------------------------------
    def fact(self, relation: str, s: Entity, o: Entity) -> None:
        fid = f"f{len(self.facts)}"
        year = self.rng.randint(1990, 2022)
        if relation == "born_in":
            year = self.rng.randint(1945, 1988)
        self.facts[fid] = Fact(fid, relation, s.id, o.id, year)

    def build(self) -> None:
        rng = self.rng
        cities = [self.city() for _ in range(max(6, self.persons // 2))]
        orgs: dict[str, list[Entity]] = {}
        for kind in ORG_KINDS:
            count = 2 if kind in ("company", "foundation", "university", "club") else 1
            orgs[kind] = [self.org(kind) for _ in range(count)]
        # Lookalikes: same kind and modifier, a different place and head.
        for kind in ("library", "hospital", "museum", "company", "club", "theatre"):
            base = orgs[kind][0]
            modifier = next((m for m in MODIFIERS if m in base.name), None)
            if modifier is None:
                continue
            variant = rng.choice(LOOKALIKE).format(m=modifier)
            name = base.name.replace(modifier, variant)
            if name.lower().removeprefix("the ") not in self.used_names:
                orgs[kind].append(self._add(kind, name))
        people = [self.person() for _ in range(self.persons)]
        books = [self.work("book") for _ in range(3)]
        films = [self.work("film") for _ in range(2)]
        buildings = [self.work("building") for _ in range(2)]
        events = [self.work("event") for _ in range(2)]

        pool = list(people)
        rng.shuffle(pool)
        take = iter(pool)
        every_org = [o for kind in orgs.values() for o in kind]
        for org in every_org:
            if org.type in LEADABLE:
                self.fact("leads", next(take), org)
        founders = list(people)  # one organisation a founder: "the company that X founded"
        rng.shuffle(founders)
        for org in every_org:
            if org.type in ("company", "club", "foundation", "publisher") and rng.random() < 0.8:
                self.fact("founded", founders.pop(), org)
        for club in orgs["club"]:
            self.fact("coach_of", rng.choice(people), club)
        for cafe in orgs["cafe"]:
            self.fact("owns", rng.choice(people), cafe)
        for person in people:
            self.fact("born_in", person, rng.choice(cities))
            if rng.random() < 0.7:
                self.fact("lives_in", person, rng.choice(cities))
            if rng.random() < 0.4:
                self.fact("grew_up_in", person, rng.choice(cities))
            employers = [o for o in every_org if o.type in EMPLOYERS]
            if rng.random() < 0.8:
                self.fact("works_at", person, rng.choice(employers))
            if rng.random() < 0.5:
                self.fact("studied_at", person, rng.choice(orgs["university"]))
            if rng.random() < 0.3:
                self.fact("member_of", person, rng.choice(orgs["club"]))
        singles = list(people)
        rng.shuffle(singles)
        for a, b in zip(singles[0:4:2], singles[1:4:2], strict=True):
            self.fact("married_to", a, b)
        for a, b in zip(singles[4:8:2], singles[5:8:2], strict=True):
            self.fact("sibling_of", a, b)
        mentees = singles[8:12]
        for mentee in mentees:
            self.fact("mentored", rng.choice([p for p in people if p is not mentee]), mentee)
        for book in books:
            self.fact("wrote", rng.choice(people), book)
            self.fact("published_by", book, rng.choice(orgs["publisher"]))
        for film, book in zip(films, books, strict=False):
            self.fact("directed", rng.choice(people), film)
            self.fact("based_on", film, book)
        for building in buildings:
            self.fact("designed", rng.choice(people), building)
            self.fact("stands_in", building, rng.choice(cities))
        for event in events:
            self.fact("sponsors", rng.choice(orgs["company"]), event)
            self.fact("held_in", event, rng.choice(cities))
        for org in every_org:
            if org.type in PLACED:
                self.fact("located_in", org, rng.choice(cities))
            if org.type in ("company", "publisher", "foundation"):
                self.fact("headquartered_in", org, rng.choice(cities))
            if org.type in ("lab",) or (org.type in ("museum",) and rng.random() < 0.5):
                self.fact("part_of", org, rng.choice(orgs["university"]))
            if org.type in ("lab", "museum", "theatre"):
                self.fact("funded_by", org, rng.choice(orgs["foundation"]))


# ---------------------------------------------------------------------------------------------
# Documents


def _pronoun(entity: Entity) -> str:
    if entity.type == "person":
        return "She" if entity.gender == "f" else "He"
    return "It"


def _render(template: str, s: str, o: str, year: int, e_s: Entity, e_o: Entity) -> str:
    text = template.format(s=s, o=o, y=year, skind=KIND_NOUN[e_s.type], okind=KIND_NOUN[e_o.type])
    return _cap(text)


def _documents(builder: _Builder) -> list[Document]:
    """Facts grouped by a topic entity (the subject, or the object for some), one to three a
    document; the topic named in full first (or, in some documents, only by surname or title),
    then by pronoun, surname or title."""
    rng = builder.rng
    entities, facts = builder.entities, builder.facts
    by_topic: dict[str, list[Fact]] = {}
    for fact in facts.values():
        s, o = entities[fact.s], entities[fact.o]
        key = fact.s
        if o.type not in ("city",) and rng.random() < 0.3:
            key = fact.o
        if s.type != "person" and o.type == "person":
            key = fact.o if rng.random() < 0.5 else fact.s
        by_topic.setdefault(key, []).append(fact)
    documents: list[Document] = []
    for topic_id in sorted(by_topic, key=lambda e: int(e[1:])):
        group = by_topic[topic_id]
        rng.shuffle(group)
        topic = entities[topic_id]
        while group:
            size = min(len(group), rng.choice((1, 1, 2, 2, 3)))
            chunk, group = group[:size], group[size:]
            alias_only = topic.type == "person" and rng.random() < 0.2
            sentences, mentions = [], {}
            leads = False  # did the previous sentence open with the topic? (a pronoun's antecedent)
            for index, fact in enumerate(chunk):
                relation = RELATION[fact.relation]
                template = rng.choice(relation.doc)
                s, o = entities[fact.s], entities[fact.o]
                names = {"s": s.name, "o": o.name}
                role = "s" if fact.s == topic_id else "o"
                opens = template.startswith("{" + role + "}")
                form = "full"
                if topic.type == "person" and (index > 0 or alias_only):
                    options = ["surname", "title"]
                    if leads and opens:
                        options.append("pronoun")
                    form = rng.choice(options)
                elif leads and opens and rng.random() < 0.5:
                    form = "pronoun"
                leads = opens
                if form == "surname":
                    names[role] = topic.surname
                elif form == "title":
                    names[role] = f"{topic.title} {topic.surname}"
                elif form == "pronoun":
                    names[role] = _pronoun(topic)
                sentences.append(_render(template, names["s"], names["o"], fact.year, s, o))
                mentions[fact.id] = form
            documents.append(
                Document(
                    id=f"w{builder.seed}-d{len(documents)}",
                    text=" ".join(sentences),
                    facts=[f.id for f in chunk],
                    topic=topic_id,
                    mentions=mentions,
                )
            )
    return documents


# ---------------------------------------------------------------------------------------------
# Questions


def _describe(fact: Fact, known: str) -> list[tuple[str, str]]:
    """The noun phrase templates (id, template with {x} for the known end's description) for the
    other end of ``fact`` given its end ``known``: only in the unique direction."""
    relation = RELATION[fact.relation]
    out = []
    if known == fact.o:
        for i, t in enumerate(relation.np_s):
            out.append((f"{relation.name}:np_s:{i}", t.replace("{o}", "{x}")))
    if known == fact.s or relation.symmetric:
        for i, t in enumerate(relation.np_o):
            out.append((f"{relation.name}:np_o:{i}", t.replace("{s}", "{x}")))
    return out


def _asks(fact: Fact, known: str) -> list[tuple[str, str]]:
    relation = RELATION[fact.relation]
    if known == fact.o and not relation.symmetric:
        return [
            (f"{relation.name}:ask_s:{i}", t.replace("{o}", "{x}"))
            for i, t in enumerate(relation.ask_s)
        ]
    if known == fact.s or relation.symmetric:
        return [
            (f"{relation.name}:ask_o:{i}", t.replace("{s}", "{x}"))
            for i, t in enumerate(relation.ask_o)
        ]
    return []


def _fill(template: str, x: str, fact: Fact, entities: dict[str, Entity]) -> str:
    s, o = entities[fact.s], entities[fact.o]
    return template.format(x=x, skind=KIND_NOUN[s.type], okind=KIND_NOUN[o.type])


def _questions(
    builder: _Builder, documents: list[Document], count: int, three_hop: float
) -> list[Question]:
    rng = builder.rng
    entities, facts = builder.entities, builder.facts
    doc_of = {fid: d for d in documents for fid in d.facts}
    by_entity: dict[str, list[Fact]] = {}
    for fact in facts.values():
        by_entity.setdefault(fact.s, []).append(fact)
        by_entity.setdefault(fact.o, []).append(fact)

    def other(fact: Fact, end: str) -> str:
        return fact.o if end == fact.s else fact.s

    chains: list[list[tuple[Fact, str]]] = []  # (fact, the end known when it is used)
    for anchor in sorted(entities, key=lambda e: int(e[1:])):
        for f1 in by_entity.get(anchor, []):
            if not _describe(f1, anchor):
                continue
            b = other(f1, anchor)
            for f2 in by_entity.get(b, []):
                if f2.id == f1.id or other(f2, b) == anchor:
                    continue
                if _asks(f2, b):
                    chains.append([(f1, anchor), (f2, b)])
                if not _describe(f2, b):
                    continue
                c = other(f2, b)
                for f3 in by_entity.get(c, []):
                    if f3.id in (f1.id, f2.id) or other(f3, c) in (anchor, b):
                        continue
                    if _asks(f3, c):
                        chains.append([(f1, anchor), (f2, b), (f3, c)])
    rng.shuffle(chains)
    want = {3: round(count * three_hop), 2: count - round(count * three_hop)}
    questions: list[Question] = []
    seen_final: dict[str, int] = {}
    used_final_facts: set[str] = set()
    for chain in chains:
        hops = len(chain)
        if want[hops] <= 0:
            continue
        final_fact, bridge = chain[-1]
        if (
            final_fact.id in used_final_facts
            or seen_final.get(final_fact.relation, 0) >= 3 + count // 25
        ):
            continue
        docs = [doc_of[f.id] for f, _ in chain]
        if len({d.id for d in docs}) < hops:
            continue
        # Compose: anchor's name, then each noun phrase, then the question.
        anchor_name = entities[chain[0][1]].name
        final_doc = docs[-1]
        options = []
        for _ in range(8):
            text, used = anchor_name, []
            for fact, known in chain[:-1]:
                tid, template = rng.choice(_describe(fact, known))
                text = _fill(template, text, fact, entities)
                used.append(tid)
            tid, template = rng.choice(_asks(final_fact, bridge))
            question = _cap(_fill(template, text, final_fact, entities))
            used.append(tid)
            if not shared_words(question, final_doc.text):
                options.append((question, used))
        if not options:
            continue
        question, used = options[0]
        evidence = [d.id for d in docs]
        overlap = {d.id: len(shared_words(question, d.text)) for d in documents}
        distractors = sorted(
            (d for d in documents if d.id not in evidence and overlap[d.id] >= 2),
            key=lambda d: (-overlap[d.id], int(d.id.rsplit("d", 1)[1])),
        )
        if not distractors:  # a few anchors (a book's title) have no lookalike: not asked
            continue
        questions.append(
            Question(
                id=f"w{builder.seed}-q{len(questions)}",
                text=question,
                hops=hops,
                evidence=evidence,
                final_doc=final_doc.id,
                chain=[f.relation for f, _ in chain],
                facts=[f.id for f, _ in chain],
                answer=entities[other(final_fact, bridge)].name,
                template=used[-1],
                templates=used,
                final_mention=final_doc.mentions[final_fact.id]
                if final_doc.topic == bridge
                else "full",
                distractors=[d.id for d in distractors[:10]],
                world=builder.seed,
            )
        )
        want[hops] -= 1
        seen_final[final_fact.relation] = seen_final.get(final_fact.relation, 0) + 1
        used_final_facts.add(final_fact.id)
    return questions


# ---------------------------------------------------------------------------------------------
# Public


def world(seed: int, *, persons: int = 16, questions: int = 24, three_hop: float = 0.35) -> World:
    """One world, deterministic for its seed and sizes."""
    if persons < 12:
        raise ValueError("a world needs 12 persons at least (one head an organisation)")
    builder = _Builder(seed, persons)
    builder.build()
    documents = _documents(builder)
    return World(
        seed=seed,
        entities=builder.entities,
        facts=builder.facts,
        documents=documents,
        questions=_questions(builder, documents, questions, three_hop),
    )


def dataset(seed: int = 0, worlds: int = 6, **sizes: Any) -> list[World]:
    """Worlds ``seed .. seed + worlds - 1``."""
    return [world(seed + i, **sizes) for i in range(worlds)]


def question_fold(question: Question, folds: int) -> int:
    """The question's fold by world: a world's documents and questions are never split."""
    return question.world % folds


def template_fold(question: Question, folds: int) -> int:
    """The question's fold by its final question template (stable across runs and worlds)."""
    return int(hashlib.sha256(question.template.encode()).hexdigest(), 16) % folds


def relation_fold(question: Question, folds: int) -> int:
    """The question's fold by its last hop's relation (its place in ``RELATIONS``)."""
    return [r.name for r in RELATIONS].index(question.chain[-1]) % folds


def fingerprint(worlds: list[World]) -> str:
    """A short hash of the documents' texts: a loaded copy is reused only when it is identical."""
    digest = hashlib.sha256()
    for w in worlds:
        for d in w.documents:
            digest.update(f"{d.id}\t{d.text}\n".encode())
    return digest.hexdigest()[:10]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worlds", type=int, default=1)
    parser.add_argument("--persons", type=int, default=16)
    parser.add_argument("--questions", type=int, default=24)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    worlds = dataset(args.seed, args.worlds, persons=args.persons, questions=args.questions)
    if args.json:
        print(json.dumps([asdict(w) for w in worlds]))
        return
    for w in worlds:
        print(
            f"# world {w.seed}: {len(w.entities)} entities, {len(w.facts)} facts, "
            f"{len(w.documents)} documents, {len(w.questions)} questions"
        )
        for d in w.documents:
            print(f"{d.id}: {d.text}")
        for q in w.questions:
            print(
                f"{q.id} ({q.hops} hops, {'>'.join(q.chain)}, final named {q.final_mention}): "
                f"{q.text} -> {q.answer}  evidence {q.evidence}  distractors {q.distractors[:3]}"
            )


if __name__ == "__main__":
    main()
