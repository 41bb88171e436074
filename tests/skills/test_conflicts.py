"""Conflict detection per type, the daily scan (open, refresh, resolve, never re-open dismissed),
priority with worked numbers, auto-repair, people's decisions, the API."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.utils import timezone

from core.actors import Actor
from core.errors import Conflict, PermissionDenied
from core.models import JobRun
from rag.graph.services import nodes as graph_services
from skills import tasks
from skills.models import Skill, SkillConflict, SkillProposal
from skills.selectors import traversal
from skills.services import catalog
from skills.services import conflict_detection as detection
from skills.services import conflicts as services
from skills.services import proposals as proposal_services
from tests.conftest import AuthedAgent
from tests.skills.conftest import code

pytestmark = pytest.mark.django_db


def kinds(found: list[detection.Detected]) -> set[tuple[str, str]]:
    return {(d.conflict_type, d.severity) for d in found}


@pytest.mark.real_embeddings  # overlap is a cosine threshold calibrated on the model
def test_overlap_and_contradiction(make_skill: Callable[..., Skill]) -> None:
    a = make_skill(
        "Force push policy",
        category="code_review",
        description="Rules for pushing git branches after a rebase.",
        procedure="Always force push after rebasing your branch.",
    )
    b = make_skill(
        "Branch push rules",
        category="code_review",
        description="Rules for pushing git branches after a rebase.",
        procedure="Never force push to a branch others use.",
    )
    make_skill("Bake bread", category="general", description="Flour, water, salt and yeast.")
    found = detection.detect_overlap_and_contradiction(a.account_id)
    pairs = {(d.conflict_type, d.skill_id, d.other_skill_id) for d in found}
    assert ("contradiction", a.pk, b.pk) in pairs
    assert ("overlap", a.pk, b.pk) in pairs
    [contradiction] = [d for d in found if d.conflict_type == "contradiction"]
    assert contradiction.details["terms"] == ["forc"] and contradiction.severity == "high"
    assert all("Bake bread" not in d.description for d in found)
    assert detection.directives("Do not deploy on Fridays; always run tests.") == (
        {"run"},
        {"deploy"},
    )


def test_dependencies_missing_archived_mismatched_and_cyclic(
    make_skill: Callable[..., Skill], reviewer: Actor
) -> None:
    base = make_skill("Build image", category="devops")
    old = make_skill("Legacy deploy", category="deployment")
    top = make_skill(
        "Ship release",
        dependencies=[
            catalog.DependencyInput(base.pk, "^2.0.0"),
            catalog.DependencyInput(old.pk),
        ],
        graph_placeholders=["Sign artifacts"],
    )
    catalog.skill_update(actor=reviewer, skill=old, fields={"status": "archived"})
    found = detection.detect_dependencies(top.account_id)
    by_kind = {(d.conflict_type, d.details.get("kind")): d for d in found}
    missing = by_kind[("dependency", "missing")]
    assert (missing.skill_id, missing.details["dependency"]) == (top.pk, "Sign artifacts")
    archived = by_kind[("dependency", "archived")]
    assert (archived.other_skill_id, archived.severity) == (old.pk, "high")
    mismatch = by_kind[("version_mismatch", None)]
    assert mismatch.details == {"requirement": "^2.0.0", "active_versions": ["1.0.0"]}
    # A cycle made through the graph API (the skill services refuse one).
    graph_services.edge_create(
        actor=reviewer,
        source_id=base.graph_node_id,  # type: ignore[arg-type]
        target_id=top.graph_node_id,  # type: ignore[arg-type]
        relation_type="depends_on",
    )  # a skill node's edge: the reviewer's role is the one registered for skills
    [cycle_nodes] = traversal.dependency_cycles(top.account_id)
    assert set(cycle_nodes) == {base.graph_node_id, top.graph_node_id}
    cycle = [
        d for d in detection.detect_dependencies(top.account_id) if d.details.get("kind") == "cycle"
    ]
    assert len(cycle) == 1 and cycle[0].severity == "critical"
    assert set(cycle[0].details["skill_ids"]) == {base.pk, top.pk}
    chain = traversal.dependency_chain(top)
    assert {(link.name, link.depth) for link in chain} >= {
        ("Build image", 1),
        ("Sign artifacts", 1),
    }


def test_near_duplicate_names(make_skill: Callable[..., Skill], actor: Actor) -> None:
    a = make_skill("Deploy service")
    b = catalog.skill_create(actor=actor, name="Deploying services", category="deployment")
    c = catalog.skill_create(actor=actor, name="Deploy servce", category="deployment")
    catalog.skill_create(actor=actor, name="Write report", category="documentation")
    found = {(d.skill_id, d.other_skill_id): d for d in detection.detect_naming(a.account_id)}
    assert found[(a.pk, b.pk)].severity == "medium"  # the same analysed terms
    assert found[(a.pk, c.pk)].severity == "low"  # a typo: ratio >= 0.85
    assert len(found) == 2  # "Deploying services" and "Deploy servce" are further apart (0.77)


def test_priority_worked_example() -> None:
    # high (4) x (1 + log10(1 + 99)) x (1 + 15 / 30) = 4 x 3 x 1.5
    assert services.priority(severity="high", recent_uses=99, age_days=15) == 18.0
    assert services.priority(severity="low", recent_uses=0, age_days=0) == 1.0
    assert services.priority(severity="critical", recent_uses=0, age_days=90) == 16.0


def test_the_scan_opens_refreshes_resolves_and_respects_dismissals(
    make_skill: Callable[..., Skill], reviewer: Actor, actor: Actor
) -> None:
    a = make_skill("Deploy service")
    catalog.skill_create(actor=actor, name="Deploying services", category="deployment")
    account = a.account_id
    first = services.conflicts_scan(account_id=account)
    assert first["opened"] >= 1
    naming = SkillConflict.objects.get(conflict_type="naming")
    assert (naming.status, naming.priority) == ("detected", 2.0)
    second = services.conflicts_scan(account_id=account)
    assert second["opened"] == 0 and second["updated"] == first["opened"]
    assert SkillConflict.objects.filter(conflict_type="naming").count() == 1

    services.conflict_transition(actor=reviewer, conflict=naming, to="dismissed", note="Fine.")
    services.conflicts_scan(account_id=account)
    assert not SkillConflict.objects.filter(
        conflict_type="naming", status__in=SkillConflict.OPEN_STATUSES
    ).exists()

    dependent = make_skill("Needs things", graph_placeholders=["Nonexistent helper"])
    services.conflicts_scan(account_id=account)
    missing = SkillConflict.objects.get(conflict_type="dependency", skill=dependent)
    catalog.skill_update(actor=reviewer, skill=dependent, fields={"status": "archived"})
    report = services.conflicts_scan(account_id=account)
    assert report["resolved"] >= 1
    missing.refresh_from_db()
    assert (missing.status, missing.resolved_by) == ("resolved", "scan")


def test_auto_repair_turns_a_missing_dependency_into_a_proposal(
    make_skill: Callable[..., Skill], reviewer: Actor
) -> None:
    skill = make_skill("Publish docs", category="documentation", graph_placeholders=["Render site"])
    assert tasks.conflict_scan.delay().get()["repaired"] == 1
    conflict = SkillConflict.objects.get(conflict_type="dependency")
    proposal = SkillProposal.objects.get(name="Render site")
    assert (conflict.status, conflict.proposal_id) == ("acknowledged", proposal.pk)
    assert proposal.status == "submitted"
    assert JobRun.objects.get(job="skills.conflict_scan").status == "succeeded"
    # A reviewer creates the skill: its node is the placeholder, the next scan resolves.
    proposal_services.proposal_approve(actor=reviewer, proposal=proposal)
    proposal_services.proposal_create_skill(actor=reviewer, proposal=proposal)
    services.conflicts_scan(account_id=skill.account_id)
    conflict.refresh_from_db()
    assert conflict.status == "resolved"
    # Repairing again opens nothing new.
    assert services.conflicts_auto_repair(account_id=skill.account_id) == {"repaired": 0}


def test_people_decide_on_conflicts_agents_do_not(
    make_skill: Callable[..., Skill], reviewer: Actor, actor: Actor
) -> None:
    make_skill("Deploy service")
    catalog.skill_create(actor=actor, name="Deploying services", category="deployment")
    services.conflicts_scan(account_id=actor.account_id)
    conflict = SkillConflict.objects.get(conflict_type="naming")
    with pytest.raises(PermissionDenied):
        services.conflict_transition(actor=actor, conflict=conflict, to="dismissed")
    acknowledged = services.conflict_transition(
        actor=reviewer, conflict=conflict, to="acknowledged"
    )
    assert acknowledged.acknowledged_at is not None
    resolved = services.conflict_transition(
        actor=reviewer, conflict=acknowledged, to="resolved", note="Renamed one."
    )
    assert resolved.resolution == "Renamed one."
    for to in ("acknowledged", "dismissed", "detected"):
        with pytest.raises(Conflict) as raised:
            services.conflict_transition(actor=reviewer, conflict=resolved, to=to)
        assert raised.value.code == "invalid_transition"


def test_conflicts_api(
    agent_client: AuthedAgent, make_skill: Callable[..., Skill], actor: Actor
) -> None:
    a = make_skill("Deploy service")
    catalog.skill_create(actor=actor, name="Deploying services", category="deployment")
    services.conflicts_scan(account_id=a.account_id)
    client = agent_client.client
    listed = client.get("/api/v1/skills/conflicts").json()["results"]
    assert [(c["conflict_type"], c["weight"]) for c in listed] == [("naming", 2)]
    assert client.get("/api/v1/skills/conflicts", {"skill_id": a.pk}).json()["results"]
    assert not client.get("/api/v1/skills/conflicts", {"status": "dismissed"}).json()["results"]
    bad = client.get("/api/v1/skills/conflicts", {"severity": "apocalyptic"})
    assert bad.status_code == 400 and code(bad) == "validation_error"


def test_job_records_and_dry_runs(make_skill: Callable[..., Skill], actor: Actor) -> None:
    make_skill("Deploy service")
    catalog.skill_create(actor=actor, name="Deploying services", category="deployment")
    dry = tasks.conflict_scan.delay(dry_run=True).get()
    assert dry["opened"] == 1 and not SkillConflict.objects.exists()
    SkillConflict.objects.all().delete()
    tasks.conflict_scan.delay().get()
    conflict = SkillConflict.objects.get()
    SkillConflict.objects.filter(pk=conflict.pk).update(
        created_at=timezone.now() - timedelta(days=15)
    )
    services.conflicts_scan(account_id=actor.account_id)
    conflict.refresh_from_db()
    assert conflict.priority == pytest.approx(2 * 1.5, rel=1e-3)
