"""Communities of an account's knowledge graph: Leiden (igraph + leidenalg) over its weighted
edges, seeded so that one graph gives the same communities every run, at ``levels`` levels
(level 0 over the whole graph; each community of at least ``2 x TUNING.walk.community_min_size``
nodes is split again at the next level). A community keeps its members (most central first: weighted
degree inside it) and a summary: the model's when one is configured, otherwise extractive
(its most central names, and the sentences of the chunks mentioning most of its members that
name the most of them). Communities smaller than ``TUNING.walk.community_min_size`` are not kept.

Derived data keeps the visibility of its source (``rag.visibility``): Leiden runs over the
whole graph, but a community's title and summary are written from its *account-wide* members
only (nodes made by an account-wide source or mentioned by a unit of an open space, such as a
document's chunk) and from chunks' sentences, so that a stored summary never names a node
that only a private conversation taught; readers see the members they may see, and a
community none of whose members they see is not theirs (``rag.graph.communities``).

``communities_compute`` computes outside any transaction (reads, Leiden, summaries with their
model calls), then swaps the account's communities in one: readers see the old set or the new,
never a mix. The periodic job ``rag.graph_communities`` runs it for every account whose graph
changed since its communities were computed; ``POST /api/v1/rag/graph/communities`` and
``graph_rebuild --communities`` run it on demand.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max

from core.actors import MANAGE_KNOWLEDGE_BASES, Actor
from core.audit import audit_record
from core.llm import LLMError, get_llm_provider
from rag.models import GraphCommunity, GraphCommunityMember, GraphEdge, GraphNode
from rag.tuning import TUNING
from rag.visibility import open_spaces

if TYPE_CHECKING:
    import igraph

logger = logging.getLogger("engram.rag")

DEFAULT_LEVELS = 2
MAX_LEVELS = 3
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass
class Found:
    level: int
    node_ids: list[int]
    centrality: dict[int, float]
    parent: int | None = None  # index in the list of the level above
    title: str = ""
    summary: str = ""
    method: str = "extractive"


@dataclass
class CommunityRun:
    account_id: int
    nodes: int = 0
    edges: int = 0
    seed: int = 0
    communities: dict[int, int] = field(default_factory=dict)  # level -> count
    modularity: float | None = None
    summaries: str = "extractive"

    def as_counts(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "edges": self.edges,
            "seed": self.seed,
            "communities": sum(self.communities.values()),
            "levels": {str(k): v for k, v in sorted(self.communities.items())},
            "modularity": self.modularity,
            "summaries": self.summaries,
        }


def _graph(account_id: int) -> tuple[igraph.Graph, list[int]]:
    """The account's active nodes joined by edges of positive weight (parallel edges and both
    directions summed), as an undirected weighted igraph."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT least(e.source_id, e.target_id), greatest(e.source_id, e.target_id),
                   sum(e.weight)
            FROM rag_graphedge e
            JOIN rag_graphnode s ON s.id = e.source_id AND s.status = 'active'
            JOIN rag_graphnode t ON t.id = e.target_id AND t.status = 'active'
            WHERE e.account_id = %s AND e.weight > 0
            GROUP BY 1, 2 ORDER BY 1, 2
            """,
            [account_id],
        )
        rows = cursor.fetchall()
    ids = sorted({a for a, _, _ in rows} | {b for _, b, _ in rows})
    index = {node_id: i for i, node_id in enumerate(ids)}
    import igraph  # at use: importing it costs every process's start-up, few compute communities

    graph = igraph.Graph(n=len(ids), edges=[(index[a], index[b]) for a, b, _ in rows])
    graph.es["weight"] = [float(w) for _, _, w in rows]
    return graph, ids


def leiden(graph: igraph.Graph, seed: int) -> tuple[list[list[int]], float]:
    """Leiden's modularity partition of ``graph`` (vertex indices per community, largest
    first) and its modularity; the same graph and seed give the same partition."""
    if graph.vcount() == 0:
        return [], 0.0
    import leidenalg

    partition = leidenalg.find_partition(
        graph,
        leidenalg.ModularityVertexPartition,
        weights="weight" if graph.ecount() else None,
        n_iterations=-1,
        seed=seed,
    )
    groups = sorted((sorted(c) for c in partition), key=lambda c: (-len(c), c))
    return groups, float(partition.modularity)


def _centrality(graph: igraph.Graph, members: Sequence[int]) -> dict[int, float]:
    """Each member's weighted degree inside the community (igraph's strength of the induced
    subgraph, whose vertices keep the members' sorted order)."""
    ordered = sorted(members)
    sub = graph.induced_subgraph(ordered)
    strength = sub.strength(weights="weight" if sub.ecount() else None)
    return {vertex: float(s) for vertex, s in zip(ordered, strength, strict=True)}


