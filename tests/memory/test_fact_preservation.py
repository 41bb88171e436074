"""Nothing automatic loses a fact (issue 35, item 1): near-duplicates whose members carry an extra
fact each, through the real cluster maintenance (service and API), consolidation's dedup, an LLM
rewrite that drops a statement (the local stand-in server), and payloads edited before they are
applied. Real PostgreSQL and the local embedding model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.actors import actor_for_account, actor_for_agent
from core.errors import Conflict
from memory.long_term import services as ltm
from memory.maintenance.services import changes, cluster_maintenance, cluster_rewrite, upkeep
from memory.models import MemoryContext, MemoryEntry, MemoryMaintenanceReport, PendingChange
from tests.conftest import AuthedAgent
from tests.support.openai_standin import (
    OpenAIStandIn,
    openai_standin_fixture,  # noqa: F401 (pytest collects fixtures from module globals)
)

# Real embeddings: whether a fact survives is judged by paraphrase and near-copy cosines.
pytestmark = [pytest.mark.django_db, pytest.mark.real_embeddings]

# The issue's case: six near-duplicates about one person, two with a fact of their own.
MARIA = [
    "Maria Lind works as a nurse on the night shift at the Oslo university hospital.",
    "Maria Lind is a night-shift nurse at the Oslo university hospital.",
    "Maria Lind works as a nurse on the night shift at Oslo university hospital and is allergic "
    "to peanuts.",
    "Maria Lind has a job as a night nurse at the Oslo university hospital.",
    "Maria Lind works night shifts as a nurse at the Oslo university hospital and dislikes "
    "espresso.",
    "At the Oslo university hospital, Maria Lind works as a nurse on the night shift.",
]
TOM = [
    "Tom Berg teaches mathematics at the Bergen cathedral school.",
    "Tom Berg is a mathematics teacher at the Bergen cathedral school.",
    "Tom Berg teaches mathematics at the Bergen cathedral school and has the phone number 412 55 "
    "019.",
    "At the Bergen cathedral school, Tom Berg teaches mathematics.",
    "Tom Berg teaches maths at the Bergen cathedral school and lives in Fana.",
    "Tom Berg works as a mathematics teacher at the Bergen cathedral school.",
]
AISHA = [
    "Aisha Khan maintains the payments API of the shop.",
    "Aisha Khan is the maintainer of the shop's payments API.",
    "Aisha Khan maintains the payments API of the shop, version 16.2.",
    "The shop's payments API is maintained by Aisha Khan.",
    "Aisha Khan maintains the payments API of the shop; her standup is at 9:15.",
    "Aisha Khan looks after the payments API of the shop.",
]
# (group, the member with the fact, the fact's exact token)
FACTS = [
    (MARIA, 2, "peanuts"),
    (MARIA, 4, "espresso"),
    (TOM, 2, "412 55 019"),
    (TOM, 4, "Fana"),
    (AISHA, 2, "16.2"),
    (AISHA, 4, "9:15"),
]
PARAPHRASES = [
    "The billing service deploys every Friday afternoon.",
    "We deploy the billing service each Friday afternoon.",
    "Every Friday afternoon the billing service is deployed.",
]
SINGLES = ["Invoices are emailed on the first of the month.", "Grafana lives in the ops folder."]

Report = MemoryMaintenanceReport


def context_of(authed: AuthedAgent, name: str = "people", **fields: Any) -> MemoryContext:
    return ltm.context_create(actor=actor_for_agent(authed.agent), name=name, **fields)


def write(authed: AuthedAgent, context: MemoryContext, texts: list[str]) -> list[MemoryEntry]:
    return ltm.entries_write(
        actor=actor_for_agent(authed.agent),
        context=context,
        items=[ltm.EntryInput(content=t) for t in texts],
    )


def current_texts(context_id: int) -> list[str]:
    return list(
        MemoryEntry.objects.filter(
            context_id=context_id, is_current=True, archived_at__isnull=True
        ).values_list("content", flat=True)
    )


def run(authed: AuthedAgent, **kwargs: Any) -> Report:
    return cluster_maintenance.maintenance_run(
        account_id=authed.agent.account_id, trigger=Report.Trigger.COMMAND, **kwargs
    )


def state() -> list[tuple[Any, ...]]:
    return sorted(
        MemoryEntry.objects.values_list(
            "id", "is_current", "archived_at", "content", "metadata", "version"
        )
    )


def test_three_groups_lose_none_of_their_six_extra_facts_and_still_shrink(
    agent_client: AuthedAgent,
) -> None:
    context = context_of(agent_client)
    written = {
        name: write(agent_client, context, texts)
        for name, texts in (("maria", MARIA), ("tom", TOM), ("aisha", AISHA))
    }
    paraphrases = write(agent_client, context, PARAPHRASES)
    write(agent_client, context, SINGLES)
    report = run(agent_client)

    texts = current_texts(context.pk)
    lost = [token for _, _, token in FACTS if not any(token in t for t in texts)]
    assert lost == [], "0 of 6 extra facts lost"
    # Every group shrank: its members are archived into one current entry that says it all.
    for entries in [*written.values(), paraphrases]:
        lineages = {e.lineage for e in entries}
        alive = MemoryEntry.objects.filter(
            lineage__in=lineages, is_current=True, archived_at__isnull=True
        )
        assert alive.count() < len(entries)
    # The members with the allergy and the espresso were absorbed (archived), not merely left
    # alone, and their facts carried into the kept entry.
    maria_ids = {e.pk for e in written["maria"]}
    item = next(i for i in report.kept if i["kept"] in maria_ids)
    for member, token in ((2, "peanuts"), (4, "espresso")):
        entry = written["maria"][member]
        assert entry.pk in item["absorbed"]
        assert MemoryEntry.objects.get(pk=entry.pk).archived_at is not None
        assert any(token in text for text in item["carried"])
    # A paraphrase-only group carries nothing (its statements are covered by the kept one).
    para = next(i for i in report.kept if i["kept"] in {e.pk for e in paraphrases})
    assert para["carried"] == [] and all(s["covered_by"] for s in para["statements"])
    # The report shows the check: statements carried, none refused.
    check = Report.objects.get(pk=report.pk).fact_check
    assert check["statements_carried"] >= 4 and check["groups_refused"] == 0
    # Search finds the allergy in a current entry.
    from memory.long_term.selectors import long_term_search

    hits = long_term_search(
        actor=actor_for_agent(agent_client.agent), query="Maria Lind peanut allergy", top_k=3
    ).hits
    assert any("peanuts" in h.entry.content and h.entry.archived_at is None for h in hits)


def _report_of(authed: AuthedAgent, answer: Any) -> dict[str, Any]:
    """The report of a run asked for through the API: a job (202) whose status names the
    report once the worker ran it."""
    assert answer.status_code == 202, answer.json()
    status = authed.client.get(answer.json()["status_url"]).json()
    assert status["status"] == "completed", status
    report = authed.client.get(f"/api/v1/memory/maintenance/reports/{status['report_id']}")
    return dict(report.json())


def test_the_issues_six_members_through_the_api_keep_the_allergy_current(
    make_agent_client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    authed = make_agent_client(scopes=("read", "write", "admin"))
    client = authed.client
    context = client.post("/api/v1/memory/contexts", {"name": "maria"}, format="json").json()
    answer = client.post(
        f"/api/v1/memory/contexts/{context['id']}/entries/batch",
        {"entries": [{"content": t} for t in MARIA]},
        format="json",
    )
    assert answer.status_code == 201, answer.json()
    # The job is sent when the request commits; the (eager) worker runs it then.
    with django_capture_on_commit_callbacks(execute=True):
        queued = client.post("/api/v1/memory/maintenance", {"dry_run": False}, format="json")
    report = _report_of(authed, queued)
    assert report["replaced_count"] >= 3
    (item,) = report["kept"]
    assert {"entry_id", "text", "start", "end", "covered_by", "carried"} == set(
        item["statements"][0]
    )
    assert report["fact_check"]["statements_carried"] == len(item["carried"]) >= 1

    listed = client.get(f"/api/v1/memory/contexts/{context['id']}/entries").json()["results"]
    assert len(listed) < len(MARIA), "the group shrank"
    assert any("peanuts" in e["content"] for e in listed)
    assert any("espresso" in e["content"] for e in listed)
    found = client.post(
        "/api/v1/memory/long-term/search",
        {"query": "Is Maria Lind allergic to peanuts?", "top_k": 3},
        format="json",
    ).json()["results"]
    assert any("peanuts" in hit["content"] for hit in found)


def test_dedup_keeps_a_near_copy_with_another_number_current(
    agent_client: AuthedAgent,
) -> None:
    context = context_of(agent_client)
    first, copy, other = write(
        agent_client,
        context,
        [
            "Maria Lind's gym locker code is 3895.",
            "Maria Lind's gym locker code is 3895",
            "Maria Lind's gym locker code is 6771.",
        ],
    )
    counts = upkeep.consolidation_dedup(account_id=agent_client.agent.account_id)
    assert counts["merged"] == 1 and counts["kept_distinct"] == 1
    texts = current_texts(context.pk)
    assert any("3895" in t for t in texts) and any("6771" in t for t in texts)
    assert MemoryEntry.objects.get(pk=other.pk).archived_at is None
    archived = [e for e in (first, copy) if MemoryEntry.objects.get(pk=e.pk).archived_at]
    assert len(archived) == 1

    # A merge payload edited to absorb the other code is refused when applied.
    survivor = first if archived[0] is copy else copy
    account = agent_client.agent.account
    before = state()
    with pytest.raises(Conflict) as refused:
        changes.change_kinds()["dedup_merge"].apply(
            account=account,
            actor=actor_for_account(account.pk),
            payload={
                "context_id": context.pk,
                "survivor_id": survivor.pk,
                "absorbed": [{"id": other.pk, "similarity": 0.99}],
            },
        )
    assert refused.value.code == "would_lose_facts"
    assert [s["entry_id"] for s in refused.value.details["statements"]] == [other.pk]
    assert state() == before


def test_under_review_a_dedup_merge_shows_each_statement_and_who_stays(
    agent_client: AuthedAgent,
) -> None:
    context = context_of(agent_client, change_policy="review")
    write(
        agent_client,
        context,
        [
            "Tom Berg's return flight leaves at 14:55.",
            "Tom Berg's return flight leaves at 14:55",
            "Tom Berg's return flight leaves at 16:35.",
        ],
    )
    counts = upkeep.consolidation_dedup(account_id=agent_client.agent.account_id)
    assert counts["pending"] == 1 and counts["kept_distinct"] == 1
    change = PendingChange.objects.get(kind="dedup_merge")
    (statement,) = change.after["statements"]
    assert (
        statement["carried"] is False
        and statement["covered_by"]["entry_id"] == (change.payload["survivor_id"])
    )
    assert statement["text"] == "Tom Berg's return flight leaves at 14:55"
    assert len(change.after["stayed_current"]) == 1


def test_an_llm_rewrite_that_drops_a_fact_is_refused_and_the_members_stay_current(
    agent_client: AuthedAgent, llm: OpenAIStandIn
) -> None:
    context = context_of(agent_client)
    write(agent_client, context, MARIA)
    before = state()
    # The model forgets the espresso.
    llm.reply_with(
        json.dumps(
            {
                "content": "Maria Lind works as a night-shift nurse at the Oslo university "
                "hospital and is allergic to peanuts.",
                "tags": ["maria"],
            }
        )
    )
    report = run(agent_client)
    assert report.kept_count == 0 and state() == before, "the members stay current"
    (skip,) = [s for s in report.skipped if s["reason"] == "would_lose_facts"]
    assert skip["method"] == "openai:stand-in-model"
    assert sorted(skip["entry_ids"]) == sorted(MemoryEntry.objects.values_list("pk", flat=True))
    assert any("espresso" in s["text"] for s in skip["lost"])
    assert not any("peanuts" in s["text"] for s in skip["lost"])
    check = Report.objects.get(pk=report.pk).fact_check
    assert check["groups_refused"] == 1 and len(check["stayed_current"]) == len(MARIA)
    assert len(current_texts(context.pk)) == len(MARIA)


def test_a_rewrite_payload_edited_to_drop_a_statement_is_refused_when_applied(
    agent_client: AuthedAgent,
) -> None:
    context = context_of(agent_client)
    write(agent_client, context, MARIA)
    dry = run(agent_client, dry_run=True)
    (item,) = dry.kept
    payload = json.loads(json.dumps(item["payload"]))
    kept = MemoryEntry.objects.get(pk=payload["kept_id"])
    assert payload["replacement"]["content"] != kept.content  # the allergy is carried
    payload["replacement"]["content"] = kept.content  # a hand edit drops what was carried
    account = agent_client.agent.account
    before = state()
    with pytest.raises(Conflict) as refused:
        cluster_rewrite.cluster_rewrite_apply(
            account=account, actor=actor_for_account(account.pk), payload=payload
        )
    assert refused.value.code == "would_lose_facts" and state() == before
    lost = refused.value.details["statements"]
    assert {"entry_id", "text", "start", "end"} == set(lost[0])
    assert any("peanuts" in s["text"] for s in lost)
    # Unedited, the same payload applies.
    cluster_rewrite.cluster_rewrite_apply(
        account=account, actor=actor_for_account(account.pk), payload=item["payload"]
    )
    assert any("peanuts" in t for t in current_texts(context.pk))


def test_under_review_the_pending_rewrite_lists_statements_and_an_edited_one_fails(
    agent_client: AuthedAgent,
) -> None:
    from core import services as core_services
    from core.actors import actor_for_user
    from tests.factories import UserFactory

    context = context_of(agent_client, change_policy="review")
    write(agent_client, context, MARIA)
    report = run(agent_client)
    (item,) = report.kept
    change = PendingChange.objects.get(kind="cluster_rewrite")
    statements = change.after["statements"]
    assert statements == item["statements"]
    assert {s["entry_id"] for s in statements} == set(item["absorbed"])
    carried = [s for s in statements if s["carried"]]
    assert carried and all(s["covered_by"] is None for s in carried)
    assert any("peanuts" in s["text"] for s in carried)

    payload = dict(change.payload)
    payload["replacement"] = {**payload["replacement"], "content": MARIA[0]}
    PendingChange.objects.filter(pk=change.pk).update(payload=payload)
    user = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=agent_client.agent.account, user=user, role="operator")
    before = state()
    change = PendingChange.objects.get(pk=change.pk)
    done = changes.change_approve(actor=actor_for_user(user), change=change)
    assert done.status == "failed" and done.error.startswith("would_lose_facts")
    assert state() == before
