"""Skills: creation with their version, index and graph node; dependencies as depends_on edges
(cycles refused); changes and status transitions; the API; discovery and context."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.actors import Actor
from core.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from core.models import AuditEvent
from rag import keyword
from rag.graph.services import nodes as graph_services
from rag.models import GraphEdge, GraphNode
from skills.models import Skill, SkillPosting, SkillScope, SkillVersion
from skills.selectors import catalog as selectors
from skills.services import catalog as services
from skills.spaces import SKILLS
from tests.conftest import AuthedAgent
from tests.skills.conftest import code

pytestmark = pytest.mark.django_db

SKILLS_URL = "/api/v1/skills"


def state() -> Any:
    """Everything a refused write must leave unchanged."""
    return (
        list(Skill.objects.order_by("pk").values_list("pk", "name", "status", "description")),
        SkillVersion.objects.count(),
        SkillPosting.objects.count(),
        list(SkillScope.objects.values_list("skill_count", "total_terms")),
        GraphNode.objects.count(),
        list(GraphEdge.objects.order_by("pk").values_list("source", "target", "metadata")),
    )


def node_of(skill: Skill) -> GraphNode:
    assert skill.graph_node_id is not None
    return GraphNode.objects.get(pk=skill.graph_node_id)


# --- creation --------------------------------------------------------------------------------


def test_a_skill_is_created_with_version_index_embedding_and_graph_node(
    make_skill: Callable[..., Skill], reviewer: Actor
) -> None:
    skill = make_skill(
        "Kubernetes deploy",
        description="Roll out a service to the cluster with helm.",
        procedure="1. helm upgrade --install\n2. watch the rollout",
        tags=["k8s", "helm", "K8S"],
    )
    assert skill.slug == "kubernetes-deploy"
    assert skill.tags == ["k8s", "helm"]  # repeats dropped case-insensitively
    assert skill.embedding is not None and skill.embedding_model and skill.embedding_checksum
    version = SkillVersion.objects.get(skill=skill)
    assert (version.version, version.is_active, version.traffic_share) == ("1.0.0", True, 1.0)
    assert version.content == skill.procedure
    node = node_of(skill)
    assert (node.name, node.entity_type, node.node_type) == ("Kubernetes deploy", "skill", "skill")
    assert node.metadata["skill_id"] == skill.pk
    scope = SkillScope.objects.get(account_id=skill.account_id)
    assert scope.skill_count == 1 and scope.total_terms == skill.keyword_length > 0
    hits = keyword.keyword_search(space=SKILLS, scope_ids=[scope.pk], query="helm rollout", limit=5)
    assert [hit.unit_id for hit in hits] == [skill.pk]
    event = AuditEvent.objects.get(action="skills.skill.create")
    assert event.user_id == reviewer.user_id and event.changes["category"] == "deployment"


def test_bad_input_is_refused_with_a_code_and_nothing_written(
    make_skill: Callable[..., Skill], actor: Actor, reviewer: Actor
) -> None:
    make_skill("Deploy")
    before = state()
    attempts: list[tuple[Callable[[], Any], type[Exception], str]] = [
        (
            lambda: make_skill("Anything", category="astrology"),
            ValidationFailed,
            "unknown_category",
        ),
        (lambda: make_skill("deploy"), Conflict, "skill_name_taken"),
        (lambda: make_skill("DEPLOY!"), Conflict, "skill_name_taken"),  # the same slug
        (lambda: make_skill("  "), ValidationFailed, "invalid_name"),
        (lambda: make_skill("Other", version="1.0"), ValidationFailed, "invalid_version"),
        (
            lambda: make_skill("Other", dependencies=[services.DependencyInput(987654)]),
            NotFound,
            "skill_not_found",
        ),
        (
            lambda: make_skill(
                "Other",
                dependencies=[services.DependencyInput(Skill.objects.get().pk, "^x")],
            ),
            ValidationFailed,
            "invalid_version_requirement",
        ),
        (
            lambda: services.skill_create(
                actor=actor, name="Sneaky", category="testing", status="active"
            ),
            PermissionDenied,
            "reviewer_required",
        ),
        (
            lambda: services.skill_create(
                actor=reviewer, name="Old", category="testing", status="archived"
            ),
            ValidationFailed,
            "invalid_status",
        ),
    ]
    for attempt, error, expected in attempts:
        with pytest.raises(error) as raised:
            attempt()
        assert raised.value.code == expected  # type: ignore[attr-defined]
        assert state() == before, expected


def test_dependencies_are_depends_on_edges_and_cycles_are_refused(
    make_skill: Callable[..., Skill], reviewer: Actor
) -> None:
    base = make_skill("Build image")
    middle = make_skill("Push image", dependencies=[services.DependencyInput(base.pk, "^1.0.0")])
    top = make_skill("Deploy service", dependencies=[services.DependencyInput(middle.pk)])
    edge = GraphEdge.objects.get(source_id=middle.graph_node_id)
    assert (edge.target_id, edge.relation_type, edge.metadata) == (
        base.graph_node_id,
        "depends_on",
        {"version": "^1.0.0"},
    )
    deps = selectors.skill_dependencies(middle)
    assert [(d.skill, d.requirement, d.satisfied) for d in deps] == [(base, "^1.0.0", True)]
    assert selectors.skill_dependents(middle) == [top]

    before = state()
    for skill, dependency in ((base, top), (base, base), (middle, top)):
        with pytest.raises(ValidationFailed) as raised:
            services.skill_update(
                actor=reviewer,
                skill=skill,
                fields={"description": "changed"},
                dependencies=[services.DependencyInput(dependency.pk)],
            )
        assert raised.value.code == "dependency_cycle"
        assert state() == before

    # Replacing dependencies removes the old edges and adds the new ones.
    services.skill_update(
        actor=reviewer,
        skill=top,
        fields={},
        dependencies=[services.DependencyInput(base.pk, ">=1.0.0,<2.0.0")],
    )
    assert [(d.skill, d.requirement) for d in selectors.skill_dependencies(top)] == [
        (base, ">=1.0.0,<2.0.0")
    ]


def test_a_new_skill_takes_over_the_placeholder_node_of_a_missing_dependency(
    make_skill: Callable[..., Skill], reviewer: Actor
) -> None:
    needs = make_skill("Release notes", graph_placeholders=["Changelog parsing"])
    [missing] = selectors.skill_dependencies(needs)
    assert (missing.name, missing.skill) == ("Changelog parsing", None)
    created = make_skill("changelog parsing")
    assert created.graph_node_id == missing.node_id
    assert [d.skill for d in selectors.skill_dependencies(needs)] == [created]
    # The placeholder now depends on... nothing; a cycle through it is still refused.
    with pytest.raises(ValidationFailed):
        services.skill_update(
            actor=reviewer,
            skill=created,
            fields={},
            dependencies=[services.DependencyInput(needs.pk)],
        )


# --- changes ---------------------------------------------------------------------------------


def test_changes_reindex_and_move_the_graph_node_along(
    make_skill: Callable[..., Skill], reviewer: Actor
) -> None:
    skill = make_skill("Backup database", description="Nightly dump of postgres.")
    old_vector = list(skill.embedding)  # type: ignore[arg-type]
    skill = services.skill_update(
        actor=reviewer,
        skill=skill,
        fields={"name": "Restore database", "description": "Restore a dump into a fresh cluster."},
    )
    assert skill.slug == "restore-database"
    assert list(skill.embedding) != old_vector  # type: ignore[arg-type]
    node = node_of(skill)
    assert (node.name, node.description) == ("Restore database", skill.description)
    scope = SkillScope.objects.get(account_id=skill.account_id)
    assert [
        h.unit_id
        for h in keyword.keyword_search(
            space=SKILLS, scope_ids=[scope.pk], query="restore", limit=5
        )
    ] == [skill.pk]
    assert (
        keyword.keyword_search(space=SKILLS, scope_ids=[scope.pk], query="nightly", limit=5) == []
    )
    skill = services.skill_update(actor=reviewer, skill=skill, fields={"status": "archived"})
    assert node_of(skill).status == "archived"


def test_status_transitions_and_who_may_activate(
    make_skill: Callable[..., Skill], actor: Actor, reviewer: Actor
) -> None:
    draft = services.skill_create(actor=actor, name="Draft skill", category="testing")
    assert draft.status == "draft"
    with pytest.raises(PermissionDenied) as raised:
        services.skill_update(actor=actor, skill=draft, fields={"status": "active"})
    assert raised.value.code == "reviewer_required"
    with pytest.raises(Conflict) as forbidden:
        services.skill_update(actor=reviewer, skill=draft, fields={"status": "deprecated"})
    assert forbidden.value.code == "invalid_transition"
    allowed = [
        ("active", reviewer),
        ("deprecated", actor),
        ("active", reviewer),
        ("archived", actor),
        ("draft", actor),
        ("archived", actor),
    ]
    for to, who in allowed:
        draft = services.skill_update(actor=who, skill=draft, fields={"status": to})
        assert draft.status == to
    for to in ("active", "deprecated"):
        with pytest.raises(Conflict):
            services.skill_update(actor=reviewer, skill=draft, fields={"status": to})


# --- the API ---------------------------------------------------------------------------------


def test_api_create_read_list_and_change(agent_client: AuthedAgent, make_skill: Any) -> None:
    client = agent_client.client
    base = make_skill("Lint code", category="code_review")
    created = client.post(
        SKILLS_URL,
        {
            "name": "Review pull request",
            "category": "code_review",
            "description": "Read a diff and comment.",
            "procedure": "Check tests, then style.",
            "dependencies": [{"skill_id": base.pk, "version": "^1"}],
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["status"] == "draft" and body["graph_node_id"]
    assert body["dependencies"] == [
        {
            "skill_id": base.pk,
            "name": "Lint code",
            "node_id": base.graph_node_id,
            "version": "^1",
            "satisfied": True,
        }
    ]
    assert [v["version"] for v in body["active_versions"]] == ["1.0.0"]
    skill_url = f"{SKILLS_URL}/{body['id']}"
    assert client.get(skill_url).json()["name"] == "Review pull request"

    listed = client.get(SKILLS_URL, {"category": "code_review", "status": "draft"}).json()
    assert [s["id"] for s in listed["results"]] == [body["id"]]
    assert client.get(SKILLS_URL, {"status": "active"}).json()["results"][0]["id"] == base.pk
    assert code(client.get(SKILLS_URL, {"category": "astrology"})) == "validation_error"

    changed = client.patch(skill_url, {"tags": ["review"], "dependencies": []}, format="json")
    assert changed.status_code == 200 and changed.json()["dependencies"] == []
    refused = client.patch(skill_url, {"status": "active"}, format="json")
    assert refused.status_code == 403 and code(refused) == "reviewer_required"
    bad = client.post(SKILLS_URL, {"name": "X", "category": "astrology"}, format="json")
    assert bad.status_code == 400 and code(bad) == "validation_error"
    taken = client.post(SKILLS_URL, {"name": "lint code", "category": "testing"}, format="json")
    assert taken.status_code == 409 and code(taken) == "skill_name_taken"
    cycle = client.patch(
        f"{SKILLS_URL}/{base.pk}", {"dependencies": [{"skill_id": base.pk}]}, format="json"
    )
    assert cycle.status_code == 400 and code(cycle) == "dependency_cycle"


def test_foreign_skills_answer_like_missing_ones(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent, make_skill: Any
) -> None:
    skill = make_skill("Private skill")
    other = other_agent_client.client
    for url in (f"{SKILLS_URL}/{skill.pk}", f"{SKILLS_URL}/{skill.pk}/context"):
        foreign, missing = other.get(url), other.get(url.replace(str(skill.pk), "987654321"))
        assert foreign.status_code == missing.status_code == 404
        assert foreign.json() == missing.json()
    depends = other.post(
        SKILLS_URL,
        {"name": "Mine", "category": "testing", "dependencies": [{"skill_id": skill.pk}]},
        format="json",
    )
    assert depends.status_code == 404 and code(depends) == "skill_not_found"
    assert other.get(SKILLS_URL).json()["results"] == []


def test_discovery_finds_skills_by_description(
    agent_client: AuthedAgent, make_skill: Any, actor: Actor
) -> None:
    deploy = make_skill(
        "Kubernetes deployment",
        description="Deploy a service to a Kubernetes cluster with helm charts.",
    )
    make_skill("Write unit tests", category="testing", description="pytest unit tests for code.")
    services.skill_create(
        actor=actor, name="Deploy draft", category="deployment", description="deploy kubernetes"
    )
    response = agent_client.client.post(
        f"{SKILLS_URL}/discover", {"description": "deploy to kubernetes"}, format="json"
    )
    assert response.status_code == 200, response.json()
    results = response.json()["results"]
    assert results[0]["skill"]["id"] == deploy.pk  # drafts are left out by default
    assert all(hit["skill"]["status"] == "active" for hit in results)
    assert results[0]["explanation"]["keyword"]["rank"] == 1
    with_drafts = agent_client.client.post(
        f"{SKILLS_URL}/discover",
        {"description": "deploy kubernetes", "statuses": ["draft"], "mode": "keyword"},
        format="json",
    ).json()["results"]
    assert [hit["skill"]["name"] for hit in with_drafts] == ["Deploy draft"]
    testing = selectors.skill_discover(
        actor=actor, description="kubernetes tests", category="testing"
    )
    assert [hit.skill.name for hit in testing] == ["Write unit tests"]


def test_context_brings_version_dependencies_documents_and_pages(
    agent_client: AuthedAgent,
    make_skill: Any,
    actor: Actor,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from rag import services as rag_services

    kb = rag_services.knowledge_base_create(actor=actor, name="Runbooks")
    with django_capture_on_commit_callbacks(execute=True):
        rag_services.document_create(
            actor=actor,
            kb=kb,
            data=b"# Helm\n\nRolling back a helm release: helm rollback <release>.",
            filename="helm.md",
            title="Helm runbook",
        )
    graph_services.node_create(
        actor=actor, name="Helm release guide", entity_type="page", description="helm releases"
    )
    base = make_skill("Build chart")
    skill = make_skill(
        "Helm release",
        description="Release a helm chart and roll back when it fails.",
        dependencies=[services.DependencyInput(base.pk)],
    )
    response = agent_client.client.get(f"{SKILLS_URL}/{skill.pk}/context")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["version"]["version"] == "1.0.0"
    assert [d["name"] for d in body["dependencies"]] == ["Build chart"]
    assert body["documents"][0]["document_title"] == "Helm runbook"
    assert [p["name"] for p in body["pages"]] == ["Helm release guide"]
    assert (
        agent_client.client.get(f"{SKILLS_URL}/{base.pk}/context").json()["dependents"][0]["id"]
        == skill.pk
    )