def detect(
    graph: igraph.Graph, ids: list[int], *, seed: int, levels: int
) -> tuple[list[Found], float]:
    """The communities of every level (at least ``TUNING.walk.community_min_size`` nodes each)."""
    found: list[Found] = []
    groups, modularity = leiden(graph, seed)
    current: list[tuple[int | None, list[int]]] = [(None, g) for g in groups]
    for level in range(levels):
        following: list[tuple[int | None, list[int]]] = []
        for parent, members in current:
            if len(members) < TUNING.walk.community_min_size:
                continue
            strength = _centrality(graph, members)
            order = sorted(members, key=lambda v: (-strength[v], ids[v]))
            found.append(
                Found(
                    level=level,
                    node_ids=[ids[v] for v in order],
                    centrality={ids[v]: strength[v] for v in members},
                    parent=parent,
                )
            )
            if level + 1 < levels and len(members) >= 2 * TUNING.walk.community_min_size:
                sub = graph.induced_subgraph(members)
                parts, _ = leiden(sub, seed)
                if len(parts) > 1:
                    following += [(len(found) - 1, [members[v] for v in p]) for p in parts]
        current = following
        if not current:
            break
    return found, modularity


def _public_names(node_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """The names and types of the account-wide nodes among ``node_ids``: made by an
    account-wide source, or mentioned by a unit of an open space. A node only private sources
    know is left out: summaries are read by the whole account."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT n.id, n.name, n.entity_type FROM rag_graphnode n
            WHERE n.id = ANY(%s) AND (n.derived_scope_id IS NULL OR EXISTS (
                SELECT FROM rag_graphmention m
                WHERE m.node_id = n.id AND m.space = ANY(%s::varchar[])))
            """,
            [list(node_ids), open_spaces()],
        )
        return {pk: (name, kind) for pk, name, kind in cursor.fetchall()}


def _sentences(members: Sequence[int], names: dict[int, tuple[str, str]]) -> list[str]:
    """The sentences of the chunks mentioning most members that name the most of them."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.text FROM (
                SELECT m.unit_id, count(*) AS n FROM rag_graphmention m
                WHERE m.node_id = ANY(%s) AND m.space = 'chunks'
                GROUP BY m.unit_id ORDER BY n DESC, m.unit_id LIMIT 5
            ) top JOIN rag_chunk c ON c.id = top.unit_id ORDER BY top.n DESC, c.id
            """,
            [list(members)],
        )
        texts = [row[0] for row in cursor.fetchall()]
    lowered = [names[m][0].lower() for m in members if m in names]
    scored: list[tuple[int, int, str]] = []
    for order, text in enumerate(texts):
        for sentence in _SENTENCE.split(text):
            sentence = " ".join(sentence.split())
            hits = sum(1 for name in lowered if name and name in sentence.lower())
            if hits and 20 <= len(sentence) <= 400:
                scored.append((-hits, order, sentence))
    return [s for _, _, s in sorted(scored)[: TUNING.communities.summary_sentences]]


def _summarise(community: Found, names: dict[int, tuple[str, str]], use_llm: bool) -> None:
    """Title and summary from the community's account-wide members (``names`` holds only
    those); none when it has none."""
    public = [n for n in community.node_ids if n in names]
    top = [names[n] for n in public[: TUNING.communities.summary_members]]
    if not top:
        community.title, community.summary, community.method = "", "", "extractive"
        return
    community.title = ", ".join(name for name, _ in top[:3])[:300]
    listed = "; ".join(f"{name} ({kind})" for name, kind in top)
    sentences = _sentences(public[: TUNING.communities.summary_members], names)
    extractive = f"{len(public)} members, most central: {listed}."
    if sentences:
        extractive += " " + " ".join(sentences)
    community.summary, community.method = extractive[:4000], "extractive"
    if not use_llm:
        return
    provider = get_llm_provider()
    try:
        answer = provider.complete_json(
            f"Members (most central first): {listed}\n\nPassages:\n" + "\n".join(sentences),
            schema={
                "type": "object",
                "properties": {
                    "title": {"type": "string", "maxLength": 120},
                    "summary": {"type": "string", "maxLength": 2000},
                },
                "required": ["title", "summary"],
            },
            system="These entities form a community of a knowledge graph. Give it a short "
            "title and summarise in two or three sentences what joins them, using only the "
            "names and passages given.",
            max_tokens=400,
        )
    except LLMError as exc:
        logger.warning("community summary: the model failed (%s); extractive kept", exc)
        return
    title, summary = answer.get("title"), answer.get("summary")
    if isinstance(title, str) and title.strip() and isinstance(summary, str) and summary.strip():
        community.title = " ".join(title.split())[:300]
        community.summary = summary.strip()[:4000]
        community.method = f"llm:{provider.model_id}"


