"""Skills as a search space of the one engine (``rag.spaces``), and what a skill is found by."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from rag.spaces import RebuildRow, SearchSpace

# How much of a procedure is indexed and embedded (the start says what the skill does).
PROCEDURE_CHARS = 2000


def skill_text(
    *, name: str, category: str, description: str, tags: Sequence[str], procedure: str
) -> str:
    """The text a skill is indexed (BM25) and embedded as."""
    parts = [
        name,
        category.replace("_", " "),
        description,
        " ".join(tags),
        procedure[:PROCEDURE_CHARS],
    ]
    return "\n".join(part for part in parts if part)


def text_checksum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _skill_rebuild_rows(scope_id: int) -> Iterable[RebuildRow]:
    from skills.models import Skill

    rows = Skill.objects.filter(scope_id=scope_id).values_list(
        "id", "name", "category", "description", "tags", "procedure"
    )
    for skill_id, name, category, description, tags, procedure in rows.iterator(chunk_size=2000):
        text = skill_text(
            name=name, category=category, description=description, tags=tags, procedure=procedure
        )
        yield skill_id, (), text


SKILLS = SearchSpace(
    name="skills",
    unit_table="skills_skill",
    scope_column="scope_id",
    scope_table="skills_skillscope",
    scope_count_column="skill_count",
    scope_terms_column="total_terms",
    posting_table="skills_skillposting",
    posting_unit_column="skill_id",
    posting_length_column="skill_length",
    term_table="skills_skillterm",
    # Filters are conditions on the skill (u): status, category.
    posting_filter_join="JOIN skills_skill u ON u.id = p.skill_id",
    rebuild_rows=_skill_rebuild_rows,
)
