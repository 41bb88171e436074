"""Export and import in the admin, for owners: the accounts' export action, the job's page with
its progress bar and download, the import form, and another account's job answering like a
missing one."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from core.models import Account, Agent, PortabilityJob
from core.services.accounts import account_create, membership_grant
from tests.factories import UserFactory
from tests.portability.test_round_trip import INTRUDER, MARKER
from tests.portability.world import World, world_build

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def world(django_capture_on_commit_callbacks: Any) -> World:
    world_build("intruder", INTRUDER, django_capture_on_commit_callbacks)
    return world_build("alpha", MARKER, django_capture_on_commit_callbacks)


def owner_of(*accounts: Account) -> Client:
    user = UserFactory.create(username=f"owner-{accounts[0].slug}", is_staff=True)
    for account in accounts:
        membership_grant(account=account, user=user, role="owner")
    client = Client()
    client.force_login(user)
    return client


def test_owners_export_and_import_in_the_admin(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    beta = account_create(name="beta", slug="beta")
    client = owner_of(world.account, beta)
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            reverse("admin:core_account_changelist"),
            {"action": "export_accounts", "_selected_action": [world.account.pk]},
        )
    assert answer.status_code == 302
    assert answer["Location"] == reverse("admin:core_portabilityjob_changelist")
    job = PortabilityJob.objects.get(account=world.account, kind="export")
    assert job.status == "succeeded" and job.progress == 1.0

    listing = client.get(reverse("admin:core_portabilityjob_changelist")).content.decode()
    assert '<progress value="1.000" max="1"' in listing and "Import an archive" in listing
    page = client.get(reverse("admin:core_portabilityjob_change", args=[job.pk])).content.decode()
    download_url = reverse("admin:core_portabilityjob_download", args=[job.pk])
    assert "<progress" in page and download_url in page
    downloaded = client.get(download_url)
    assert downloaded.status_code == 200
    archive = b"".join(downloaded.streaming_content)  # type: ignore[attr-defined]

    form = client.get(reverse("admin:core_portabilityjob_import")).content.decode()
    assert 'enctype="multipart/form-data"' in form and "intruder" not in form.lower()
    upload = io.BytesIO(archive)
    upload.name = "alpha.tar.gz"
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            reverse("admin:core_portabilityjob_import"), {"account": beta.pk, "archive": upload}
        )
    assert answer.status_code == 302
    imported = PortabilityJob.objects.get(account=beta, kind="import")
    assert answer["Location"] == reverse("admin:core_portabilityjob_change", args=[imported.pk])
    assert imported.status == "succeeded", imported.error
    assert set(Agent.objects.filter(account=beta).values_list("name", flat=True)) == {
        "alice",
        "bob",
    }


def test_another_accounts_job_and_archive_answer_like_missing_ones(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    intruder = Account.objects.get(slug="intruder")
    with django_capture_on_commit_callbacks(execute=True):
        owner_of(intruder).post(
            reverse("admin:core_account_changelist"),
            {"action": "export_accounts", "_selected_action": [intruder.pk]},
        )
    theirs = PortabilityJob.objects.get(account=intruder)
    client = owner_of(world.account)
    for name in ("admin:core_portabilityjob_download", "admin:core_portabilityjob_change"):
        foreign = client.get(reverse(name, args=[theirs.pk]))
        missing = client.get(reverse(name, args=[theirs.pk + 1000]))
        assert foreign.status_code == missing.status_code
        assert foreign.status_code in (302, 404)
    # The import form offers only the person's own accounts; another's is refused.
    upload = io.BytesIO(b"x")
    upload.name = "a.tar.gz"
    answer = client.post(
        reverse("admin:core_portabilityjob_import"), {"account": intruder.pk, "archive": upload}
    )
    assert answer.status_code == 200 and not PortabilityJob.objects.filter(kind="import").exists()
    # The export action on another account's row does nothing.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("admin:core_account_changelist"),
            {"action": "export_accounts", "_selected_action": [intruder.pk]},
        )
    assert PortabilityJob.objects.filter(account=intruder).count() == 1
