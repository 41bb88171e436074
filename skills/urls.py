"""The skill graph's routes, mounted at /api/v1/ by config/urls.py (docs/skills.md, docs/api.md).

Skill ids are integers, so ``skills/discover``, ``skills/proposals`` and the other named
operations can never be taken for a skill, nor ``agents/rank`` for an agent."""

from django.urls import path

from skills.apis import catalog

urlpatterns = [
    path("skills", catalog.SkillListCreateApi.as_view(), name="skill-list"),
    path("skills/discover", catalog.SkillDiscoverApi.as_view(), name="skill-discover"),
    path("skills/<id:skill_id>", catalog.SkillDetailApi.as_view(), name="skill-detail"),
    path("skills/<id:skill_id>/context", catalog.SkillContextApi.as_view(), name="skill-context"),
]
