"""content's kinds of an account export (``core.portability``): the account's pages and its
daily summaries. A page's slug and match keys are derived from its title and aliases again,
and what its text links to is not carried: each imported page is marked for its sync
(``links.page_sync``: its graph node, its ``references`` edges from its wikilinks, its
embedding), which runs after the import commits, as after any page write. Articles are
installation-wide, not an account's: a page linking to one links to the target
installation's article of that title, if it has one."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Any

from django.utils import timezone

from content import wikilinks
from content.models import DailySummary, Page
from core.portability.kinds import ExportScope, ImportScope, Kind, Row, ref, when

PAGE = "content.page"
SUMMARY = "content.daily_summary"


def _pages(scope: ExportScope) -> Any:
    pages = Page.objects.filter(account=scope.account)
    if scope.single_agent:
        pages = pages.filter(author_agent__in=scope.agent_ids)
    return pages


def _page_rows(scope: ExportScope) -> Iterator[Row]:
    for page in _pages(scope).defer("embedding").order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": page.pk,
            "title": page.title,
            "content": page.content,
            "aliases": page.aliases,
            "status": page.status,
            "author_agent": scope.agent_ref(page.author_agent_id),
            "created_at": page.created_at,
            "updated_at": page.updated_at,
        }


def _page_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    now = timezone.now()
    made = Page.objects.bulk_create(
        [
            Page(
                account=scope.account,
                title=row["title"],
                content=row["content"],
                aliases=row["aliases"],
                status=row["status"],
                author_agent_id=scope.resolve(row["author_agent"]),
                slug=wikilinks.slugify(row["title"]),
                title_key=wikilinks.normalise_title(row["title"]),
                alias_keys=[wikilinks.normalise_title(alias) for alias in row["aliases"]],
                sync_pending_at=now,
                created_at=when(row["created_at"]),
            )
            for row in rows
        ]
    )
    pages: list[int] = scope.memo.setdefault("content.pages", [])
    for row, page in zip(rows, made, strict=True):
        scope.remember(PAGE, row["id"], page.pk)
        page.updated_at = when(row["updated_at"])
        pages.append(page.pk)
    Page.objects.bulk_update(made, ["updated_at"])


def _pages_finish(scope: ImportScope) -> None:
    """Every page's sync (node, links, embedding) once the import commits; each page is
    marked pending already, so the sweep (``content.sync_pending``) runs what a broker that
    is down did not."""
    pages = list(scope.memo.get("content.pages", []))
    if pages:
        scope.after_commit.append(lambda: _sync(pages))


def _sync(pages: Sequence[int]) -> None:
    from content import tasks
    from core.queue import task_send

    for page_id in pages:
        task_send(tasks.page_sync, page_id)


def _summary_rows(scope: ExportScope) -> Iterator[Row]:
    summaries = DailySummary.objects.filter(account=scope.account)
    if scope.single_agent:
        summaries = summaries.filter(page__in=_pages(scope))
    for summary in summaries.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": summary.pk,
            "day": summary.day,
            "page": ref(PAGE, summary.page_id),
            "created_at": summary.created_at,
        }


def _summary_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = DailySummary.objects.bulk_create(
        [
            DailySummary(
                account=scope.account,
                day=dt.date.fromisoformat(row["day"]),
                page_id=scope.resolve(row["page"]),
            )
            for row in rows
        ]
    )
    scope.remember_created(SUMMARY, DailySummary, rows, made, "created_at")


KINDS = (
    Kind(
        name=PAGE,
        schema={
            "title": "str: its slug, unique in the account, is derived from it",
            "content": "str: markdown; its [[wikilinks]] are linked again on import",
            "aliases": "[str]",
            "status": "str: draft | published",
            "author_agent": "ref:core.agent or null (a person's authorship is not carried)",
            "created_at": "datetime",
            "updated_at": "datetime",
        },
        rows=_page_rows,
        load=_page_load,
        finish=_pages_finish,
    ),
    Kind(
        name=SUMMARY,
        schema={
            "day": "date",
            "page": f"ref:{PAGE} or null",
            "created_at": "datetime",
        },
        rows=_summary_rows,
        load=_summary_load,
    ),
)
