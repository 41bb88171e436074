"""Relations, typing, aliases and pronouns of the graph built from text (issue 36, item 2):
the offline extractor on sentences written for these tests, the edges and aliases the indexing
service makes of them, and the LLM's triples through the stand-in server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from core.actors import Actor
from rag.graph.entities import document_entities, text_entities
from rag.graph.entities_llm import entity_type_of, relation_of
from rag.graph.names import name_key
from rag.graph.services.index import COOCCURS
from rag.models import Document, GraphEdge, GraphMention, GraphNode, GraphRelationMention
from rag.spaces import CHUNKS
from tests.support.openai_standin import OpenAIStandIn


def triples(text: str | list[str]) -> set[tuple[str, str, str]]:
    units = document_entities([text] if isinstance(text, str) else text)
    return {(r.source, r.relation_type, r.target) for unit in units for r in unit.relations}


def types(text: str | list[str]) -> dict[str, str]:
    units = document_entities([text] if isinstance(text, str) else text)
    return {e.name: e.entity_type for unit in units for e in unit.entities}


# --- the offline extractor, no database ---------------------------------------------------


@pytest.mark.parametrize(
    "sentence",
    [
        "Dagny Holt runs the Quarry Theatre.",  # active
        "The Quarry Theatre is run by Dagny Holt.",  # passive
        "The Quarry Theatre is managed by Dagny Holt.",  # another verb, passive
        "Dagny Holt is the director of the Quarry Theatre.",  # role noun
        "The director of the Quarry Theatre is Dagny Holt.",  # role before the names
        "The Quarry Theatre's director is Dagny Holt.",  # possessive role
        "Dagny Holt, the artistic director of the Quarry Theatre, left early.",  # apposition
        "Dagny Holt, who heads the Quarry Theatre, left early.",  # relative clause
        "In 2019 Dagny Holt became the new director of the Quarry Theatre.",
        "Dagny Holt has served as head of the Quarry Theatre since 2001.",
    ],
)
def test_every_voice_of_a_relation_makes_one_directed_edge(sentence: str) -> None:
    found = triples(sentence)
    assert ("Dagny Holt", "leads", "Quarry Theatre") in found, found


def test_canonical_relations_of_people_places_and_organisations() -> None:
    text = (
        "Orla Fenn was born in Cobh. She grew up in Tralee and studied at Galway University. "
        "Fenn works for Atlantic Kelp Labs, which is headquartered in Sligo. Orla Fenn is "
        "married to Cian Rua. Atlantic Kelp Labs was founded by Cian Rua."
    )
    found = triples(text)
    assert {
        ("Orla Fenn", "born_in", "Cobh"),
        ("Orla Fenn", "grew_up_in", "Tralee"),
        ("Orla Fenn", "studied_at", "Galway University"),
        ("Orla Fenn", "works_at", "Atlantic Kelp Labs"),
        ("Atlantic Kelp Labs", "located_in", "Sligo"),
        ("Cian Rua", "married_to", "Orla Fenn"),  # symmetric: one edge, ends in name order
        ("Cian Rua", "founded", "Atlantic Kelp Labs"),
    } <= found, found


def test_the_generic_fallback_names_a_relation_by_its_verb_both_ways() -> None:
    active = triples("Brine Foods caters the Ostra Festival.")
    passive = triples("The Ostra Festival is catered by Brine Foods.")
    assert active == passive == {("Brine Foods", "caters", "Ostra Festival")}
    assert triples("Tove Marsh was buried in Skagen.") == {("Tove Marsh", "buried_in", "Skagen")}
    assert ("Tove Marsh", "born_in", "Skagen") in triples("Tove Marsh's birthplace is Skagen.")
    assert ("Rovaniemi", "capital_of", "Lapland") in triples(
        "Nils Aho says Rovaniemi is the capital of Lapland."
    )


@pytest.mark.parametrize(
    "sentence",
    [
        "Dagny Holt and Ivo Sand visited the museum.",  # a conjunction
        "Dagny Holt does not run the Quarry Theatre.",  # a negation
        "Dagny Holt never worked at the Quarry Theatre.",
        "Dagny Holt met the whole cast of the Quarry Theatre after the show.",  # too far apart
    ],
)
def test_no_relation_leaves_co_occurrence_only(sentence: str) -> None:
    found = text_entities(sentence)
    assert found.relations == []
    assert {"Dagny Holt"} <= {e.name for e in found.entities}


def test_a_person_after_by_is_a_person_and_slots_type_the_ends() -> None:
    found = types(
        "The Harbor Library is run by Jonas Lind. The Vessel Prize was set up by Mira Tal. "
        "Jonas Lind was born in Vasa. Mira Tal works at Keel."
    )
    assert found["Jonas Lind"] == "person" and found["Mira Tal"] == "person"
    assert found["Harbor Library"] == "organisation"
    assert found["Vasa"] == "place"  # born_in's object
    assert found["Keel"] == "organisation"  # works_at's object
    assert types("Prof. Keel was late.")["Keel"] == "person"  # a title


def test_surnames_and_titles_join_the_full_name_across_chunks() -> None:
    units = document_entities(
        [
            "The Harbor Library is run by Jonas Lind.",
            "Lind was born in Kiruna. Dr. Lind later moved to Umea.",
        ]
    )
    second = units[1]
    assert {e.name for e in second.entities} >= {"Jonas Lind", "Kiruna", "Umea"}
    assert "Lind" not in {e.name for e in second.entities}
    lind = next(e for e in second.entities if e.name == "Jonas Lind")
    assert {name_key(a) for a in lind.aliases} == {"lind", "dr lind"}
    assert {(r.source, r.relation_type, r.target) for r in second.relations} == {
        ("Jonas Lind", "born_in", "Kiruna"),
        ("Jonas Lind", "moved_to", "Umea"),
    }
    # Two people of one surname: a lone surname joins neither.
    both = document_entities(["Eva Lind met Jonas Lind.", "Lind was born in Kiruna."])
    assert "Lind" in {e.name for e in both[1].entities}
    assert not any(e.aliases for unit in both for e in unit.entities)


def test_a_pronoun_subject_takes_the_last_compatible_name() -> None:
    found = triples(
        "Marit Vik works at the Tidal Institute. She was born in Hammerfest. "
        "The institute is located in Bodo."
    )
    assert ("Marit Vik", "born_in", "Hammerfest") in found
    assert ("Tidal Institute", "located_in", "Bodo") in found
    # The subject of the previous sentence, not its last name.
    assert ("Ada Krog", "born_in", "Alta") in triples(
        "Ada Krog worked with Per Lunde at the Tidal Institute. She was born in Alta."
    )
    # A pronoun the unit resolves is a mention of its entity in that unit.
    units = document_entities(["Marit Vik works at the Tidal Institute.", "She was born in Alta."])
    assert "Marit Vik" in {e.name for e in units[1].entities}
    # Conversations: a pronoun stands for a name of its own message only.
    alone = document_entities(
        ["Marit Vik works at the Tidal Institute.", "She was born in Alta."],
        pronouns_across_units=False,
    )
    assert "Marit Vik" not in {e.name for e in alone[1].entities}


def test_no_entity_adds_a_verb_to_a_name() -> None:
    texts = [
        "Jonas Lind was born in Kiruna. Lind runs the Harbor Library. Lind sponsors chess.",
        "Greta Sandvik works for Polar Instruments. Amara Okafor heads the water board.",
    ]
    names = [e.name.lower() for unit in document_entities(texts) for e in unit.entities]
    verbs = {"was", "runs", "sponsors", "works", "heads", "born"}
    assert names and not [n for n in names if len(n.split()) > 1 and set(n.split()) & verbs]


# --- the indexing service: edges, aliases on nodes, re-indexing -----------------------------


FILLER = " ".join(
    f"The reading room holds {n} shelves of maritime charts and tide tables." for n in range(8)
)


@pytest.mark.django_db
def test_ingestion_types_edges_and_joins_aliases_across_chunks(
    actor: Actor, ingest: Callable[..., Document]
) -> None:
    document = ingest(
        f"The Harbor Library is run by Jonas Lind. {FILLER}\n\n"
        f"Lind was born in Kiruna. She grew up in Lulea. {FILLER}\n\nLind sails."
    )
    chunks = list(document.chunks.order_by("position").values_list("id", "text"))
    assert len(chunks) >= 3  # the names are in different chunks
    lind = GraphNode.objects.get(name_key="jonas lind")
    assert lind.entity_type == "person"
    assert "lind" in lind.alias_keys and "Lind" in lind.aliases
    assert not GraphNode.objects.filter(name_key="lind").exists()
    born = next(chunk_id for chunk_id, text in chunks if "born in Kiruna" in text)
    assert GraphMention.objects.filter(node=lind, space=CHUNKS.name, unit_id=born).exists()
    edges = {
        (e.source.name, e.relation_type, e.target.name): e
        for e in GraphEdge.objects.exclude(relation_type=COOCCURS).select_related(
            "source", "target"
        )
    }
    assert {
        ("Jonas Lind", "leads", "Harbor Library"),
        ("Jonas Lind", "born_in", "Kiruna"),
        ("Jonas Lind", "grew_up_in", "Lulea"),
    } <= set(edges)
    edge = edges[("Jonas Lind", "born_in", "Kiruna")]
    assert edge.weight == 1.0 and edge.metadata["extracted_from"] == "offline"
    assert GraphRelationMention.objects.filter(edge=edge, unit_id=born).exists()
    assert GraphEdge.objects.filter(relation_type=COOCCURS).exists()  # still the fallback


@pytest.mark.django_db
def test_reindexing_or_deleting_a_unit_takes_its_relations_back(
    actor: Actor, ingest: Callable[..., Document]
) -> None:
    from rag import services
    from rag.graph.services.build import units_index
    from rag.graph.services.index import mentions_forget

    first = ingest("Sol Brekke founded the Fjord Kayak Club. Sol Brekke lives in Voss.")
    second = ingest("Sol Brekke founded the Fjord Kayak Club in spring.", title="again")

    def founded() -> float | None:
        """The weight of the "founded" edge (None: no such edge)."""
        edge = GraphEdge.objects.filter(relation_type="founded").first()
        return None if edge is None else edge.weight

    assert founded() == 2.0  # two units state it
    assert GraphEdge.objects.filter(relation_type="lives_in").count() == 1
    chunk = first.chunks.get()
    # The unit now says something else: its relations are taken back, the other unit's kept.
    units_index(
        account_id=first.account_id,
        space=CHUNKS,
        units=[(chunk.pk, chunk.knowledge_base_id, "Sol Brekke paints boats in Voss.")],
    )
    assert not GraphEdge.objects.filter(relation_type="lives_in").exists()
    assert founded() == 1.0
    # The last unit stating it is deleted: the edge goes with it; co_occurs edges stay derived.
    services.document_delete(actor=actor, document=second)
    mentions_forget(space=CHUNKS, scope_ids=[second.knowledge_base_id])
    assert founded() is None
    assert not GraphRelationMention.objects.filter(edge__relation_type="founded").exists()


@pytest.mark.django_db
def test_an_edge_written_through_the_api_is_never_taken_back(
    actor: Actor, ingest: Callable[..., Document]
) -> None:
    from rag.graph.services import nodes as graph_services
    from rag.graph.services.build import units_index

    document = ingest("Sol Brekke founded the Fjord Kayak Club.")
    made = GraphEdge.objects.get(relation_type="founded")
    GraphEdge.objects.filter(pk=made.pk).delete()
    explicit = graph_services.edge_create(
        actor=actor,
        source_id=made.source_id,
        target_id=made.target_id,
        relation_type="founded",
        weight=0.7,
    )
    chunk = document.chunks.get()
    units_index(
        account_id=document.account_id,
        space=CHUNKS,
        units=[(chunk.pk, chunk.knowledge_base_id, "Sol Brekke founded the Fjord Kayak Club.")],
    )
    units_index(
        account_id=document.account_id,
        space=CHUNKS,
        units=[(chunk.pk, chunk.knowledge_base_id, "Sol Brekke likes rain.")],
    )
    explicit.refresh_from_db()
    assert explicit.weight == 0.7


@pytest.mark.django_db
def test_a_later_document_adds_aliases_to_an_existing_node(
    actor: Actor, ingest: Callable[..., Document]
) -> None:
    ingest("Jonas Lind opened the harbour archive.", title="one")
    node = GraphNode.objects.get(name_key="jonas lind")
    assert node.aliases == []
    ingest("Jonas Lind was born in Kiruna. Prof. Lind studied at Umea University.", title="two")
    node.refresh_from_db()
    assert {"lind", "prof lind"} <= set(node.alias_keys)
    assert {"Lind", "Prof. Lind"} <= set(node.aliases)
    # Found by its new alias: the node's keyword index holds it.
    from rag.graph.nodes import node_search

    hits = node_search(actor=actor, query="Prof. Lind", mode="keyword")
    assert hits and hits[0].node.pk == node.pk


# --- the LLM's triples through the stand-in -------------------------------------------------


def test_llm_types_and_relations_are_normalised() -> None:
    assert entity_type_of("Organization") == "organisation"
    assert entity_type_of("LOCATION") == "place" and entity_type_of("emotion") == "concept"
    made = relation_of("Harbor Library", "run by", "Jonas Lind")
    assert made is not None
    assert (made.source, made.relation_type, made.target) == (
        "Jonas Lind",
        "leads",
        "Harbor Library",
    )
    assert relation_of("X", "Located_In", "Y").relation_type == "located_in"  # type: ignore[union-attr]
    assert relation_of("X", "mentors closely", "Y").relation_type == "mentors_closely"  # type: ignore[union-attr]
    assert relation_of("X", "knows", "x") is None  # itself


@pytest.mark.django_db
def test_llm_triples_become_typed_edges_through_the_stand_in(
    actor: Actor, ingest: Callable[..., Document], llm: OpenAIStandIn, settings: Any
) -> None:
    from rag.graph.services.build import documents_graph_index

    settings.RAG_GRAPH_EXTRACTION = False
    document = ingest("The Harbor Library is run by Jonas Lind, born in Kiruna.")
    llm.reply_with(
        json.dumps(
            {
                "entities": [
                    {"name": "Harbor Library", "type": "Organization", "passages": [1]},
                    {"name": "Jonas Lind", "type": "person", "aliases": ["Lind"],
                     "passages": [1]},
                ],
                "relations": [
                    {"source": "Harbor Library", "type": "run by", "target": "Lind",
                     "passages": [1]},
                    {"source": "Jonas Lind", "type": "born in", "target": "Kiruna",
                     "passages": [1]},
                    {"source": "Jonas Lind", "type": "studied_at", "target": "Umea",
                     "passages": []},
                    {"source": "Jonas Lind", "type": "", "target": "Kiruna", "passages": [1]},
                ],
            }
        )
    )  # fmt: skip
    documents_graph_index(document_ids=[document.pk])
    library = GraphNode.objects.get(name_key="harbor library")
    assert library.entity_type == "organisation"
    lind = GraphNode.objects.get(name_key="jonas lind")
    # "run by" to the alias "Lind": Lind leads the library, one edge.
    assert GraphEdge.objects.filter(source=lind, target=library, relation_type="leads").exists()
    # Kiruna was never listed as an entity: the relation makes it one of its passage.
    kiruna = GraphNode.objects.get(name_key="kiruna")
    assert GraphMention.objects.filter(node=kiruna).exists()
    assert GraphEdge.objects.filter(source=lind, target=kiruna, relation_type="born_in").exists()
    # No passage names both ends of the third; the fourth has no type: both dropped alone.
    assert not GraphNode.objects.filter(name_key="umea").exists()
    assert set(
        GraphEdge.objects.exclude(relation_type=COOCCURS).values_list("relation_type", flat=True)
    ) == {"leads", "born_in"}
    request = llm.requests[-1]
    assert request.path.endswith("/chat/completions")
    # A reply that does not hold: the offline extractor, which finds the same relation.
    GraphEdge.objects.exclude(relation_type=COOCCURS).delete()
    llm.reply_with("not json")
    documents_graph_index(document_ids=[document.pk])
    lind = GraphNode.objects.get(name_key="jonas lind")
    assert GraphEdge.objects.filter(
        source=lind, target__name_key="harbor library", relation_type="leads"
    ).exists()
    assert GraphEdge.objects.filter(
        source=lind, target__name_key="kiruna", relation_type="born_in"
    ).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("surname_first", [False, True])
def test_a_document_naming_only_the_surname_joins_the_full_name_of_another(
    ingest: Callable[..., Document], surname_first: bool
) -> None:
    """Whatever the order the documents are indexed in, "Dr. Eckner" in one document and
    "Daria Eckner" (with "Eckner" in the same document) in another are one node."""
    full = "Daria Eckner was raised in Broora. Eckner was born in Tulbridge."
    alone = "Dr. Eckner lives in Tulbridge."
    for number, text in enumerate([alone, full] if surname_first else [full, alone]):
        ingest(text, title=f"doc {number}")
    people = GraphNode.objects.filter(entity_type="person")
    assert people.count() == 1, list(people.values_list("name", "aliases"))
    node = people.get()
    assert {"daria eckner", "eckner", "dr eckner"} <= {node.name_key, *node.alias_keys}
    assert GraphMention.objects.filter(node=node).count() == 2  # both documents' chunks
    assert GraphEdge.objects.filter(source=node, relation_type="lives_in").exists()


@pytest.mark.django_db
def test_two_full_names_sharing_a_surname_stay_two_nodes(
    ingest: Callable[..., Document],
) -> None:
    ingest("Marie Curie was born in Warsaw. Curie studied at the Flying University.", title="a")
    ingest("Pierre Curie was born in Paris. Curie taught at the Sorbonne.", title="b")
    marie = GraphNode.objects.get(name_key="marie curie")
    pierre = GraphNode.objects.get(name_key="pierre curie")
    assert marie.pk != pierre.pk
    assert GraphEdge.objects.filter(source=pierre, target__name_key="paris").exists()
    assert not GraphEdge.objects.filter(source=marie, target__name_key="paris").exists()
