"""Daily summary pages on the real PostgreSQL: the digest they hold, one page per account and day
however often the job runs, their place in the backlinks of what they mention, tenancy, the
prose an LLM writes (against the local stand-in server) and the periodic job."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.utils import timezone

import core.llm
from content import digest as content_digest
from content import selectors, services, tasks
from content.models import DailySummary, Page
from content.services import summaries
from core.actors import Actor, actor_for_account
from core.digests import DigestItem, digest_hooks
from core.jobs import periodic_jobs
from core.models import AuditEvent, JobRun
from rag import services as rag_services
from rag.models import Document, GraphEdge
from tests.conftest import AuthedAgent
from tests.support.openai_standin import OpenAIStandIn, openai_standin_fixture  # noqa: F401
from tests.support.world import build_side

pytestmark = pytest.mark.django_db

MakePage = Callable[..., Page]
Synced = Callable[..., Any]


@pytest.fixture
def today() -> dt.date:
    return timezone.localdate()


@pytest.fixture
def write(synced: Synced, today: dt.date) -> Callable[..., summaries.SummaryOutcome]:
    """Write one account's summary of ``day`` (default today), its link sync run eagerly."""

    def run(account_id: int, day: dt.date | None = None) -> summaries.SummaryOutcome:
        return synced(summaries.daily_summary_write, account_id=account_id, day=day or today)

    return run


def summary_pages(account_id: int) -> list[Page]:
    return list(Page.objects.filter(account_id=account_id, title__startswith="Daily summary"))


def link_targets(page: Page) -> set[str]:
    page.refresh_from_db()
    return set(
        GraphEdge.objects.filter(source_id=page.node_id, relation_type="references").values_list(
            "target__name", flat=True
        )
    )


def index_document(actor: Actor, synced: Synced, title: str) -> Document:
    kb = rag_services.knowledge_base_create(actor=actor, name=f"KB {title}")
    document = synced(
        rag_services.document_create,
        actor=actor,
        kb=kb,
        data=b"# Notes\n\nTomatoes and basil.",
        filename="notes.md",
        title=title,
    )
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.error
    return document


def test_the_digest_lists_pages_and_documents_with_links(
    make_page: MakePage,
    actor: Actor,
    agent_client: AuthedAgent,
    synced: Synced,
    write: Callable[..., summaries.SummaryOutcome],
    today: dt.date,
) -> None:
    alpha = make_page("Alpha", "First page.")
    make_page("C# Tips", "Sharp.")
    gamma = make_page("Gamma", "Third page.")
    synced(services.page_update, actor=actor, page=gamma, fields={"content": "Changed."})
    synced(services.page_update, actor=actor, page=gamma, fields={"content": "Again."})
    index_document(actor_for_account(actor.account_id), synced, "Handbook *v2* [[Alpha]]")

    outcome = write(actor.account_id)

    assert outcome.status == "created" and not outcome.prose
    page = outcome.page
    assert page is not None
    page.refresh_from_db()
    agent = f"agent {agent_client.agent}"
    assert page.title == f"Daily summary {today.isoformat()}"
    assert (page.author_id, page.author_agent_id, page.status) == (None, None, "published")
    assert page.content == (
        f"Activity in this account on {today:%A} {today.day} {today:%B %Y} (UTC).\n\n"
        "## Pages created (3)\n\n"
        f"- [[Alpha]]: by {agent}\n"
        f"- [[c-tips]]: by {agent}\n"
        f"- [[Gamma]]: by {agent}\n\n"
        "## Documents indexed (1)\n\n"
        r"- Handbook \*v2\* \[\[Alpha\]\] (knowledge base KB Handbook \*v2\* \[\[Alpha\]\], "
        "1 chunk)\n"
    )
    assert link_targets(page) == {"Alpha", "C# Tips", "Gamma"}
    assert selectors.broken_links(page=page) == []
    assert DailySummary.objects.get(account_id=actor.account_id, day=today).page_id == page.pk
    assert alpha.pk != page.pk


