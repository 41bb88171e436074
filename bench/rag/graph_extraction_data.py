"""Hand-labelled documents for the offline entity and relation extractor
(``bench/rag/graph_extraction.py``): each document's chunks, the named entities it mentions with
their types, and the relations it states (subject, relation, object; symmetric relations in
either order). Written by hand for this benchmark; names, places and relations are invented.

``DEV`` is what the extractor was developed against. ``HELD_OUT`` was written before the
extractor was first run on it; its first figures were recorded, then the extractor was
improved on its mistakes (so it is a second dev set now). ``HELD_OUT_2`` was written after
that and never tuned on: its figures are the honest ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Labelled:
    chunks: tuple[str, ...]
    entities: dict[str, str]  # name -> person, place, organisation, term
    relations: frozenset[tuple[str, str, str]] = field(default_factory=frozenset)


def doc(chunks: str | tuple[str, ...], entities: dict[str, str], *rels: str) -> Labelled:
    """``rels``: "Subject | relation | Object"."""
    parsed = frozenset(tuple(part.strip() for part in r.split("|")) for r in rels)
    return Labelled(
        (chunks,) if isinstance(chunks, str) else chunks,
        entities,
        parsed,  # type: ignore[arg-type]
    )


P, L, G, T = "person", "place", "organisation", "term"  # G: an organisation

DEV: tuple[Labelled, ...] = (
    doc(
        (
            "The Harbor Library is run by Jonas Lind. Lind was born in Kiruna.",
            "She grew up in Lulea. Dr. Lind later moved to Oslo.",
        ),
        {"Harbor Library": G, "Jonas Lind": P, "Kiruna": L, "Lulea": L, "Oslo": L},
        "Jonas Lind | leads | Harbor Library",
        "Jonas Lind | born_in | Kiruna",
        "Jonas Lind | grew_up_in | Lulea",
        "Jonas Lind | moved_to | Oslo",
    ),
    doc(
        "Anna Berg founded Nordic Freight in 1998. The company is based in Gothenburg. "
        "Nordic Freight sponsors the Harbor Library.",
        {"Anna Berg": P, "Nordic Freight": G, "Gothenburg": L, "Harbor Library": G},
        "Anna Berg | founded | Nordic Freight",
        "Nordic Freight | located_in | Gothenburg",
        "Nordic Freight | funds | Harbor Library",
    ),
    doc(
        "Oslo is the capital of Norway. Jonas Lind, the director of the Harbor Library, is "
        "married to Eva Lind.",
        {"Oslo": L, "Norway": L, "Jonas Lind": P, "Harbor Library": G, "Eva Lind": P},
        "Oslo | capital_of | Norway",
        "Jonas Lind | leads | Harbor Library",
        "Jonas Lind | married_to | Eva Lind",
    ),
    doc(
        "The director of the Museum of Light is Clara Holm. Holm studied at Uppsala "
        "University. Clara Holm does not work at Volvo.",
        {"Museum of Light": G, "Clara Holm": P, "Uppsala University": G, "Volvo": G},
        "Clara Holm | leads | Museum of Light",
        "Clara Holm | studied_at | Uppsala University",
    ),
    doc(
        "Peter Smith and Anna Berg live in Bergen. The Bergen Choir was founded by Peter Smith.",
        {"Peter Smith": P, "Anna Berg": P, "Bergen": L, "Bergen Choir": G},
        "Peter Smith | lives_in | Bergen",
        "Anna Berg | lives_in | Bergen",
        "Peter Smith | founded | Bergen Choir",
    ),
)

HELD_OUT: tuple[Labelled, ...] = (
    doc(
        "Tomas Ekberg coaches the Malmo Rowing Club. He was raised in Visby and studied at "
        "Lund University.",
        {"Tomas Ekberg": P, "Malmo Rowing Club": G, "Visby": L, "Lund University": G},
        "Tomas Ekberg | leads | Malmo Rowing Club",
        "Tomas Ekberg | grew_up_in | Visby",
        "Tomas Ekberg | studied_at | Lund University",
    ),
    doc(
        (
            "Greta Sandvik works for Polar Instruments, a firm headquartered in Tromso.",
            "Sandvik previously worked at the Arctic Survey Institute. Prof. Sandvik is married "
            "to Henrik Aas.",
        ),
        {
            "Greta Sandvik": P,
            "Polar Instruments": G,
            "Tromso": L,
            "Arctic Survey Institute": G,
            "Henrik Aas": P,
        },
        "Greta Sandvik | works_at | Polar Instruments",
        "Polar Instruments | located_in | Tromso",
        "Greta Sandvik | works_at | Arctic Survey Institute",
        "Greta Sandvik | married_to | Henrik Aas",
    ),
    doc(
        "The Blue Finch Cafe is owned by Marta Kovac. Kovac opened a second cafe in Zagreb "
        "last spring. Her brother, Ivan Kovac, manages the Zagreb branch.",
        {"Blue Finch Cafe": G, "Marta Kovac": P, "Zagreb": L, "Ivan Kovac": P},
        "Marta Kovac | owns | Blue Finch Cafe",
        "Ivan Kovac | sibling_of | Marta Kovac",
    ),
    doc(
        "Rafael Ortiz was born in Valencia. He founded Ortiz Robotics with Lucia Perez. "
        "The company employs forty engineers in Madrid.",
        {"Rafael Ortiz": P, "Valencia": L, "Ortiz Robotics": G, "Lucia Perez": P, "Madrid": L},
        "Rafael Ortiz | born_in | Valencia",
        "Rafael Ortiz | founded | Ortiz Robotics",
        "Lucia Perez | founded | Ortiz Robotics",
    ),
    doc(
        "Kenji Mori is a researcher at the Kyoto Institute of Technology. Mori collaborates "
        "with Aiko Tanaka on the HX-7 project. Tanaka lives in Osaka.",
        {
            "Kenji Mori": P,
            "Kyoto Institute of Technology": G,
            "Aiko Tanaka": P,
            "HX-7": T,
            "Osaka": L,
        },
        "Kenji Mori | works_at | Kyoto Institute of Technology",
        "Aiko Tanaka | lives_in | Osaka",
        "Kenji Mori | colleague_of | Aiko Tanaka",
    ),
    doc(
        "The Linden Quartet was formed in Leipzig. Its cellist, Sofie Brandt, teaches at the "
        "Leipzig Conservatory. Brandt is a member of the Saxon Music Society.",
        {
            "Linden Quartet": G,
            "Leipzig": L,
            "Sofie Brandt": P,
            "Leipzig Conservatory": G,
            "Saxon Music Society": G,
        },
        "Sofie Brandt | member_of | Saxon Music Society",
        "Sofie Brandt | member_of | Linden Quartet",
        "Sofie Brandt | works_at | Leipzig Conservatory",
        "Linden Quartet | formed_in | Leipzig",
    ),
    doc(
        "Amara Okafor heads the Lagos Water Board. Before that she worked for the World Bank. "
        "Okafor grew up in Enugu.",
        {"Amara Okafor": P, "Lagos Water Board": G, "World Bank": G, "Enugu": L},
        "Amara Okafor | leads | Lagos Water Board",
        "Amara Okafor | works_at | World Bank",
        "Amara Okafor | grew_up_in | Enugu",
    ),
    doc(
        "Northwind Press published the novel in 2004. Northwind Press is part of Meridian "
        "Media, which was acquired by Halcyon Group.",
        {"Northwind Press": G, "Meridian Media": G, "Halcyon Group": G},
        "Northwind Press | part_of | Meridian Media",
        "Halcyon Group | owns | Meridian Media",
    ),
    doc(
        "Liam Byrne and Niamh Walsh met at Trinity College. Walsh is now the principal of "
        "St Brigid School in Galway.",
        {
            "Liam Byrne": P,
            "Niamh Walsh": P,
            "Trinity College": G,
            "St Brigid School": G,
            "Galway": L,
        },
        "Niamh Walsh | leads | St Brigid School",
        "St Brigid School | located_in | Galway",
    ),
    doc(
        "Caroline went to an LGBTQ support group yesterday. Melanie said she is proud of her. "
        "Caroline moved from Sweden four years ago.",
        {"Caroline": P, "LGBTQ": T, "Melanie": P, "Sweden": L},
        "Caroline | moves_from | Sweden",
    ),
)

HELD_OUT_2: tuple[Labelled, ...] = (
    doc(
        (
            "Dr. Ingrid Falk chairs the Baltic Ocean Council. Falk grew up in Riga.",
            "The council is headquartered in Tallinn. Falk's deputy is Mikael Roos.",
        ),
        {"Ingrid Falk": P, "Baltic Ocean Council": G, "Riga": L, "Tallinn": L, "Mikael Roos": P},
        "Ingrid Falk | leads | Baltic Ocean Council",
        "Ingrid Falk | grew_up_in | Riga",
        "Baltic Ocean Council | located_in | Tallinn",
    ),
    doc(
        "Oren Shapiro, who was born in Haifa, is the chief engineer at Delta Turbines. "
        "Delta Turbines was acquired by Corvid Holdings in 2019.",
        {"Oren Shapiro": P, "Haifa": L, "Delta Turbines": G, "Corvid Holdings": G},
        "Oren Shapiro | born_in | Haifa",
        "Oren Shapiro | works_at | Delta Turbines",
        "Corvid Holdings | owns | Delta Turbines",
    ),
    doc(
        "Priya Raman teaches chemistry at Hillcrest Academy. She is married to Arjun Mehta, "
        "who runs a bakery in Pune.",
        {"Priya Raman": P, "Hillcrest Academy": G, "Arjun Mehta": P, "Pune": L},
        "Priya Raman | works_at | Hillcrest Academy",
        "Priya Raman | married_to | Arjun Mehta",
    ),
    doc(
        "The Copper Kettle was opened by Hana Novak in Brno. Novak previously cooked at Hotel "
        "Central in Prague.",
        {"Copper Kettle": G, "Hana Novak": P, "Brno": L, "Hotel Central": G, "Prague": L},
        "Hana Novak | founded | Copper Kettle",
        "Hana Novak | works_at | Hotel Central",
        "Hotel Central | located_in | Prague",
    ),
    doc(
        "Sami Haddad plays for Beirut Lions. The club is owned by Nadia Khoury. Khoury studied "
        "at the American University of Beirut.",
        {
            "Sami Haddad": P,
            "Beirut Lions": G,
            "Nadia Khoury": P,
            "American University of Beirut": G,
        },
        "Sami Haddad | member_of | Beirut Lions",
        "Nadia Khoury | owns | Beirut Lions",
        "Nadia Khoury | studied_at | American University of Beirut",
    ),
    doc(
        "Vega Analytics, a startup based in Lisbon, was founded by Tiago Costa and Ines Lopes. "
        "Costa is the son of Rui Costa.",
        {"Vega Analytics": G, "Lisbon": L, "Tiago Costa": P, "Ines Lopes": P, "Rui Costa": P},
        "Vega Analytics | located_in | Lisbon",
        "Tiago Costa | founded | Vega Analytics",
        "Ines Lopes | founded | Vega Analytics",
        "Tiago Costa | child_of | Rui Costa",
    ),
    doc(
        "Mount Kessel lies in the Varden Range. The mountain was first climbed by Ola Nygaard, "
        "a guide from Bodo.",
        {"Mount Kessel": L, "Varden Range": L, "Ola Nygaard": P, "Bodo": L},
        "Mount Kessel | located_in | Varden Range",
        "Ola Nygaard | climbs | Mount Kessel",
        "Ola Nygaard | comes_from | Bodo",
    ),
    doc(
        "Elena Petrova manages the Sofia office of Kestrel Bank. Her colleague Dimitar Ivanov "
        "lives in Plovdiv.",
        {"Elena Petrova": P, "Sofia": L, "Kestrel Bank": G, "Dimitar Ivanov": P, "Plovdiv": L},
        "Dimitar Ivanov | lives_in | Plovdiv",
        "Dimitar Ivanov | colleague_of | Elena Petrova",
    ),
)
