"""The admin per account and role: staff users of two accounts, each account with data of every
kind. Own data answers as the role allows; foreign ids answer 404 (like missing ones) or 403,
never data; choices, filters, forms and actions never reach the other account."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse

from core import services
from core.actors import INSTALLATION_OPERATORS_GROUP, actor_for_account
from core.admin_base import (
    AccountScopedAdmin,
    InstallationAdminMixin,
    SuperuserOnlyAdminMixin,
)
from core.models import Account, Agent, ApiKey, AuditEvent, JobRun, Membership, Team
from rag.models import Chunk, Document, KnowledgeBase
from tests.factories import UserFactory
from tests.support.world import LIST_MARKER, RIGHTS, SharedWorld, Side, build_side, shared_world
from tests.test_tenancy import intruder_state

pytestmark = pytest.mark.django_db

OWN, FOREIGN = "ALPHAQX", "BRAVOQX"
MISSING_ID = 987654321


@pytest.fixture(scope="module")
def _world_built(
    django_db_setup: None, django_db_blocker: Any
) -> Iterator[SharedWorld[dict[str, Side]]]:
    """Both sides, built once per module and worker (tests/support/world.py, shared_world)."""
    with shared_world(
        django_db_blocker,
        lambda capture: {"own": build_side(OWN, capture), "foreign": build_side(FOREIGN, capture)},
        state=lambda world: {name: intruder_state(side) for name, side in world.items()},
    ) as world:
        yield world


@pytest.fixture
def world(_world_built: SharedWorld[dict[str, Side]], db: None) -> dict[str, Side]:
    """Both sides as built: each test's writes are rolled back, Redis is put back."""
    return _world_built.fresh()


def login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(label: str, view: str, *args: Any) -> str:
    app, model = label.split(".")
    return reverse(f"admin:{app}_{model}_{view}", args=args)


def text(response: Any) -> str:
    return response.content.decode(errors="replace")


def form_errors(response: Any) -> Any:
    """What a re-shown admin form complains about (for assertion messages)."""
    context = response.context or {}
    if "adminform" not in context:
        return response.status_code
    errors: list[Any] = [context["adminform"].form.errors]
    errors += [inline.formset.errors for inline in context["inline_admin_formsets"]]
    errors += [inline.formset.non_form_errors() for inline in context["inline_admin_formsets"]]
    return errors


def assert_no_foreign(response: Any, where: str) -> None:
    body = text(response)
    assert FOREIGN not in body and FOREIGN.lower() not in body, f"{where} shows foreign data"


ROLES = ["owner", "reviewer", "author", "operator"]


@pytest.mark.parametrize("role", ROLES)
def test_changelists_list_own_rows_only(world: dict[str, Side], role: str) -> None:
    own = world["own"]
    client = login(own.users[role])
    for label, rights in RIGHTS.items():
        response = client.get(url(label, "changelist"))
        if "v" in rights[role]:
            assert response.status_code == 200, label
            assert f"{OWN}{LIST_MARKER[label]}" in text(response), label
        else:
            assert response.status_code == 403, label
        assert_no_foreign(response, f"{label} changelist")
    index = client.get(reverse("admin:index"))
    assert index.status_code == 200
    assert "Periodic tasks" not in text(index) and "Users" not in text(index)
    assert "Job runs" not in text(index)


def same_page(a: Any, b: Any) -> bool:
    """Equal answers, but for the per-render CSRF token of the page's logout form."""
    token = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"')
    return a.status_code == b.status_code and token.sub(b"", a.content) == token.sub(b"", b.content)


