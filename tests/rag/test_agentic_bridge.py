"""Agentic RAG follows the bridge entity (issue 36): a question that describes an entity ("the
person who runs the Harbor Library") is asked again with the entity a round found in its place
("Jonas Lind"), and the chunk that answers it enters the sources."""

from __future__ import annotations

import json

import pytest

from rag.agentic import services as agentic
from rag.agentic.bridge import BridgeHit, find_bridge
from rag.agentic.steps import ScoredHit
from rag.graph.questions import (
    asks_only_for,
    question_description,
    question_descriptions,
    substitute,
)
from rag.search import SearchHit
from rag.tuning import TUNING
from tests.support.openai_standin import openai_standin_fixture  # noqa: F401

URL = "/api/v1/rag/agentic"
KBS = "/api/v1/rag/knowledge-bases"
QUESTION = "Where was the person who runs the Harbor Library born?"

# Document B shares no word with the question: only the hop through Jonas Lind finds it.
LIBRARY = (
    "Harbor Library",
    "The Harbor Library is run by Jonas Lind. The library lends books and sea charts to "
    "sailors and fishermen.",
)
BIRTH = ("Biography", "Jonas Lind was born in Kiruna. He moved south to study history.")
DISTRACTORS = [
    (
        "Harbor Cafe",
        "The Harbor Cafe is run by a family. Where the person who runs a harbor cafe was born "
        "matters little to the guests.",
    ),
    (
        "Library history",
        "The Harbor Library was founded in 1901. The people who run the library were born in "
        "many places.",
    ),
    (
        "Harbor Museum",
        "The Harbor Museum is run by Anna Berg. The museum shows old ships of the harbor.",
    ),
    (
        "Harbor cranes",
        "The person who runs the harbor crane lifts containers. Crane drivers are born patient.",
    ),
    ("Opening hours", "The Harbor Library opens at nine. The person at the desk runs the loans."),
    ("Kiruna", "Kiruna is a mining town in the far north. Winters there are long and dark."),
]


def upload(client, kb: int, documents, capture) -> dict[str, int]:
    ids = {}
    for title, text in documents:
        with capture(execute=True):
            made = client.post(
                f"{KBS}/{kb}/documents", {"title": title, "text": text}, format="json"
            )
        assert made.status_code == 201, made.json()
        ids[title] = made.json()["id"]
    return ids


@pytest.fixture
def corpus(agent_client, django_capture_on_commit_callbacks) -> dict[str, int]:
    client = agent_client.client
    kb = client.post(KBS, {"name": "Town", "chunk_size": 64, "chunk_overlap": 8}, format="json")
    assert kb.status_code == 201, kb.json()
    ids = upload(
        client,
        kb.json()["id"],
        [LIBRARY, BIRTH, *DISTRACTORS],
        django_capture_on_commit_callbacks,
    )
    return {**ids, "kb": kb.json()["id"]}


