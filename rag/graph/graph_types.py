"""What graph retrieval returns (``rag.graph.retrieval``): the seeds, the nodes the walk kept,
the communities, and the hits with their graph explanation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rag.search import RankedHit, Ranking

# How a query found a seed node (``Seed.match``).
SEED_MATCHES = ("name", "alias", "embedding", "passage")


@dataclass(frozen=True)
class Seed:
    node_id: int
    name: str
    entity_type: str
    similarity: float
    # How the query found it: "name" / "alias" (a span of the query is its name or an alias),
    # "embedding" (nearest the query's vector), "passage" (mentioned by a candidate passage).
    match: str = "embedding"
    mention_count: int = 0


@dataclass
class Reach:
    """A node the walk kept: the seed it came from, its hops, score and path from the seed
    (``[(node name, relation type that reached it)]``, the seed first with relation "")."""

    node_id: int
    name: str
    entity_type: str
    seed_id: int
    hops: int
    score: float
    path: list[tuple[str, str]]
    mention_count: int = 0
    community_id: int | None = None


@dataclass(frozen=True)
class CommunityRef:
    id: int
    level: int
    title: str
    summary: str
    size: int
    score: float
    node_ids: tuple[int, ...]


@dataclass
class GraphHit(RankedHit):
    graph_rank: int | None = None
    graph_score: float | None = None
    graph: dict[str, Any] | None = None

    def stages(self) -> dict[str, Any]:
        return {
            **super().stages(),
            "graph_rank": self.graph_rank,
            "graph_score": self.graph_score,
            "graph": {"rank": self.graph_rank, "score": self.graph_score, **self.graph}
            if self.graph is not None
            else None,
        }


@dataclass
class GraphRanking(Ranking):
    seeds: list[Seed] = field(default_factory=list)
    communities: list[CommunityRef] = field(default_factory=list)
    nodes: dict[int, Reach] = field(default_factory=dict)
    # Whether the graph's order is the ranking (a relation-chain question naming a node:
    # ``rag.graph.staged``), not one stage fused with others.
    led: bool = False
    # Mentions from which a node is a hub (``retrieval.hub_limit``) in the searched scopes.
    hub_limit: int = 0
