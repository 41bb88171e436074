"""Reads of the knowledge graph's communities (``rag.services.communities`` computes them):
an actor's communities, newest run's, by level and size, with their most central members."""

from __future__ import annotations

from django.db.models import QuerySet

from core.actors import Actor
from core.errors import NotFound
from rag.models import GraphCommunity, GraphCommunityMember

MEMBERS_SHOWN = 50


def community_list(*, actor: Actor, level: int | None = None) -> QuerySet[GraphCommunity]:
    communities = GraphCommunity.objects.for_actor(actor).order_by("level", "-size", "number", "id")
    if level is not None:
        communities = communities.filter(level=level)
    return communities


def community_get(*, actor: Actor, community_id: int) -> GraphCommunity:
    found = community_list(actor=actor).filter(pk=community_id).first()
    if found is None:
        raise NotFound("No such graph community.", code="community_not_found")
    return found


def members_of(community: GraphCommunity, limit: int = MEMBERS_SHOWN) -> list[GraphCommunityMember]:
    """The community's most central members (their nodes loaded, without embeddings)."""
    return list(
        GraphCommunityMember.objects.filter(community=community)
        .select_related("node")
        .defer("node__embedding")
        .order_by("-centrality", "node_id")[:limit]
    )


__all__ = ["MEMBERS_SHOWN", "community_get", "community_list", "members_of"]
