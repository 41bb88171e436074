"""What pages did in an account's day, for its daily summary (``core.digests``).

Read from the audit log, not from the pages' timestamps: a page changed yesterday and again this
morning, before the summary is written, was still changed yesterday. Summary pages themselves
are left out (each would otherwise report the previous day's summary, every day). Pages deleted
since are left out too: there is nothing to link to.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

from content.models import DailySummary, Page
from core.digests import MAX_ITEMS_PER_SECTION, DigestItem, capped, day_bounds
from core.models import AuditEvent

PAGES_CREATED, PAGES_CHANGED = "Pages created", "Pages changed"
SECTIONS = (PAGES_CREATED, PAGES_CHANGED)
CREATED = "content.page.create"
CHANGED = ("content.page.update", "content.page.rename", "content.page.links_rewritten")


def daily_digest(*, account_id: int, day: dt.date) -> list[DigestItem]:
    start, end = day_bounds(day)
    events = AuditEvent.objects.filter(
        account_id=account_id,
        created_at__gte=start,
        created_at__lt=end,
        target_type=Page._meta.label_lower,
        action__in=(CREATED, *CHANGED),
    ).values_list("target_id", "action", "actor_label")
    created: dict[int, str] = {}
    changes: Counter[int] = Counter()
    editors: dict[int, set[str]] = {}
    for target_id, action, actor in events:
        page_id = int(target_id)
        if action == CREATED:
            created[page_id] = actor
        else:
            changes[page_id] += 1
            editors.setdefault(page_id, set()).add(actor)
    ids = set(created) | set(changes)
    if not ids:
        return []
    summaries = DailySummary.objects.filter(account_id=account_id, page_id__in=ids)
    pages = {
        page.pk: page
        for page in Page.objects.filter(account_id=account_id, pk__in=ids)
        .exclude(pk__in=summaries.values("page_id"))
        .only("id", "title", "slug")
    }
    made = [pid for pid in sorted(created) if pid in pages]
    changed = [pid for pid in sorted(changes) if pid in pages and pid not in created]
    items = capped(
        PAGES_CREATED,
        [
            DigestItem(
                section=PAGES_CREATED, link=pages[pid].title, text=f"by {_who(created[pid])}"
            )
            for pid in made[:MAX_ITEMS_PER_SECTION]
        ],
        len(made),
    )
    items += capped(
        PAGES_CHANGED,
        [
            DigestItem(
                section=PAGES_CHANGED,
                link=pages[pid].title,
                text=_edits(changes[pid], editors[pid]),
            )
            for pid in changed[:MAX_ITEMS_PER_SECTION]
        ],
        len(changed),
    )
    return items


def _who(actor_label: str) -> str:
    # ``core.actors.Actor.__str__``: "agent ...", "user ...", or a tool / the system.
    return "the system" if actor_label.startswith("tool on account") else actor_label


def _edits(count: int, actors: set[str]) -> str:
    times = "once" if count == 1 else f"{count} times"
    return f"changed {times} by {', '.join(sorted(_who(a) for a in actors))}"
