"""Page writes while the broker (Valkey) is down: the write is saved and answered 2xx, never a
500 after the commit; its sync (graph node, ``references`` edges, embedding) is marked pending
in the write's transaction and the sweep ``content.sync_pending`` runs it later. Real commits
(``transaction=True``): the on-commit send runs inside the request, as in production."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from kombu.exceptions import OperationalError

from content import services, tasks
from content.models import Article, Page
from core.actors import actor_for_agent, actor_for_user
from core.models import JobRun
from core.queue import task_send
from rag.models import GraphEdge
from tests.conftest import AuthedAgent
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = "/api/v1/content/pages"
TASKS = (tasks.page_sync, tasks.article_sync, tasks.pages_relink)


class Broker:
    """Valkey, as the content tasks see it: ``down()`` makes every send raise what Celery
    raises when the broker refuses connections; ``up()`` brings it back."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.refused: list[str] = []

    def down(self) -> None:
        for task in TASKS:
            self.monkeypatch.setattr(task, "apply_async", self._refuse(task.name))

    def up(self) -> None:
        self.monkeypatch.undo()

    def _refuse(self, name: str) -> Any:
        def apply_async(*args: Any, **kwargs: Any) -> Any:
            self.refused.append(name)
            raise OperationalError("Error 111 connecting to localhost:6379. Connection refused.")

        return apply_async


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Broker]:
    yield Broker(monkeypatch)
    monkeypatch.undo()


def _age_pending() -> None:
    """As if the sweep's grace period had passed since the writes."""
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Page.objects.exclude(sync_pending_at=None).update(sync_pending_at=an_hour_ago)
    Article.objects.exclude(sync_pending_at=None).update(sync_pending_at=an_hour_ago)


def _references(page: Page) -> set[int]:
    page.refresh_from_db()
    return set(
        GraphEdge.objects.filter(source_id=page.node_id, relation_type="references").values_list(
            "target_id", flat=True
        )
    )


def test_page_writes_answer_2xx_and_the_sweep_syncs_them_later(
    agent_client: AuthedAgent, broker: Broker
) -> None:
    client = agent_client.client
    target = client.post(PAGES, {"title": "Tide Tables", "content": "High and low."}, format="json")
    assert target.status_code == 201
    target_page = Page.objects.get(pk=target.json()["id"])
    assert target_page.node_id is not None and target_page.sync_pending_at is None  # synced

    broker.down()
    created = client.post(
        PAGES, {"title": "Harbour", "content": "See [[Tide Tables]]."}, format="json"
    )
    assert created.status_code == 201, created.content[:300]
    page = Page.objects.get(pk=created.json()["id"])
    assert page.node_id is None and page.sync_pending_at is not None
    changed = client.patch(
        f"{PAGES}/{page.pk}", {"content": "See [[Tide Tables]] twice."}, format="json"
    )
    assert changed.status_code == 200, changed.content[:300]
    assert "content.tasks.page_sync" in broker.refused  # the sends were tried, and refused
    broker.up()

    # Not yet due: a sync may simply be on its way.
    assert tasks.sync_pending.delay().get() == {"pages": 0, "articles": 0}
    _age_pending()
    assert tasks.sync_pending.delay(dry_run=True).get() == {
        "pages": 1,
        "articles": 0,
        "dry_run": 1,
    }
    page.refresh_from_db()
    assert page.node_id is None  # a dry run syncs nothing
    assert tasks.sync_pending.delay().get() == {"pages": 1, "articles": 0}
    page.refresh_from_db()
    assert page.sync_pending_at is None and page.node_id is not None
    assert page.embedding is not None
    assert _references(page) == {target_page.node_id}
    backlinks = client.get(f"{PAGES}/{target_page.pk}/backlinks").json()["results"]
    assert [item["id"] for item in backlinks] == [page.pk]
    run = JobRun.objects.filter(job="content.sync_pending").latest("started_at")
    assert run.status == JobRun.Status.SUCCEEDED and run.counts == {"pages": 1, "articles": 0}


def test_pages_to_relink_are_marked_when_the_relink_cannot_be_queued(
    agent_client: AuthedAgent, broker: Broker
) -> None:
    """A new title may resolve other pages' broken links: with the broker down, those pages
    are marked for the sweep instead of the relink task being lost."""
    broker.down()
    actor = actor_for_agent(agent_client.agent)
    linking = services.page_create(actor=actor, title="Harbour", content="See [[Pilot Guide]].")
    linking.refresh_from_db()
    Page.objects.filter(pk=linking.pk).update(sync_pending_at=None)  # as if its sync had run
    created = agent_client.client.post(PAGES, {"title": "Pilot Guide"}, format="json")
    assert created.status_code == 201
    assert "content.tasks.pages_relink" in broker.refused
    linking.refresh_from_db()
    assert linking.sync_pending_at is not None
    _age_pending()
    broker.up()
    assert tasks.sync_pending.delay().get() == {"pages": 2, "articles": 0}
    pilot = Page.objects.get(pk=created.json()["id"])
    assert _references(linking) == {pilot.node_id}


def test_articles_saved_while_the_broker_is_down_are_embedded_by_the_sweep(
    broker: Broker,
) -> None:
    broker.down()
    staff = actor_for_user(UserFactory.create(is_staff=True))
    article = services.article_save(
        actor=staff, article=None, fields={"title": "Moorings", "content": "Ropes and knots."}
    )
    article.refresh_from_db()
    assert article.sync_pending_at is not None and article.embedding is None
    assert "content.tasks.article_sync" in broker.refused
    _age_pending()
    broker.up()
    assert tasks.sync_pending.delay().get() == {"pages": 0, "articles": 1}
    article.refresh_from_db()
    assert article.sync_pending_at is None and article.embedding is not None


def test_task_send_reports_a_broker_that_is_down(broker: Broker) -> None:
    broker.down()
    assert task_send(tasks.page_sync, 1) is False
    assert broker.refused == ["content.tasks.page_sync"]