@pytest.mark.parametrize("role", ROLES)
def test_change_views_own_as_the_role_allows_foreign_like_missing(
    world: dict[str, Side], role: str
) -> None:
    own, foreign = world["own"], world["foreign"]
    client = login(own.users[role])
    for label, rights in RIGHTS.items():
        response = client.get(url(label, "change", own.objects[label].pk))
        if "v" in rights[role]:
            assert response.status_code == 200, label
            assert ('name="_save"' in text(response)) == ("c" in rights[role]), label
        else:
            assert response.status_code in (403, 404), label
        assert_no_foreign(response, f"{label} change view")

        for view in ("change", "history", "delete"):
            for method in ("get", "post"):
                call = getattr(client, method)
                answer = call(url(label, view, foreign.objects[label].pk), {"post": "yes"})
                missing = call(url(label, view, MISSING_ID), {"post": "yes"})
                # A foreign object is simply not there for them: the missing id's answer.
                assert answer.status_code in (403, 404), (label, view, method)
                assert same_page(answer, missing), (label, view, method)
                assert_no_foreign(answer, f"{label} {view} {method}")
    for label, obj in foreign.objects.items():
        assert type(obj).objects.filter(pk=obj.pk).exists(), f"{label} was deleted"
    # A viewable model's foreign id: 404, not a redirect with a message naming the id.
    assert client.get(url("rag.document", "change", foreign.document.pk)).status_code == 404


@pytest.mark.parametrize("role", ROLES)
def test_add_views_offer_only_own_account_choices(world: dict[str, Side], role: str) -> None:
    own = world["own"]
    client = login(own.users[role])
    for label, rights in RIGHTS.items():
        response = client.get(url(label, "add"))
        assert response.status_code == (200 if "a" in rights[role] else 403), label
        assert_no_foreign(response, f"{label} add form")
    if "a" in RIGHTS["rag.document"][role]:
        form = client.get(url("rag.document", "add")).context["adminform"].form
        assert list(form.fields["knowledge_base"].queryset) == [own.kb]
    if "a" in RIGHTS["core.agent"][role]:
        form = client.get(url("core.agent", "add")).context["adminform"].form
        assert list(form.fields["teams"].queryset) == [own.team]
        assert list(form.fields["account"].queryset) == [own.account]
        key_form = client.get(url("core.apikey", "add")).context["adminform"].form
        assert list(key_form.fields["agent"].queryset) == [own.agent]


@pytest.mark.parametrize("role", ROLES)
def test_deletes_go_through_services_as_the_role_allows(world: dict[str, Side], role: str) -> None:
    own = world["own"]
    client = login(own.users[role])
    for label in (
        "core.account",
        "core.auditevent",
        "rag.chunk",
        "rag.searchquery",
        "content.article",
    ):
        obj = own.objects[label]
        answer = client.post(url(label, "delete", obj.pk), {"post": "yes"}).status_code
        assert answer in (403, 404), label
        assert type(obj).objects.filter(pk=obj.pk).exists(), label
    # Children before parents: deleting a knowledge base takes its document along.
    labels = ("content.page", "rag.document", "rag.knowledgebase", "core.apikey", "core.agent")
    for label in (*labels, "core.team"):
        obj = own.objects[label]
        response = client.post(url(label, "delete", obj.pk), {"post": "yes"})
        model = type(obj)
        if "d" in RIGHTS[label][role]:
            assert response.status_code == 302, label
            assert not model.objects.filter(pk=obj.pk).exists(), label
            event = AuditEvent.objects.get(
                target_type=model._meta.label_lower,
                target_id=str(obj.pk),
                action__endswith=".delete",
            )
            assert event.user_id == own.users[role].pk, label
        else:
            assert response.status_code in (403, 404), label
            assert model.objects.filter(pk=obj.pk).exists(), label


