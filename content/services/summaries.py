"""Daily summary pages: one page per account and day saying what happened in the account that
day, written by the system (no person, no agent) after the day ends (``content.tasks``).

What happened comes from every app's digest hook (``core.digests``: pages here, documents in
``rag``, memories in ``memory``, what later apps add). The page lists it section by section,
each page it mentions as a ``[[wikilink]]``; it is saved through ``page_create`` /
``page_update``, so the link sync makes its ``references`` edges and the summary appears in the
backlinks of every page it mentions. With an LLM configured (``core.llm``), a few paragraphs of
prose written from the digest come first; the model's links are kept only where they name what
the digest mentions (a link it made up becomes plain text). Offline, or when the model fails,
the page is the structured digest alone.

One page per account and day (``DailySummary``, unique): running again for the same day
rewrites that page (nothing changes when the digest did not); an account with nothing to
report gets no page; a summary page an author deleted is not written again.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from content import digest as content_digest
from content import wikilinks
from content.models import DailySummary, Page, Status
from content.services.pages import page_create, page_update
from content.tuning import TUNING
from core import digests
from core.actors import actor_for_account
from core.digests import DigestItem
from core.errors import Conflict
from core.llm import LLMError, get_llm_provider
from core.models import Account

logger = logging.getLogger("engram.content")

TITLE = "Daily summary {day}"
# An author's page may hold the title already: the summary then takes "... (2)", "... (3)".
TITLE_ATTEMPTS = 5
PROSE_SYSTEM_PROMPT = (
    "You write the daily summary page of a team's knowledge base from the digest of one day's "
    "activity. Write one to three short paragraphs of plain prose in markdown: no headings, no "
    "lists, no preamble. Say what stands out and give the overall picture. When you mention a "
    "page the digest links as [[...]], keep that link exactly as written. Never invent links, "
    "names or facts that are not in the digest."
)
_MARKDOWN_SPECIAL = "\\`*_[]<>"

CREATED, UPDATED, UNCHANGED = "created", "updated", "unchanged"
EMPTY, DELETED, WOULD_WRITE = "empty", "deleted", "would_write"


def summary_title(day: dt.date) -> str:
    return TITLE.format(day=day.isoformat())


def yesterday() -> dt.date:
    """The day before today in the installation's time zone (the day a run summarises)."""
    return timezone.localdate() - dt.timedelta(days=1)


# --- the page's text -------------------------------------------------------------------------


def escape(text: str) -> str:
    """Plain text as markdown that shows it as is: no emphasis, code, HTML or wikilink."""
    text = " ".join(text.split())
    return "".join(f"\\{c}" if c in _MARKDOWN_SPECIAL else c for c in text)


def link(title: str) -> str:
    """A wikilink to a page or an article by its title; by its slug when the title holds what
    a link target cannot (``#`` starts an anchor) or what would start code."""
    if any(c in title for c in "#`\\") and wikilinks.slugify(title):
        return f"[[{wikilinks.slugify(title)}]]"
    return f"[[{title}]]"


def _line(item: DigestItem) -> str:
    text = escape(item.text)
    if item.link:
        return f"- {link(item.link)}: {text}" if text else f"- {link(item.link)}"
    return f"- {text}"


def digest_markdown(*, day: dt.date, items: Sequence[DigestItem]) -> str:
    """The structured digest: a line naming the day, then a section per heading (with the
    number of things it counts), a line per item, pages as wikilinks."""
    sections: dict[str, list[DigestItem]] = {}
    # Pages first (this is a page among them), then the other apps' lines in their order.
    for item in sorted(items, key=lambda i: i.section not in content_digest.SECTIONS):
        sections.setdefault(item.section, []).append(item)
    parts = [f"Activity in this account on {day:%A} {day.day} {day:%B %Y} ({settings.TIME_ZONE})."]
    for heading, lines in sections.items():
        parts.append(f"## {escape(heading)} ({sum(i.count for i in lines)})")
        parts.append("\n".join(_line(i) for i in lines))
    return "\n\n".join(parts) + "\n"


