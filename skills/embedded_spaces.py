"""skills' embedded table for index generations (``core.embeddings.generations``)."""

from __future__ import annotations

from collections.abc import Sequence

from core.embeddings.generations import EmbeddedTable, register


def skill_texts(ids: Sequence[int]) -> dict[int, str]:
    from skills.models import Skill
    from skills.services.indexing import skill_embedding_text

    return {
        skill.pk: skill_embedding_text(skill) for skill in Skill.objects.filter(pk__in=list(ids))
    }


def register_tables() -> None:
    register(EmbeddedTable("skills", "skills_skill", "skills", skill_texts))
