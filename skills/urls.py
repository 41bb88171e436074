"""The skill graph's routes, mounted at /api/v1/ by config/urls.py (docs/skills.md, docs/api.md).

Skill ids are integers, so ``skills/discover``, ``skills/proposals`` and the other named
operations can never be taken for a skill, nor ``agents/rank`` for an agent."""

from django.urls import path

from skills.apis import catalog, conflicts, learning, proposals, usage, versions

urlpatterns = [
    path("skills", catalog.SkillListCreateApi.as_view(), name="skill-list"),
    path("skills/discover", catalog.SkillDiscoverApi.as_view(), name="skill-discover"),
    path("skills/<id:skill_id>", catalog.SkillDetailApi.as_view(), name="skill-detail"),
    path("skills/<id:skill_id>/context", catalog.SkillContextApi.as_view(), name="skill-context"),
    path("skills/usage", usage.UsageRecordApi.as_view(), name="skill-usage"),
    path("skills/conflicts", conflicts.ConflictListApi.as_view(), name="skill-conflicts"),
    path("skills/proposals", proposals.ProposalCreateApi.as_view(), name="skill-proposals"),
    path(
        "skills/proposals/<id:proposal_id>",
        proposals.ProposalDetailApi.as_view(),
        name="skill-proposal",
    ),
    path(
        "skills/proposals/<id:proposal_id>/submit",
        proposals.ProposalSubmitApi.as_view(),
        name="skill-proposal-submit",
    ),
    path(
        "skills/<id:skill_id>/versions", versions.SkillVersionsApi.as_view(), name="skill-versions"
    ),
    path(
        "skills/<id:skill_id>/versions/<id:version_id>/activate",
        versions.SkillVersionActivateApi.as_view(),
        name="skill-version-activate",
    ),
    path("skills/<id:skill_id>/traffic", versions.SkillTrafficApi.as_view(), name="skill-traffic"),
    path("agents/rank", learning.AgentRankApi.as_view(), name="agents-rank"),
    path(
        "agents/<id:agent_id>/learning-profile",
        learning.AgentLearningProfileApi.as_view(),
        name="agent-learning-profile",
    ),
    path("tasks/assign", learning.TaskAssignApi.as_view(), name="tasks-assign"),
    path("tasks/<id:task_id>/complete", learning.TaskCompleteApi.as_view(), name="task-complete"),
]
