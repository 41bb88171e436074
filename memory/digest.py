"""What long-term memory took in during an account's day, for its daily summary
(``core.digests``): per context, the entries promoted from short-term memory by consolidation,
the entries written and revised, and those archived (merged into a duplicate, or gone stale).

Counts only, never the entries' text: a summary page is read by every author of the account
(and every agent, through the pages API), while an agent's memory is private to the agents its
context admits. For the same reason only the contexts every agent of the account reads
(``account`` and ``global`` scope) are named; the others (an agent's own memory, its
conversations, a team's) are counted together in one line, without their names.
"""

from __future__ import annotations

import datetime as dt

from django.db.models import Count, Q
from django.utils import timezone

from core.actors import actor_for_account
from core.digests import MAX_ITEMS_PER_SECTION, DigestItem, day_bounds
from memory.maintenance.selectors import rot
from memory.models import MemoryContext, MemoryEntry

MEMORIES = "Long-term memory"
ROT = "Rot"
# Pages named per rot kind in the summary (the rest counted in the kind's line).
ROT_PAGES_NAMED = 5


def daily_digest(*, account_id: int, day: dt.date) -> list[DigestItem]:
    """The day's memories, and for a recent day (yesterday's summary, written the next night,
    or today's) the rot report as of now, as standing lines: a day with nothing else to say
    gets no page for its rot alone."""
    items = _memories(account_id, day)
    if day >= timezone.localdate() - dt.timedelta(days=1):
        items += rot_digest(account_id=account_id)
    return items


def rot_digest(*, account_id: int) -> list[DigestItem]:
    """The account's rot report as of now (``memory.maintenance.selectors.rot``): one line per kind
    found, with its count and suggested action; broken links and stale pages name their pages (a
    memory's text never appears: the summary is read by every author of the account)."""
    report = rot.rot_report(
        actor=actor_for_account(account_id), account_id=account_id, limit=ROT_PAGES_NAMED
    )
    items: list[DigestItem] = []
    for section in report.sections:
        if not section.total:
            continue
        action = section.items[0].suggested_action if section.items else ""
        if section.kind in ("broken_wikilink", "stale_linked_page"):
            for found in section.items:
                items.append(
                    DigestItem(section=ROT, text=found.detail, link=found.title, standing=True)
                )
            hidden = section.total - len(section.items)
            if hidden > 0:
                items.append(
                    DigestItem(
                        section=ROT,
                        text=f"and {hidden} more: {section.title.lower()}",
                        count=hidden,
                        standing=True,
                    )
                )
            continue
        if section.kind == "outdated_document":
            action = "Reprocess them (force)."
        items.append(
            DigestItem(
                section=ROT,
                text=f"{section.title} ({report.days} days): {section.total}. {action}",
                count=section.total,
                standing=True,
            )
        )
    return items


def _memories(account_id: int, day: dt.date) -> list[DigestItem]:
    start, end = day_bounds(day)
    # ``contains``, not a key lookup: NOT of a missing key would be NULL, and count nothing.
    promoted = Q(metadata__contains={"source": "short_term"})
    counts: dict[int, dict[str, int]] = {}
    for row in (
        MemoryEntry.objects.filter(account_id=account_id, created_at__gte=start, created_at__lt=end)
        .values("context_id")
        .annotate(
            promoted=Count("id", filter=promoted),
            written=Count("id", filter=~promoted & Q(version=1)),
            revised=Count("id", filter=~promoted & Q(version__gt=1)),
        )
    ):
        found = {k: row[k] for k in ("promoted", "written", "revised") if row[k]}
        if found:
            counts[row["context_id"]] = found
    for context_id, archived in (
        MemoryEntry.objects.filter(
            account_id=account_id, archived_at__gte=start, archived_at__lt=end
        )
        .values("context_id")
        .annotate(archived=Count("id"))
        .values_list("context_id", "archived")
    ):
        counts.setdefault(context_id, {})["archived"] = archived
    if not counts:
        return []
    contexts = MemoryContext.objects.filter(account_id=account_id, pk__in=counts).select_related(
        "owner"
    )
    shared = {MemoryContext.Scope.ACCOUNT, MemoryContext.Scope.GLOBAL}
    named = sorted(
        (c for c in contexts if c.scope in shared),
        key=lambda c: (-sum(counts[c.pk].values()), c.name),
    )
    items = [
        DigestItem(
            section=MEMORIES,
            text=f"{_label(context)}: {_counts(counts[context.pk])}",
            count=sum(counts[context.pk].values()),
        )
        for context in named[:MAX_ITEMS_PER_SECTION]
    ]
    hidden = named[MAX_ITEMS_PER_SECTION:]
    if hidden:
        entries = sum(sum(counts[c.pk].values()) for c in hidden)
        items.append(
            DigestItem(section=MEMORIES, text=f"and {len(hidden)} more contexts", count=entries)
        )
    private = [c for c in contexts if c.scope not in shared]
    if private:
        together: dict[str, int] = {}
        for context in private:
            for kind, n in counts[context.pk].items():
                together[kind] = together.get(kind, 0) + n
        plural = "s" if len(private) > 1 else ""
        items.append(
            DigestItem(
                section=MEMORIES,
                text=f"{len(private)} private context{plural}: {_counts(together)}",
                count=sum(together.values()),
            )
        )
    return items


def _label(context: MemoryContext) -> str:
    if context.owner is not None and context.name == f"agent:{context.owner_id}":
        return f"memory of agent {context.owner.name}"
    return f"context {context.name}"


def _counts(counts: dict[str, int]) -> str:
    words = {
        "promoted": "promoted from short-term memory",
        "written": "written",
        "revised": "revised",
        "archived": "archived",
    }
    return ", ".join(f"{counts[k]} {words[k]}" for k in words if counts.get(k))