def test_posting_foreign_ids_in_forms_is_rejected(world: dict[str, Side]) -> None:
    own, foreign = world["own"], world["foreign"]
    owner = login(own.users["owner"])
    operator = login(own.users["operator"])
    attempts = [
        (
            operator,
            "rag.document",
            {"knowledge_base": foreign.kb.pk, "title": "sneaky", "upload": None},
            lambda: Document.objects.filter(title="sneaky").exists(),
        ),
        (
            operator,
            "rag.knowledgebase",
            {
                "account": foreign.account.pk,
                "name": "sneaky",
                "chunking_strategy": "markdown",
                "chunk_size": 256,
                "chunk_overlap": 32,
            },
            lambda: KnowledgeBase.objects.filter(name="sneaky").exists(),
        ),
        (
            owner,
            "core.team",
            {"account": foreign.account.pk, "name": "sneaky"},
            lambda: Team.objects.filter(name="sneaky").exists(),
        ),
        (
            owner,
            "core.agent",
            {"account": foreign.account.pk, "name": "sneaky", "status": "active"},
            lambda: Agent.objects.filter(name="sneaky").exists(),
        ),
        (
            owner,
            "core.agent",
            {
                "account": own.account.pk,
                "name": "sneaky",
                "status": "active",
                "teams": [foreign.team.pk],
            },
            lambda: Agent.objects.filter(name="sneaky").exists(),
        ),
        (
            owner,
            "core.apikey",
            {"agent": foreign.agent.pk, "name": "sneaky", "scopes": ["admin"]},
            lambda: ApiKey.objects.filter(name="sneaky").exists(),
        ),
    ]
    for client, label, data, created in attempts:
        if label == "rag.document":
            from django.core.files.uploadedfile import SimpleUploadedFile

            data["upload"] = SimpleUploadedFile("x.md", b"# hi\n\nsneaky text")
        response = client.post(url(label, "add"), data)
        assert response.status_code == 200, label  # the form again, with its error
        assert "Select a valid choice" in text(response), label
        assert not created(), label
        assert_no_foreign(response, f"{label} rejected form")
    assert not ApiKey.objects.filter(agent=foreign.agent).exclude(pk=foreign.key.pk).exists()

    # Changing an own agent: a foreign team is not a choice either.
    response = owner.post(
        url("core.agent", "change", own.agent.pk),
        {
            "name": own.agent.name,
            "status": "active",
            "metadata": "{}",
            "teams": [foreign.team.pk],
            "api_keys-TOTAL_FORMS": "1",
            "api_keys-INITIAL_FORMS": "1",
            "api_keys-MIN_NUM_FORMS": "0",
            "api_keys-MAX_NUM_FORMS": "0",
            "api_keys-0-id": own.key.pk,
            "api_keys-0-agent": own.agent.pk,
        },
    )
    assert response.status_code == 200 and "Select a valid choice" in text(response)
    assert list(own.agent.teams.all()) == [own.team]


def test_actions_on_foreign_ids_change_nothing(world: dict[str, Side]) -> None:
    own, foreign = world["own"], world["foreign"]
    owner = login(own.users["owner"])
    cases = [
        ("rag.document", "reprocess", foreign.document),
        ("rag.document", "delete_with_index", foreign.document),
        ("rag.document", "delete_selected", foreign.document),
        ("rag.knowledgebase", "archive", foreign.kb),
        ("rag.knowledgebase", "delete_selected", foreign.kb),
        ("core.apikey", "revoke_selected", foreign.key),
        ("core.agent", "delete_selected", foreign.agent),
        ("core.team", "delete_selected", foreign.team),
    ]
    before = AuditEvent.objects.filter(account=foreign.account).count()
    for label, action, obj in cases:
        response = owner.post(
            url(label, "changelist"),
            {"action": action, "_selected_action": [obj.pk], "post": "yes"},
            follow=True,
        )
        assert response.status_code == 200, (label, action)
        assert_no_foreign(response, f"{label} {action}")
        assert type(obj)._default_manager.filter(pk=obj.pk).exists(), (label, action)
    foreign.document.refresh_from_db()
    foreign.kb.refresh_from_db()
    foreign.key.refresh_from_db()
    assert foreign.document.status == Document.Status.INDEXED
    assert foreign.kb.status == KnowledgeBase.Status.ACTIVE
    assert foreign.key.revoked_at is None
    assert AuditEvent.objects.filter(account=foreign.account).count() == before


def test_actions_report_each_refusal_instead_of_success(world: dict[str, Side]) -> None:
    """An operator of one account who only reviews another sees both accounts' documents; the
    reprocess action on the reviewed account's document is refused by the service and says so."""
    own, foreign = world["own"], world["foreign"]
    operator = own.users["operator"]
    services.membership_grant(account=foreign.account, user=operator, role="reviewer")
    client = login(operator)
    response = client.post(
        url("rag.document", "changelist"),
        {"action": "reprocess", "_selected_action": [own.document.pk, foreign.document.pk]},
        follow=True,
    )
    shown = [str(m) for m in response.context["messages"]]
    assert any(m.startswith(f"{FOREIGN}DOC:") and "operator, owner" in m for m in shown), shown
    assert "Queued 1 document." in shown, shown
    events = AuditEvent.objects.filter(action="rag.document.reprocess")
    assert list(events.values_list("target_id", flat=True)) == [str(own.document.pk)]


