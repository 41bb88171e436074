"""The graph's entities named by search hits, for agentic RAG's bridge entities
(``rag.agentic.bridge``): which nodes each unit mentions, with their names and types,
as the searcher may see them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from rag.models import GraphMention, GraphNode
from rag.spaces import SearchSpace
from rag.tuning import TUNING
from rag.visibility import Visibility


@dataclass(frozen=True)
class MentionedEntity:
    node_id: int
    name: str
    entity_type: str
    salience: float
    aliases: tuple[str, ...] = ()


def unit_entities(
    *, space: SearchSpace, unit_ids: Sequence[int], visible: Visibility
) -> dict[int, list[MentionedEntity]]:
    """The active nodes each unit mentions (most salient first, at most
    ``TUNING.agentic.unit_entities``), of the searcher's accounts only and only those ``visible``
    may see: a node of another account, or one only a private conversation the searcher may not
    read names, is never returned."""
    if not unit_ids:
        return {}
    mentions = (
        GraphMention.objects.filter(
            space=space.name,
            unit_id__in=list(unit_ids),
            account_id__in=list(visible.account_ids),
        )
        .filter(visible.mention_q())
        .order_by("unit_id", "-salience", "node_id")
        .values_list("unit_id", "node_id", "salience")
    )
    rows = list(mentions)
    node_ids = {node_id for _, node_id, _ in rows}
    nodes = {
        pk: (name, entity_type, tuple(aliases or ()))
        for pk, name, entity_type, aliases in GraphNode.objects.filter(
            pk__in=node_ids, account_id__in=list(visible.account_ids), status="active"
        )
        .filter(visible.node_q())
        .values_list("pk", "name", "entity_type", "aliases")
    }
    found: dict[int, list[MentionedEntity]] = defaultdict(list)
    for unit_id, node_id, salience in rows:
        if node_id in nodes and len(found[unit_id]) < TUNING.agentic.unit_entities:
            name, entity_type, aliases = nodes[node_id]
            found[unit_id].append(MentionedEntity(node_id, name, entity_type, salience, aliases))
    return dict(found)
