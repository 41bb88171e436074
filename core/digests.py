"""Daily digests: what each app has to report about one account's day, read by the daily
summary pages (``content.services.summaries``).

An app contributes through an optional ``<app>/digest.py`` defining

    def daily_digest(*, account_id: int, day: datetime.date) -> list[DigestItem]: ...

found by name at run time, as ``core.jobs`` finds ``<app>.tasks``: ``content`` writes the pages
but never imports the apps above it (``memory``, ``skills``), which still report their day. A
hook reads only the account's own data and returns lines of plain text; a line may name a page
or an article of the account (``link``, its title), which the summary writes as a wikilink.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils import timezone

from core.jobs import app_modules

#: Lines a hook lists per section; the rest are counted in one "and N more" line (``capped``).
MAX_ITEMS_PER_SECTION = 50

DigestHook = Callable[..., list["DigestItem"]]


@dataclass(frozen=True)
class DigestItem:
    """One line of a day's digest.

    ``section`` is the heading it goes under ("Documents indexed"); ``text`` is plain text (the
    writer escapes markdown); ``link`` is the title of a page or an article of the account that
    the line is about, written as a wikilink before the text; ``count`` is how many things the
    line stands for (a line "and 12 more" counts 12), summed in the section's heading.
    ``standing`` marks a line about the account's state rather than its day (the rot report):
    a day with standing lines only has nothing to summarise.
    """

    section: str
    text: str
    link: str | None = None
    count: int = 1
    standing: bool = False


def day_bounds(day: dt.date) -> tuple[dt.datetime, dt.datetime]:
    """The start (inclusive) and end (exclusive) of ``day`` in the installation's time zone."""
    zone = timezone.get_default_timezone()
    start = dt.datetime.combine(day, dt.time.min, tzinfo=zone)
    return start, dt.datetime.combine(day + dt.timedelta(days=1), dt.time.min, tzinfo=zone)


def capped(section: str, items: Sequence[DigestItem], total: int) -> list[DigestItem]:
    """``items`` (at most ``MAX_ITEMS_PER_SECTION`` of them are kept) and, when ``total`` is
    larger, one line counting the others."""
    kept = list(items[:MAX_ITEMS_PER_SECTION])
    hidden = total - len(kept)
    if hidden > 0:
        kept.append(DigestItem(section=section, text=f"and {hidden} more", count=hidden))
    return kept


def digest_hooks() -> list[tuple[str, DigestHook]]:
    """``(app label, daily_digest)`` of every installed app that has one, in dependency order
    (the apps below first)."""
    hooks: list[tuple[str, DigestHook]] = []
    for label, module in app_modules("digest"):
        hook = getattr(module, "daily_digest", None)
        if hook is not None:
            hooks.append((label, hook))
    return hooks


def daily_digest(*, account_id: int, day: dt.date) -> list[DigestItem]:
    """Every app's lines about ``account_id``'s ``day``, app by app; none when only standing
    lines (the account's state, not its day) were found."""
    items: list[DigestItem] = []
    for _, hook in digest_hooks():
        items.extend(hook(account_id=account_id, day=day))
    return items if any(not item.standing for item in items) else []
