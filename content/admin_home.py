"""Content's panels of the admin home (``core.admin_base.home``): an author's recent pages and
the wikilinks of their accounts that name no page yet."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse

from content import selectors
from content.models import Page
from core.actors import AUTHOR
from core.admin_base.home import PANEL_ITEMS, HomeItem, HomePanel, home_panel


@home_panel(AUTHOR, order=10)
def recent_pages_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    mine = Page.objects.filter(account_id__in=accounts, author_id=request.user.pk)
    return HomePanel(
        title="Your recent pages",
        count=mine.count(),
        items=[
            HomeItem(
                label=page.title,
                url=reverse("admin:content_page_change", args=[page.pk]),
                note=page.get_status_display(),
                since=page.updated_at,
            )
            for page in mine.order_by("-updated_at", "-pk")[:PANEL_ITEMS]
        ],
        more_url=reverse("admin:content_page_changelist") + "?written_by=me",
        empty="You have written no page yet.",
    )


@home_panel(AUTHOR, order=20)
def broken_links_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    items: list[HomeItem] = []
    total = 0
    for account_id in sorted(accounts):
        broken, count = selectors.broken_links_in_account(account_id=account_id, limit=PANEL_ITEMS)
        total += count
        items += [
            HomeItem(
                label=page.title,
                url=reverse("admin:content_page_change", args=[page.pk]),
                note="links to " + ", ".join(f"[[{name}]]" for name in names[:5]),
                status="warning",
            )
            for page, names in broken
        ]
    return HomePanel(
        title="Broken wikilinks",
        count=total,
        items=items[:PANEL_ITEMS],
        empty="Every wikilink names a page.",
    )