def _links_only_to(text: str, allowed: set[str]) -> str:
    """``text`` with every wikilink whose target is not in ``allowed`` (normalised) made plain
    text: the model may only link what the digest links."""
    pieces: list[str] = []
    cursor = 0
    for found in wikilinks.parse(text):
        if wikilinks.normalise_title(found.target) in allowed:
            continue
        pieces.append(text[cursor : found.start])
        pieces.append(escape(found.display or found.target))
        cursor = found.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def summary_prose(*, day: dt.date, digest: str) -> str | None:
    """A few paragraphs about the day from the configured LLM; None offline or when the model
    fails (the page then holds the digest alone). Called outside any transaction."""
    if settings.LLM_PROVIDER == "offline":
        return None
    try:
        reply = get_llm_provider().complete(
            f"Digest of {day.isoformat()}:\n\n{digest}",
            system=PROSE_SYSTEM_PROMPT,
            max_tokens=TUNING.summaries.prose_max_tokens,
            temperature=0.2,
        )
    except LLMError as exc:
        logger.warning("daily summary of %s: no prose, the LLM failed: %s", day, exc)
        return None
    allowed = {wikilinks.normalise_title(found.target) for found in wikilinks.parse(digest)}
    prose = _links_only_to(reply.replace("\x00", "").strip(), allowed)
    return prose or None


def summary_content(*, day: dt.date, items: Sequence[DigestItem]) -> tuple[str, bool]:
    """The page's text, and whether the LLM wrote prose for it."""
    digest = digest_markdown(day=day, items=items)
    prose = summary_prose(day=day, digest=digest)
    if prose is None:
        return digest, False
    details = digest.split("\n\n", 1)[1] if "\n\n" in digest else ""
    return f"{prose}\n\n{details}", True


# --- writing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SummaryOutcome:
    status: str  # created | updated | unchanged | empty | deleted | would_write
    page: Page | None = None
    prose: bool = False


def _page_create(*, account_id: int, day: dt.date, content: str) -> Page:
    actor = actor_for_account(account_id)
    title = summary_title(day)
    for attempt in range(1, TITLE_ATTEMPTS + 1):
        try:
            return page_create(
                actor=actor,
                account_id=account_id,
                title=title if attempt == 1 else f"{title} ({attempt})",
                content=content,
                status=Status.PUBLISHED,
            )
        except Conflict as exc:
            if exc.code != "slug_taken" or attempt == TITLE_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def daily_summary_write(*, account_id: int, day: dt.date, dry_run: bool = False) -> SummaryOutcome:
    """Write (or rewrite) the summary page of ``account_id``'s ``day``."""
    known = DailySummary.objects.filter(account_id=account_id, day=day).first()
    if known is not None and known.page_id is None:
        return SummaryOutcome(DELETED)
    items = digests.daily_digest(account_id=account_id, day=day)
    if not items:
        return SummaryOutcome(EMPTY)
    if dry_run:
        return SummaryOutcome(WOULD_WRITE)
    content, prose = summary_content(day=day, items=items)  # the LLM, before the transaction
    actor = actor_for_account(account_id)
    with transaction.atomic():
        summary, made = DailySummary.objects.select_for_update().get_or_create(
            account_id=account_id, day=day
        )
        if made:
            page = _page_create(account_id=account_id, day=day, content=content)
            DailySummary.objects.filter(pk=summary.pk).update(page=page)
            return SummaryOutcome(CREATED, page, prose)
        current = (
            Page.objects.defer("embedding").filter(pk=summary.page_id).first()
            if summary.page_id is not None
            else None
        )
        if current is None:  # deleted by an author since
            return SummaryOutcome(DELETED)
        if current.content == content:
            return SummaryOutcome(UNCHANGED, current, prose)
        page = page_update(actor=actor, page=current, fields={"content": content})
        DailySummary.objects.filter(pk=summary.pk).update(updated_at=page.updated_at)
    return SummaryOutcome(UPDATED, page, prose)


@dataclass
class SummariesReport:
    counts: dict[str, int] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)  # account id -> what went wrong


def daily_summaries_write(*, day: dt.date | None = None, dry_run: bool = False) -> SummariesReport:
    """The summary pages of ``day`` (default yesterday) for every active account. One account's
    failure does not stop the others; it is reported (and logged) instead."""
    day = day or yesterday()
    report = SummariesReport(
        counts={"accounts": 0, CREATED: 0, UPDATED: 0, UNCHANGED: 0, EMPTY: 0, DELETED: 0}
    )
    if dry_run:
        report.counts[WOULD_WRITE] = 0
    else:
        report.counts["prose"] = 0
    for account_id in (
        Account.objects.filter(is_active=True).order_by("pk").values_list("pk", flat=True)
    ):
        report.counts["accounts"] += 1
        try:
            outcome = daily_summary_write(account_id=account_id, day=day, dry_run=dry_run)
        except Exception as exc:
            logger.exception("daily summary of %s for account %s failed", day, account_id)
            report.errors[account_id] = f"{type(exc).__name__}: {exc}"
            continue
        report.counts[outcome.status] += 1
        if outcome.prose:
            report.counts["prose"] += 1
    report.counts["failed"] = len(report.errors)
    return report