def ask(agent_client, **body) -> dict:
    response = agent_client.client.post(URL, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


# --- the description and the substitution (no database) ----------------------------------


@pytest.mark.parametrize(
    ("question", "described", "anchor", "wanted", "rewritten"),
    [
        (QUESTION, "the person who runs the Harbor Library", "Harbor Library", "person",
         "Where was Jonas Lind born?"),
        ("Where was the director of the Harbor Library born?",
         "the director of the Harbor Library", "Harbor Library", "person",
         "Where was Jonas Lind born?"),
        ("Where was the Harbor Library's director born?", "the Harbor Library's director",
         "Harbor Library", "person", "Where was Jonas Lind born?"),
        ("In which city is the company that Jonas Lind founded based?",
         "the company that Jonas Lind founded", "Jonas Lind", "organisation",
         "In which city is Jonas Lind based?"),
        # Nested: the inner description first.
        ("Where was the founder of the company that employs Anna Berg born?",
         "the company that employs Anna Berg", "Anna Berg", "organisation",
         "Where was the founder of Jonas Lind born?"),
        ("What is the capital of the country where Anna Berg lives?",
         "the country where Anna Berg lives", "Anna Berg", "place",
         "What is the capital of Jonas Lind?"),
        # Reduced relatives, "whoever", a relative's verb phrase, a title in apposition.
        ("Where does the coach of the club started by Anna Berg work?",
         "the club started by Anna Berg", "Anna Berg", "organisation",
         "Where does the coach of Jonas Lind work?"),
        ("Where was the person Anna Berg married born?", "the person Anna Berg married",
         "Anna Berg", "person", "Where was Jonas Lind born?"),
        ("Which town is home to whoever started Marigold Analytics?",
         "whoever started Marigold Analytics", "Marigold Analytics", "person",
         "Which town is home to Jonas Lind?"),
        ("Who coaches the club that Anna Berg is a member of?",
         "the club that Anna Berg is a member of", "Anna Berg", "organisation",
         "Who coaches Jonas Lind?"),
        ("In which city was the director of the film A Burning Bridge born?",
         "the director of the film A Burning Bridge", "A Burning Bridge", "person",
         "In which city was Jonas Lind born?"),
    ],
)  # fmt: skip
def test_the_description_of_a_question_and_its_substitution(
    question: str, described: str, anchor: str, wanted: str, rewritten: str
) -> None:
    description = question_description(question)
    assert description is not None
    assert description.text == described
    assert description.anchors == (anchor,)
    assert description.wanted == wanted
    assert substitute(question, description, "Jonas Lind") == rewritten


@pytest.mark.parametrize(
    "question",
    [
        "What did Caroline research last summer?",
        "The risk of cancer is higher in smokers.",
        "Proteins that bind DNA regulate transcription.",  # no named entity: no hop
        "the role of the immune system in sepsis",
        "How many containers does a harbour crane lift?",
    ],
)
def test_a_single_hop_question_describes_nothing(question: str) -> None:
    assert question_descriptions(question) == []


def test_the_bridge_shares_a_sentence_with_the_named_entity_and_has_the_wanted_type() -> None:
    description = question_description(QUESTION)
    assert description is not None
    hits = [
        BridgeHit(1, "The Harbor Museum is run by Anna Berg. Oslo is far away."),
        BridgeHit(2, "Opening hours of the Harbor Library, Kiruna branch. Per Holm reads."),
        BridgeHit(3, "The Harbor Library is run by Jonas Lind. It opened in 1901."),
    ]
    bridge = find_bridge(description, QUESTION, hits)
    # Anna Berg never shares a sentence with the Harbor Library; Kiruna does but is a place
    # (and the relation "run" is not in its sentence); Per Holm is in another sentence.
    assert bridge is not None and bridge.name == "Jonas Lind" and bridge.chunk_id == 3
    assert bridge.replaces == "the person who runs the Harbor Library"
    # A name already used as a bridge is never used again.
    assert find_bridge(description, QUESTION, hits[2:], earlier=["Jonas Lind"]) is None


def test_the_bridge_is_found_by_surname_pronoun_and_context_typing() -> None:
    question = "Where was the person Tobias Sandhart married born?"
    description = question_description(question)
    assert description is not None
    hits = [
        # "Brammora" shares a sentence with the surname but is a place ("resides in").
        BridgeHit(1, "Tobias Sandhart resides in Brammora. He likes boats."),
        # The surname names the anchor; the spouse follows in a sentence of its own.
        BridgeHit(2, "Sandhart met Ivrhaven in June. Mr. Sandhart married Helena Grimwick."),
    ]
    bridge = find_bridge(description, question, hits)
    assert bridge is not None and bridge.name == "Helena Grimwick"
    # A sentence opening with a pronoun continues the anchor's; the title ("A Quiet Atlas")
    # is no person, the university no person either.
    question = "Where did the person who wrote A Quiet Atlas grow up?"
    description = question_description(question)
    assert description is not None
    hits = [
        BridgeHit(3, "Aspen Books published A Quiet Atlas. It sold well at the University of Ost."),
        BridgeHit(4, "A Quiet Atlas came out in 1990. It was written by Viktor Lorby."),
        BridgeHit(5, "Dr. Lorby was born in Narstad."),
    ]
    bridge = find_bridge(description, question, hits[:2], context=[hits[2].text])
    assert bridge is not None and bridge.name == "Viktor Lorby"


def test_a_question_that_asks_for_the_bridge_itself_makes_no_hop() -> None:
    assert asks_only_for("Who is Jonas Lind?", "Jonas Lind")
    assert asks_only_for("What is the name of Jonas Lind?", "Jonas Lind")
    assert not asks_only_for("Where was Jonas Lind born?", "Jonas Lind")


# --- the rounds over HTTP ---------------------------------------------------------------------


def chunk_documents(answer: dict, key: str = "sources") -> list[int]:
    return [s["document_id"] for s in answer[key]]


@pytest.fixture
def no_hop_gate(tune):
    """Round 1 as plain hybrid search: the graph does not lead it (``rag.graph.chunks``'s hop
    gate off), so what finds the birth's chunk is the bridge alone."""
    tune("rag.staged.hybrid_hop_gate", False)


@pytest.mark.real_embeddings  # similarity by meaning (failed on the stand-in)
@pytest.mark.django_db
def test_agentic_substitutes_the_bridge_and_the_answer_enters_the_sources(
    agent_client, corpus, no_hop_gate
) -> None:
    answer = ask(agent_client, query=QUESTION, top_k=5)
    first = answer["rounds"][0]
    # Round 1 finds the library's document, not the birth's: no word of the question in it.
    assert corpus["Biography"] not in chunk_documents(first, "results")
    assert corpus["Harbor Library"] in chunk_documents(first, "results")
    assert first["bridge"]["name"] == "Jonas Lind"
    assert first["bridge"]["found_by"] == "offline"
    assert first["bridge"]["replaces"] == "the person who runs the Harbor Library"
    assert first["reformulated_query"] == "Where was Jonas Lind born?"
    assert first["reformulated_by"] == "bridge" and first["sufficient"] is False
    second = answer["rounds"][1]
    assert second["query"] == second["target"] == "Where was Jonas Lind born?"
    assert chunk_documents(second, "results")[0] == corpus["Biography"]
    # The answer enters the sources beside round 1's best, and the answer cites it.
    sources = chunk_documents(answer)
    assert corpus["Biography"] in sources and corpus["Harbor Library"] in sources
    assert "Kiruna" in answer["answer"]


@pytest.mark.django_db
def test_rrf_fusion_would_keep_the_answer_out(agent_client, corpus, tune, no_hop_gate) -> None:
    # What the fusion is for: ranked by reciprocal rank with round 1 weighing most, the
    # birth's chunk never enters the top 5.
    tune("rag.agentic.bridge_fusion", "rrf")
    answer = ask(agent_client, query=QUESTION, top_k=5)
    assert answer["rounds"][0]["bridge"]["name"] == "Jonas Lind"
    assert corpus["Biography"] not in chunk_documents(answer)


def _scored(chunk_id: int, evidence: float, round_number: int) -> ScoredHit:
    hit = SearchHit(chunk_id=chunk_id, score=evidence)
    return ScoredHit(hit, evidence, evidence, evidence, 0.0, round_number)


def test_the_lead_keeps_a_chunk_only_the_walk_found() -> None:
    # Round 1 (led by the graph) ranked chunk 2 second: the walk's find, with no word of the
    # question and so little evidence. Round 2 asked the question as the bridge resolved it.
    seen = {
        1: _scored(1, 0.9, 1), 2: _scored(2, 0.1, 1),
        3: _scored(3, 0.95, 2), 4: _scored(4, 0.8, 2), 5: _scored(5, 0.7, 2),
    }  # fmt: skip
    lists = {"round1": [(1, 0.9), (2, 0.1)], "round2": [(3, 0.95), (4, 0.8), (5, 0.7)]}
    fused = agentic._fused_sources(lists, seen, top_k=3, fusion="resolved", resolved=[3, 4, 5])
    assert [s.hit.chunk_id for s in fused] == [3, 1, 4]  # by evidence, the walk's find is out
    led = agentic._fused_sources(
        lists, seen, top_k=3, fusion="resolved", resolved=[3, 4, 5], lead=[1, 2]
    )
    assert [s.hit.chunk_id for s in led] == [3, 1, 2]  # the resolved best, then round 1's
    assert [s.ref for s in led] == [1, 2, 3]
    unbridged = agentic._fused_sources(lists, seen, top_k=2, fusion="rrf", lead=[2, 1])
    assert [s.hit.chunk_id for s in unbridged] == [2, 1]


@pytest.mark.django_db
def test_a_round_the_graph_led_leads_the_sources(agent_client, corpus) -> None:
    # With the hop gate (the default), the graph leads round 1 of this chain question: the
    # walk through Jonas Lind already ranks the birth's chunk, which has no word of the
    # question; the sources keep round 1's first results, after the resolved question's best.
    answer = ask(agent_client, query=QUESTION, top_k=5)
    first = [hit["chunk_id"] for hit in answer["rounds"][0]["results"]]
    assert corpus["Biography"] in chunk_documents(answer["rounds"][0], "results")
    sources = [s["chunk_id"] for s in answer["sources"]]
    head = sources[:1] + [c for c in first if c != sources[0]]
    assert sources == head[: len(sources)]
    assert corpus["Biography"] in chunk_documents(answer)


@pytest.mark.django_db
def test_a_single_hop_question_keeps_round_one(agent_client, corpus) -> None:
    answer = ask(agent_client, query="When did the Harbor Library open its doors?", top_k=5)
    assert all(one["bridge"] is None for one in answer["rounds"])
    assert all(one["target"] == answer["rounds"][0]["query"] for one in answer["rounds"])
    first = [hit["chunk_id"] for hit in answer["rounds"][0]["results"]]
    assert [s["chunk_id"] for s in answer["sources"]][:3] == first[:3]
    # A question whose description is its answer: the bridge is named, no hop is made.
    who = ask(agent_client, query="Who is the person who runs the Harbor Library?", top_k=5)
    assert all(one["bridge"] is None for one in who["rounds"])
    first = [hit["chunk_id"] for hit in who["rounds"][0]["results"]]
    assert [s["chunk_id"] for s in who["sources"]][:3] == first[:3]
    assert corpus["Harbor Library"] in chunk_documents(who)


@pytest.mark.django_db
def test_a_chain_round_may_search_the_graph(agent_client, corpus, tune) -> None:
    tune("rag.agentic.chain_mode", "graph")
    answer = ask(agent_client, query=QUESTION, top_k=5)
    assert answer["rounds"][0]["mode"] == "graph"
    assert answer["rounds"][1]["mode"] == TUNING.agentic.bridge_mode
    assert answer["rounds"][0]["bridge"]["name"] == "Jonas Lind"
    assert corpus["Biography"] in chunk_documents(answer)


# --- with an LLM ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_llm_names_the_bridge_in_validated_json(agent_client, corpus, llm) -> None:
    llm.reply_with(
        json.dumps({"query": "Where was Jonas Lind born?", "bridge": "Jonas Lind"}),
        "Jonas Lind runs it [1] and was born in Kiruna [2].",
    )
    answer = ask(agent_client, query=QUESTION, top_k=5, max_rounds=2)
    first = answer["rounds"][0]
    assert first["bridge"] == {
        "name": "Jonas Lind",
        "entity_type": "person",
        "replaces": "the person who runs the Harbor Library",
        "chunk_id": first["bridge"]["chunk_id"],
        "found_by": "llm",
    }
    assert first["reformulated_by"] == "llm"
    assert answer["rounds"][1]["target"] == "Where was Jonas Lind born?"
    assert corpus["Biography"] in chunk_documents(answer)
    prompt = llm.requests_to("/v1/chat/completions")[0].body["messages"][-1]["content"]
    assert QUESTION in prompt and '"bridge"' in prompt and "Harbor Library" in prompt


@pytest.mark.django_db
def test_an_invented_bridge_is_not_followed(agent_client, corpus, llm) -> None:
    # The model names an entity no passage it was shown names: its query is an ordinary
    # reformulation, no bridge; the sources stay round 1's fusion.
    llm.reply_with(
        json.dumps({"query": "Harbor Library manager birthplace", "bridge": "Zed Zulu"}),
        "An answer [1].",
    )
    answer = ask(agent_client, query=QUESTION, top_k=5, max_rounds=2)
    assert answer["rounds"][0]["bridge"] is None
    assert answer["rounds"][0]["reformulated_query"] == "Harbor Library manager birthplace"
    assert answer["rounds"][1]["target"] == QUESTION


@pytest.mark.django_db
def test_invalid_llm_json_falls_back_to_the_offline_bridge(agent_client, corpus, llm) -> None:
    llm.reply_with("not json", "still not json", "An answer [1].")
    answer = ask(agent_client, query=QUESTION, top_k=5, max_rounds=2)
    first = answer["rounds"][0]
    assert first["bridge"]["name"] == "Jonas Lind" and first["bridge"]["found_by"] == "offline"
    assert first["reformulated_query"] == "Where was Jonas Lind born?"
    assert corpus["Biography"] in chunk_documents(answer)


# --- tenancy --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_intruders_documents_and_graph_never_make_a_bridge(
    agent_client, other_agent_client, django_capture_on_commit_callbacks
) -> None:
    # The intruder owns the library's document and a graph naming its runner; ours holds only
    # the birth of someone else. No bridge may come from the intruder's account.
    intruder = other_agent_client.client
    theirs = intruder.post(KBS, {"name": "Secret"}, format="json").json()["id"]
    upload(
        intruder,
        theirs,
        [("Secret library", "The Harbor Library is run by Eve Intruder. Eve Intruder hides.")],
        django_capture_on_commit_callbacks,
    )
    client = agent_client.client
    mine = client.post(KBS, {"name": "Mine"}, format="json").json()["id"]
    upload(
        client,
        mine,
        [
            ("Library", "The Harbor Library lends books to the people who run the port."),
            ("Birth", "Eve Intruder was born in Kiruna."),
        ],
        django_capture_on_commit_callbacks,
    )
    answer = ask(agent_client, query=QUESTION, top_k=5)
    assert all(one["bridge"] is None for one in answer["rounds"])
    assert "Eve Intruder" not in " ".join(one["query"] for one in answer["rounds"])
    assert {s["knowledge_base_id"] for s in answer["sources"]} <= {mine}
