"""Celery tasks of pages and articles: the link sync after each save, and re-syncs when titles
change."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from content.models import Article
from content.services import links

logger = logging.getLogger("engram.content")

PERIODIC_JOBS: list[Any] = []


@shared_task(time_limit=300, soft_time_limit=240, acks_late=True)
def page_sync(page_id: int) -> dict[str, Any] | None:
    """A saved page's node, embedding and ``references`` edges."""
    report = links.page_sync(page_id=page_id)
    if report is None:
        return None
    return {"links": report.links, "created": report.created, "removed": report.removed}


@shared_task(time_limit=300, soft_time_limit=240, acks_late=True)
def article_sync(article_id: int) -> bool:
    """A saved article's embedding (its nodes follow through the pages that link to it)."""
    article = Article.objects.filter(pk=article_id).first()
    return links.embed(article) if article is not None else False


@shared_task(time_limit=900, soft_time_limit=840, acks_late=True)
def pages_relink(
    account_id: int | None, names: list[str], node_ids: list[int] | None = None
) -> int:
    """Re-sync the pages whose links may name one of ``names`` or reach ``node_ids``."""
    page_ids = links.linking_candidates(account_id=account_id, names=names, node_ids=node_ids or [])
    for page_id in page_ids:
        links.page_sync(page_id=page_id)
    return len(page_ids)
