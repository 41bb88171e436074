"""Versions and A/B: creation, traffic shares (summing to 1), activation, the primary variant as
the skill's procedure, routing proportions, and the comparison with confidence intervals."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from core.actors import Actor
from core.errors import Conflict, ValidationFailed
from skills.models import Skill, SkillVersion
from skills.selectors import catalog as catalog_selectors
from skills.selectors import versions as selectors
from skills.services import catalog
from skills.services import versions as services
from tests.conftest import AuthedAgent
from tests.skills.conftest import code

pytestmark = pytest.mark.django_db


def versions_state(skill: Skill) -> Any:
    return (
        list(
            SkillVersion.objects.filter(skill=skill)
            .order_by("pk")
            .values_list("version", "is_active", "traffic_share")
        ),
        Skill.objects.filter(pk=skill.pk).values_list("procedure", "keyword_length").get(),
    )


@pytest.fixture
def skill(make_skill: Callable[..., Skill]) -> Skill:
    return make_skill("Summarise incident", category="operations", procedure="Read the timeline.")


def test_versions_are_created_inactive_or_active_and_activated(
    skill: Skill, reviewer: Actor
) -> None:
    actor = reviewer  # versions of an active skill go live through a reviewer
    draft = services.version_create(
        actor=actor, skill=skill, version="1.1.0", change_type="minor", content="Read the logs."
    )
    assert (draft.is_active, draft.traffic_share) == (False, 0.0)
    skill.refresh_from_db()
    assert skill.procedure == "Read the timeline."
    services.version_activate(actor=actor, skill=skill, version=draft)
    skill.refresh_from_db()
    active = SkillVersion.objects.filter(skill=skill, is_active=True)
    assert [(v.version, v.traffic_share) for v in active] == [("1.1.0", 1.0)]
    assert skill.procedure == "Read the logs."  # the primary variant's content, re-indexed
    found = catalog_selectors.skill_discover(actor=actor, description="logs", mode="keyword")
    assert [hit.skill.pk for hit in found] == [skill.pk]

    hot = services.version_create(
        actor=actor,
        skill=skill,
        version="1.1.1",
        change_type="hotfix",
        content="Read the logs, then the metrics.",
        activate=True,
    )
    assert hot.is_active and hot.traffic_share == 1.0
    assert SkillVersion.objects.filter(skill=skill, is_active=True).count() == 1


def test_bad_versions_and_traffic_are_refused_and_change_nothing(
    skill: Skill, actor: Actor
) -> None:
    services.version_create(
        actor=actor, skill=skill, version="2.0.0-beta.1", change_type="experimental"
    )
    before = versions_state(skill)
    attempts: list[tuple[Callable[[], Any], type[Exception], str]] = [
        (
            lambda: services.traffic_set(
                actor=actor, skill=skill, traffic={"1.0.0": 0.7, "2.0.0-beta.1": 0.2}
            ),
            ValidationFailed,
            "traffic_not_one",
        ),
        (
            lambda: services.traffic_set(
                actor=actor, skill=skill, traffic={"1.0.0": 0.5, "9.9.9": 0.5}
            ),
            ValidationFailed,
            "unknown_version",
        ),
        (
            lambda: services.traffic_set(
                actor=actor, skill=skill, traffic={"1.0.0": 1.0, "2.0.0-beta.1": 0.0}
            ),
            ValidationFailed,
            "invalid_traffic",
        ),
        (
            lambda: services.traffic_set(actor=actor, skill=skill, traffic={}),
            ValidationFailed,
            "invalid_traffic",
        ),
        (
            lambda: services.version_create(
                actor=actor, skill=skill, version="1.0.0", change_type="patch"
            ),
            Conflict,
            "version_exists",
        ),
        (
            lambda: services.version_create(
                actor=actor, skill=skill, version="v2", change_type="patch"
            ),
            ValidationFailed,
            "invalid_version",
        ),
        (
            lambda: services.version_create(
                actor=actor,
                skill=skill,
                version="3.0.0",
                change_type="patch",
                traffic={"3.0.0": 0.5, "1.0.0": 0.6},
            ),
            ValidationFailed,
            "traffic_not_one",
        ),
        (
            lambda: services.version_create(
                actor=actor,
                skill=skill,
                version="3.0.0",
                change_type="patch",
                activate=True,
                traffic={"3.0.0": 1.0},
            ),
            ValidationFailed,
            "invalid_traffic",
        ),
    ]
    for attempt, error, expected in attempts:
        with pytest.raises(error) as raised:
            attempt()
        assert raised.value.code == expected  # type: ignore[attr-defined]
        assert versions_state(skill) == before, expected
    catalog.skill_update(actor=actor, skill=skill, fields={"status": "archived"})
    with pytest.raises(Conflict) as archived:
        services.version_create(actor=actor, skill=skill, version="3.0.0", change_type="major")
    assert archived.value.code == "skill_archived"


def test_routing_follows_traffic_shares(skill: Skill, reviewer: Actor) -> None:
    actor = reviewer  # versions of an active skill go live through a reviewer
    services.version_create(
        actor=actor,
        skill=skill,
        version="1.1.0",
        change_type="experimental",
        content="Variant B.",
        traffic={"1.0.0": 0.8, "1.1.0": 0.2},
    )
    variants = list(SkillVersion.objects.filter(skill=skill, is_active=True))
    routed = Counter(
        catalog_selectors.version_route(skill.pk, variants, f"task-{i}").version  # type: ignore[union-attr]
        for i in range(20_000)
    )
    assert abs(routed["1.0.0"] / 20_000 - 0.8) < 0.01
    assert abs(routed["1.1.0"] / 20_000 - 0.2) < 0.01
    # Sticky: the same key, the same variant.
    first = catalog_selectors.version_route(skill.pk, variants, "agent:7")
    assert all(
        catalog_selectors.version_route(skill.pk, variants, "agent:7") == first for _ in range(5)
    )
    skill.refresh_from_db()
    assert skill.procedure == "Read the timeline."  # 1.0.0 keeps the larger share
    services.traffic_set(actor=actor, skill=skill, traffic={"1.0.0": 0.4, "1.1.0": 0.6})
    skill.refresh_from_db()
    assert skill.procedure == "Variant B."


def test_comparison_gives_wilson_intervals_and_differences(skill: Skill, reviewer: Actor) -> None:
    actor = reviewer  # versions of an active skill go live through a reviewer
    b = services.version_create(
        actor=actor,
        skill=skill,
        version="1.1.0",
        change_type="experimental",
        traffic={"1.0.0": 0.5, "1.1.0": 0.5},
    )
    a = SkillVersion.objects.get(skill=skill, version="1.0.0")
    SkillVersion.objects.filter(pk=a.pk).update(success_count=40, failure_count=60)
    SkillVersion.objects.filter(pk=b.pk).update(success_count=60, failure_count=40)
    comparison = selectors.version_compare(skill)
    assert comparison.baseline is not None and comparison.baseline.pk == b.pk  # newest of equals
    stats = {s.version.version: s for s in comparison.versions}
    # Wilson 95% for 60/100: 0.6 +- ... = (0.5020, 0.6906).
    assert stats["1.1.0"].ci_low == pytest.approx(0.50201, abs=1e-4)
    assert stats["1.1.0"].ci_high == pytest.approx(0.69062, abs=1e-4)
    # 0.4 - 0.6 = -0.2, Wald half-width 1.96 * sqrt(0.24/100 + 0.24/100) = 0.13579.
    assert stats["1.0.0"].difference == pytest.approx(-0.2)
    assert stats["1.0.0"].difference_low == pytest.approx(-0.33579, abs=1e-4)
    assert stats["1.0.0"].difference_high == pytest.approx(-0.06421, abs=1e-4)
    assert stats["1.0.0"].significant is True
    assert stats["1.1.0"].difference is None
    assert selectors.wilson_interval(0, 0) is None


def test_versions_api(agent_client: AuthedAgent, skill: Skill, reviewer: Actor) -> None:
    client = agent_client.client
    url = f"/api/v1/skills/{skill.pk}/versions"
    created = client.post(
        url, {"version": "1.2.0", "change_type": "minor", "content": "v2"}, format="json"
    )
    assert created.status_code == 201, created.json()
    assert (created.json()["is_active"], created.json()["traffic_share"]) == (False, 0.0)
    bad = client.post(
        url,
        {"version": "1.3.0", "change_type": "minor", "traffic": {"1.0.0": 0.5, "1.3.0": 0.4}},
        format="json",
    )
    assert bad.status_code == 400 and code(bad) == "traffic_not_one"
    assert not SkillVersion.objects.filter(version="1.3.0").exists()
    # A reviewer starts the A/B test (in the admin; here through the service).
    services.traffic_set(actor=reviewer, skill=skill, traffic={"1.0.0": 0.5, "1.2.0": 0.5})
    listed = client.get(url).json()
    assert [v["version"]["version"] for v in listed["versions"]] == ["1.2.0", "1.0.0"]
    assert listed["baseline_version_id"] == created.json()["id"]
    # The agent ends it: both versions are live already.
    activated = client.post(f"{url}/{created.json()['id']}/activate")
    assert activated.status_code == 200 and activated.json()["is_active"]
    context = client.get(f"/api/v1/skills/{skill.pk}/context").json()
    assert context["version"]["version"] == "1.2.0"
    traffic = client.post(
        f"/api/v1/skills/{skill.pk}/traffic", {"traffic": {"1.2.0": 1}}, format="json"
    )
    assert traffic.status_code == 200
    assert [v["version"] for v in traffic.json()["variants"]] == ["1.2.0"]
    missing = client.post(f"{url}/987654321/activate")
    assert missing.status_code == 404 and code(missing) == "version_not_found"