def test_pages_changed_on_the_day_and_by_whom(
    make_page: MakePage, actor: Actor, synced: Synced, today: dt.date
) -> None:
    page = make_page("Old Page", "Written long ago.")
    AuditEvent.objects.filter(target_id=str(page.pk)).update(
        created_at=timezone.now() - dt.timedelta(days=3)
    )
    synced(services.page_update, actor=actor, page=page, fields={"content": "Now."})
    synced(
        services.page_update,
        actor=actor_for_account(actor.account_id),
        page=Page.objects.get(pk=page.pk),
        fields={"content": "And again."},
    )
    items = content_digest.daily_digest(account_id=actor.account_id, day=today)
    assert items == [
        DigestItem(
            section="Pages changed",
            text=f"changed 2 times by {actor.agent and f'agent {actor.agent}'}, the system",
            link="Old Page",
        )
    ]
    assert (
        content_digest.daily_digest(account_id=actor.account_id, day=today - dt.timedelta(days=1))
        == []
    )


def test_rerunning_the_same_day_rewrites_its_one_page(
    make_page: MakePage, actor: Actor, write: Callable[..., summaries.SummaryOutcome]
) -> None:
    make_page("Alpha")
    first = write(actor.account_id)
    second = write(actor.account_id)  # the summary page itself is never in its digest
    assert (first.status, second.status) == ("created", "unchanged")
    assert first.page is not None and second.page is not None
    assert second.page.pk == first.page.pk

    make_page("Beta")
    third = write(actor.account_id)
    assert third.status == "updated" and third.page is not None
    assert third.page.pk == first.page.pk
    assert [p.pk for p in summary_pages(actor.account_id)] == [first.page.pk]
    assert "[[Beta]]" in third.page.content
    assert link_targets(third.page) == {"Alpha", "Beta"}
    assert DailySummary.objects.filter(account_id=actor.account_id).count() == 1


def test_a_summary_appears_in_the_backlinks_of_the_pages_it_mentions(
    make_page: MakePage, actor: Actor, write: Callable[..., summaries.SummaryOutcome]
) -> None:
    alpha = make_page("Alpha")
    outcome = write(actor.account_id)
    assert outcome.page is not None
    alpha.refresh_from_db()
    assert [p.pk for p in selectors.backlinks(page=alpha)] == [outcome.page.pk]
    (item,) = selectors.backlink_items(page=alpha, sources=selectors.backlinks(page=alpha))
    assert item.title == outcome.page.title and item.link_text == "[[Alpha]]"


def test_nothing_to_report_means_no_page(
    actor: Actor, write: Callable[..., summaries.SummaryOutcome]
) -> None:
    assert write(actor.account_id).status == "empty"
    assert summary_pages(actor.account_id) == []
    assert not DailySummary.objects.exists()


def test_a_deleted_summary_is_not_written_again(
    make_page: MakePage,
    actor: Actor,
    synced: Synced,
    write: Callable[..., summaries.SummaryOutcome],
) -> None:
    make_page("Alpha")
    page = write(actor.account_id).page
    assert page is not None
    synced(services.page_delete, actor=actor, page=page)
    assert write(actor.account_id).status == "deleted"
    assert summary_pages(actor.account_id) == []


def test_a_title_taken_by_an_author_gets_a_number(
    make_page: MakePage,
    actor: Actor,
    write: Callable[..., summaries.SummaryOutcome],
    today: dt.date,
) -> None:
    mine = make_page(f"Daily Summary {today.isoformat()}", "My own notes.")
    page = write(actor.account_id).page
    assert page is not None
    assert page.title == f"Daily summary {today.isoformat()} (2)"
    assert f"[[{mine.title}]]" in page.content
    assert Page.objects.get(pk=mine.pk).content == "My own notes."