def communities_compute(
    *,
    account_id: int,
    seed: int | None = None,
    levels: int = DEFAULT_LEVELS,
    dry_run: bool = False,
    actor: Actor | None = None,
) -> CommunityRun:
    """Detect and store the account's communities (see the module's docstring). ``actor``:
    a person or agent asking (operators: 403 ``role_required`` otherwise); None for the job."""
    if actor is not None:
        actor.require(account_id, MANAGE_KNOWLEDGE_BASES)
    seed = settings.RAG_GRAPH_COMMUNITY_SEED if seed is None else seed
    levels = max(1, min(levels, MAX_LEVELS))
    graph, ids = _graph(account_id)
    run = CommunityRun(account_id=account_id, nodes=len(ids), edges=graph.ecount(), seed=seed)
    found, modularity = detect(graph, ids, seed=seed, levels=levels)
    run.modularity = round(modularity, 6) if ids else None
    for community in found:
        run.communities[community.level] = run.communities.get(community.level, 0) + 1
    if dry_run:
        return run
    names = _public_names([n for c in found for n in c.node_ids])
    use_llm = not get_llm_provider().model_id.startswith("offline:")
    for number, community in enumerate(found):
        _summarise(community, names, use_llm and number < TUNING.communities.llm_summary_limit)
    run.summaries = " + ".join(sorted({c.method for c in found})) or "extractive"
    _swap(account_id, found, seed, run.modularity)
    if actor is not None:
        audit_record(
            actor=actor,
            action="rag.graph.communities.compute",
            account_id=account_id,
            target=None,
            changes=run.as_counts(),
        )
    return run


def _swap(account_id: int, found: list[Found], seed: int, modularity: float | None) -> None:
    with transaction.atomic():
        GraphCommunity.objects.filter(account_id=account_id, parent__isnull=False).delete()
        GraphCommunity.objects.filter(account_id=account_id).delete()
        made: list[GraphCommunity] = []
        numbers: dict[int, int] = defaultdict(int)
        for community in found:
            parent = made[community.parent] if community.parent is not None else None
            row = GraphCommunity.objects.create(
                account_id=account_id,
                level=community.level,
                number=numbers[community.level],
                parent=parent,
                size=len(community.node_ids),
                title=community.title,
                summary=community.summary,
                summary_method=community.method,
                seed=seed,
                modularity=modularity,
            )
            numbers[community.level] += 1
            made.append(row)
        live = set(
            GraphNode.objects.filter(pk__in=[n for c in found for n in c.node_ids]).values_list(
                "pk", flat=True
            )
        )  # deleted meanwhile: not a member
        GraphCommunityMember.objects.bulk_create(
            [
                GraphCommunityMember(
                    community=row,
                    node_id=node_id,
                    account_id=account_id,
                    level=community.level,
                    centrality=community.centrality.get(node_id, 0.0),
                )
                for row, community in zip(made, found, strict=True)
                for node_id in community.node_ids
                if node_id in live
            ],
            batch_size=5000,
        )


def communities_due(*, dry_run: bool = False, limit: int = 100) -> dict[str, int]:
    """The periodic job: accounts whose edges changed after their communities were computed
    (or that have edges and no communities), recomputed."""
    changed = dict(
        GraphEdge.objects.values("account_id")
        .annotate(last=Max("updated_at"))
        .values_list("account_id", "last")
    )
    computed = dict(
        GraphCommunity.objects.values("account_id")
        .annotate(last=Max("created_at"))
        .values_list("account_id", "last")
    )
    due = sorted(
        account for account, last in changed.items()
        if account not in computed or computed[account] < last
    )[:limit]  # fmt: skip
    if dry_run:
        return {"due": len(due), "communities": 0}
    made = 0
    for account_id in due:
        run = communities_compute(account_id=account_id)
        made += sum(run.communities.values())
    return {"due": len(due), "communities": made}
