"""The relation types other apps give the edges they own, and the directions a walk follows.

Each relation type is named here once; the app that writes the edges and every reader import
the name (a typo would be a relation nobody walks). Edges made through the graph API carry any
relation type their author chooses.
"""

from __future__ import annotations

from typing import Literal

from core.errors import ValidationFailed

# skills: a skill's node -> the node of a skill it needs (``metadata.version``: a requirement).
DEPENDS_ON = "depends_on"
# content: a page's node -> the node of a page or article its text links to (``metadata``: the
# link as written, its display text, what it names, how many times).
REFERENCES = "references"

# The graph built from text: two entities of one unit that no extractor's relation joins
# (``rag.graph.services.index``); typed relations weigh more in a walk (``rag.graph.ppr``).
COOCCURS = "co_occurs"

# Which edges a walk follows from a node: ``out`` from their source to their target, ``in``
# from their target to their source, ``both`` either way. A bidirectional edge is followed
# either way in every direction.
Direction = Literal["out", "in", "both"]
OUT: Direction = "out"
IN: Direction = "in"
BOTH: Direction = "both"
DIRECTIONS: tuple[Direction, ...] = (OUT, IN, BOTH)


def direction_check(direction: str) -> Direction:
    """``direction`` as a ``Direction``; 400 ``invalid_direction`` for anything else."""
    for known in DIRECTIONS:
        if direction == known:
            return known
    raise ValidationFailed(
        f"direction must be one of {', '.join(DIRECTIONS)}.",
        code="invalid_direction",
        details={"direction": direction, "allowed": list(DIRECTIONS)},
    )
