"""Derived data keeps the visibility of its source (issue 35, item 2; docs/architecture.md,
rule 11): what a private conversation taught (extracted facts, entities, relations, mentions,
co-occurrences, the names in community summaries) is visible only to those who may read the
conversation: its owner and its grantees.

The world: an account with an owner agent whose private conversation was extracted (facts,
entities, a relation, messages linked to the graph, communities computed) next to a public
document, a grantee with a read grant on that conversation, a stranger of the same account
with no grant (and data of its own), and an intruder account with data of every kind of its
own. Every door (REST and MCP) is walked: the stranger sees nothing of the conversation (not
the item, not the node, not the name inside a summary, not in its context), the owner and the
grantee do, and nobody sees the intruder's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from rest_framework.test import APIClient

from core import services
from core.actors import actor_for_account, actor_for_agent, actor_for_user
from core.models import Account, Agent
from memory.conversations import services as conversation_services
from memory.conversations.extraction import services as extraction_services
from memory.long_term import services as ltm_services
from memory.long_term.services.graph_links import context_graph_index
from memory.models import Conversation, KnowledgeItem
from rag import services as rag_services
from rag.graph.names import name_key
from rag.graph.services.communities import communities_compute
from rag.models import Document, GraphEdge, GraphMention, GraphNode
from tests.factories import AccountFactory, UserFactory
from tests.support.mcp import tool_call

pytestmark = pytest.mark.django_db

# Names only the private conversation says (the stranger must never read them), and the
# intruder's.
PRIVATE = ("zephyrine", "quixotown", "blorptech")
FOREIGN = ("ulvaretta", "grimsholm", "snorvik")
FACT_KEY = "zephyrine.moved_to"


@dataclass
class Caller:
    agent: Agent
    secret: str
    client: APIClient

    def get(self, path: str) -> Any:
        return self.client.get(f"/api/v1/{path}")

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.client.post(f"/api/v1/{path}", body, format="json")

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return tool_call(self.secret, name, arguments)


@dataclass
class World:
    account: Account
    owner: Caller
    grantee: Caller
    stranger: Caller
    intruder: Caller
    conversation: Conversation
    person: Any  # the private conversation's entity node
    place: Any  # where it moved to
    lisbon: Any  # a node a public document and the conversation both mention
    private_edge: GraphEdge


def _caller(account: Account, name: str) -> Caller:
    tool = actor_for_account(account.pk)
    agent = services.agent_create(actor=tool, account=account, name=name)
    _, secret = services.api_key_create(actor=tool, agent=agent, scopes=("read", "write"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return Caller(agent, secret, client)


def _account(
    capture: Callable[..., Any], *, city: str, coast: str, names: tuple[str, str, str]
) -> tuple[Account, Caller, Conversation]:
    """An account with public documents about ``city`` and ``coast`` and an owner agent whose
    private conversation (a person, the place they moved to, their employer: ``names``) was
    extracted and linked to the graph; only the conversation joins the city to the coast."""
    person, place, employer = (n.capitalize() for n in names)
    account = AccountFactory.create()
    tool = actor_for_account(account.pk)
    owner = _caller(account, "owner")
    kb = rag_services.knowledge_base_create(actor=tool, name="Handbook")
    texts = {
        "travel": f"# Travel\n\n{city} is the capital of Portugal. Ferries leave {city} for "
        f"Porto every morning, and {city} has trams.",
        # Nothing public joins this town to the city: only the conversation does.
        "beaches": f"# Beaches\n\nThe marina of {coast} has long beaches.",
    }
    for name, text in texts.items():
        with capture(execute=True):
            document = rag_services.document_create(
                actor=tool, kb=kb, data=text.encode(), filename=f"{name}.md", title=name
            )
        document.refresh_from_db()
        assert document.status == Document.Status.INDEXED, document.error
    actor = actor_for_agent(owner.agent)
    conversation = conversation_services.conversation_create(
        actor=actor, title="Private chat", summary_every=0
    )
    conversation_services.messages_append(
        actor=actor,
        conversation=conversation,
        messages=[
            conversation_services.MessageInput(
                "user", f"I moved to {place} from {city} last year.", person
            ),
            conversation_services.MessageInput(
                "user", f"I work at {employer} and sail to {coast} with friends.", person
            ),
            conversation_services.MessageInput("assistant", f"{place} sounds lovely, {person}."),
        ],
    )
    made = extraction_services.extraction_run(actor=actor, conversation=conversation)
    assert made.counts["facts"] >= 2 and made.counts["relations"] >= 1, made.counts
    communities_compute(account_id=account.pk)
    return account, owner, Conversation.objects.select_related("context").get(pk=conversation.pk)


def build(capture: Callable[..., Any]) -> World:
    account, owner, conversation = _account(capture, city="Lisbon", coast="Faro", names=PRIVATE)
    grantee = _caller(account, "grantee")
    ltm_services.context_grant(
        actor=actor_for_agent(owner.agent),
        context=conversation.context,
        agent_id=grantee.agent.pk,
        level="read",
    )
    # The stranger has memories of its own that name the public city.
    stranger = _caller(account, "stranger")
    notes = ltm_services.context_create(actor=actor_for_agent(stranger.agent), name="notes")
    ltm_services.entries_write(
        actor=actor_for_agent(stranger.agent),
        context=notes,
        items=[
            ltm_services.EntryInput(content="Lisbon trip in spring: trams and ferries."),
            ltm_services.EntryInput(content="In summer the marina of Faro is full."),
        ],
    )
    context_graph_index(actor=actor_for_agent(stranger.agent), context=notes)
    _, intruder, _ = _account(capture, city="Oslo", coast="Bergen", names=FOREIGN)
    nodes = GraphNode.objects.filter(account=account)
    person = nodes.get(name="Zephyrine")
    place = nodes.get(name="Quixotown")
    lisbon = nodes.get(name="Lisbon")
    private_edge = GraphEdge.objects.get(source=person, target=place, relation_type="moved_to")
    return World(
        account, owner, grantee, stranger, intruder, conversation, person, place, lisbon,
        private_edge,
    )  # fmt: skip


@pytest.fixture
def world(django_capture_on_commit_callbacks: Any) -> World:
    return build(django_capture_on_commit_callbacks)


def text_of(answer: Any) -> str:
    if hasattr(answer, "content"):
        return answer.content.decode().lower()
    return json.dumps(answer).lower()


# What the stranger asks its context about (the names are its words: a context repeats the
# query, which is not what it learned).
ASKED = "Where did Zephyrine move, Quixotown?"


def hidden(answer: Any, names: Iterable[str] = PRIVATE) -> None:
    text = text_of(answer).replace(ASKED.lower(), "")
    shown = [name for name in names if name in text]
    assert shown == [], f"{shown} leaked: {text[:2000]}"


def shown(answer: Any, *names: str) -> None:
    text = text_of(answer)
    assert all(name in text for name in names), text[:2000]


def ok(response: Any) -> Any:
    assert response.status_code in (200, 201), response.content
    return response


# --- the derived rows record their source ----------------------------------------------------


def test_what_a_conversation_taught_records_its_context(world: World) -> None:
    context = world.conversation.context_id
    facts = KnowledgeItem.objects.filter(account=world.account, store__name="conversations")
    assert facts.count() >= 2 and set(facts.values_list("source_context", flat=True)) == {context}
    assert (world.person.derived_space, world.person.derived_scope_id) == (
        "memory_entries",
        context,
    )
    assert world.private_edge.derived_scope_id == context
    # The public city stays account-wide; its mentions by the conversation are private.
    assert world.lisbon.derived_scope_id is None
    spaces = set(GraphMention.objects.filter(node=world.lisbon).values_list("space", "scope_id"))
    assert ("memory_entries", context) in spaces and any(s == "chunks" for s, _ in spaces)
    # Co-occurrences are counted per source: the document's apart from the conversation's.
    co = GraphEdge.objects.filter(relation_type="co_occurs", account=world.account)
    assert co.filter(derived_scope_id=context).exists()
    assert co.filter(derived_scope_id__isnull=True).exists()


# --- REST ------------------------------------------------------------------------------------


def _knowledge_doors(caller: Caller) -> list[Any]:
    base = "knowledge/conversations/items"
    return [
        ok(caller.post("knowledge/query", {"query": "Where did Zephyrine move? Quixotown"})),
        ok(caller.get(f"{base}?page_size=500")),
        ok(caller.get("knowledge/bases")),
        ok(caller.post("memory/context", {"query": ASKED})),
    ]


def _graph_doors(caller: Caller, world: World) -> list[Any]:
    lisbon = world.lisbon.pk
    return [
        ok(caller.get("graph/nodes?page_size=500")),
        ok(caller.get("graph/nodes?query=Zephyrine%20Quixotown%20Blorptech")),
        ok(caller.get(f"graph/nodes/{lisbon}")),
        ok(caller.get(f"graph/nodes/{lisbon}/neighbors?hops=3")),
        ok(caller.get("rag/graph/communities?page_size=500")),
        ok(caller.post("rag/graph/retrieve", {"query": "Lisbon ferries", "max_hops": 3})),
        ok(caller.post("rag/graph/context", {"query": "Lisbon ferries", "max_hops": 3})),
        ok(caller.post("rag/search", {"query": "Lisbon ferries", "mode": "graph", "max_hops": 3})),
        ok(
            caller.post(
                "memory/long-term/search", {"query": "Lisbon trams", "mode": "graph", "max_hops": 3}
            )
        ),
    ]


def test_a_stranger_of_the_account_reads_nothing_a_private_conversation_taught(
    world: World,
) -> None:
    stranger = world.stranger
    for answer in [*_knowledge_doors(stranger), *_graph_doors(stranger, world)]:
        hidden(answer)
        hidden(answer, FOREIGN)
    base = "knowledge/conversations/items"
    for path in (
        f"{base}/{FACT_KEY}",
        f"{base}/{FACT_KEY}/versions",
        f"{base}/{FACT_KEY}/relationships",
    ):
        answer = stranger.get(path)
        assert answer.status_code == 404, answer.content
        assert answer.json()["error"]["code"] == "knowledge_item_not_found"
    ok(stranger.client.put(f"/api/v1/{base}/mine", {"content": "Mine."}, format="json"))
    related = stranger.post(
        "knowledge/relationships",
        {
            "source": {"base": "conversations", "key": "mine"},
            "target": {"base": "conversations", "key": FACT_KEY},
            "relationship_type": "about",
        },
    )
    assert related.json()["error"]["code"] == "knowledge_item_not_found", related.content
    fact = KnowledgeItem.objects.get(key=FACT_KEY, is_current=True)
    linked = stranger.tool(
        "memory_write",
        {
            "kind": "structured",
            "text": "Notes about a move",
            "related": [{"kind": "knowledge_item", "id": fact.pk}],
        },
    )
    assert linked["structuredContent"]["error"]["code"] == "related_not_found", linked
    bases = {b["name"]: b for b in stranger.get("knowledge/bases").json()["results"]}
    assert bases["conversations"]["item_count"] == 1  # its own "mine" alone
    # The conversation's nodes and edges answer like missing ones.
    for path in (f"graph/nodes/{world.person.pk}", f"graph/nodes/{world.place.pk}/neighbors"):
        assert stranger.get(path).status_code == 404
    missing = stranger.get(f"graph/path?from={world.lisbon.pk}&to={world.person.pk}")
    assert missing.json()["error"]["code"] == "node_not_found"
    edge = stranger.post(
        "graph/edges",
        {"source_id": world.lisbon.pk, "target_id": world.person.pk, "relation_type": "knows"},
    )
    assert (edge.status_code, edge.json()["error"]["code"]) == (404, "node_not_found")
    gone = stranger.client.delete(f"/api/v1/graph/edges/{world.private_edge.pk}")
    assert gone.status_code == 404 and GraphEdge.objects.filter(pk=world.private_edge.pk).exists()
    # The public city is there, without the conversation's edges.
    detail = stranger.get(f"graph/nodes/{world.lisbon.pk}").json()
    private_ids = {world.person.pk, world.place.pk}
    ends = {e["source_id"] for e in detail["edges_in"]} | {
        e["target_id"] for e in detail["edges_out"]
    }
    assert detail["name"] == "Lisbon" and not ends & private_ids
    # Communities: only members it may see, summaries naming account-wide members only.
    communities = stranger.get("rag/graph/communities?page_size=500").json()["results"]
    for community in communities:
        assert community["size"] == len(community["members"]) or community["size"] > 50
        assert not {m["node_id"] for m in community["members"]} & private_ids


def test_an_agent_that_may_read_no_context_at_all_sees_the_public_graph(world: World) -> None:
    newcomer = _caller(world.account, "newcomer")
    for answer in [*_knowledge_doors(newcomer), *_graph_doors(newcomer, world)]:
        hidden(answer)
    shown(ok(newcomer.get(f"graph/nodes/{world.lisbon.pk}/neighbors")), "portugal")


def test_the_owner_and_a_grantee_read_what_the_conversation_taught(world: World) -> None:
    for caller in (world.owner, world.grantee):
        query, items, bases, context = _knowledge_doors(caller)
        shown(query, "zephyrine moved to quixotown")
        shown(items, FACT_KEY)
        shown(context, "quixotown")
        assert {b["name"]: b for b in bases.json()["results"]}["conversations"]["item_count"] >= 2
        fact = ok(caller.get(f"knowledge/conversations/items/{FACT_KEY}")).json()
        assert fact["source_context_id"] == world.conversation.context_id
        ok(caller.get(f"knowledge/conversations/items/{FACT_KEY}/versions"))
        shown(ok(caller.get(f"graph/nodes/{world.person.pk}")), "zephyrine")
        neighbours = ok(caller.get(f"graph/nodes/{world.lisbon.pk}/neighbors?hops=2"))
        shown(neighbours, "zephyrine", "quixotown")
        shown(ok(caller.get("graph/nodes?query=Zephyrine")), "zephyrine")
        path = ok(caller.get(f"graph/path?from={world.lisbon.pk}&to={world.place.pk}"))
        assert path.json()["hops"] >= 1
        for answer in [*_knowledge_doors(caller), *_graph_doors(caller, world)]:
            hidden(answer, FOREIGN)
    # The owner's communities list the conversation's nodes among their members; no stored
    # summary names them (summaries are the whole account's).
    communities = world.owner.get("rag/graph/communities?page_size=500").json()["results"]
    members = {m["node_id"] for c in communities for m in c["members"]}
    assert world.person.pk in members or world.place.pk in members
    for community in communities:
        hidden({"title": community["title"], "summary": community["summary"]})


def test_a_search_s_graph_walk_reaches_only_what_the_searcher_may_see(world: World) -> None:
    """The graph stage of every search (documents, memories, graph RAG) walks from its seeds
    over the edges its searcher may see: the nodes it reaches, their paths and communities
    (what hits explain themselves with) name nothing of a conversation it may not read."""
    from rag.graph.retrieval import graph_rank
    from rag.models import KnowledgeBase
    from rag.spaces import CHUNKS
    from rag.visibility import visibility_of

    kb = KnowledgeBase.objects.get(account=world.account)

    def reached(caller: Caller) -> set[str]:
        ranking = graph_rank(
            space=CHUNKS,
            scope_ids=[kb.pk],
            account_ids=[world.account.pk],
            query="Lisbon ferries",
            depth=10,
            max_hops=3,
            visible=visibility_of(actor_for_agent(caller.agent)),
        )
        names = {r.name for r in ranking.nodes.values()}
        names |= {name for r in ranking.nodes.values() for name, _ in r.path}
        names |= {c.title + " " + c.summary for c in ranking.communities}
        return {name.lower() for name in names}

    assert "lisbon" in reached(world.stranger)
    hidden(sorted(reached(world.stranger)))
    shown(sorted(reached(world.owner)), "zephyrine", "quixotown")
    shown(sorted(reached(world.grantee)), "zephyrine")


def test_an_explicit_node_of_a_hidden_name_makes_it_account_wide_without_its_private_edges(
    world: World,
) -> None:
    made = world.stranger.post("graph/nodes", {"name": "Zephyrine", "entity_type": "person"})
    assert made.status_code == 201, made.content  # never 409: that would tell it exists
    assert made.json()["id"] == world.person.pk
    seen = ok(world.stranger.get(f"graph/nodes/{world.person.pk}/neighbors?hops=2"))
    hidden(seen, ("quixotown", "blorptech"))
    shown(ok(world.owner.get(f"graph/nodes/{world.person.pk}/neighbors")), "quixotown")


def test_the_query_log_shows_an_agent_its_own_searches(world: World) -> None:
    ok(world.owner.post("rag/search", {"query": "Zephyrine Quixotown ferries"}))
    hidden(ok(world.stranger.get("rag/queries?page_size=500")))
    shown(ok(world.owner.get("rag/queries")), "quixotown")
    # The account's analytics still count every search.
    modes = ok(world.stranger.get("rag/analytics")).json()["modes"]
    assert sum(m["queries"] for m in modes) >= 1


def test_rot_and_digests_name_nothing_private(world: World) -> None:
    from memory import digest
    from memory.models import KnowledgeSource

    # An item whose source message is gone: the rot report's orphan is its readers' alone.
    fact = KnowledgeItem.objects.get(store__name="conversations", key=FACT_KEY, is_current=True)
    KnowledgeSource.objects.filter(item=fact).update(source_id="999999999")
    shown(ok(world.owner.get("maintenance/rot")), FACT_KEY)
    hidden(ok(world.stranger.get("maintenance/rot")))
    from django.utils import timezone

    lines = digest.daily_digest(account_id=world.account.pk, day=timezone.localdate())
    hidden([line.text for line in lines])
    assert any("private context" in line.text for line in lines)


# --- MCP -------------------------------------------------------------------------------------


def _mcp_doors(caller: Caller, world: World) -> list[dict[str, Any]]:
    lisbon = world.lisbon.pk
    return [
        caller.tool(
            "memory_search",
            {"kind": "knowledge_item", "query": "Where did Zephyrine move? Quixotown"},
        ),
        caller.tool("get_context", {"query": ASKED}),
        caller.tool("search_knowledge_graph", {"query": "Zephyrine Quixotown"}),
        caller.tool("search_knowledge_graph", {"query": "Lisbon", "mode": "graph", "max_hops": 3}),
        caller.tool("get_graph_neighbors", {"node_id": lisbon, "hops": 3}),
        caller.tool(
            "query_knowledge_base", {"kind": "graph", "query": "Lisbon ferries", "max_hops": 3}
        ),
        caller.tool("search_documents", {"query": "Lisbon ferries", "mode": "graph"}),
        caller.tool(
            "memory_search",
            {"kind": "long_term", "query": "Lisbon trams", "mode": "graph", "max_hops": 3},
        ),
    ]


def test_the_mcp_tools_keep_a_private_conversation_to_its_readers(world: World) -> None:
    for result in _mcp_doors(world.stranger, world):
        assert not result["isError"], result
        hidden(result["structuredContent"])
        hidden(result["structuredContent"], FOREIGN)
    missing = world.stranger.tool(
        "memory_read", {"kind": "knowledge_item", "base": "conversations", "key": FACT_KEY}
    )
    assert missing["structuredContent"]["error"]["code"] == "knowledge_item_not_found"
    hidden_node = world.stranger.tool("get_graph_neighbors", {"node_id": world.person.pk})
    assert hidden_node["structuredContent"]["error"]["code"] == "node_not_found"
    for caller in (world.owner, world.grantee):
        query, context, *_ = _mcp_doors(caller, world)
        shown(query["structuredContent"], "zephyrine moved to quixotown")
        shown(context["structuredContent"], "quixotown")
        got = caller.tool(
            "memory_read", {"kind": "knowledge_item", "base": "conversations", "key": FACT_KEY}
        )
        shown(got["structuredContent"], "quixotown")
        near = caller.tool("get_graph_neighbors", {"node_id": world.lisbon.pk, "hops": 2})
        shown(near["structuredContent"], "zephyrine")


# --- people ----------------------------------------------------------------------------------


def test_people_see_it_where_they_manage_memory(world: World) -> None:
    from rag.graph.nodes import node_list

    reviewer, operator = UserFactory.create(is_staff=True), UserFactory.create(is_staff=True)
    services.membership_grant(account=world.account, user=reviewer, role="reviewer")
    services.membership_grant(account=world.account, user=operator, role="operator")
    for user, sees in ((reviewer, False), (operator, True)):
        actor = actor_for_user(user)
        assert node_list(actor=actor).filter(pk=world.person.pk).exists() is sees
        assert node_list(actor=actor).filter(pk=world.lisbon.pk).exists()
        client = APIClient()
        client.force_login(user)
        page = client.get("/admin/rag/graphnode/?q=Zephyrine")
        assert page.status_code == 200
        assert (f"/admin/rag/graphnode/{world.person.pk}/change/" in page.content.decode()) is sees
        fact = KnowledgeItem.objects.get(key=FACT_KEY, is_current=True)
        items = client.get("/admin/memory/knowledgeitem/")
        assert items.status_code == 200
        assert (f"/admin/memory/knowledgeitem/{fact.pk}/change/" in items.content.decode()) is sees
        detail = client.get(f"/admin/memory/knowledgeitem/{fact.pk}/change/")
        assert (detail.status_code == 200) is sees


# --- existing data and rebuilds --------------------------------------------------------------


def _migration_sql(app: str) -> str:
    from importlib import import_module

    return str(import_module(f"{app}.migrations.0014_derived_visibility" if app == "rag" else
                             f"{app}.migrations.0016_derived_visibility")._BACKFILL)  # fmt: skip


def test_the_backfill_gives_rows_derived_before_their_source_s_visibility(world: World) -> None:
    context = world.conversation.context_id
    account = world.account.pk
    item_nodes = list(
        KnowledgeItem.objects.filter(account=account, source_context__isnull=False)
        .values_list("graph_node_id", flat=True)
        .distinct()
    )
    named = dict(GraphNode.objects.filter(pk__in=item_nodes).values_list("pk", "name"))
    # As before this change: nothing recorded, one co-occurrence edge per pair, the item
    # nodes named without their context.
    KnowledgeItem.objects.filter(account=account).update(source_context=None)
    GraphEdge.objects.filter(account=account, relation_type="co_occurs").delete()
    GraphNode.objects.filter(account=account).update(derived_space="", derived_scope_id=None)
    GraphEdge.objects.filter(account=account).update(derived_space="", derived_scope_id=None)
    for pk, name in named.items():
        old = name.removesuffix(f" (context {context})")
        GraphNode.objects.filter(pk=pk).update(name=old, name_key=name_key(old))
    assert world.stranger.get(f"graph/nodes/{world.person.pk}").status_code == 200  # leaks
    with connection.cursor() as cursor:
        cursor.execute(_migration_sql("rag"))
        cursor.execute(_migration_sql("memory"))
    assert set(
        KnowledgeItem.objects.filter(account=account, store__name="conversations").values_list(
            "source_context", flat=True
        )
    ) == {context}
    person = GraphNode.objects.get(pk=world.person.pk)
    assert (person.derived_space, person.derived_scope_id) == ("memory_entries", context)
    assert GraphEdge.objects.get(pk=world.private_edge.pk).derived_scope_id == context
    restored = GraphNode.objects.filter(pk__in=item_nodes)
    assert dict(restored.values_list("pk", "name")) == named
    assert all(node.name_key == name_key(node.name) for node in restored)
    co = GraphEdge.objects.filter(account=account, relation_type="co_occurs")
    assert (
        co.filter(derived_scope_id=context).exists()
        and co.filter(derived_scope_id__isnull=True).exists()
    )
    for answer in [*_knowledge_doors(world.stranger), *_graph_doors(world.stranger, world)]:
        hidden(answer)
    shown(_knowledge_doors(world.owner)[0], "quixotown")


def test_the_rebuild_commands_keep_the_visibility(world: World) -> None:
    call_command("memory_graph_rebuild", account=world.account.pk, stdout=None)
    call_command("graph_rebuild", account=world.account.pk, communities=True, stdout=None)
    context = world.conversation.context_id
    mentions = GraphMention.objects.filter(space="memory_entries", scope_id=context)
    assert mentions.filter(node__name="Zephyrine").exists()
    assert GraphEdge.objects.filter(
        relation_type="co_occurs", derived_scope_id=context, account=world.account
    ).exists()
    for answer in _graph_doors(world.stranger, world):
        hidden(answer)
    shown(ok(world.owner.get(f"graph/nodes/{world.lisbon.pk}/neighbors?hops=2")), "zephyrine")


# --- extraction never crosses sources --------------------------------------------------------


def test_a_conversation_writes_its_own_items_and_never_touches_another_s(world: World) -> None:
    """The same key said in a second conversation (another agent's) is an item of that
    conversation: the first one's stays as it was, each visible to its own readers."""
    account = world.account
    other = conversation_services.conversation_create(
        actor=actor_for_agent(world.stranger.agent), title="Mine", summary_every=0
    )
    conversation_services.messages_append(
        actor=actor_for_agent(world.stranger.agent),
        conversation=other,
        messages=[conversation_services.MessageInput("user", "I moved to Tavira.", "Zephyrine")],
    )
    run = extraction_services.extraction_run(
        actor=actor_for_agent(world.stranger.agent), conversation=other
    )
    assert run.counts["add"] >= 1, run.counts
    items = KnowledgeItem.objects.filter(account=account, key=FACT_KEY, is_current=True)
    by_context = {i.source_context_id: i for i in items}
    first = by_context[world.conversation.context_id]
    assert first.version == 1 and "Quixotown" in first.content
    assert "Tavira" in by_context[other.context_id].content
    mine = ok(world.stranger.get(f"knowledge/conversations/items/{FACT_KEY}")).json()
    assert "Tavira" in mine["content"]
    hidden(mine, ("quixotown", "blorptech"))
    theirs = ok(world.owner.get(f"knowledge/conversations/items/{FACT_KEY}")).json()
    assert "Quixotown" in theirs["content"] and "tavira" not in json.dumps(theirs).lower()


def test_graph_search_counts_only_the_community_members_its_searcher_may_see(world: World) -> None:
    """A graph search names the reached nodes' communities with the size its searcher may see:
    the same count the communities listing gives, computed once per kept community."""
    from django.db.models import Q

    from rag.graph.retrieval import Reach, _communities
    from rag.models import GraphCommunity
    from rag.visibility import visibility_of

    stranger = _caller(world.account, "counted")
    visible = visibility_of(actor_for_agent(stranger.agent))

    def reached(seen: Any) -> dict[int, Reach]:  # as a walk reaches them: the nodes it may see
        return {
            n.pk: Reach(n.pk, n.name, n.entity_type, n.pk, 0, 1.0, [], n.mention_count)
            for n in GraphNode.objects.filter(seen, account=world.account)
        }

    theirs = _communities(reached(visible.node_q()), visible, drop=False)
    listed = {
        c["id"]: c["size"]
        for c in stranger.get("rag/graph/communities?page_size=500").json()["results"]
    }
    assert theirs and {ref.id: ref.size for ref in theirs} == {
        ref.id: listed[ref.id] for ref in theirs
    }
    stored = dict(GraphCommunity.objects.values_list("id", "size"))
    everyone = {ref.id: ref.size for ref in _communities(reached(Q()), None, drop=False)}
    assert everyone == {ref_id: stored[ref_id] for ref_id in everyone}
    assert any(ref.size < stored[ref.id] for ref in theirs)  # a private member is not counted
