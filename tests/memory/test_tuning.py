"""memory's tunables (memory/tuning.py) are read at call time: an override through the registry
(``core.tuning.override``) changes what the code does for the block, and the defaults are back
after it. docs/tuning.md and the registry's own rules are tests/test_docs_tuning.py's."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from core import tuning
from memory.context import structuring
from memory.context.assembly import assemble, floors
from memory.long_term.relevance import effective_relevance_score
from memory.spaces import MEMORY_ENTRIES
from memory.tuning import TUNING
from rag.spaces import space_weights


def _skill_hit(skill_id: int, similarity: float) -> SimpleNamespace:
    # The vector stage's similarity is on the hit: the floor reads nothing more.
    return SimpleNamespace(
        skill=SimpleNamespace(pk=skill_id), retrieval={"vector_score": similarity}
    )


def _kept(hits: list[SimpleNamespace]) -> list[int]:
    vector = np.zeros(4, dtype=np.float32)
    return [hit.skill.pk for hit, _ in floors.skills_on_topic(hits, vector)]  # type: ignore[arg-type]


def test_a_floor_override_changes_what_is_kept_and_is_undone() -> None:
    hits = [_skill_hit(1, 0.25), _skill_hit(2, 0.6)]
    assert TUNING.floors.skill_min_similarity == 0.3
    assert _kept(hits) == [2]
    with tuning.override("memory.floors.skill_min_similarity", 0.2):
        assert _kept(hits) == [1, 2]
    with tuning.override("memory.floors.skill_min_similarity", None):
        assert _kept(hits) == [1, 2]
    assert _kept(hits) == [2]
    assert tuning.get("memory.floors.skill_min_similarity") == 0.3


def test_weights_shares_and_thresholds_follow_an_override() -> None:
    components = {"similarity": 1.0, "importance": 0.0, "confidence": 0.0, "recency": 0.0}
    text = "Deploys happen on Fridays."  # three content words: just enough to remember
    assert effective_relevance_score(components) == 0.7
    assert space_weights(MEMORY_ENTRIES).late_weight == 1.25
    assert assemble.shares_of("conversation")["history"] == 0.7
    assert structuring.refusal(text) == ("", "")
    with tuning.override(
        {
            "memory.relevance.similarity": 0.5,
            "memory.spaces.entries.late_weight": 0,
            "memory.shares.conversation.history": 0.5,
            "memory.structuring.min_content_terms": 4,
        }
    ):
        assert effective_relevance_score(components) == 0.5
        assert space_weights(MEMORY_ENTRIES).late_weight == 0.0
        assert space_weights(MEMORY_ENTRIES).group_weight == 0.3  # its sibling untouched
        assert assemble.shares_of("conversation")["history"] == 0.5
        assert assemble.shares_of("learning")["history"] == 0.25  # another task type's
        assert structuring.refusal(text)[0] == structuring.TRIVIAL
    assert effective_relevance_score(components) == 0.7
    assert space_weights(MEMORY_ENTRIES).late_weight == 1.25
    assert assemble.shares_of("conversation")["history"] == 0.7
    assert structuring.refusal(text) == ("", "")


def test_llm_input_chars_is_defined_once() -> None:
    from memory.conversations import summaries
    from memory.conversations.extraction import llm

    assert not hasattr(summaries, "LLM_INPUT_CHARS") and not hasattr(llm, "LLM_INPUT_CHARS")
    assert TUNING.llm.input_chars == 24_000
