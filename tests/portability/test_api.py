"""Export and import over the API (docs/portability.md, "Over the API"): jobs answered 202, run
by the Celery task (eager in tests), their status with progress and errors naming the file and
line, the download kept to the account, the upload's size bound, and foreign job ids answering
like missing ones."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from core.actors import actor_for_account
from core.models import Account, Agent, AuditEvent, PortabilityJob
from core.portability.services import account_export
from core.services.accounts import account_create
from core.services.agents import agent_create
from core.services.keys import api_key_create
from memory.models import MemoryEntry
from tests.portability.test_round_trip import INTRUDER, MARKER, files_of, repack
from tests.portability.world import World, world_build

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def world(django_capture_on_commit_callbacks: Any) -> World:
    world_build("intruder", INTRUDER, django_capture_on_commit_callbacks)
    return world_build("alpha", MARKER, django_capture_on_commit_callbacks)


def client_for(account: Account, *, scopes: tuple[str, ...] = ("admin",)) -> APIClient:
    tool = actor_for_account(account.pk)
    agent = Agent.objects.filter(account=account).order_by("pk").first()
    if agent is None:
        agent = agent_create(actor=tool, account=account, name="importer")
    _row, secret = api_key_create(actor=tool, agent=agent, scopes=list(scopes))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def run_export(client: APIClient, capture: Any, **body: Any) -> dict[str, Any]:
    with capture(execute=True):
        answer = client.post("/api/v1/export", body, format="json")
    assert answer.status_code == 202, answer.json()
    queued = answer.json()
    assert queued["status"] == "queued" and queued["progress"] == 0.0
    assert queued["download_url"] is None
    assert queued["status_url"].endswith(f"/api/v1/export/{queued['job_id']}")
    status = client.get(f"/api/v1/export/{queued['job_id']}")
    assert status.status_code == 200
    return dict(status.json())


def run_import(client: APIClient, capture: Any, archive: bytes) -> dict[str, Any]:
    upload = io.BytesIO(archive)
    upload.name = "archive.tar.gz"
    with capture(execute=True):
        answer = client.post("/api/v1/import", {"file": upload}, format="multipart")
    assert answer.status_code == 202, answer.json()
    assert answer.json()["kind"] == "import"
    status = client.get(f"/api/v1/import/{answer.json()['job_id']}")
    assert status.status_code == 200
    return dict(status.json())


def download(client: APIClient, url: str) -> bytes:
    answer = client.get(url)
    assert answer.status_code == 200
    assert answer["Content-Type"] == "application/gzip"
    return b"".join(answer.streaming_content)  # type: ignore[attr-defined]


def test_export_then_import_over_the_api(
    world: World, django_capture_on_commit_callbacks: Any, tmp_path: Path
) -> None:
    client = client_for(world.account)
    done = run_export(client, django_capture_on_commit_callbacks)
    assert done["status"] == "succeeded" and done["progress"] == 1.0
    assert done["error"] is None and done["counts"]["memory.entry"] > 0
    archive = download(client, done["download_url"])
    assert MARKER.encode() in b"".join(files_of(_saved(tmp_path / "a.tar.gz", archive)).values())

    beta = account_create(name="beta", slug="beta")
    beta_client = client_for(beta)
    imported = run_import(beta_client, django_capture_on_commit_callbacks, archive)
    assert imported["status"] == "succeeded", imported
    assert imported["progress"] == 1.0 and imported["counts"] == done["counts"]
    assert imported["download_url"] is None and imported["already_imported"] is False
    assert set(Agent.objects.filter(account=beta).values_list("name", flat=True)) == {
        "importer",
        "alice",
        "bob",
    }
    assert MemoryEntry.objects.filter(account=beta).count() == (
        MemoryEntry.objects.filter(account=world.account).count()
    )
    # The same archive again: nothing changes, and the job says so.
    again = run_import(beta_client, django_capture_on_commit_callbacks, archive)
    assert again["status"] == "succeeded" and again["already_imported"] is True
    assert AuditEvent.objects.filter(account=beta, action="core.account.import").count() == 1


def test_one_agents_share_and_vectors(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    client = client_for(world.account)
    done = run_export(client, django_capture_on_commit_callbacks, agent="bob", with_vectors=True)
    assert done["status"] == "succeeded" and done["agent"] == "bob" and done["with_vectors"]
    assert done["counts"]["core.agent"] == 1
    missing = client.post("/api/v1/export", {"agent": "nobody"}, format="json")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "agent_not_found"


def test_a_bad_archive_fails_the_job_naming_the_file_and_line(
    world: World, django_capture_on_commit_callbacks: Any, tmp_path: Path
) -> None:
    client = client_for(world.account)
    archive = _saved(
        tmp_path / "a.tar.gz",
        download(client, run_export(client, django_capture_on_commit_callbacks)["download_url"]),
    )
    files = files_of(archive)
    lines = files["memory.entry.jsonl"].splitlines(keepends=True)
    lines[1] = b"{not json\n"
    files["memory.entry.jsonl"] = b"".join(lines)
    broken = repack(archive, files, tmp_path / "broken.tar.gz").read_bytes()
    beta = account_create(name="beta", slug="beta")
    failed = run_import(client_for(beta), django_capture_on_commit_callbacks, broken)
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "import_invalid"
    assert failed["error"]["details"] == {"file": "memory.entry.jsonl", "line": 2}
    assert "memory.entry.jsonl line 2" in failed["error"]["message"]
    assert not Agent.objects.filter(account=beta, name="alice").exists()
    # Not an archive at all.
    junk = run_import(client_for(beta), django_capture_on_commit_callbacks, b"not a tarball")
    assert junk["status"] == "failed" and junk["error"]["code"] == "import_not_an_archive"


def test_the_upload_is_bounded(world: World, settings: Any) -> None:
    settings.PORTABILITY_MAX_IMPORT_BYTES = 10
    client = client_for(world.account)
    upload = io.BytesIO(b"x" * 11)
    upload.name = "a.tar.gz"
    answer = client.post("/api/v1/import", {"file": upload}, format="multipart")
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "import_too_large"
    assert answer.json()["error"]["details"] == {"limit": 10, "size": 11}
    empty = io.BytesIO(b"")
    empty.name = "a.tar.gz"
    answer = client.post("/api/v1/import", {"file": empty}, format="multipart")
    assert answer.status_code == 400
    none = client.post("/api/v1/import", {}, format="json")
    assert none.status_code == 400
    # A part besides the file is refused, as an unknown JSON field is (the fuzzer's case).
    extra = io.BytesIO(b"x")
    extra.name = "a.tar.gz"
    mixed = client.post(
        "/api/v1/import", {"file": extra, "error": '{"details": {}}'}, format="multipart"
    )
    assert mixed.status_code == 400, mixed.json()
    assert "error" in str(mixed.json()["error"]["details"])
    assert not PortabilityJob.objects.exists()


def test_foreign_jobs_answer_like_missing_ones(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    intruder = Account.objects.get(slug="intruder")
    theirs = run_export(client_for(intruder), django_capture_on_commit_callbacks)
    client = client_for(world.account)
    missing_id = theirs["job_id"] + 1000
    for template in ("/api/v1/export/{}", "/api/v1/export/{}/download", "/api/v1/import/{}"):
        foreign = client.get(template.format(theirs["job_id"]))
        missing = client.get(template.format(missing_id))
        assert foreign.status_code == missing.status_code == 404
        assert foreign.json() == missing.json()
        assert foreign.json()["error"]["code"] == "portability_job_not_found"
    # An export's id is not an import's.
    own = run_export(client, django_capture_on_commit_callbacks)
    assert client.get(f"/api/v1/import/{own['job_id']}").status_code == 404


def test_a_download_before_the_export_succeeds_is_a_documented_conflict(world: World) -> None:
    """Queued (its task not run: no on-commit callbacks here), the archive is not there: 409
    ``export_not_ready``, a status the schema lists for the operation (schemathesis checks
    the live server against it)."""
    from drf_spectacular.generators import SchemaGenerator

    client = client_for(world.account)
    queued = client.post("/api/v1/export", {}, format="json").json()
    answer = client.get(f"/api/v1/export/{queued['job_id']}/download")
    assert answer.status_code == 409
    assert answer.json()["error"]["code"] == "export_not_ready"
    assert answer.json()["error"]["details"] == {"status": "queued"}
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/v1/export/{job_id}/download"]["get"]
    assert "409" in operation["responses"]


def test_the_admin_scope_is_needed(world: World) -> None:
    client = client_for(world.account, scopes=("read", "write"))
    answer = client.post("/api/v1/export", {}, format="json")
    assert answer.status_code == 403
    assert not PortabilityJob.objects.exists()


def test_progress_moves_with_each_kind(world: World, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    account_export(
        actor=actor_for_account(world.account.pk),
        account=world.account,
        out=tmp_path / "a.tar.gz",
        on_progress=lambda done, total: seen.append((done, total)),
    )
    assert seen and all(0 < done < total for done, total in seen)
    assert [done for done, _ in seen] == sorted({done for done, _ in seen})


def _saved(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.django_db(transaction=True)
def test_progress_is_visible_while_the_export_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker writes progress on a connection of its own: another connection sees it move
    while the export's snapshot transaction is still open."""
    from django.db import connections

    from core.portability import services

    account = account_create(name="gamma", slug="gamma")
    client = client_for(account)
    seen: list[float] = []
    real = services.archive_write

    def spy(*args: Any, on_progress: Any, **kwargs: Any) -> Any:
        def observed(done: int, total: int) -> None:
            on_progress(done, total)
            other = connections.create_connection("default")
            try:
                with other.cursor() as cursor:
                    cursor.execute("SELECT progress FROM core_portabilityjob ORDER BY id DESC")
                    seen.append(cursor.fetchone()[0])
            finally:
                other.close()

        return real(*args, on_progress=observed, **kwargs)

    monkeypatch.setattr(services, "archive_write", spy)
    answer = client.post("/api/v1/export", {}, format="json")  # eager: run on commit
    assert answer.status_code == 202
    assert len(seen) > 3 and seen == sorted(seen) and seen[0] > 0 and seen[-1] < 1
    done = client.get(f"/api/v1/export/{answer.json()['job_id']}").json()
    assert done["status"] == "succeeded" and done["progress"] == 1.0
