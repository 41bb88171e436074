"""The knowledge graph on the real PostgreSQL: constraints, indexing, search, traversal, tenancy."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from django.db import IntegrityError, transaction

from core.actors import Actor, actor_for_agent
from core.errors import Conflict, NotFound, ValidationFailed
from rag import keyword
from rag.graph import selectors as graph
from rag.graph.services import nodes as services
from rag.models import GraphEdge, GraphNode, GraphNodePosting, GraphNodeTerm, GraphScope
from rag.spaces import GRAPH_NODES
from tests.conftest import AuthedAgent

pytestmark = pytest.mark.django_db

NODES = "/api/v1/graph/nodes"


def code(response: Any) -> str:
    return str(response.json()["error"]["code"])


@pytest.fixture
def actor(agent_client: AuthedAgent) -> Actor:
    return actor_for_agent(agent_client.agent)


def node(actor: Actor, name: str, **kwargs: Any) -> GraphNode:
    kwargs.setdefault("entity_type", "concept")
    return services.node_create(actor=actor, name=name, **kwargs)


def edge(actor: Actor, a: GraphNode, b: GraphNode, relation: str, **kwargs: Any) -> GraphEdge:
    return services.edge_create(
        actor=actor, source_id=a.pk, target_id=b.pk, relation_type=relation, **kwargs
    )


def scope_stats(account_id: int) -> tuple[int, int]:
    scope = GraphScope.objects.get(account_id=account_id)
    return scope.node_count, scope.total_terms


# --- constraints -----------------------------------------------------------------------------


def test_duplicate_nodes_are_refused_case_insensitively_per_entity_type(actor: Actor) -> None:
    node(actor, "Ada Lovelace", entity_type="person")
    with pytest.raises(Conflict) as raised:
        node(actor, "ada lovelace", entity_type="person")
    assert raised.value.code == "node_exists"
    node(actor, "Ada Lovelace", entity_type="ship")  # another entity type is another thing
    assert GraphNode.objects.count() == 2
    with transaction.atomic(), pytest.raises(IntegrityError):
        first = GraphNode.objects.first()
        assert first is not None
        GraphNode.objects.create(
            account_id=first.account_id,
            scope_id=first.scope_id,
            entity_type="person",
            name="ADA LOVELACE",
        )


def test_edges_refuse_duplicates_self_loops_and_foreign_nodes(
    actor: Actor, other_agent_client: AuthedAgent
) -> None:
    a, b = node(actor, "Alpha"), node(actor, "Beta")
    edge(actor, a, b, "related_to")
    with pytest.raises(Conflict) as raised:
        edge(actor, a, b, "related_to")
    assert raised.value.code == "edge_exists"
    edge(actor, b, a, "related_to")  # the other direction is another edge
    edge(actor, a, b, "part_of")  # and so is another relation type
    with pytest.raises(ValidationFailed) as loop:
        edge(actor, a, a, "related_to")
    assert loop.value.code == "self_loop"
    with transaction.atomic(), pytest.raises(IntegrityError):
        GraphEdge.objects.create(account_id=a.account_id, source=a, target=a, relation_type="x")
    foreign = node(actor_for_agent(other_agent_client.agent), "Gamma")
    with pytest.raises(NotFound) as missing:
        edge(actor, a, foreign, "related_to")
    assert missing.value.code == "node_not_found"
    with pytest.raises(NotFound):
        services.edge_create(actor=actor, source_id=a.pk, target_id=10**12, relation_type="x")
    assert GraphEdge.objects.count() == 3


# --- the index -------------------------------------------------------------------------------


def test_nodes_are_indexed_on_create_update_and_delete(actor: Actor) -> None:
    ada = node(actor, "Ada Lovelace", aliases=["Countess of Lovelace"], description="Analyst")
    assert ada.embedding_model and ada.keyword_length == 5
    assert scope_stats(ada.account_id) == (1, 5)
    terms = set(GraphNodePosting.objects.filter(node=ada).values_list("term", flat=True))
    assert {"ada", "lovelac", "countess", "analyst"} <= terms
    updated = services.node_update(
        actor=actor, node=ada, fields={"aliases": ["Enchantress of Numbers"]}
    )
    assert "enchantress" in set(
        GraphNodePosting.objects.filter(node=updated).values_list("term", flat=True)
    )
    assert not GraphNodeTerm.objects.filter(term="countess").exists()
    assert scope_stats(ada.account_id) == (1, updated.keyword_length)
    services.node_update(actor=actor, node=updated, fields={"mention_count": 3})
    assert scope_stats(ada.account_id) == (1, updated.keyword_length)
    services.node_delete(actor=actor, node=updated)
    assert scope_stats(ada.account_id) == (0, 0)
    assert not GraphNodePosting.objects.exists() and not GraphNodeTerm.objects.exists()


def test_the_index_rebuilds_to_what_the_writes_kept(actor: Actor) -> None:
    node(actor, "Ada Lovelace", aliases=["Enchantress of Numbers"], description="Analyst")
    babbage = node(actor, "Charles Babbage", description="Difference engine")
    services.node_update(actor=actor, node=babbage, fields={"name": "Charles Babbage FRS"})
    scope = GraphScope.objects.get(account_id=babbage.account_id)
    postings = set(GraphNodePosting.objects.values_list("node_id", "term", "tf", "node_length"))
    terms = set(GraphNodeTerm.objects.values_list("term", "df"))
    kept = scope_stats(babbage.account_id)
    keyword.index_rebuild(space=GRAPH_NODES, scope_id=scope.pk)
    assert scope_stats(babbage.account_id) == kept
    assert set(GraphNodeTerm.objects.values_list("term", "df")) == terms
    rebuilt = GraphNodePosting.objects.values_list("node_id", "term", "tf", "node_length")
    assert set(rebuilt) == postings


def test_search_finds_a_node_by_an_alias_and_explains_it(
    actor: Actor, agent_client: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    node(actor, "Ada Lovelace", entity_type="person", aliases=["Enchantress of Numbers"])
    node(actor, "Charles Babbage", entity_type="person", description="Difference engine")
    node(actor_for_agent(other_agent_client.agent), "Enchantress of Numbers", entity_type="x")
    hits = graph.node_search(actor=actor, query="enchantress numbers")
    assert hits[0].node.name == "Ada Lovelace"
    assert {hit.node.account_id for hit in hits} == {agent_client.agent.account_id}
    response = agent_client.client.get(NODES, {"query": "enchantress", "mode": "keyword"})
    assert response.status_code == 200, response.json()
    assert set(response.json()) == {"mode", "results", "communities", "timings_ms"}  # not a page
    results = response.json()["results"]
    assert [r["node"]["name"] for r in results] == ["Ada Lovelace"]
    assert results[0]["explanation"]["keyword"]["rank"] == 1
    listing = agent_client.client.get(NODES).json()
    assert {"next", "previous", "results"} <= set(listing) and "mode" not in listing
    assert {n["name"] for n in listing["results"]} == {"Ada Lovelace", "Charles Babbage"}
    assert "next" in listing


# --- traversal -------------------------------------------------------------------------------


@pytest.fixture
def chain(actor: Actor) -> dict[str, GraphNode]:
    """a -knows-> b -knows-> c -knows-> d -knows-> a (a cycle), b -works_at-> e,
    c <-cites-> f (bidirectional), g alone."""
    nodes = {name: node(actor, name) for name in "abcdefg"}
    for source, target in ("ab", "bc", "cd", "da"):
        edge(actor, nodes[source], nodes[target], "knows")
    edge(actor, nodes["b"], nodes["e"], "works_at")
    edge(actor, nodes["f"], nodes["c"], "cites", bidirectional=True)
    return nodes


def _found(results: list[graph.Neighbour]) -> dict[str, tuple[int, str]]:
    return {n.node.name: (n.hops, n.relation_type) for n in results}


def test_neighbours_by_hops_with_a_relation_filter_and_a_cycle(
    chain: dict[str, GraphNode],
) -> None:
    a = chain["a"]
    assert _found(graph.neighbours(node=a, hops=1, direction="out")) == {"b": (1, "knows")}
    assert _found(graph.neighbours(node=a, hops=2, direction="out")) == {
        "b": (1, "knows"),
        "c": (2, "knows"),
        "e": (2, "works_at"),
    }
    # The cycle leads back to a, which is never its own neighbour; f is reached from c
    # through the bidirectional edge.
    assert _found(graph.neighbours(node=a, hops=3, direction="out")) == {
        "b": (1, "knows"),
        "c": (2, "knows"),
        "e": (2, "works_at"),
        "d": (3, "knows"),
        "f": (3, "cites"),
    }
    assert _found(graph.neighbours(node=a, hops=5, relation_types=["knows"], direction="out")) == {
        "b": (1, "knows"),
        "c": (2, "knows"),
        "d": (3, "knows"),
    }
    assert _found(graph.neighbours(node=chain["f"], hops=1, direction="out")) == {"c": (1, "cites")}
    assert graph.neighbours(node=chain["e"], hops=5, direction="out") == []  # edges end here
    with pytest.raises(ValidationFailed):
        graph.neighbours(node=a, hops=6)


def test_neighbours_by_direction(chain: dict[str, GraphNode]) -> None:
    """``in`` follows edges backwards, ``both`` either way (the default); the bidirectional
    c <-> f is followed both ways in every direction."""
    a, c, e = chain["a"], chain["c"], chain["e"]
    assert _found(graph.neighbours(node=a, hops=1, direction="in")) == {"d": (1, "knows")}
    assert _found(graph.neighbours(node=a, hops=1)) == {"b": (1, "knows"), "d": (1, "knows")}
    assert _found(graph.neighbours(node=e, hops=1, direction="in")) == {"b": (1, "works_at")}
    assert _found(graph.neighbours(node=e, hops=2)) == {
        "b": (1, "works_at"),
        "a": (2, "knows"),
        "c": (2, "knows"),
    }
    assert _found(graph.neighbours(node=c, hops=1, direction="in")) == {
        "b": (1, "knows"),
        "f": (1, "cites"),
    }
    assert _found(graph.neighbours(node=c, hops=1, direction="out")) == {
        "d": (1, "knows"),
        "f": (1, "cites"),
    }
    assert _found(graph.neighbours(node=c, hops=2, relation_types=["cites", "works_at"])) == {
        "f": (1, "cites")
    }
    with pytest.raises(ValidationFailed) as wrong:
        graph.neighbours(node=a, direction="sideways")
    assert wrong.value.code == "invalid_direction"


def test_neighbours_api(agent_client: AuthedAgent, chain: dict[str, GraphNode]) -> None:
    url = f"{NODES}/{chain['a'].pk}/neighbors"

    def found(**params: str) -> list[tuple[str, int, str]]:
        response = agent_client.client.get(url, params)
        assert response.status_code == 200, response.json()
        return [
            (r["node"]["name"], r["hops"], r["relation_type"]) for r in response.json()["results"]
        ]

    assert found(hops="2", relation_type="knows", direction="out") == [
        ("b", 1, "knows"),
        ("c", 2, "knows"),
    ]
    # Both ways by default: d knows a.
    assert found(hops="2", relation_type="knows") == [
        ("b", 1, "knows"),
        ("d", 1, "knows"),
        ("c", 2, "knows"),
    ]
    assert found(hops="2", relation_type="knows", direction="in") == [
        ("d", 1, "knows"),
        ("c", 2, "knows"),
    ]
    assert agent_client.client.get(url, {"hops": 0}).status_code == 400
    for direction in ("sideways", "OUT", ""):
        wrong = agent_client.client.get(url, {"direction": direction})
        assert wrong.status_code == 400 and code(wrong) == "validation_error"
        assert "direction" in wrong.json()["error"]["details"]


def path_api(
    agent_client: AuthedAgent, source: GraphNode, target: GraphNode, direction: str | None = None
) -> Any:
    params = {"from": str(source.pk), "to": str(target.pk)}
    if direction is not None:
        params["direction"] = direction
    return agent_client.client.get("/api/v1/graph/path", params)


def test_shortest_path(agent_client: AuthedAgent, chain: dict[str, GraphNode]) -> None:
    path = graph.shortest_path(source=chain["a"], target=chain["f"], direction="out")
    assert [n.name for n in path.nodes] == ["a", "b", "c", "f"]
    assert [e.relation_type for e in path.edges] == ["knows", "knows", "cites"]
    back = graph.shortest_path(source=chain["d"], target=chain["b"], direction="out")
    assert [n.name for n in back.nodes] == ["d", "a", "b"]  # d -> a -> b
    with pytest.raises(NotFound) as none:
        graph.shortest_path(source=chain["a"], target=chain["g"])
    assert none.value.code == "no_path"
    response = path_api(agent_client, chain["f"], chain["e"], "out")
    # f -cites-> c (bidirectional) -knows-> d -knows-> a -knows-> b -works_at-> e
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [n["name"] for n in body["nodes"]] == ["f", "c", "d", "a", "b", "e"]
    assert body["hops"] == 5 and len(body["edges"]) == 5
    response = path_api(agent_client, chain["e"], chain["a"], "out")
    assert response.status_code == 404 and code(response) == "no_path"
    # Both ways (the default): e <-works_at- b <-knows- a, and f -cites- c <-knows- b -> e.
    response = path_api(agent_client, chain["e"], chain["a"])
    assert response.status_code == 200, response.json()
    assert [n["name"] for n in response.json()["nodes"]] == ["e", "b", "a"]
    inward = path_api(agent_client, chain["e"], chain["a"], "in")
    assert [n["name"] for n in inward.json()["nodes"]] == ["e", "b", "a"]
    assert [n.name for n in graph.shortest_path(source=chain["f"], target=chain["e"]).nodes] == [
        "f",
        "c",
        "b",
        "e",
    ]
    wrong = path_api(agent_client, chain["e"], chain["a"], "x")
    assert wrong.status_code == 400 and code(wrong) == "validation_error"


def test_ties_take_the_first_relation_type_and_the_lowest_edge_ids(actor: Actor) -> None:
    """a reaches d in two hops through b (knows, knows) and through c (likes, cites): d's relation
    is the first of the two in sort order; the path goes through the lower-id edge into d."""
    a, b, c, d = (node(actor, name) for name in "abcd")
    edge(actor, a, b, "knows")
    edge(actor, a, c, "likes")
    into_d = edge(actor, c, d, "cites")  # the lower id into d
    edge(actor, b, d, "knows")
    assert _found(graph.neighbours(node=a, hops=2))["d"] == (2, "cites")
    assert [n.name for n in graph.shortest_path(source=a, target=d).nodes] == ["a", "c", "d"]
    # Backwards, d's two ways into a level-1 node: the lower edge id again.
    assert [n.name for n in graph.shortest_path(source=d, target=a).nodes] == ["d", "b", "a"]
    # A node nearer by another walk keeps its shortest distance, however many longer walks
    # reach it: b is also two hops away through the bidirectional c <-> b.
    edge(actor, c, b, "near", bidirectional=True)
    assert _found(graph.neighbours(node=a, hops=3)) == {
        "b": (1, "knows"),
        "c": (1, "likes"),
        "d": (2, "cites"),
    }
    assert graph.shortest_path(source=a, target=d).edges[-1] == into_d
    with pytest.raises(NotFound):
        graph.shortest_path(source=d, target=a, direction="out")  # directed edges end at d


def _reference_steps(
    edges: list[GraphEdge], relations: set[str] | None, direction: str = "out"
) -> dict[int, list[tuple[int, int, str]]]:
    """From each node: (next node, edge id, relation type) of every step in ``direction``
    (``out``: edges from their source; ``in``: from their target; ``both``: either), a
    bidirectional edge from either end in every direction."""
    steps: dict[int, list[tuple[int, int, str]]] = {}
    for e in edges:
        if relations is not None and e.relation_type not in relations:
            continue
        if direction != "in" or e.bidirectional:
            steps.setdefault(e.source_id, []).append((e.target_id, e.pk, e.relation_type))
        if direction != "out" or e.bidirectional:
            steps.setdefault(e.target_id, []).append((e.source_id, e.pk, e.relation_type))
    return steps


def _reference_levels(
    steps: dict[int, list[tuple[int, int, str]]], starts: list[int], hops: int
) -> list[dict[int, list[tuple[int, int, str]]]]:
    """Breadth-first levels: for each node first reached at level d, every step into it from
    level d - 1 as (previous node, edge id, relation type)."""
    seen = set(starts)
    levels: list[dict[int, list[tuple[int, int, str]]]] = [{start: [] for start in starts}]
    while len(levels) <= hops and levels[-1]:
        reached: dict[int, list[tuple[int, int, str]]] = {}
        for a in levels[-1]:
            for b, edge_id, relation in steps.get(a, []):
                if b not in seen:
                    reached.setdefault(b, []).append((a, edge_id, relation))
        seen |= set(reached)
        levels.append(reached)
    return levels


def _expected(
    levels: list[dict[int, list[tuple[int, int, str]]]], hops: int, names: dict[int, str]
) -> dict[str, tuple[int, str]]:
    return {
        names[b]: (depth, min(r for _, _, r in into))
        for depth, level in enumerate(levels[1 : hops + 1], start=1)
        for b, into in level.items()
    }


@pytest.fixture
def random_graph(actor: Actor) -> tuple[list[GraphNode], list[GraphEdge], random.Random]:
    """40 nodes, 110 edges of four relation types, with cycles, hubs (the first eight nodes
    are drawn twice as often), parallel relations and bidirectional edges (one in five)."""
    rng = random.Random(7)
    nodes = [node(actor, f"n{i:02d}") for i in range(40)]
    relations = ("cites", "knows", "likes", "owns")
    made: set[tuple[int, int, str]] = set()
    for _ in range(110):
        a, b = rng.choice(nodes[:8] + nodes), rng.choice(nodes[:8] + nodes)  # a few hubs
        kind = rng.choice(relations)
        if a.pk != b.pk and (a.pk, b.pk, kind) not in made:
            made.add((a.pk, b.pk, kind))
            edge(actor, a, b, kind, bidirectional=rng.random() < 0.2)
    return nodes, list(GraphEdge.objects.filter(account_id=actor.account_id)), rng


def test_traversal_answers_what_a_plain_breadth_first_search_answers(
    random_graph: tuple[list[GraphNode], list[GraphEdge], random.Random],
) -> None:
    """On a random graph with cycles, hubs, parallel relations and bidirectional edges, in
    each direction: every node's neighbours within 1 to 5 hops (each relation type, one, then
    two), and shortest paths between many pairs, against a plain Python search with the
    documented tie-breaks."""
    nodes, edges, rng = random_graph
    names = {n.pk: n.name for n in nodes}
    for direction in graph.DIRECTIONS:
        for relations in (None, ["knows"], ["cites", "owns"]):
            steps = _reference_steps(edges, set(relations) if relations else None, direction)
            for start in nodes:
                levels = _reference_levels(steps, [start.pk], 5)
                for hops in (1, 3, 5):
                    got = graph.neighbours(
                        node=start, hops=hops, relation_types=relations or [], direction=direction
                    )
                    assert _found(got) == _expected(levels, hops, names), (
                        start.name,
                        hops,
                        relations,
                        direction,
                    )
                    assert [n.hops for n in got] == sorted(n.hops for n in got)
    for direction in graph.DIRECTIONS:
        steps = _reference_steps(edges, None, direction)
        paths = 0
        for _ in range(100):
            source, target = rng.sample(nodes, 2)
            levels = _reference_levels(steps, [source.pk], graph.MAX_PATH_HOPS)
            depth = next((d for d, level in enumerate(levels) if target.pk in level), None)
            if depth is None:
                with pytest.raises(NotFound):
                    graph.shortest_path(source=source, target=target, direction=direction)
                continue
            expected_nodes, at = [target.pk], target.pk
            expected_edges: list[int] = []
            for d in range(depth, 0, -1):
                at, edge_id, _ = min(levels[d][at], key=lambda step: step[1])
                expected_nodes.insert(0, at)
                expected_edges.insert(0, edge_id)
            path = graph.shortest_path(source=source, target=target, direction=direction)
            assert [n.pk for n in path.nodes] == expected_nodes, direction
            assert [e.pk for e in path.edges] == expected_edges, direction
            paths += 1
        assert paths > 30, direction  # connected enough to test paths, not just their absence


def test_walks_and_reachability_answer_what_a_plain_search_answers(
    actor: Actor, random_graph: tuple[list[GraphNode], list[GraphEdge], random.Random]
) -> None:
    """``walk`` from several sources (to a depth, cut by ``limit`` nearest first) and
    ``reaches`` at any distance, each direction, against the Python search."""
    nodes, edges, rng = random_graph
    names = {n.pk: n.name for n in nodes}
    account = actor.account_id
    for direction in graph.DIRECTIONS:
        for relations in (None, ["likes"], ["knows", "cites"]):
            steps = _reference_steps(edges, set(relations) if relations else None, direction)
            for _ in range(15):
                sources = [n.pk for n in rng.sample(nodes, rng.randint(1, 3))]
                levels = _reference_levels(steps, sources, graph.MAX_WALK_DEPTH)
                for depth in (1, 2, graph.MAX_WALK_DEPTH):
                    got = graph.walk(
                        account_id=account,
                        sources=sources,
                        relation_types=relations or [],
                        direction=direction,
                        max_depth=depth,
                    )
                    assert {r.name: (r.depth, r.relation_type) for r in got} == _expected(
                        levels, depth, names
                    )
                    order = [(r.depth, r.name) for r in got]
                    assert order == sorted(order)
                    assert (
                        graph.walk(
                            account_id=account,
                            sources=sources,
                            relation_types=relations or [],
                            direction=direction,
                            max_depth=depth,
                            limit=5,
                        )
                        == got[:5]
                    )
                reachable = {b for level in levels for b in level}
                for target in rng.sample(nodes, 10):
                    assert graph.reaches(
                        account_id=account,
                        sources=sources,
                        target=target.pk,
                        relation_types=relations or [],
                        direction=direction,
                    ) == (target.pk in reachable), (sources, target.pk, relations, direction)
    assert graph.walk(account_id=account, sources=[]) == []
    assert not graph.reaches(account_id=account, sources=[], target=nodes[0].pk)
    assert graph.reaches(account_id=account, sources=[nodes[0].pk], target=nodes[0].pk)
    with pytest.raises(ValidationFailed):
        graph.walk(account_id=account, sources=[nodes[0].pk], max_depth=0)
    with pytest.raises(ValidationFailed):
        graph.walk(account_id=account, sources=[nodes[0].pk], max_depth=graph.MAX_WALK_DEPTH + 1)


def test_reachability_is_not_bounded_by_depth_and_stays_in_the_account(
    actor: Actor, other_agent_client: AuthedAgent
) -> None:
    """A chain longer than any walk's depth is still reached (a cycle check must see it); the
    walk never leaves the account, nor follows another relation type."""
    chain_nodes = [node(actor, f"c{i:02d}") for i in range(graph.MAX_WALK_DEPTH + 5)]
    for a, b in itertools.pairwise(chain_nodes):
        edge(actor, a, b, "needs")
    first, last = chain_nodes[0].pk, chain_nodes[-1].pk
    account = actor.account_id
    assert graph.reaches(account_id=account, sources=[first], target=last, relation_types=["needs"])
    assert not graph.reaches(account_id=account, sources=[last], target=first)
    assert graph.reaches(account_id=account, sources=[last], target=first, direction="in")
    assert not graph.reaches(
        account_id=account, sources=[first], target=last, relation_types=["other"]
    )
    deepest = graph.walk(account_id=account, sources=[first], max_depth=graph.MAX_WALK_DEPTH)
    assert len(deepest) == graph.MAX_WALK_DEPTH
    other = actor_for_agent(other_agent_client.agent)
    assert not graph.reaches(account_id=other.account_id, sources=[first], target=last)
    assert graph.walk(account_id=other.account_id, sources=[first]) == []


def _reference_cycles(
    edges: list[GraphEdge], relation: str, max_length: int
) -> set[tuple[int, ...]]:
    """Every simple cycle of at most ``max_length`` nodes over ``relation``'s steps (source to
    target, bidirectional edges both ways), each once, from its lowest node."""
    steps: dict[int, set[int]] = {}
    for e in edges:
        if e.relation_type == relation:
            steps.setdefault(e.source_id, set()).add(e.target_id)
            if e.bidirectional:
                steps.setdefault(e.target_id, set()).add(e.source_id)
    found: set[tuple[int, ...]] = set()

    def extend(path: list[int]) -> None:
        for b in steps.get(path[-1], ()):
            if b == path[0]:
                found.add(tuple(path))
            elif b > path[0] and b not in path and len(path) < max_length:
                extend([*path, b])

    for start in steps:
        extend([start])
    return found


def test_cycles_answer_what_a_plain_search_answers(
    actor: Actor, other_agent_client: AuthedAgent
) -> None:
    """Every cycle of one relation type in a small random graph, each once from its lowest
    node, bounded in length; other relation types and other accounts are not walked."""
    rng = random.Random(11)
    nodes = [node(actor, f"k{i:02d}") for i in range(14)]
    made: set[tuple[int, int, str]] = set()
    for _ in range(30):
        a, b = rng.sample(nodes, 2)
        kind = rng.choice(("depends_on", "depends_on", "knows"))
        if (a.pk, b.pk, kind) not in made:
            made.add((a.pk, b.pk, kind))
            edge(actor, a, b, kind, bidirectional=rng.random() < 0.1)
    theirs = [node(actor_for_agent(other_agent_client.agent), f"t{i}") for i in range(2)]
    other = actor_for_agent(other_agent_client.agent)
    edge(other, theirs[0], theirs[1], "depends_on")
    edge(other, theirs[1], theirs[0], "depends_on")
    edges = list(GraphEdge.objects.filter(account_id=actor.account_id))
    for relation in ("depends_on", "knows"):
        for length in (2, 4, graph.MAX_CYCLE_LENGTH):
            expected = _reference_cycles(edges, relation, length)
            got = graph.cycles(
                account_id=actor.account_id, relation_type=relation, max_length=length
            )
            assert len(got) == len(expected)
            assert {tuple(c) for c in got} == expected, (relation, length)
    assert len(_reference_cycles(edges, "depends_on", graph.MAX_CYCLE_LENGTH)) > 3
    assert graph.cycles(account_id=actor.account_id, relation_type="depends_on", limit=2)
    assert len(graph.cycles(account_id=actor.account_id, relation_type="depends_on", limit=2)) == 2
    assert graph.cycles(account_id=other.account_id, relation_type="depends_on") == [
        [theirs[0].pk, theirs[1].pk]
    ]


# --- the API and tenancy ---------------------------------------------------------------------


def test_node_and_edge_api_round_trip(agent_client: AuthedAgent) -> None:
    client = agent_client.client
    created = client.post(
        NODES,
        {"name": "Lisbon", "entity_type": "place", "aliases": ["Lisboa", " lisboa "]},
        format="json",
    )
    assert created.status_code == 201, created.json()
    lisbon = created.json()
    assert lisbon["aliases"] == ["Lisboa"]
    again = client.post(NODES, {"name": "LISBON", "entity_type": "place"}, format="json")
    assert again.status_code == 409 and code(again) == "node_exists"
    porto = client.post(NODES, {"name": "Porto", "entity_type": "place"}, format="json").json()
    made = client.post(
        "/api/v1/graph/edges",
        {"source_id": lisbon["id"], "target_id": porto["id"], "relation_type": "near"},
        format="json",
    )
    assert made.status_code == 201, made.json()
    loop = client.post(
        "/api/v1/graph/edges",
        {"source_id": porto["id"], "target_id": porto["id"], "relation_type": "near"},
        format="json",
    )
    assert loop.status_code == 400 and code(loop) == "self_loop"
    detail = client.get(f"{NODES}/{lisbon['id']}").json()
    assert [e["target_id"] for e in detail["edges_out"]] == [porto["id"]]
    assert detail["edges_in"] == []
    assert client.get(f"{NODES}/{porto['id']}").json()["edges_in"][0]["source_id"] == lisbon["id"]
    patched = client.patch(f"{NODES}/{porto['id']}", {"description": "Port wine"}, format="json")
    assert patched.status_code == 200 and patched.json()["description"] == "Port wine"
    assert client.delete(f"/api/v1/graph/edges/{made.json()['id']}").status_code == 204
    assert client.delete(f"{NODES}/{porto['id']}").status_code == 204
    assert client.get(f"{NODES}/{porto['id']}").status_code == 404


def test_read_only_keys_cannot_write(make_agent_client: Any) -> None:
    reader = make_agent_client(scopes=("read",))
    response = reader.client.post(NODES, {"name": "x", "entity_type": "y"}, format="json")
    assert response.status_code == 403


def test_foreign_nodes_answer_like_missing_ones(
    actor: Actor, agent_client: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    mine = node(actor, "Mine")
    theirs = node(actor_for_agent(other_agent_client.agent), "Theirs")
    client = agent_client.client
    for url in (f"{NODES}/{theirs.pk}", f"{NODES}/{theirs.pk}/neighbors"):
        foreign, missing = client.get(url), client.get(url.replace(str(theirs.pk), "987654321"))
        assert foreign.status_code == missing.status_code == 404
        assert code(foreign) == code(missing) == "node_not_found"
    path = client.get("/api/v1/graph/path", {"from": mine.pk, "to": theirs.pk})
    assert path.status_code == 404 and code(path) == "node_not_found"
    assert client.patch(f"{NODES}/{theirs.pk}", {"name": "x"}, format="json").status_code == 404
    assert client.delete(f"{NODES}/{theirs.pk}").status_code == 404
    assert GraphNode.objects.filter(pk=theirs.pk, name="Theirs").exists()
    assert "Theirs" not in client.get(NODES).content.decode()
    assert "Theirs" not in client.get(NODES, {"query": "Theirs"}).content.decode()


def test_neighbours_are_cut_nearest_first_and_the_api_says_when(
    actor: Actor, agent_client: AuthedAgent
) -> None:
    hub = node(actor, "Hub")
    near = [node(actor, f"Near {i}") for i in range(3)]
    far = node(actor, "Far")
    for n in near:
        edge(actor, hub, n, "links_to")
    edge(actor, near[0], far, "links_to")
    found = graph.neighbours(node=hub, hops=2, limit=2)
    assert [n.node.name for n in found] == ["Near 0", "Near 1"]
    url = f"{NODES}/{hub.pk}/neighbors?hops=2&limit=3"
    body = agent_client.client.get(url).json()
    assert [r["node"]["name"] for r in body["results"]] == ["Near 0", "Near 1", "Near 2"]
    assert body["truncated"] is True
    body = agent_client.client.get(f"{NODES}/{hub.pk}/neighbors?hops=2").json()
    assert [r["hops"] for r in body["results"]] == [1, 1, 1, 2] and body["truncated"] is False
    assert agent_client.client.get(f"{NODES}/{hub.pk}/neighbors?limit=1001").status_code == 400