def test_a_services_refusal_shows_the_form_again_with_its_message(
    world: dict[str, Side],
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    own = world["own"]
    services_actor = actor_for_account(own.account.pk)
    from rag import services as rag_services

    rag_services.knowledge_base_transition(actor=services_actor, kb=own.kb, to="archived")
    client = login(own.users["author"])
    response = client.post(
        url("rag.document", "add"),
        {
            "knowledge_base": own.kb.pk,
            "title": "Kept title",
            "upload": SimpleUploadedFile("a.md", b"# A\n\ntext"),
        },
    )
    assert response.status_code == 200
    assert "The knowledge base is archived." in text(response)
    assert 'value="Kept title"' in text(response)
    assert not Document.objects.filter(title="Kept title").exists()
    assert not AuditEvent.objects.filter(action="rag.document.create", user=own.users["author"])


def test_an_object_of_one_account_only_chooses_within_it() -> None:
    """An owner of two accounts: an agent of one can never join the other's team."""
    from tests.factories import AccountFactory

    first, second = AccountFactory.create(), AccountFactory.create()
    owner = UserFactory.create(is_staff=True)
    for account in (first, second):
        services.membership_grant(account=account, user=owner, role="owner")
    tool_first, tool_second = actor_for_account(first.pk), actor_for_account(second.pk)
    team_first = services.team_create(actor=tool_first, account=first, name="first-team")
    team_second = services.team_create(actor=tool_second, account=second, name="second-team")
    agent = services.agent_create(actor=tool_first, account=first, name="agent-one")
    client = login(owner)

    form = client.get(url("core.agent", "change", agent.pk)).context["adminform"].form
    assert list(form.fields["teams"].queryset) == [team_first]
    add_form = client.get(url("core.agent", "add")).context["adminform"].form
    assert set(add_form.fields["teams"].queryset) == {team_first, team_second}

    change = {
        "name": "agent-one",
        "status": "active",
        "metadata": "{}",
        "api_keys-TOTAL_FORMS": "0",
        "api_keys-INITIAL_FORMS": "0",
        "api_keys-MIN_NUM_FORMS": "0",
        "api_keys-MAX_NUM_FORMS": "0",
    }
    response = client.post(
        url("core.agent", "change", agent.pk), {**change, "teams": [team_second.pk]}
    )
    assert response.status_code == 200 and "Select a valid choice" in text(response)
    assert not agent.teams.exists()
    response = client.post(
        url("core.agent", "change", agent.pk), {**change, "teams": [team_first.pk]}
    )
    assert response.status_code == 302
    assert list(agent.teams.all()) == [team_first]
    event = AuditEvent.objects.get(action="core.agent.update", target_id=str(agent.pk))
    assert event.changes == {"teams": [team_first.pk]} and event.user_id == owner.pk

    # Adding an agent to one account with the other account's team: the service refuses.
    response = client.post(
        url("core.agent", "add"),
        {**change, "account": first.pk, "name": "agent-two", "teams": [team_second.pk]},
    )
    assert response.status_code == 200
    assert "Teams must belong to the agent&#x27;s account." in text(response)
    assert not Agent.objects.filter(name="agent-two").exists()


def test_owners_rename_their_account_and_manage_its_members(world: dict[str, Side]) -> None:
    own, foreign = world["own"], world["foreign"]
    owner = own.users["owner"]
    client = login(owner)
    page = client.get(url("core.account", "change", own.account.pk))
    assert f"{OWN.lower()}-reviewer" in text(page)  # members listed by username
    UserFactory.create(username="newcomer", is_staff=True)
    memberships = list(Membership.objects.filter(account=own.account).order_by("pk"))
    data: dict[str, Any] = {
        "name": "Renamed",
        "slug": "hijacked-slug",  # read-only for owners: ignored
        "memberships-TOTAL_FORMS": str(len(memberships) + 2),
        "memberships-INITIAL_FORMS": str(len(memberships)),
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    for i, membership in enumerate(memberships):
        data |= {
            f"memberships-{i}-id": membership.pk,
            f"memberships-{i}-account": own.account.pk,
            f"memberships-{i}-user": membership.user.username,
            f"memberships-{i}-role": membership.role,
        }
        if membership.user.username.endswith("-author"):
            data[f"memberships-{i}-DELETE"] = "on"
        if membership.user.username.endswith("-reviewer"):
            data[f"memberships-{i}-role"] = "operator"
    n = len(memberships)
    data |= {f"memberships-{n}-user": "newcomer", f"memberships-{n}-role": "author"}
    # An unknown username is refused on the form; nothing is saved.
    data |= {f"memberships-{n + 1}-user": "nobody-here", f"memberships-{n + 1}-role": "author"}
    response = client.post(url("core.account", "change", own.account.pk), data)
    assert response.status_code == 200 and "No active user has this username." in text(response)
    data[f"memberships-{n + 1}-user"] = ""
    data[f"memberships-{n + 1}-role"] = ""
    response = client.post(url("core.account", "change", own.account.pk), data)
    assert response.status_code == 302, form_errors(response)
    own.account.refresh_from_db()
    assert (own.account.name, own.account.slug) == ("Renamed", OWN.lower())
    roles = dict(
        Membership.objects.filter(account=own.account).values_list("user__username", "role")
    )
    assert roles[f"{OWN.lower()}-reviewer"] == "operator"
    assert roles["newcomer"] == "author" and f"{OWN.lower()}-author" not in roles
    actions = set(
        AuditEvent.objects.filter(account=own.account, user=owner).values_list("action", flat=True)
    )
    assert {
        "core.account.update",
        "core.membership.update",
        "core.membership.revoke",
        "core.membership.grant",
    } <= actions
    assert Membership.objects.filter(account=foreign.account).count() == 4
    assert_no_foreign(client.get(url("core.account", "changelist")), "accounts")
    assert client.get(url("core.account", "add")).status_code == 403


def test_the_last_owner_cannot_be_removed(world: dict[str, Side]) -> None:
    own = world["own"]
    owner = own.users["owner"]
    client = login(owner)
    memberships = list(Membership.objects.filter(account=own.account).order_by("pk"))
    data: dict[str, Any] = {
        "name": own.account.name,
        "memberships-TOTAL_FORMS": str(len(memberships)),
        "memberships-INITIAL_FORMS": str(len(memberships)),
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    for i, membership in enumerate(memberships):
        data |= {
            f"memberships-{i}-id": membership.pk,
            f"memberships-{i}-account": own.account.pk,
            f"memberships-{i}-user": membership.user.username,
            f"memberships-{i}-role": membership.role,
        }
        if membership.role == "owner":
            data[f"memberships-{i}-DELETE"] = "on"
    response = client.post(url("core.account", "change", own.account.pk), data)
    assert response.status_code == 200
    assert "An account keeps at least one owner." in text(response)
    assert Membership.objects.filter(account=own.account, user=owner, role="owner").exists()


def test_installation_wide_admins(world: dict[str, Side]) -> None:
    own = world["own"]
    owner = login(own.users["owner"])
    ops_user = UserFactory.create(is_staff=True)
    ops_user.groups.add(Group.objects.get_or_create(name=INSTALLATION_OPERATORS_GROUP)[0])
    ops = login(ops_user)
    root = login(UserFactory.create(is_staff=True, is_superuser=True))
    JobRun.objects.create(job="test.job")
    installation = [
        "django_celery_beat.periodictask",
        "django_celery_beat.intervalschedule",
        "django_celery_beat.crontabschedule",
        "django_celery_beat.solarschedule",
        "django_celery_beat.clockedschedule",
        "core.jobrun",
        "content.article",
    ]
    for label in installation:
        assert owner.get(url(label, "changelist")).status_code == 403, label
        assert ops.get(url(label, "changelist")).status_code == 200, label
        assert root.get(url(label, "changelist")).status_code == 200, label
    assert ops.get(url("django_celery_beat.periodictask", "add")).status_code == 200
    assert ops.get(url("core.jobrun", "add")).status_code == 403
    for label in ("auth.user", "auth.group", "axes.accessattempt"):
        assert owner.get(url(label, "changelist")).status_code == 403, label
        assert ops.get(url(label, "changelist")).status_code == 403, label
        assert root.get(url(label, "changelist")).status_code == 200, label
    # An installation operator without memberships sees no account data.
    assert ops.get(url("rag.document", "changelist")).status_code == 403
    # Installation-wide audit events (no account) are for superusers.
    AuditEvent.objects.create(
        actor_label="system", action="test.installation", target_id="ROOTONLY"
    )
    assert "ROOTONLY" not in text(owner.get(url("core.auditevent", "changelist")))
    assert "ROOTONLY" in text(root.get(url("core.auditevent", "changelist")))


def test_the_reported_intrusion_is_closed(world: dict[str, Side]) -> None:
    """An operator of B with every Django model permission: A's chunk text, an admin key for
    A's agent, and A's documents through the API all stay out of reach."""
    a, b = world["foreign"], world["own"]
    intruder = b.users["operator"]
    intruder.user_permissions.set(Permission.objects.all())
    client = login(intruder)
    chunk_page = client.get(url("rag.chunk", "change", a.chunk.pk))
    assert chunk_page.status_code == 404
    assert a.chunk.text not in text(chunk_page)
    assert client.get(url("core.apikey", "add")).status_code == 403
    response = client.post(
        url("core.apikey", "add"), {"agent": a.agent.pk, "name": "x", "scopes": ["admin"]}
    )
    assert response.status_code == 403
    # Even as an owner of B, a key for A's agent is not a choice.
    services.membership_grant(account=b.account, user=intruder, role="owner")
    response = client.post(
        url("core.apikey", "add"), {"agent": a.agent.pk, "name": "x", "scopes": ["admin"]}
    )
    assert response.status_code == 200 and "Select a valid choice" in text(response)
    assert not re.search(r"eng_[a-z0-9]{12}_", text(response))
    assert list(ApiKey.objects.filter(agent=a.agent)) == [a.key]


def test_every_registered_admin_is_gated() -> None:
    ungated = [
        model._meta.label
        for model, model_admin in admin.site._registry.items()
        if not isinstance(
            model_admin, AccountScopedAdmin | InstallationAdminMixin | SuperuserOnlyAdminMixin
        )
    ]
    assert ungated == []


def test_foreign_keys_to_large_tables_use_raw_id_widgets() -> None:
    large = {
        model for model, ma in admin.site._registry.items() if getattr(ma, "large_table", False)
    }
    assert {Chunk, AuditEvent} <= large
    for model, model_admin in admin.site._registry.items():
        for field in model._meta.get_fields():
            if (
                field.many_to_one
                and field.related_model in large
                and field.editable
                and field.name not in (model_admin.readonly_fields or ())
                and field.name not in (model_admin.exclude or ())
            ):
                assert field.name in model_admin.raw_id_fields, (model, field.name)


def test_superusers_see_every_account(world: dict[str, Side]) -> None:
    root = login(UserFactory.create(is_staff=True, is_superuser=True))
    for label in RIGHTS:
        body = text(root.get(url(label, "changelist")))
        assert OWN in body and FOREIGN in body, label


def test_accounts_are_created_by_superusers_only(world: dict[str, Side]) -> None:
    root_user = UserFactory.create(is_staff=True, is_superuser=True)
    root = login(root_user)
    response = root.post(
        url("core.account", "add"),
        {
            "name": "New",
            "slug": "new",
            "is_active": "on",
            "memberships-TOTAL_FORMS": "1",
            "memberships-INITIAL_FORMS": "0",
            "memberships-MIN_NUM_FORMS": "0",
            "memberships-MAX_NUM_FORMS": "1000",
            "memberships-0-user": world["own"].users["owner"].username,
            "memberships-0-role": "owner",
        },
    )
    assert response.status_code == 302, form_errors(response)
    account = Account.objects.get(slug="new")
    assert account.memberships.get().user == world["own"].users["owner"]
    assert AuditEvent.objects.filter(action="core.account.create", user=root_user).exists()
    response = root.post(url("core.account", "delete", account.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not Account.objects.filter(pk=account.pk).exists()
    assert AuditEvent.objects.filter(action="core.account.delete", account=None).exists()


def test_changes_write_only_the_changed_fields_of_the_stored_row(world: dict[str, Side]) -> None:
    own = world["own"]
    kb = own.kb
    client = login(own.users["operator"])
    form_page = client.get(url("rag.knowledgebase", "change", kb.pk))
    assert form_page.status_code == 200
    # Ingestion moves the statistics after the form was read; the save must not undo that.
    KnowledgeBase.objects.filter(pk=kb.pk).update(chunk_count=777, total_terms=7777)
    response = client.post(
        url("rag.knowledgebase", "change", kb.pk),
        {
            "name": kb.name,
            "description": "new description",
            "chunking_strategy": kb.chunking_strategy,
            "chunk_size": kb.chunk_size,
            "chunk_overlap": kb.chunk_overlap,
            "status": "paused",
        },
    )
    assert response.status_code == 302, form_errors(response)
    kb.refresh_from_db()
    assert (kb.description, kb.status, kb.chunk_count, kb.total_terms) == (
        "new description",
        "paused",
        777,
        7777,
    )
    events = AuditEvent.objects.filter(target_type="rag.knowledgebase", target_id=str(kb.pk))
    update = events.get(action="rag.knowledge_base.update")
    assert update.changes == {"description": "new description"}
    assert update.user_id == own.users["operator"].pk
    assert events.get(action="rag.knowledge_base.transition").changes["to"] == "paused"

    author = login(own.users["author"])
    response = author.post(
        url("rag.document", "change", own.document.pk),
        {
            "title": own.document.title,
            "doc_type": "manual",
            "tags": "",
            "lifecycle_state": "",
            "metadata": "{}",
        },
    )
    assert response.status_code == 302, form_errors(response)
    stored = Document.objects.get(pk=own.document.pk)
    # (A new title would queue re-indexing: the title is part of every chunk's indexed text.)
    assert stored.doc_type == "manual" and stored.status == Document.Status.INDEXED
    update = AuditEvent.objects.get(action="rag.document.update", target_id=str(stored.pk))
    assert update.changes == {"doc_type": "manual"}


def test_a_refused_delete_says_so_and_keeps_the_object(
    world: dict[str, Side], monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.errors import Conflict
    from rag import services as rag_services

    def refuse(**kwargs: Any) -> None:
        raise Conflict("The document is busy.")

    monkeypatch.setattr(rag_services, "document_delete", refuse)
    own = world["own"]
    client = login(own.users["operator"])
    response = client.post(url("rag.document", "delete", own.document.pk), {"post": "yes"})
    assert response.status_code == 302
    page = client.get(response["Location"])
    assert "The document is busy." in text(page)
    assert Document.objects.filter(pk=own.document.pk).exists()

    response = client.post(
        url("rag.document", "changelist"),
        {"action": "delete_selected", "_selected_action": [own.document.pk], "post": "yes"},
        follow=True,
    )
    shown = [str(m) for m in response.context["messages"]]
    assert shown == [f"{OWN}DOC: The document is busy."], shown
    assert Document.objects.filter(pk=own.document.pk).exists()


def test_raw_id_inputs_never_name_foreign_objects(world: dict[str, Side]) -> None:
    """A raw-id input for a large table shows the chosen object's name next to the id; for an
    id of another account it shows nothing, and the form refuses it."""
    from django.test import RequestFactory

    from core.admin_base import ScopedRawIdWidget
    from rag.models import SearchResult

    class ResultAdmin(AccountScopedAdmin):
        account_lookup = "query__account"
        change_roles = frozenset({"operator"})
        raw_id_fields = ["chunk"]

    own, foreign = world["own"], world["foreign"]
    request = RequestFactory().get("/")
    request.user = own.users["operator"]
    model_admin = ResultAdmin(SearchResult, admin.site)
    field = model_admin.formfield_for_foreignkey(SearchResult._meta.get_field("chunk"), request)
    assert field is not None and isinstance(field.widget, ScopedRawIdWidget)
    assert field.widget.label_and_url_for_value(own.chunk.pk)[0]
    assert field.widget.label_and_url_for_value(foreign.chunk.pk) == ("", "")
    assert field.queryset is not None and list(field.queryset) == [own.chunk]
