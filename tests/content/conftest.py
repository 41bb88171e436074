from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from content import services
from content.models import Article, Page
from core.actors import Actor, actor_for_agent
from tests.conftest import AuthedAgent


@pytest.fixture
def actor(agent_client: AuthedAgent) -> Actor:
    return actor_for_agent(agent_client.agent)


@pytest.fixture
def synced(django_capture_on_commit_callbacks: Any) -> Callable[..., Any]:
    """Run a write with its on-commit work (the link sync tasks run eagerly)."""

    def run(write: Callable[..., Any], /, **kwargs: Any) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return write(**kwargs)

    return run


@pytest.fixture
def make_page(actor: Actor, synced: Callable[..., Any]) -> Callable[..., Page]:
    def make(title: str, content: str = "", *, by: Actor | None = None, **kwargs: Any) -> Page:
        page = synced(
            services.page_create, actor=by or actor, title=title, content=content, **kwargs
        )
        page.refresh_from_db()
        return page

    return make


@pytest.fixture
def make_article(admin_user: Any, synced: Callable[..., Any]) -> Callable[..., Article]:
    from core.actors import actor_for_user

    def make(title: str, content: str = "", **kwargs: Any) -> Article:
        kwargs.setdefault("status", "published")
        return synced(
            services.article_save,
            actor=actor_for_user(admin_user),
            article=None,
            fields={"title": title, "content": content, **kwargs},
        )

    return make
