"""The fact-preservation set (docs/benchmarks-log.md, "Fact preservation in upkeep"): seeded groups
of near-duplicate memories for ``bench/memory/memory_fact_preservation.py`` and the tests.

Three kinds of group, each 3 to 5 members that say one base fact in different words:

- ``paraphrase``: only the base fact, reworded. Upkeep must shrink them (fewer current entries).
- ``extra``: the base fact about a person; every member but the first also carries one extra
  fact of its own (an allergy, a phone number, a place, a version, a time, a name, a date, a
  code, a dislike, a pet), attached as an ``and`` clause, after ``;`` or ``but``, or as a
  sentence of its own (with the name or a pronoun). Each extra fact has an exact token (the
  allergen, the number, the place...) that must still be in a current entry after upkeep.
- ``distractor``: an ``extra`` group about another person with the same base fact values (the
  same job in the same city, the same team, the same tool), so that clusters may mix people.
- ``twin``: two or three memories worded alike that differ only in a value (two lockers'
  codes, two servers' addresses): near-copies to an embedding model (cosine 0.72 to 0.91), yet
  each value is a fact of its own (its token must stay current).

Pure Python, deterministic for a seed: ``groups(seed)`` answers the same set every time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# (name, pronoun, possessive)
PEOPLE = [
    ("Maria Lind", "She", "Her"),
    ("Tom Berg", "He", "His"),
    ("Aisha Khan", "She", "Her"),
    ("Jonas Weber", "He", "His"),
    ("Priya Raman", "She", "Her"),
    ("Lucas Moreau", "He", "His"),
    ("Sofia Rossi", "She", "Her"),
    ("Kenji Sato", "He", "His"),
    ("Elena Petrova", "She", "Her"),
    ("Omar Haddad", "He", "His"),
    ("Ingrid Dahl", "She", "Her"),
    ("Mateo Garcia", "He", "His"),
    ("Hannah Novak", "She", "Her"),
    ("Daniel Okafor", "He", "His"),
    ("Lea Fischer", "She", "Her"),
    ("Ravi Menon", "He", "His"),
]
JOBS = ["nurse", "data engineer", "architect", "pharmacist", "teacher", "accountant", "chef"]
CITIES = ["Oslo", "Bergen", "Lyon", "Porto", "Ghent", "Leeds", "Turin", "Aarhus"]
TEAMS = ["billing", "search", "payments", "mobile", "platform", "onboarding"]
TOOLS = [("Grafana", "dashboards"), ("Airflow", "pipelines"), ("Figma", "mockups")]
MODES = ["bike", "train", "bus", "ferry"]

# Base facts: each a list of wordings of one fact (slots: name, job, city, team, tool, task,
# mode, first = the first name).
PERSON_FACTS = {
    "job": [
        "{name} works as a {job} in {city}.",
        "{name} is a {job} based in {city}.",
        "{name} has a job as a {job} in {city}.",
        "In {city}, {name} works as a {job}.",
        "{name} works in {city} as a {job}.",
    ],
    "team": [
        "{name} leads the {team} team at work.",
        "{name} is the lead of the {team} team at work.",
        "At work, {name} heads the {team} team.",
        "{name} is in charge of the {team} team at work.",
        "At work the {team} team is led by {name}.",
    ],
    "tool": [
        "{name} prefers {tool} for building {task}.",
        "For building {task}, {name} prefers {tool}.",
        "{name} likes to use {tool} when building {task}.",
        "{name}'s preferred tool for building {task} is {tool}.",
        "When {name} builds {task}, {name} prefers {tool}.",
    ],
    "commute": [
        "{name} commutes to the office by {mode}.",
        "{name} gets to the office by {mode}.",
        "{name} travels to the office by {mode} every day.",
        "{name} goes to the office by {mode}.",
        "Every day {name} takes the {mode} to the office.",
    ],
}
# Paraphrase-only facts about things (slots: service, day, floor, thing).
THING_FACTS = [
    [
        "The {service} service deploys every {day} afternoon.",
        "{Service} deploys happen on {day} afternoons.",
        "We deploy the {service} service each {day} afternoon.",
        "Every {day} afternoon the {service} service is deployed.",
    ],
    [
        "The {service} team's coffee machine is on the {floor} floor.",
        "The coffee machine of the {service} team is on the {floor} floor.",
        "You find the {service} team's coffee machine on the {floor} floor.",
        "The {floor} floor has the {service} team's coffee machine.",
    ],
    [
        "Database backups of the {service} service run nightly.",
        "The {service} service's database is backed up every night.",
        "Every night the {service} service's database backup runs.",
        "Nightly backups are taken of the {service} service database.",
    ],
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
FLOORS = ["second", "third", "fourth", "fifth"]

# Extra facts: kind -> (values, wordings of the predicate, token of a value). A predicate reads
# after the name ("is allergic to peanuts"); {pos} is the possessive pronoun.
ALLERGENS = ["peanuts", "shellfish", "penicillin", "sesame", "walnuts", "latex", "bee stings"]
PLACES = ["Tromsø", "Kiruna", "Bruges", "Ljubljana", "Gdańsk", "Lausanne", "Galway"]
DISLIKES = ["espresso", "cilantro", "olives", "anchovies", "licorice", "durian"]
MANAGERS = ["Nadia Sørensen", "Victor Alvarez", "Yusuf Demir", "Clara Jansen", "Igor Kovač"]
PETS = ["Biscuit", "Pixel", "Mochi", "Juniper", "Pepper"]
MONTHS = ["January", "March", "May", "July", "September", "November"]
EXTRA_KINDS: dict[str, list[str]] = {
    "allergy": ["is allergic to {v}", "has an allergy to {v}", "is allergic to {v}"],
    "phone": ["can be reached on {v}", "has the phone number {v}", "has phone number {v}"],
    "place": ["lives in {v}", "has a home in {v}", "lives in {v}"],
    "version": ["runs Postgres {v} at home", "keeps a Postgres {v} server at home"],
    "time": ["has a daily standup at {v}", "starts work at {v} every day"],
    "name": ["reports to {v}", "has {v} as manager"],
    "date": ["was born on {v}", "has a birthday on {v}"],
    "code": ["has the badge code {v}", "uses the parking code {v}"],
    "dislike": ["dislikes {v}", "cannot stand {v}", "hates {v}"],
    "pet": ["has a dog called {v}", "owns a cat named {v}"],
}


# Twins: (wording with {what} and {v}, the things, how a value is made).
TWINS = [
    ("{name}'s {what} locker code is {v}.", ["gym", "office", "bike"], "digits"),
    ("The {what} server of the {team} team is at 10.20.{v}.", ["staging", "backup"], "ip"),
    ("{name}'s {what} flight leaves at {v}.", ["outbound", "return"], "time"),
]


@dataclass
class Member:
    text: str
    fact_kind: str = ""  # the extra fact's kind ("" for none)
    fact_token: str = ""  # the extra fact's exact token (to find in a current entry)


@dataclass
class Group:
    kind: str  # paraphrase | extra | distractor
    subject: str  # the person (or the thing) the group is about
    members: list[Member] = field(default_factory=list)

    @property
    def facts(self) -> list[Member]:
        return [m for m in self.members if m.fact_token]


def _value(kind: str, rng: random.Random) -> str:
    if kind == "allergy":
        return rng.choice(ALLERGENS)
    if kind == "phone":
        return f"+47 {rng.randint(400, 999)} {rng.randint(10, 99)} {rng.randint(100, 999)}"
    if kind == "place":
        return rng.choice(PLACES)
    if kind == "version":
        return f"{rng.randint(9, 17)}.{rng.randint(1, 9)}"
    if kind == "time":
        return f"{rng.randint(7, 10)}:{rng.choice(['05', '15', '40', '50'])}"
    if kind == "name":
        return rng.choice(MANAGERS)
    if kind == "date":
        return f"{rng.randint(2, 27)} {rng.choice(MONTHS)} {rng.randint(1965, 2001)}"
    if kind == "code":
        letters = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(2))
        return f"{letters}-{rng.randint(1000, 9999)}"
    if kind == "dislike":
        return rng.choice(DISLIKES)
    return rng.choice(PETS)


def _attach(base: str, name: str, pronoun: str, predicate: str, rng: random.Random) -> str:
    """The base sentence with the extra predicate, in one of five ways (a bare ``and`` only
    after a sentence whose subject is the person)."""
    stem = base.rstrip(".")
    led = base.startswith(f"{name} ")
    how = rng.randrange(5) if led else rng.randrange(1, 5)
    if how == 0:
        return f"{stem} and {predicate}."
    if how == 1:
        return f"{stem}; {pronoun.lower()} {predicate}."
    if how == 2:
        return f"{stem}, but {pronoun.lower()} also {predicate}."
    if how == 3:
        return f"{stem}. {pronoun} {predicate}."
    return f"{stem}. {name.split()[0]} {predicate}."


def _person_slots(rng: random.Random, name: str) -> dict[str, str]:
    tool, task = rng.choice(TOOLS)
    return {
        "name": name,
        "job": rng.choice(JOBS),
        "city": rng.choice(CITIES),
        "team": rng.choice(TEAMS),
        "tool": tool,
        "task": task,
        "mode": rng.choice(MODES),
    }


def _wordings(fact: str, slots: dict[str, str], rng: random.Random, size: int) -> list[str]:
    forms = rng.sample(PERSON_FACTS[fact], size)
    return [f.format(**slots) for f in forms]


def _extra_group(
    kind: str, name: str, pronoun: str, fact: str, slots: dict[str, str], rng: random.Random
) -> Group:
    size = rng.randint(3, 5)
    group = Group(kind=kind, subject=name)
    kinds = rng.sample(sorted(EXTRA_KINDS), size - 1)
    for n, text in enumerate(_wordings(fact, slots, rng, size)):
        if n == 0:
            group.members.append(Member(text))
            continue
        extra = kinds[n - 1]
        value = _value(extra, rng)
        predicate = rng.choice(EXTRA_KINDS[extra]).format(v=value)
        group.members.append(Member(_attach(text, name, pronoun, predicate, rng), extra, value))
    rng.shuffle(group.members)
    return group


def _twin_group(n: int, rng: random.Random) -> Group:
    wording, things, how = TWINS[n % len(TWINS)]
    name = PEOPLE[(n * 5 + 3) % len(PEOPLE)][0]
    team = TEAMS[n % len(TEAMS)]
    group = Group(kind="twin", subject=name if "{name}" in wording else team)
    for what in things:
        if how == "digits":
            value = str(rng.randint(1000, 9999))
        elif how == "ip":
            value = f"{rng.randint(1, 254)}.{rng.randint(1, 254)}"
        else:
            value = f"{rng.randint(6, 21)}:{rng.choice(['05', '20', '35', '55'])}"
        text = wording.format(name=name, what=what, team=team, v=value)
        group.members.append(Member(text, "twin", value))
    return group


def groups(
    seed: int = 35, paraphrase: int = 20, extra: int = 24, distractor: int = 12, twin: int = 6
) -> list[Group]:
    """The set: ``paraphrase`` + ``extra`` + ``distractor`` + ``twin`` groups (62 by
    default)."""
    rng = random.Random(seed)
    found: list[Group] = []
    # Each (person, kind of fact) is said by one group only, so no two groups contradict.
    free = [(p, f) for p in range(len(PEOPLE)) for f in sorted(PERSON_FACTS)]
    rng.shuffle(free)

    def take(fact: str | None = None, not_person: int | None = None) -> tuple[int, str]:
        for n, (p, f) in enumerate(free):
            if (fact is None or f == fact) and p != not_person:
                return free.pop(n)
        raise ValueError("too many groups for the people and facts of the set")

    # Each thing is said once: (template, team) pairs drawn without replacement.
    things = rng.sample([(t, s) for t in range(len(THING_FACTS)) for s in TEAMS], paraphrase // 2)
    for n in range(paraphrase):
        if n % 2 == 0:
            which, service = things[n // 2]
            template = THING_FACTS[which]
            slots = {
                "service": service,
                "Service": service.capitalize(),
                "day": rng.choice(DAYS),
                "floor": rng.choice(FLOORS),
            }
            size = rng.randint(3, 4)
            texts = [t.format(**slots) for t in rng.sample(template, size)]
            subject = service
        else:
            person, fact = take()
            name = PEOPLE[person][0]
            size = rng.randint(3, 5)
            texts = _wordings(fact, _person_slots(rng, name), rng, size)
            subject = name
        found.append(Group("paraphrase", subject, [Member(t) for t in texts]))
    extras: list[tuple[int, str, dict[str, str]]] = []
    for _ in range(extra):
        person, fact = take()
        name, pronoun, _ = PEOPLE[person]
        slots = _person_slots(rng, name)
        extras.append((person, fact, slots))
        found.append(_extra_group("extra", name, pronoun, fact, slots, rng))
    for n in range(distractor):
        person, fact, slots = extras[n]
        other, _ = take(fact, not_person=person)
        name, pronoun, _ = PEOPLE[other]
        found.append(_extra_group("distractor", name, pronoun, fact, {**slots, "name": name}, rng))
    found.extend(_twin_group(n, rng) for n in range(twin))
    return found


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description="Print the seeded set, group by group.").parse_args()
    for group in groups():
        print(f"# {group.kind}: {group.subject}")
        for member in group.members:
            fact = f"   [{member.fact_kind}: {member.fact_token}]" if member.fact_token else ""
            print(f"  {member.text}{fact}")
