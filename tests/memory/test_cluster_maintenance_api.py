"""Cluster maintenance through the API: groups of near-duplicates written through the API,
maintenance run dry and for real, the report, the archived versions, the report list and
detail, tenancy with an intruder that owns reports, and bad input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory.maintenance.services import cluster_maintenance
from memory.models import MemoryEntry, MemoryMaintenanceReport
from tests.conftest import AuthedAgent
from tests.memory.conftest import code

pytestmark = pytest.mark.django_db

BASE = "/api/v1/memory"
GROUPS = [
    [
        "The staging database listens on port 5433.",
        "Staging's database runs on port 5433.",
        "Port 5433 is where the staging database listens.",
    ],
    [
        "Release notes are published every Tuesday morning.",
        "Every Tuesday morning the release notes are published.",
    ],
]
SINGLES = ["Marta owns the payments runbook.", "The VPN certificate expires in March."]


@pytest.fixture
def admin_client(make_agent_client: Callable[..., AuthedAgent]) -> AuthedAgent:
    return make_agent_client(scopes=("read", "write", "admin"))


def post(authed: AuthedAgent, path: str, body: Any) -> Any:
    return authed.client.post(f"{BASE}/{path}", body, format="json")


Maintain = Callable[[AuthedAgent, dict[str, Any]], dict[str, Any]]


@pytest.fixture
def maintain(django_capture_on_commit_callbacks: Any) -> Maintain:
    """Ask for a run (202 with the job's id and status URL), let the worker run it (Celery is
    eager here: the task runs when the request's transaction commits), then answer the report
    the job's status names."""

    def run(authed: AuthedAgent, body: dict[str, Any]) -> dict[str, Any]:
        with django_capture_on_commit_callbacks(execute=True):
            queued = post(authed, "maintenance", body)
        assert queued.status_code == 202, queued.json()
        assert set(queued.json()) == {"job_id", "status_url"}
        job = authed.client.get(queued.json()["status_url"]).json()
        assert (job["job_id"], job["status"], job["error"]) == (
            queued.json()["job_id"],
            "completed",
            None,
        ), job
        report = authed.client.get(f"{BASE}/maintenance/reports/{job['report_id']}")
        assert report.status_code == 200
        assert job["report_url"].endswith(f"/maintenance/reports/{job['report_id']}")
        answer: dict[str, Any] = report.json()
        return answer

    return run


def written(authed: AuthedAgent, name: str = "notes") -> tuple[int, list[list[int]], list[int]]:
    context = post(authed, "contexts", {"name": name}).json()["id"]
    ids = []
    for group in GROUPS:
        entries = [{"content": text, "tags": [f"t{n}"]} for n, text in enumerate(group)]
        answer = post(authed, f"contexts/{context}/entries/batch", {"entries": entries})
        assert answer.status_code == 201, answer.json()
        ids.append([e["id"] for e in answer.json()["entries"]])
    singles = post(
        authed, f"contexts/{context}/entries/batch", {"entries": [{"content": t} for t in SINGLES]}
    ).json()
    return context, ids, [e["id"] for e in singles["entries"]]


@pytest.mark.real_embeddings  # similarity by meaning (failed on the stand-in)
def test_dry_run_then_real_run_through_the_api(
    admin_client: AuthedAgent, maintain: Maintain
) -> None:
    context, groups, singles = written(admin_client)
    assert len(singles) == len(SINGLES)
    report = maintain(admin_client, {"dry_run": True, "context_ids": [context]})
    assert (report["dry_run"], report["status"], report["trigger"]) == (True, "completed", "api")
    assert (report["kept_count"], report["replaced_count"]) == (2, 3)
    assert report["context_ids"] == [context] and report["entries_seen"] == 7
    found = sorted(sorted([k["kept"], *k["absorbed"]]) for k in report["kept"])
    assert found == sorted(sorted(g) for g in groups)
    assert all(k["applied"] is None for k in report["kept"])
    assert MemoryEntry.objects.filter(archived_at__isnull=False).count() == 0

    real = maintain(admin_client, {"dry_run": False})
    assert (real["dry_run"], real["replaced_count"]) == (False, 3)
    assert {"load", "reembed", "reduce", "cluster", "group", "rewrite", "apply", "total"} <= set(
        real["timings_ms"]
    )
    assert real["embedding_model"] and real["rewrite_model"] == cluster_maintenance.OFFLINE_METHOD
    assert real["clusters"] and all(c["size"] == len(c["members"]) for c in real["clusters"])
    for item in real["kept"]:
        kept = admin_client.client.get(f"{BASE}/entries/{item['applied']['kept_id']}").json()
        assert kept["archived_at"] is None
        assert set(kept["tags"]) == {f"t{n}" for n in range(len(item["absorbed"]) + 1)}
        for absorbed in item["absorbed"]:
            # Archived, readable by id and among its memory's versions.
            entry = admin_client.client.get(f"{BASE}/entries/{absorbed}").json()
            assert entry["archived_at"] is not None
            versions = admin_client.client.get(f"{BASE}/entries/{absorbed}/versions").json()
            assert absorbed in [v["id"] for v in versions["results"]]
    listed = admin_client.client.get(f"{BASE}/contexts/{context}/entries").json()["results"]
    assert len(listed) == 2 + len(SINGLES)

    reports = admin_client.client.get(f"{BASE}/maintenance/reports").json()
    assert [r["id"] for r in reports["results"]] == [real["id"], report["id"]]
    assert "clusters" not in reports["results"][0]
    dry_only = admin_client.client.get(f"{BASE}/maintenance/reports?dry_run=true").json()
    assert [r["id"] for r in dry_only["results"]] == [report["id"]]
    detail = admin_client.client.get(f"{BASE}/maintenance/reports/{real['id']}").json()
    assert detail["kept"] == real["kept"] and detail["clusters"] == real["clusters"]


@pytest.mark.real_embeddings  # similarity by meaning (failed on the stand-in)
def test_a_write_key_maintains_the_contexts_its_agent_may_write(
    agent_client: AuthedAgent,
    admin_client: AuthedAgent,
    make_agent_client: Callable[..., AuthedAgent],
    maintain: Maintain,
) -> None:
    reader = make_agent_client(scopes=("read",), account=agent_client.agent.account)
    assert post(reader, "maintenance", {"dry_run": True}).status_code == 403
    assert code(post(reader, "maintenance", {"dry_run": True})) == "insufficient_scope"
    mine, _, _ = written(agent_client)
    # A teammate's private context: not the write key's to maintain.
    teammate = make_agent_client(account=agent_client.agent.account)
    theirs, _, _ = written(teammate, "theirs")
    refused = post(agent_client, "maintenance", {"context_ids": [theirs]})
    assert refused.status_code == 404 and code(refused) == "context_not_found"
    report = maintain(agent_client, {"dry_run": False})
    assert report["context_ids"] == [mine] and report["replaced_count"] == 3
    assert sorted(report["replaced"]) == sorted(i for k in report["kept"] for i in k["absorbed"])
    assert MemoryEntry.objects.filter(context_id=theirs, archived_at__isnull=False).count() == 0
    # Its own runs' reports only; an admin key of the account reads every report.
    other = maintain(teammate, {"dry_run": True})
    listed = agent_client.client.get(f"{BASE}/maintenance/reports").json()["results"]
    assert [r["id"] for r in listed] == [report["id"]]
    hidden = agent_client.client.get(f"{BASE}/maintenance/reports/{other['id']}")
    assert hidden.status_code == 404 and code(hidden) == "report_not_found"
    everything = admin_client.client.get(f"{BASE}/maintenance/reports").json()["results"]
    assert everything == []  # admin_client is another account's
    admin = make_agent_client(scopes=("read", "write", "admin"), account=agent_client.agent.account)
    listed = admin.client.get(f"{BASE}/maintenance/reports").json()["results"]
    assert {r["id"] for r in listed} == {report["id"], other["id"]}


def test_an_intruders_reports_and_contexts_answer_like_missing_ones(
    admin_client: AuthedAgent, make_agent_client: Callable[..., AuthedAgent], maintain: Maintain
) -> None:
    intruder = make_agent_client(scopes=("read", "write", "admin"))
    their_context, _, _ = written(intruder, "theirs")
    theirs = maintain(intruder, {"dry_run": True})
    mine, _, _ = written(admin_client)
    before = list(MemoryEntry.objects.order_by("pk").values_list("pk", "archived_at", "version"))

    foreign = post(admin_client, "maintenance", {"context_ids": [their_context]})
    missing = post(admin_client, "maintenance", {"context_ids": [987654321]})
    assert foreign.status_code == missing.status_code == 404
    assert code(foreign) == code(missing) == "context_not_found"
    foreign = admin_client.client.get(f"{BASE}/maintenance/reports/{theirs['id']}")
    missing = admin_client.client.get(f"{BASE}/maintenance/reports/987654321")
    assert foreign.status_code == missing.status_code == 404
    assert code(foreign) == code(missing) == "report_not_found"
    assert admin_client.client.get(f"{BASE}/maintenance/reports").json()["results"] == []
    # A run of the whole account maintains the caller's own contexts only.
    real = maintain(admin_client, {})
    assert real["context_ids"] == [mine]
    assert (
        MemoryEntry.objects.filter(context_id=their_context, archived_at__isnull=False).count() == 0
    )
    assert MemoryMaintenanceReport.objects.filter(account=intruder.agent.account).count() == 1
    assert len(before) == MemoryEntry.objects.filter(version=1).count()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"dry_run": "maybe"}, "dry_run"),
        ({"context_ids": "1"}, "context_ids"),
        ({"context_ids": [0]}, "context_ids"),
        ({"context_ids": list(range(1, 102))}, "context_ids"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_bad_input_is_a_400(admin_client: AuthedAgent, body: Any, expected: str) -> None:
    answer = post(admin_client, "maintenance", body)
    assert answer.status_code == 400, answer.json()
    assert expected in answer.json()["error"]["details"], answer.json()


def test_bad_list_parameters_are_400s(admin_client: AuthedAgent) -> None:
    for query in ("status=done", "dry_run=perhaps", "page_size=0", "cursor=zzz", "other=1"):
        answer = admin_client.client.get(f"{BASE}/maintenance/reports?{query}")
        assert answer.status_code == 400, (query, answer.json())


def test_an_archived_context_is_refused(admin_client: AuthedAgent) -> None:
    context, _, _ = written(admin_client)
    assert post(admin_client, f"contexts/{context}/archive", {}).status_code == 200
    answer = post(admin_client, "maintenance", {"context_ids": [context]})
    assert answer.status_code == 409 and code(answer) == "context_archived"
