"""Proposals: research and propose (offline and with an LLM), the state machine (every allowed
and every forbidden transition), approval with sub-proposals, rejection, creating the skill,
the open-proposal constraint, audit, expiry, the API."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

import core.llm
from core.actors import Actor
from core.errors import Conflict, PermissionDenied, ValidationFailed
from core.models import AuditEvent, JobRun
from rag.models import GraphEdge, GraphNode
from skills import tasks
from skills.models import Skill, SkillProposal, SkillVersion
from skills.selectors import catalog as catalog_selectors
from skills.selectors import proposals as selectors
from skills.services import proposals as services
from tests.conftest import AuthedAgent
from tests.skills.conftest import code
from tests.support.openai_standin import openai_standin_fixture  # noqa: F401

pytestmark = pytest.mark.django_db
URL = "/api/v1/skills/proposals"
Status = SkillProposal.Status
STATUSES = list(Status.values)


def propose(actor: Actor, name: str, **kwargs: Any) -> SkillProposal:
    return services.research_and_propose(actor=actor, name=name, **kwargs)


def snapshot() -> Any:
    return (
        list(SkillProposal.objects.order_by("pk").values_list("pk", "status", "decision_reason")),
        Skill.objects.count(),
        GraphEdge.objects.count(),
    )


# --- research and propose --------------------------------------------------------------------


def test_research_infers_the_category_and_drafts_offline_from_what_search_found(
    actor: Actor,
    make_skill: Callable[..., Skill],
    django_capture_on_commit_callbacks: Any,
) -> None:
    from rag import services as rag_services

    make_skill("Helm chart release", description="Release helm charts to Kubernetes clusters.")
    kb = rag_services.knowledge_base_create(actor=actor, name="Ops")
    with django_capture_on_commit_callbacks(execute=True):
        rag_services.document_create(
            actor=actor,
            kb=kb,
            data=b"# Kubernetes\n\nDeploy with kubectl rollout and watch the pods.",
            filename="k8s.md",
            title="Kubernetes deploy guide",
        )
    proposal = propose(
        actor,
        "Kubernetes deployment automation",
        description="Deploy services to Kubernetes and roll back on failure.",
        dependencies=["Container build"],
    )
    assert proposal.status == "draft" and proposal.drafted_by == "offline"
    assert proposal.category == "deployment"
    assert 0.5 < proposal.confidence < 1
    assert proposal.research["skills"][0]["name"] == "Helm chart release"
    assert proposal.research["documents"][0]["title"] == "Kubernetes deploy guide"
    assert "Helm chart release (deployment)" in proposal.procedure
    assert "Kubernetes deploy guide" in proposal.procedure
    assert "Container build" in proposal.procedure
    again = services.offline_procedure(
        name=proposal.name,
        description=proposal.description,
        dependencies=proposal.dependencies,
        found=services.Research(**proposal.research),
    )
    assert again == proposal.procedure  # deterministic
    assert proposal.expires_at is not None and proposal.proposed_by_agent_id == actor.agent_id
    event = AuditEvent.objects.get(action="skills.proposal.create")
    assert event.agent_id == actor.agent_id and event.changes["category"] == "deployment"


def test_category_inference_worked_example() -> None:
    # "Write unit tests" votes testing twice (test, unit) and code_generation once (write);
    # a related testing skill with score 0.8 adds 0.8: testing 2.8 of 3.8 votes.
    category, confidence = services.category_infer(
        name="Write unit tests",
        description="",
        related=[{"category": "testing", "score": 0.8}],
    )
    assert category == "testing"
    assert confidence == pytest.approx(round(2.8 / 4.8, 4))
    assert services.category_infer(name="Zyxxy", description="", related=[]) == ("general", 0.0)


def test_an_llm_drafts_the_procedure_when_configured(
    actor: Actor, openai_standin: Any, settings: Any
) -> None:
    settings.LLM_PROVIDER, settings.LLM_BASE_URL, settings.LLM_MODEL = (
        "openai",
        openai_standin.base_url,
        "drafter",
    )
    core.llm.reset_llm_provider()
    try:
        openai_standin.reply_with("1. Open the runbook.\n2. Page the on-call engineer.")
        proposal = propose(actor, "Incident paging", category="operations")
    finally:
        core.llm.reset_llm_provider()
    assert proposal.procedure == "1. Open the runbook.\n2. Page the on-call engineer."
    assert proposal.drafted_by == "openai:drafter"
    assert proposal.confidence == 1.0
    sent = openai_standin.requests_to("/v1/chat/completions")[0].body["messages"][-1]["content"]
    assert "Skill: Incident paging" in sent


def test_one_open_proposal_per_name_and_none_for_existing_skills(
    actor: Actor, reviewer: Actor, make_skill: Callable[..., Skill]
) -> None:
    make_skill("Existing skill")
    first = propose(actor, "Log analysis")
    for name, expected in (("log ANALYSIS", "proposal_exists"), ("existing skill", "skill_exists")):
        with pytest.raises(Conflict) as raised:
            propose(actor, name)
        assert raised.value.code == expected
    with pytest.raises(ValidationFailed) as category:
        propose(actor, "Other", category="astrology")
    assert category.value.code == "unknown_category"
    with transaction.atomic(), pytest.raises(IntegrityError):
        SkillProposal.objects.create(
            account_id=first.account_id, name="LOG ANALYSIS", category="analysis"
        )
    # Closed proposals do not count: after a rejection the name is free again.
    services.proposal_submit(actor=actor, proposal=first)
    services.proposal_reject(actor=reviewer, proposal=first, reason="Too vague.")
    assert propose(actor, "Log analysis").status == "draft"


# --- the state machine -----------------------------------------------------------------------


def _move(to: str, proposal: SkillProposal, actor: Actor, reviewer: Actor) -> None:
    if to == Status.SUBMITTED:
        services.proposal_submit(actor=actor, proposal=proposal)
    elif to == Status.UNDER_REVIEW:
        services.proposal_review_start(actor=reviewer, proposal=proposal)
    elif to == Status.APPROVED:
        services.proposal_approve(actor=reviewer, proposal=proposal, reason="Useful.")
    elif to == Status.REJECTED:
        services.proposal_reject(actor=reviewer, proposal=proposal, reason="Duplicate.")
    elif to == Status.CREATED:
        services.proposal_create_skill(actor=reviewer, proposal=proposal)
    elif to == Status.EXPIRED:
        SkillProposal.objects.filter(pk=proposal.pk).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
        services.proposals_expire()
    else:
        raise AssertionError(f"no service moves a proposal to {to}")


@pytest.mark.parametrize(
    ("current", "to"),
    [pair for pair in itertools.product(STATUSES, STATUSES) if pair[1] != "draft"],
)
def test_every_transition_is_allowed_or_refused_as_the_machine_says(
    current: str, to: str, actor: Actor, reviewer: Actor
) -> None:
    proposal = propose(actor, f"Skill {current} to {to}", category="testing")
    SkillProposal.objects.filter(pk=proposal.pk).update(status=current)
    proposal.refresh_from_db()
    allowed = to in services.TRANSITIONS[current]
    before = snapshot()
    if allowed:
        _move(to, proposal, actor, reviewer)
        proposal.refresh_from_db()
        assert proposal.status == to
        event = AuditEvent.objects.filter(target_id=str(proposal.pk)).latest("created_at")
        assert event.changes["from"] == current and event.changes["to"] == to
    elif to == Status.EXPIRED:
        _move(to, proposal, actor, reviewer)  # the job leaves it alone
        proposal.refresh_from_db()
        assert proposal.status == current
    else:
        with pytest.raises(Conflict) as raised:
            _move(to, proposal, actor, reviewer)
        assert raised.value.code == "invalid_transition"
        assert raised.value.details == {"from": current, "to": to}
        assert snapshot() == before


def test_no_service_leads_back_to_draft() -> None:
    assert all("draft" not in targets for targets in services.TRANSITIONS.values())


def test_agents_never_review_and_a_stale_decision_loses(
    actor: Actor, reviewer: Actor, agent_client: AuthedAgent
) -> None:
    proposal = propose(actor, "Dependency audit", category="security", submit=True)
    before = snapshot()
    for attempt in (
        lambda: services.proposal_approve(actor=actor, proposal=proposal),
        lambda: services.proposal_reject(actor=actor, proposal=proposal, reason="no"),
        lambda: services.proposal_review_start(actor=actor, proposal=proposal),
        lambda: services.proposal_create_skill(actor=actor, proposal=proposal),
    ):
        with pytest.raises(PermissionDenied) as raised:
            attempt()
        assert raised.value.code == "reviewer_required"
        assert snapshot() == before
    with pytest.raises(ValidationFailed) as reason:
        services.proposal_reject(actor=reviewer, proposal=proposal, reason="  ")
    assert reason.value.code == "reason_required"
    stale = SkillProposal.objects.get(pk=proposal.pk)
    services.proposal_approve(actor=reviewer, proposal=proposal)
    with pytest.raises(Conflict) as lost:
        services.proposal_reject(actor=reviewer, proposal=stale, reason="Too late.")
    assert lost.value.code == "invalid_transition"
    assert lost.value.details == {"from": "approved", "to": "rejected"}
    # Approving a rejected proposal is refused too.
    other = propose(actor, "Secrets rotation", category="security", submit=True)
    services.proposal_reject(actor=reviewer, proposal=other, reason="Out of scope.")
    before = snapshot()
    with pytest.raises(Conflict):
        services.proposal_approve(actor=reviewer, proposal=other)
    assert snapshot() == before
    event = AuditEvent.objects.get(action="skills.proposal.reject", target_id=str(other.pk))
    assert event.user_id == reviewer.user_id and event.changes["reason"] == "Out of scope."


# --- approval and creation -------------------------------------------------------------------


def test_approval_opens_sub_proposals_and_creation_builds_skill_version_node_and_edges(
    actor: Actor, reviewer: Actor, make_skill: Callable[..., Skill]
) -> None:
    build = make_skill("Container build", category="devops")
    propose(actor, "Image scanning", category="security")  # an open proposal already
    proposal = propose(
        actor,
        "Release pipeline",
        category="devops",
        dependencies=["container build", "Image scanning", "Artifact signing"],
        submit=True,
    )
    approval = services.proposal_approve(actor=reviewer, proposal=proposal, reason="Needed.")
    assert approval.proposal.status == "approved"
    assert approval.proposal.reviewer_id == reviewer.user_id
    assert approval.proposal.decision_reason == "Needed."
    [sub] = approval.sub_proposals
    assert (sub.name, sub.status, sub.parent_id) == ("Artifact signing", "submitted", proposal.pk)

    skill = services.proposal_create_skill(actor=reviewer, proposal=approval.proposal)
    proposal.refresh_from_db()
    assert (proposal.status, proposal.skill_id) == ("created", skill.pk)
    assert skill.status == "active" and skill.procedure == proposal.procedure
    assert SkillVersion.objects.get(skill=skill).version == "1.0.0"
    assert GraphNode.objects.filter(pk=skill.graph_node_id or 0, entity_type="skill").exists()
    deps = {d.name: d.skill for d in catalog_selectors.skill_dependencies(skill)}
    assert deps == {"Container build": build, "Image scanning": None, "Artifact signing": None}

    # The sub-proposal's skill takes over its placeholder: the dependency is now a skill.
    services.proposal_approve(actor=reviewer, proposal=sub)
    signing = services.proposal_create_skill(actor=reviewer, proposal=sub)
    deps = {d.name: d.skill for d in catalog_selectors.skill_dependencies(skill)}
    assert deps["Artifact signing"] == signing
    with pytest.raises(Conflict) as twice:
        services.proposal_create_skill(actor=reviewer, proposal=sub)
    assert twice.value.code == "invalid_transition"


def test_creation_is_all_or_nothing(actor: Actor, reviewer: Actor, make_skill: Any) -> None:
    proposal = propose(actor, "Cache warming", category="optimization", submit=True)
    services.proposal_approve(actor=reviewer, proposal=proposal)
    make_skill("cache warming")  # created meanwhile under that name
    before = snapshot()
    with pytest.raises(Conflict) as raised:
        services.proposal_create_skill(actor=reviewer, proposal=proposal)
    assert raised.value.code == "skill_exists"
    assert snapshot() == before
    assert SkillProposal.objects.get(pk=proposal.pk).status == "approved"


def test_review_shows_related_skills_and_predicted_conflicts(
    actor: Actor, make_skill: Callable[..., Skill]
) -> None:
    existing = make_skill(
        "Database backups", category="operations", description="Nightly backups of databases."
    )
    proposal = propose(
        actor,
        "Database backup",
        description="Nightly backups of databases.",
        dependencies=["Storage quota"],
        submit=True,
    )
    review = selectors.proposal_review(proposal)
    assert review.related[0] == existing
    kinds = {(c.conflict_type, c.skill) for c in review.conflicts}
    assert ("naming", existing) in kinds and ("overlap", existing) in kinds
    assert ("dependency", None) in kinds
    assert review.missing_dependencies == ["Storage quota"]


def test_the_hourly_job_expires_overdue_unreviewed_proposals(actor: Actor, reviewer: Actor) -> None:
    old = propose(actor, "Old idea", category="research", submit=True)
    fresh = propose(actor, "Fresh idea", category="research", submit=True)
    approved = propose(actor, "Approved idea", category="research", submit=True)
    services.proposal_approve(actor=reviewer, proposal=approved)
    past = timezone.now() - timedelta(hours=1)
    SkillProposal.objects.filter(pk__in=[old.pk, approved.pk]).update(expires_at=past)
    assert tasks.expire_proposals.delay(dry_run=True).get() == {"expired": 1}
    assert SkillProposal.objects.get(pk=old.pk).status == "submitted"
    assert tasks.expire_proposals.delay().get() == {"expired": 1}
    statuses = dict(SkillProposal.objects.values_list("pk", "status"))
    assert statuses == {old.pk: "expired", fresh.pk: "submitted", approved.pk: "approved"}
    assert JobRun.objects.filter(job="skills.expire_proposals", status="succeeded").count() == 2
    event = AuditEvent.objects.get(action="skills.proposal.expire")
    assert event.target_id == str(old.pk) and event.user_id is None and event.agent_id is None


# --- the API ---------------------------------------------------------------------------------


def test_proposals_api(agent_client: AuthedAgent, other_agent_client: AuthedAgent) -> None:
    client = agent_client.client
    created = client.post(
        URL,
        {
            "name": "Write changelog",
            "description": "Document the release in the changelog and readme.",
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["status"] == "draft" and body["category"] == "documentation"
    url = f"{URL}/{body['id']}"
    assert client.get(url).json()["name"] == "Write changelog"
    submitted = client.post(f"{url}/submit")
    assert submitted.status_code == 200 and submitted.json()["status"] == "submitted"
    again = client.post(f"{url}/submit")
    assert again.status_code == 409 and code(again) == "invalid_transition"
    assert again.json()["error"]["details"] == {"from": "submitted", "to": "submitted"}
    taken = client.post(URL, {"name": "write changelog"}, format="json")
    assert taken.status_code == 409 and code(taken) == "proposal_exists"
    bad = client.post(URL, {"name": "X", "category": "astrology"}, format="json")
    assert bad.status_code == 400
    other = other_agent_client.client
    for response in (other.get(url), other.post(f"{url}/submit")):
        assert response.status_code == 404 and code(response) == "proposal_not_found"
