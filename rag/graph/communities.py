"""Reads of the knowledge graph's communities (``rag.graph.services.communities`` computes them):
an actor's communities, newest run's, by level and size, with their most central members.

Derived data keeps the visibility of its source (``rag.visibility``): an actor sees a
community when it sees one of its members at least, counts only the members it sees
(``visible_size``) and lists only those; titles and summaries are written from account-wide
members alone."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Prefetch, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from core.actors import Actor
from core.errors import NotFound
from rag.models import GraphCommunity, GraphCommunityMember, GraphNode
from rag.visibility import Visibility, visibility_of

MEMBERS_SHOWN = 50


def _visible_members(visible: Visibility) -> Q:
    """Members (of a GraphCommunityMember queryset) whose node ``visible`` may see."""
    if visible.everything:
        return Q()
    nodes = GraphNode.objects.filter(visible.node_q()).filter(pk=OuterRef("node_id"))
    return Q(Exists(nodes))


def _shown(visible: Visibility) -> Prefetch[Any]:
    """Each community's ``MEMBERS_SHOWN`` most central members ``visible`` may see, in one
    query for a page of communities (``shown_members``)."""
    members = (
        GraphCommunityMember.objects.filter(_visible_members(visible))
        .annotate(
            place=Window(
                RowNumber(),
                partition_by=[F("community_id")],
                order_by=[F("centrality").desc(), F("node_id").asc()],
            )
        )
        .filter(place__lte=MEMBERS_SHOWN)
        .select_related("node")
        .defer("node__embedding")
        .order_by("-centrality", "node_id")
    )
    return Prefetch("members", queryset=members, to_attr="shown_members")


def community_list(*, actor: Actor, level: int | None = None) -> QuerySet[GraphCommunity]:
    """The actor's communities (``communities_seen``)."""
    communities = GraphCommunity.objects.for_actor(actor).order_by("level", "-size", "number", "id")
    if level is not None:
        communities = communities.filter(level=level)
    return communities_seen(communities, visibility_of(actor))


def communities_seen(
    communities: QuerySet[GraphCommunity], visible: Visibility
) -> QuerySet[GraphCommunity]:
    """``communities`` as ``visible`` sees them: with ``visible_size`` (the members it may see)
    and ``shown_members`` (the most central of them); those with no member it may see left
    out."""
    communities = communities.prefetch_related(_shown(visible))
    if visible.everything:
        return communities.annotate(visible_size=F("size"))
    seen = GraphCommunityMember.objects.filter(community=OuterRef("pk")).filter(
        _visible_members(visible)
    )
    counted = (
        GraphCommunityMember.objects.filter(community=OuterRef("pk"))
        .filter(_visible_members(visible))
        .order_by()
        .values("community")
        .annotate(n=Count("*"))
        .values("n")
    )
    return communities.filter(Exists(seen)).annotate(visible_size=counted)


def community_get(*, actor: Actor, community_id: int) -> GraphCommunity:
    found = community_list(actor=actor).filter(pk=community_id).first()
    if found is None:
        raise NotFound("No such graph community.", code="community_not_found")
    return found


def members_of(
    community: GraphCommunity, limit: int = MEMBERS_SHOWN, visible: Visibility | None = None
) -> list[GraphCommunityMember]:
    """The community's most central members that ``visible`` may see (None: all), their nodes
    loaded without embeddings."""
    members = GraphCommunityMember.objects.filter(community=community)
    if visible is not None:
        members = members.filter(_visible_members(visible))
    return list(
        members.select_related("node")
        .defer("node__embedding")
        .order_by("-centrality", "node_id")[:limit]
    )


__all__ = ["MEMBERS_SHOWN", "communities_seen", "community_get", "community_list", "members_of"]
