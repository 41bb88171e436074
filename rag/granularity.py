"""Multi-granularity ranking: a unit's group (its document, its conversation session) lifts it.

A space may name a group column (``SearchSpace.group_column``: a chunk's document, a memory
entry's thread). A group in which several candidates match is more likely about the query than
a lone match; so each candidate's fused score gets the space's ``group_weight`` x its group's
score (then divided by 1 + that weight, to stay from 0 to 1), the mean
of the group's best ``group_top`` candidate scores relative to the best group's. Units without a
group (an empty thread) are their own group. Measured in docs/benchmarks-log.md.

The other way round, ``group_diversify`` spreads the best candidates over their groups, for a
query that asks for several things found in several places (long-term search: questions such
as "What books has she read?", ``memory.search.session_diversity``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

from core.db_router import read_connection
from rag.spaces import SearchSpace, space_weights
from rag.tuning import TUNING

# Each space has its own weight (``SpaceWeights.group_weight``); ``TUNING.granularity`` holds
# the one that overrides them all (the benchmarks' sweeps), the group's top and the depth of a
# diversified ranking.


def group_weight(space: SearchSpace) -> float:
    """The weight of a space's group lift: 0 when the space has no groups."""
    if not space.group_column:
        return 0.0
    every = TUNING.granularity.group_weight_all
    return space_weights(space).group_weight if every is None else every


def unit_groups(*, space: SearchSpace, unit_ids: Sequence[int]) -> dict[int, Hashable]:
    """Each unit's group value (one indexed read by primary key)."""
    if not space.group_column or not unit_ids:
        return {}
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT id, {space.group_column} FROM {space.unit_table} "  # noqa: S608 - code
            "WHERE id = ANY(%s)",
            [list(unit_ids)],
        )
        return {int(unit_id): group for unit_id, group in cursor.fetchall() if group}


def group_lift(
    order: Sequence[tuple[int, float]],
    groups: Mapping[int, Hashable],
    *,
    weight: float,
    top: int | None = None,
) -> list[tuple[int, float]]:
    """``order`` (unit, score) re-scored with its groups' scores, best first; divided by
    ``1 + weight`` so that fused scores from 0 to 1 stay from 0 to 1."""
    if weight <= 0 or not order:
        return list(order)
    top = TUNING.granularity.group_top if top is None else top
    members: dict[Hashable, list[float]] = {}
    for unit_id, score in order:
        members.setdefault(_group(groups, unit_id), []).append(score)
    group_score = {
        key: math.fsum(sorted(scores, reverse=True)[:top]) / top for key, scores in members.items()
    }
    best = max(group_score.values()) or 1.0
    lifted = [
        (
            unit_id,
            (score + weight * group_score[_group(groups, unit_id)] / best) / (1 + weight),
        )
        for unit_id, score in order
    ]
    lifted.sort(key=lambda pair: (-pair[1], pair[0]))
    return lifted


def group_diversify(
    order: Sequence[tuple[int, float]],
    groups: Mapping[int, Hashable],
    *,
    weight: float,
    depth: int | None = None,
) -> list[tuple[int, float]]:
    """``order`` (unit, score, best first) with its first ``depth`` units spread over their
    groups: picked greedily, each candidate's score counts ``(1 - weight) ** n``, n the units
    of its group picked before it. A question asking for several things ("What books has she
    read?") finds them in several sessions; a second match from the same session then ranks
    below a first one from another session unless it scores ``1 / (1 - weight)`` times more.
    Only the order changes: the ranks keep their scores (the best still 1), so one group (a
    single thread) leaves the ranking exactly as it was. ``depth``:
    ``TUNING.granularity.diversity_depth``."""
    if weight <= 0 or len(order) < 2:
        return list(order)
    depth = TUNING.granularity.diversity_depth if depth is None else depth
    head = [(unit_id, score, _group(groups, unit_id)) for unit_id, score in order[:depth]]
    scores = sorted((score for _, score, _ in head), reverse=True)
    picked: dict[Hashable, int] = {}
    spread: list[int] = []
    while head:
        # The first of equals: the earlier rank wins a tie.
        best = max(
            range(len(head)),
            key=lambda i: head[i][1] * (1 - weight) ** picked.get(head[i][2], 0),
        )
        unit_id, _, group = head.pop(best)
        picked[group] = picked.get(group, 0) + 1
        spread.append(unit_id)
    return [*zip(spread, scores, strict=True), *order[depth:]]


def _group(groups: Mapping[int, Hashable], unit_id: int) -> Hashable:
    """A unit's group; a unit without one is its own."""
    return groups.get(unit_id, ("unit", unit_id))
