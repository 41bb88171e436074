"""The admin's home by role (core.admin_base.home) and its model list grouped by task
(core.admin_base.site): each person sees the panels of the roles they hold, about their own
accounts only (an intruder account owns data of every kind the panels show), and every model,
schedule and group has a name a newcomer understands."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from content.services import pages as page_services
from core import services
from core.actors import INSTALLATION_OPERATORS_GROUP, actor_for_account, actor_for_user
from core.admin_base.site import GROUPS, model_key
from core.models import Account, ApiKey, JobRun
from core.periodic import periodic_tasks_sync
from memory.long_term import services as ltm
from memory.maintenance.services import upkeep
from memory.models import PendingChange
from skills.models import SkillProposal
from skills.services import proposals as proposal_services
from tests.factories import AccountFactory, AgentFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_every_registered_model_has_a_group_and_a_name_of_its_own() -> None:
    grouped = [key for _, _, members in GROUPS for key, _ in members]
    assert len(grouped) == len(set(grouped))
    registered = {model_key(model) for model in admin.site._registry}
    assert registered - set(grouped) == set(), "models no group of GROUPS names"
    names = [name for _, _, members in GROUPS for _, name in members]
    assert len(names) == len(set(names)), "two entries would read the same"
    assert not any("axes" in name.lower() for name in names)


def test_the_index_lists_models_by_task_with_their_new_names() -> None:
    client = Client()
    client.force_login(UserFactory.create(is_staff=True, is_superuser=True))
    index = client.get("/admin/").content.decode()
    for group in ("Review", "Agents' memory", "Documents and search", "People and sign-in"):
        assert f">{group}<" in index.replace("&#x27;", "'"), group
    assert "Knowledge item stores" in index and "Document collections" in index
    assert ">Axes<" not in index and ">AXES<" not in index
    # An app's own page keeps Django's list.
    assert client.get("/admin/memory/").status_code == 200


def test_every_schedule_has_a_description_shown_in_its_list() -> None:
    periodic_tasks_sync()
    tasks = PeriodicTask.objects.exclude(name__startswith="celery.")
    assert tasks.count() >= 10
    assert [t.name for t in tasks if not t.description.strip()] == []
    client = Client()
    client.force_login(UserFactory.create(is_staff=True, is_superuser=True))
    listing = client.get("/admin/django_celery_beat/periodictask/").content.decode()
    task = tasks.first()
    assert task is not None and task.description[:40] in listing


@dataclass
class World:
    account: Account
    intruder: Account


def _fill(account: Account, tag: str) -> None:
    """Data of every kind a panel shows, in ``account``, named with ``tag``."""
    owner = actor_for_account(account.pk)
    agent = AgentFactory.create(account=account, name=f"{tag}-agent")
    services.api_key_create(
        actor=owner, agent=agent, name=f"{tag}-key", expires_at=timezone.now() + timedelta(days=3)
    )
    notes = ltm.context_create(actor=owner, name=f"{tag}-notes", change_policy="review")
    twin = f"{tag} staging runs on port 5433."
    ltm.entries_write(
        actor=owner,
        context=notes,
        items=[ltm.EntryInput(content=twin), ltm.EntryInput(content=twin)],
    )
    assert upkeep.consolidation_dedup(account_id=account.pk)["pending"] == 1
    proposal = SkillProposal.objects.create(
        account=account, name=f"{tag}-proposal", category="analysis"
    )
    proposal_services.proposal_submit(actor=owner, proposal=proposal)


def _person(account: Account, role: str, name: str) -> User:
    person = UserFactory.create(username=name, is_staff=True)
    services.membership_grant(account=account, user=person, role=role)
    return person


@pytest.fixture
def world() -> World:
    account, intruder = AccountFactory.create(), AccountFactory.create()
    _fill(account, "OURS")
    _fill(intruder, "INTRUDER")
    return World(account, intruder)


def _home(user: User) -> str:
    client = Client()
    client.force_login(user)
    response = client.get("/admin/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_reviewer_sees_what_waits_in_their_account_oldest_first(world: World) -> None:
    reviewer = _person(world.account, "reviewer", "rita")
    home = _home(reviewer)
    assert 'id="home-reviewer"' in home and 'id="home-owner"' not in home
    assert "OURS-proposal" in home and "Skill proposals waiting" in home
    assert "Memory changes waiting" in home and "dedup_merge" in home
    assert "decided by the account" in home  # a reviewer reads them; operators decide
    assert "INTRUDER" not in home


def test_an_author_sees_their_pages_and_broken_links(world: World) -> None:
    author = _person(world.account, "author", "ada")
    actor = actor_for_user(author)
    page_services.page_create(actor=actor, title="Harbour", content="See [[Nowhere Yet]].")
    intruders = actor_for_account(world.intruder.pk)
    page_services.page_create(
        actor=intruders, title="INTRUDER page", content="See [[INTRUDER missing]]."
    )
    home = _home(author)
    assert 'id="home-author"' in home and 'id="home-reviewer"' not in home
    assert "Your recent pages" in home and "Harbour" in home
    assert "[[Nowhere Yet]]" in home
    assert "INTRUDER" not in home


def test_an_operator_sees_changes_documents_maintenance_and_growth(world: World) -> None:
    operator = _person(world.account, "operator", "otto")
    home = _home(operator)
    assert 'id="home-operator"' in home
    for title in ("Memory changes waiting", "Last memory maintenance", "Memory stored"):
        assert title in home, title
    assert "/admin/memory/pendingchange/" in home  # operators decide: the items link
    assert "INTRUDER" not in home
    assert 'id="home-installation"' not in home  # account operators run no installation


def test_an_owner_sees_agents_expiring_keys_and_usage(world: World) -> None:
    owner = _person(world.account, "owner", "olga")
    home = _home(owner)
    assert 'id="home-owner"' in home
    assert "OURS-agent" in home and "OURS-key" in home and "Usage, last 7 days" in home
    assert "INTRUDER" not in home
    # An owner holds every role of the account (core.actors): every account home is theirs.
    for role in ("reviewer", "author", "operator"):
        assert f'id="home-{role}"' in home


def test_installation_operators_see_jobs_queues_readiness_and_storage(world: World) -> None:
    JobRun.objects.create(job="rag.recover_documents", status="failed", error="OURS boom")
    JobRun.objects.create(
        job="memory.consolidate", status="running", started_at=timezone.now() - timedelta(hours=3)
    )
    every_minute, _ = IntervalSchedule.objects.get_or_create(every=60, period="seconds")
    PeriodicTask.objects.create(
        name="late one",
        task="memory.tasks.prune_short_term",
        interval=every_minute,
        last_run_at=timezone.now() - timedelta(hours=1),
        description="A schedule the beat has not run for an hour.",
    )
    person = UserFactory.create(username="ivan", is_staff=True)
    person.groups.add(Group.objects.get_or_create(name=INSTALLATION_OPERATORS_GROUP)[0])
    home = _home(person)
    assert 'id="home-installation"' in home
    assert "rag.recover_documents" in home and "OURS boom" in home
    assert "memory.consolidate" in home and "still running" in home
    assert "late one" in home and "minutes ago" in home
    assert "Queues" in home and "waiting" in home
    for component in ("database", "redis", "broker", "embeddings"):
        assert f">{component}<" in home, component
    assert "Database:" in home
    # No membership: none of an account's homes.
    assert 'id="home-owner"' not in home and "INTRUDER" not in home


def test_a_person_with_no_role_sees_no_home_panel() -> None:
    AccountFactory.create()
    home = _home(UserFactory.create(username="nobody", is_staff=True))
    assert 'class="home-role"' not in home


def test_expiring_keys_leave_out_revoked_expired_and_distant_ones(world: World) -> None:
    owner = actor_for_account(world.account.pk)
    agent = AgentFactory.create(account=world.account, name="keys-agent")
    now = timezone.now()
    services.api_key_create(actor=owner, agent=agent, name="far", expires_at=now + timedelta(60))
    gone, _ = services.api_key_create(
        actor=owner, agent=agent, name="gone", expires_at=now + timedelta(days=1)
    )
    ApiKey.objects.filter(pk=gone.pk).update(expires_at=now - timedelta(days=1))
    revoked, _ = services.api_key_create(
        actor=owner, agent=agent, name="revoked", expires_at=now + timedelta(days=2)
    )
    ApiKey.objects.filter(pk=revoked.pk).update(revoked_at=now)
    home = _home(_person(world.account, "owner", "oona"))
    panel = home.split("Keys expiring within", 1)[1].split("</div>", 1)[0]
    assert "OURS-key" in panel
    assert not any(f": {name}<" in panel for name in ("far", "gone", "revoked"))


def test_pending_changes_are_listed_oldest_first(world: World) -> None:
    owner = actor_for_account(world.account.pk)
    notes = ltm.context_create(actor=owner, name="later notes", change_policy="review")
    twin = "The backup runs at 02:00."
    ltm.entries_write(
        actor=owner,
        context=notes,
        items=[ltm.EntryInput(content=twin), ltm.EntryInput(content=twin)],
    )
    upkeep.consolidation_dedup(account_id=world.account.pk)
    assert PendingChange.objects.filter(account=world.account, status="pending").count() == 2
    home = _home(_person(world.account, "operator", "omar"))
    panel = home.split("Memory changes waiting", 1)[1]
    assert panel.index("OURS-notes") < panel.index("later notes")