def test_one_accounts_summary_never_mentions_anothers_data(
    django_capture_on_commit_callbacks: Any, today: dt.date
) -> None:
    own = build_side("OWNQX", django_capture_on_commit_callbacks)
    intruder = build_side("INTRUDERQX", django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        report = summaries.daily_summaries_write(day=today)
    assert report.errors == {}
    assert report.counts["created"] == 2
    for side, other in ((own, intruder), (intruder, own)):
        (page,) = summary_pages(side.account.pk)
        assert other.marker not in page.content and other.marker.lower() not in page.content
        assert f"[[{side.marker}PAGE]]" in page.content
        assert f"{side.marker}DOC" in page.content
        # The side's context is its agent's (private): counted, never named (the page is read
        # by the whole account).
        assert "private contexts: " in page.content and "1 revised" in page.content
        assert f"ltm-{side.account.pk}" not in page.content
        page.refresh_from_db()
        edges = GraphEdge.objects.filter(source_id=page.node_id).select_related("target")
        assert edges and {e.target.account_id for e in edges} == {side.account.pk}
        # "Harbour Notes" is a title in both accounts: the link reaches the account's own.
        assert side.page is not None and other.page is not None
        assert page.pk in {p.pk for p in selectors.backlinks(page=side.page)}
        assert page.pk not in {p.pk for p in selectors.backlinks(page=other.page)}


# --- the LLM path ----------------------------------------------------------------------------


@pytest.fixture
def llm(openai_standin: OpenAIStandIn, settings: Any) -> Iterator[OpenAIStandIn]:
    settings.LLM_PROVIDER, settings.LLM_BASE_URL, settings.LLM_MODEL = (
        "openai",
        openai_standin.base_url,
        "m",
    )
    settings.LLM_MAX_RETRIES = 0
    core.llm.reset_llm_provider()
    yield openai_standin
    core.llm.reset_llm_provider()


def test_with_an_llm_the_page_starts_with_its_prose(
    llm: OpenAIStandIn,
    make_page: MakePage,
    make_agent_client: Callable[..., AuthedAgent],
    actor: Actor,
    write: Callable[..., summaries.SummaryOutcome],
) -> None:
    make_page("Alpha", "First page.")
    make_page("Beta", "Second page.")
    other = make_agent_client()
    make_page("Secret Plan", by=Actor(account_ids=frozenset({other.agent.account_id})))
    llm.reply_with(
        "A quiet day: [[Alpha]] and [[beta|the second page]] were written. "
        "See also [[Made Up]] and [[Secret Plan]]."
    )

    outcome = write(actor.account_id)

    assert outcome.status == "created" and outcome.prose
    assert outcome.page is not None
    content = outcome.page.content
    assert content.startswith(
        "A quiet day: [[Alpha]] and [[beta|the second page]] were written. "
        "See also Made Up and Secret Plan.\n\n## Pages created (2)\n\n- [[Alpha]]: by "
    )
    assert link_targets(outcome.page) == {"Alpha", "Beta"}
    (request,) = llm.requests_to("/v1/chat/completions")
    system, user = request.body["messages"]
    assert system["role"] == "system" and "keep that link exactly" in system["content"]
    assert "[[Alpha]]" in user["content"] and "[[Beta]]" in user["content"]
    assert "Secret Plan" not in user["content"]


def test_when_the_llm_fails_the_page_is_the_digest(
    llm: OpenAIStandIn,
    make_page: MakePage,
    actor: Actor,
    write: Callable[..., summaries.SummaryOutcome],
) -> None:
    make_page("Alpha")
    llm.fail(503)
    outcome = write(actor.account_id)
    assert outcome.status == "created" and not outcome.prose and outcome.page is not None
    assert outcome.page.content.startswith("Activity in this account on ")
    assert "[[Alpha]]" in outcome.page.content


# --- the job ---------------------------------------------------------------------------------


def test_the_job_summarises_yesterday_once_per_account_and_records_its_run(
    make_page: MakePage,
    actor: Actor,
    make_agent_client: Callable[..., AuthedAgent],
    django_capture_on_commit_callbacks: Any,
    today: dt.date,
) -> None:
    (job,) = [j for j in periodic_jobs() if j.name == "content.daily_summaries"]
    assert job.task == "content.tasks.daily_summaries" and job.crontab == "30 4 * * *"
    page = make_page("Alpha")
    make_page("Today's Page")
    make_agent_client()  # an account with nothing to report
    yesterday = timezone.now() - dt.timedelta(days=1)
    AuditEvent.objects.filter(target_id=str(page.pk)).update(created_at=yesterday)

    assert tasks.daily_summaries.delay(dry_run=True).get()["would_write"] == 1
    assert not DailySummary.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        counts = tasks.daily_summaries.delay().get()
    with django_capture_on_commit_callbacks(execute=True):
        again = tasks.daily_summaries.delay().get()

    assert counts["created"] == 1 and counts["empty"] == counts["accounts"] - 1
    assert again["unchanged"] == 1 and again["created"] == 0
    (summary,) = summary_pages(actor.account_id)
    day = today - dt.timedelta(days=1)
    assert summary.title == f"Daily summary {day.isoformat()}"
    assert "[[Alpha]]" in summary.content and "Today's Page" not in summary.content
    runs = JobRun.objects.filter(job="content.daily_summaries", status=JobRun.Status.SUCCEEDED)
    assert runs.count() == 3
    assert tasks.daily_summaries.delay(day=today.isoformat()).get()["created"] == 1


def test_one_failing_account_fails_the_run_but_not_the_others(
    make_page: MakePage,
    actor: Actor,
    make_agent_client: Callable[..., AuthedAgent],
    monkeypatch: pytest.MonkeyPatch,
    today: dt.date,
) -> None:
    make_page("Alpha")
    other = make_agent_client()
    make_page("Beta", by=Actor(account_ids=frozenset({other.agent.account_id})))
    real = content_digest.daily_digest

    def broken(*, account_id: int, day: dt.date) -> list[DigestItem]:
        if account_id == other.agent.account_id:
            raise ValueError("disk on fire")
        return real(account_id=account_id, day=day)

    monkeypatch.setattr(content_digest, "daily_digest", broken)
    with pytest.raises(tasks.DailySummariesFailed):
        tasks.daily_summaries.delay(day=today.isoformat()).get()
    run = JobRun.objects.get(job="content.daily_summaries")
    assert run.status == JobRun.Status.FAILED
    assert run.error.endswith(f"({other.agent.account_id}: ValueError: disk on fire)")
    assert run.counts["created"] == 1 and run.counts["failed"] == 1
    assert len(summary_pages(actor.account_id)) == 1


def test_every_app_below_skills_contributes_a_digest_hook() -> None:
    assert [label for label, _ in digest_hooks()] == ["rag", "content", "memory"]


def test_a_long_section_ends_with_a_count_of_the_rest(
    make_page: MakePage, actor: Actor, monkeypatch: pytest.MonkeyPatch, today: dt.date
) -> None:
    import core.digests

    monkeypatch.setattr(core.digests, "MAX_ITEMS_PER_SECTION", 2)
    monkeypatch.setattr(content_digest, "MAX_ITEMS_PER_SECTION", 2)
    for title in ("One", "Two", "Three", "Four"):
        make_page(title)
    items = content_digest.daily_digest(account_id=actor.account_id, day=today)
    assert [(i.link, i.text, i.count) for i in items] == [
        ("One", f"by agent {actor.agent}", 1),
        ("Two", f"by agent {actor.agent}", 1),
        (None, "and 2 more", 2),
    ]
    markdown = summaries.digest_markdown(day=today, items=items)
    assert "## Pages created (4)\n\n- [[One]]: by" in markdown
    assert markdown.endswith("- and 2 more\n")
