"""Cluster maintenance on the real PostgreSQL and the local embedding model: fixed-seed
clustering of a synthetic set with known clusters, the short-circuit rules, nothing lost
(every absorbed entry readable as a version), idempotent re-runs, undo, the LLM rewrite
through the local stand-in server, and the scheduled job."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from django.utils import timezone

from core.actors import actor_for_account, actor_for_agent
from core.jobs import periodic_jobs
from core.models import JobRun
from memory import tasks
from memory.long_term import services as ltm
from memory.long_term.selectors import entry_get, entry_history
from memory.maintenance import clustering
from memory.maintenance.services import cluster_maintenance as maintenance
from memory.maintenance.services import cluster_rewrite
from memory.models import MemoryContext, MemoryEntry, MemoryMaintenanceReport
from tests.conftest import AuthedAgent
from tests.support.openai_standin import (
    OpenAIStandIn,
    openai_standin_fixture,  # noqa: F401 (pytest collects fixtures from module globals)
)

# Real embeddings: near-duplicate memories are found by the model's cosine (min_similarity).
pytestmark = [pytest.mark.django_db, pytest.mark.real_embeddings]

Report = MemoryMaintenanceReport

DEPLOYS = [
    "The billing service deploys every Friday afternoon.",
    "Billing deploys happen on Friday afternoons.",
    "We deploy the billing service each Friday after lunch.",
]
COFFEE = [
    "The office coffee machine is on the third floor.",
    "Coffee machine: third floor of the office.",
    "The third floor has the office coffee machine.",
]
SINGLES = [
    "Alice prefers Python for data pipelines.",
    "The database backup runs nightly at 2am.",
    "Grafana dashboards live under the ops folder.",
    "Invoices are emailed on the first of the month.",
]


def context_of(authed: AuthedAgent, name: str = "notes") -> MemoryContext:
    return ltm.context_create(actor=actor_for_agent(authed.agent), name=name)


def write_all(
    authed: AuthedAgent, context: MemoryContext, texts: list[str], **fields: Any
) -> list[MemoryEntry]:
    return ltm.entries_write(
        actor=actor_for_agent(authed.agent),
        context=context,
        items=[ltm.EntryInput(content=t, **fields) for t in texts],
    )


def run(authed: AuthedAgent, **kwargs: Any) -> Report:
    return maintenance.maintenance_run(
        account_id=authed.agent.account_id, trigger=Report.Trigger.COMMAND, **kwargs
    )


def state() -> list[tuple[Any, ...]]:
    return sorted(
        MemoryEntry.objects.values_list(
            "id", "is_current", "archived_at", "importance", "metadata", "tags", "version"
        )
    )


# --- clustering: a synthetic set with known clusters ------------------------------------------


def synthetic(seed: int, clusters: int, per: int, dims: int = 64) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dims))
    rows, truth = [], []
    for label, centre in enumerate(centres):
        for _ in range(per):
            rows.append(centre + rng.normal(scale=0.05, size=dims))
            truth.append(label)
    order = rng.permutation(len(rows))
    return np.asarray(rows)[order], [truth[i] for i in order]


# The tests that run UMAP share a worker (--dist loadgroup): numba compiles what its cache does not
# hold once per process, and a second clustering in the same process compiles nothing.
UMAP_GROUP = pytest.mark.xdist_group("umap")


@UMAP_GROUP
@pytest.mark.parametrize("per", [4, 30])  # 4: no UMAP (too few points); 30 x 6: UMAP
def test_hdbscan_finds_the_known_clusters_with_a_fixed_seed(per: int) -> None:
    vectors, truth = synthetic(7, clusters=6, per=per)
    params = clustering.ClusterParams(
        min_cluster_size=2, min_similarity=0.75, seed=42, umap_min_entries=50, umap_sample=5000
    )
    found = clustering.cluster(vectors, params)
    assert found.reduction == ("none" if per == 4 else "umap")
    assert found.noise == 0
    got = sorted(sorted(c.members) for c in found.clusters)
    want = sorted(sorted(i for i, t in enumerate(truth) if t == label) for label in range(6))
    assert got == want
    # Each known cluster is one group of near-duplicates, around its most central member.
    assert all(len(c.groups) == 1 and not c.left_out for c in found.clusters)
    again = clustering.cluster(vectors, params)
    assert [c.members for c in again.clusters] == [c.members for c in found.clusters]
    assert [g.central for c in again.clusters for g in c.groups] == [
        g.central for c in found.clusters for g in c.groups
    ]


@UMAP_GROUP
def test_umap_fit_on_a_sample_transforms_the_rest() -> None:
    vectors, truth = synthetic(3, clusters=5, per=40)
    params = clustering.ClusterParams(
        min_cluster_size=2, min_similarity=0.75, seed=42, umap_min_entries=50, umap_sample=100
    )
    found = clustering.cluster(vectors, params)
    assert found.reduction.startswith("umap (fit on a sample of 100")
    got = sorted(sorted(c.members) for c in found.clusters)
    want = sorted(sorted(i for i, t in enumerate(truth) if t == label) for label in range(5))
    assert got == want


def test_a_cluster_only_merges_members_close_to_its_centre() -> None:
    unit = clustering.unit_rows(np.asarray([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0], [0.1, 0.99]]))
    params = clustering.ClusterParams(2, 0.9, 42, 50, 5000)
    cluster = clustering.groups_of(unit, [0, 1, 2, 3], params)
    assert sorted(sorted(g.members) for g in cluster.groups) == [[0, 1], [2, 3]]
    lonely = clustering.groups_of(unit, [0, 2], params)
    assert lonely.groups == [] and lonely.left_out == [([0, 2], "below_similarity")]


# --- a run on real memories -------------------------------------------------------------------


def test_a_run_keeps_the_central_member_and_carries_what_the_rest_say_losing_nothing(
    agent_client: AuthedAgent,
) -> None:
    context = context_of(agent_client)
    deploys = write_all(agent_client, context, DEPLOYS[:1], tags=["deploys"], importance=0.3)
    deploys += write_all(agent_client, context, DEPLOYS[1:2], tags=["billing"], importance=0.9)
    deploys += write_all(
        agent_client, context, DEPLOYS[2:], metadata={"source_doc": "runbook"}, importance=0.4
    )
    coffee = write_all(agent_client, context, COFFEE)
    singles = write_all(agent_client, context, SINGLES)

    before = state()
    dry = run(agent_client, dry_run=True)
    assert state() == before, "a dry run changes nothing"
    assert (dry.dry_run, dry.status, dry.kept_count, dry.replaced_count) == (
        True,
        "completed",
        2,
        4,
    )
    assert all(item["applied"] is None for item in dry.kept)

    report = run(agent_client)
    assert (report.kept_count, report.replaced_count, report.dry_run) == (2, 4, False)
    assert report.embedding_model and report.rewrite_model == maintenance.OFFLINE_METHOD
    assert {"reduce", "cluster", "group", "apply", "total"} <= set(report.timings_ms)
    groups = {frozenset([i["kept"], *i["absorbed"]]) for i in report.kept}
    assert groups == {frozenset(e.pk for e in deploys), frozenset(e.pk for e in coffee)}
    assert sum(c["size"] for c in report.clusters) >= 6
    current = MemoryEntry.objects.filter(is_current=True, archived_at__isnull=True)
    assert current.count() == 2 + len(SINGLES)

    item = next(i for i in report.kept if i["kept"] in {e.pk for e in deploys})
    kept = MemoryEntry.objects.get(pk=item["applied"]["kept_id"])
    assert kept.archived_at is None
    # The central member's text, plus every statement of the others it does not cover.
    central = MemoryEntry.objects.get(lineage=kept.lineage, version=1).content
    assert central in DEPLOYS and kept.content.startswith(central)
    statements = item["statements"]
    assert {s["entry_id"] for s in statements} == set(item["absorbed"])
    assert all(s["carried"] or s["covered_by"] for s in statements)
    assert all(s["text"] in kept.content for s in statements if s["carried"])
    assert item["carried"] == [s["text"] for s in statements if s["carried"]]
    assert set(kept.tags) == {"deploys", "billing"} and kept.importance == 0.9
    assert kept.metadata["source_doc"] == "runbook"
    assert kept.metadata["consolidations"][-1]["absorbed"] == item["absorbed"]
    # Nothing lost: every absorbed entry is readable by id, as a version of its memory.
    reader = actor_for_agent(agent_client.agent)
    for entry_id in item["absorbed"]:
        absorbed = entry_get(reader, entry_id)
        assert absorbed.archived_at is not None and absorbed.content in DEPLOYS
        assert absorbed.metadata["merged_into"] == kept.pk
        assert [v.pk for v in entry_history(absorbed)] == [entry_id]
    # Singles are untouched.
    assert all(MemoryEntry.objects.get(pk=e.pk).archived_at is None for e in singles)

    # Idempotent: a second run finds nothing left to merge and changes nothing.
    after = state()
    again = run(agent_client)
    assert (again.kept_count, again.replaced_count) == (0, 0) and state() == after


def test_undo_brings_every_absorbed_entry_back(agent_client: AuthedAgent) -> None:
    context = context_of(agent_client)
    entries = write_all(agent_client, context, DEPLOYS, tags=["x"])
    write_all(agent_client, context, SINGLES)
    report = run(agent_client)
    assert report.replaced_count == 2
    operator = actor_for_account(agent_client.agent.account_id)
    outcome = cluster_rewrite.maintenance_report_undo(actor=operator, report=report)
    assert outcome == {"undone": 1, "refused": []}
    current = MemoryEntry.objects.filter(is_current=True, archived_at__isnull=True)
    assert {e.content for e in current} == {*DEPLOYS, *SINGLES}
    assert all("merged_into" not in e.metadata for e in current)
    assert Report.objects.get(pk=report.pk).undone_at is not None
    with pytest.raises(Exception) as refused:
        cluster_rewrite.maintenance_report_undo(
            actor=operator, report=Report.objects.get(pk=report.pk)
        )
    assert getattr(refused.value, "code", "") == "report_not_undoable"
    assert len(entries) == 3


def test_a_stale_plan_is_refused_and_changes_nothing(agent_client: AuthedAgent) -> None:
    context = context_of(agent_client)
    entries = write_all(agent_client, context, DEPLOYS)
    write_all(agent_client, context, SINGLES)
    dry = run(agent_client, dry_run=True)
    payload = dry.kept[0]["payload"]
    json.dumps(payload)
    kept = MemoryEntry.objects.get(pk=payload["kept_id"])
    ltm.entry_update(
        actor=actor_for_agent(agent_client.agent), entry=kept, fields={"content": "edited"}
    )
    before = state()
    account = agent_client.agent.account
    with pytest.raises(Exception) as stale:
        cluster_rewrite.cluster_rewrite_apply(
            account=account, actor=actor_for_account(account.pk), payload=payload
        )
    assert getattr(stale.value, "code", "") == "cluster_changed" and state() == before
    with pytest.raises(Exception) as bad:
        cluster_rewrite.cluster_rewrite_apply(
            account=account, actor=actor_for_account(account.pk), payload={"kept_id": "x"}
        )
    assert getattr(bad.value, "code", "") == "invalid_payload"
    assert len(entries) == 3


def test_threaded_entries_and_other_contexts_are_left_alone(agent_client: AuthedAgent) -> None:
    context, other = context_of(agent_client), context_of(agent_client, "other")
    write_all(agent_client, context, DEPLOYS[:2])
    write_all(agent_client, other, DEPLOYS[2:])
    ltm.entries_write(
        actor=actor_for_agent(agent_client.agent),
        context=context,
        items=[ltm.EntryInput(content=t, thread="chat", position=n) for n, t in enumerate(COFFEE)],
    )
    report = run(agent_client, context_ids=[context.pk])
    assert report.context_ids == [context.pk]
    assert report.entries_seen == 2 and report.replaced_count == 1
    assert MemoryEntry.objects.filter(context=other, archived_at__isnull=True).count() == 1
    assert MemoryEntry.objects.filter(thread="chat", archived_at__isnull=True).count() == 3


def test_entries_without_a_current_vector_are_embedded_again(agent_client: AuthedAgent) -> None:
    context = context_of(agent_client)
    entries = write_all(agent_client, context, [*DEPLOYS, *SINGLES])
    MemoryEntry.objects.filter(pk=entries[0].pk).update(embedding=None)
    MemoryEntry.objects.filter(pk=entries[1].pk).update(embedding_model="old-model")
    report = run(agent_client, dry_run=True)
    assert report.reembedded == 2 and report.replaced_count == 2
    assert MemoryEntry.objects.get(pk=entries[0].pk).embedding is None  # dry: not stored
    report = run(agent_client)
    assert report.reembedded == 2
    stored = MemoryEntry.objects.get(pk=entries[0].pk)
    assert stored.embedding is not None and stored.embedding_model == report.embedding_model


# --- the short-circuits -----------------------------------------------------------------------


def test_short_circuits_of_the_scheduled_run(agent_client: AuthedAgent, settings: Any) -> None:
    settings.MEMORY_MAINTENANCE_MIN_NEW_MEMORIES = 10
    settings.MEMORY_MAINTENANCE_SKIP_IF_REPORT_TODAY = True
    context = context_of(agent_client)
    write_all(agent_client, context, DEPLOYS + SINGLES)  # 7 < 10
    first = run(agent_client, check_rules=True)
    assert (first.status, first.short_circuit) == ("short_circuited", "too_few_new")
    assert "7 memories written since the start, fewer than 10" in first.short_circuit_detail
    second = run(agent_client, check_rules=True)
    assert second.pk == first.pk and second.checks == 2, "the same reason updates the report"
    write_all(agent_client, context, COFFEE)  # 10
    done = run(agent_client, check_rules=True)
    assert done.status == "completed" and done.replaced_count == 4
    today = run(agent_client, check_rules=True)
    assert (today.status, today.short_circuit) == ("short_circuited", "report_today")
    # Yesterday's report: the other rule decides (nothing new since).
    Report.objects.filter(pk=done.pk).update(created_at=timezone.now() - timedelta(days=1))
    MemoryEntry.objects.update(created_at=timezone.now() - timedelta(days=2))
    quiet = run(agent_client, check_rules=True)
    assert (
        quiet.short_circuit == "too_few_new" and "0 memories written" in quiet.short_circuit_detail
    )
    # Both rules can be turned off.
    settings.MEMORY_MAINTENANCE_MIN_NEW_MEMORIES = 0
    settings.MEMORY_MAINTENANCE_SKIP_IF_REPORT_TODAY = False
    assert run(agent_client, check_rules=True).status == "completed"
    assert run(agent_client, check_rules=True).status == "completed"
    # A dry run is not a report of today; requested runs never short-circuit.
    settings.MEMORY_MAINTENANCE_SKIP_IF_REPORT_TODAY = True
    assert run(agent_client, dry_run=True).status == "completed"


def test_the_scheduled_job_records_its_run(agent_client: AuthedAgent, settings: Any) -> None:
    settings.MEMORY_MAINTENANCE_MIN_NEW_MEMORIES = 3
    context = context_of(agent_client)
    write_all(agent_client, context, DEPLOYS)
    job = next(j for j in periodic_jobs() if j.name == "memory.cluster_maintenance")
    assert job.every_seconds == 1800
    counts = tasks.cluster_maintenance.delay().get()
    assert counts["replaced"] == 2 and counts["short_circuited"] == 0
    run_row = JobRun.objects.get(job="memory.cluster_maintenance")
    assert run_row.status == "succeeded" and run_row.counts["replaced"] == 2
    again = tasks.cluster_maintenance.delay().get()
    assert again["short_circuited"] >= 1 and again["replaced"] == 0
    assert Report.objects.filter(trigger="schedule", status="completed").count() == 1


# --- the LLM rewrite, through a local stand-in of its API -------------------------------------


def test_the_llm_rewrites_each_group_and_an_invalid_answer_falls_back(
    agent_client: AuthedAgent, llm: OpenAIStandIn
) -> None:
    context = context_of(agent_client)
    write_all(agent_client, context, DEPLOYS, tags=["deploys"])
    write_all(agent_client, context, COFFEE)
    write_all(agent_client, context, SINGLES)
    merged = (
        "The billing service deploys every Friday afternoon after lunch. Billing deploys happen "
        "on Friday afternoons."
    )
    # The two groups are rewritten in order; the second answer is not valid.
    llm.reply_with(
        json.dumps({"content": merged, "tags": ["billing", "schedule"]}),
        json.dumps({"content": "", "tags": "coffee"}),
    )
    report = run(agent_client)
    assert report.rewrite_model == "openai:stand-in-model"
    methods = sorted(i["method"] for i in report.kept)
    assert methods == [maintenance.OFFLINE_METHOD, "openai:stand-in-model"]
    fallback = next(i for i in report.kept if i["method"] == maintenance.OFFLINE_METHOD)
    assert fallback["fallback"].startswith("llm_invalid")
    rewritten = next(i for i in report.kept if i["method"] != maintenance.OFFLINE_METHOD)
    kept = MemoryEntry.objects.get(pk=rewritten["applied"]["kept_id"])
    assert kept.content == merged and kept.version == 2
    assert set(kept.tags) == {"billing", "schedule", "deploys"}
    # The kept memory's own words stay readable as its previous version.
    previous = MemoryEntry.objects.get(lineage=kept.lineage, version=1)
    assert previous.content in DEPLOYS and not previous.is_current
    prompt = json.dumps(llm.requests[0].body)
    assert all(text.split()[1] in prompt for text in DEPLOYS)
    # Undone: the kept memory's own words come back as a new version.
    cluster_rewrite.maintenance_report_undo(
        actor=actor_for_account(agent_client.agent.account_id), report=report
    )
    restored = MemoryEntry.objects.get(lineage=kept.lineage, is_current=True)
    assert restored.content == previous.content and restored.version == 3


def test_the_command_runs_dry_and_for_real(agent_client: AuthedAgent) -> None:
    from io import StringIO

    from django.core.management import call_command

    context = context_of(agent_client)
    write_all(agent_client, context, DEPLOYS + SINGLES)
    account = agent_client.agent.account_id
    out = StringIO()
    call_command("memory_maintenance", "--account", str(account), "--dry-run", stdout=out)
    assert "dry run report" in out.getvalue() and "kept 1 absorbing 2" in out.getvalue()
    out = StringIO()
    call_command("memory_maintenance", "--account", str(account), "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["replaced_count"] == 2 and report["trigger"] == "command"
    out = StringIO()
    call_command("memory_maintenance", "--account", str(account), "--scheduled", stdout=out)
    assert "short-circuited" in out.getvalue()


def test_under_review_a_cluster_rewrite_waits_then_applies_when_approved(
    agent_client: AuthedAgent,
) -> None:
    """A context whose change_policy is review: the run proposes each rewrite as a pending
    change (nothing archived, agents read the current data); an operator's approval applies it;
    a second run proposes nothing again."""
    from core import services as core_services
    from core.actors import actor_for_user
    from memory.maintenance.services import changes
    from memory.models import PendingChange
    from tests.factories import UserFactory

    context = context_of(agent_client)
    ltm.context_update(
        actor=actor_for_agent(agent_client.agent),
        context=context,
        fields={"change_policy": "review"},
    )
    deploys = write_all(agent_client, context, DEPLOYS)
    write_all(agent_client, context, SINGLES)
    before = state()

    report = run(agent_client)
    assert state() == before, "nothing changes before a person approves"
    (item,) = report.kept
    change = PendingChange.objects.get()
    assert item["applied"] == {"pending_change_id": change.pk, "status": "pending"}
    assert (change.kind, change.context_id) == ("cluster_rewrite", context.pk)
    assert {m["id"] for m in change.members} == {e.pk for e in deploys}
    assert [m["id"] for m in change.members if m["kept"]] == [item["kept"]]
    assert sorted(change.after["archived"]) == sorted(item["absorbed"])
    run(agent_client)  # the same proposal again: the change already waiting, not a second one
    assert PendingChange.objects.count() == 1 and state() == before

    user = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=agent_client.agent.account, user=user, role="operator")
    done = changes.change_approve(actor=actor_for_user(user), change=change)
    assert done.status == "approved"
    current = MemoryEntry.objects.filter(context=context, is_current=True, archived_at__isnull=True)
    # The kept memory (a new version when statements were carried into it) stays current.
    lineage = MemoryEntry.objects.get(pk=item["kept"]).lineage
    kept = current.get(lineage=lineage)
    for entry_id in item["absorbed"]:
        assert MemoryEntry.objects.get(pk=entry_id).metadata["merged_into"] == kept.pk
