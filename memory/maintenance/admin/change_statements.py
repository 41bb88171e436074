"""The statements a pending change would archive, highlighted on its page (docs/admin.md, "The
review queue"): each archived entry's text with every statement marked by its fate
(``memory.maintenance.selectors.change_archives``), then the statements listed with what becomes of
each. Every piece of text is escaped: markup is built with ``format_html`` only."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from memory.maintenance.selectors.change_archives import (
    CARRIED,
    COVERED,
    ArchivedEntry,
    ArchivedStatements,
    MarkedStatement,
)

LEGEND_ANNOTATED = (
    "Each statement of the memories this change archives is highlighted: green, carried over "
    "into the kept memory; blue, still said by another memory that stays current; yellow, "
    "archived with its memory."
)
LEGEND_PLAIN = (
    "Each statement of the memories this change archives is highlighted: all would be archived "
    "(this change does not say whether another memory still says them)."
)


def fate_note(statement: MarkedStatement) -> str:
    """What becomes of a statement, in words."""
    if statement.fate == CARRIED:
        return "carried over into the kept memory"
    if statement.fate == COVERED:
        who = (
            f"memory #{statement.covered_by_id}"
            if statement.covered_by_id is not None
            else "another memory"
        )
        return f"still said by {who}: {statement.covered_by_text}"
    return "would be archived"


def _mark(statement: MarkedStatement) -> SafeString:
    return format_html(
        '<mark class="statement {}" data-fate="{}" title="{}">{}</mark>',
        statement.fate,
        statement.fate,
        fate_note(statement),
        statement.text,
    )


def _text(entry: ArchivedEntry) -> SafeString:
    """The entry's text with its placed statements marked (in order, never overlapping)."""
    pieces: list[Any] = []
    position = 0
    placed = sorted(
        (s for s in entry.statements if s.start is not None and s.end is not None),
        key=lambda s: s.start or 0,
    )
    for statement in placed:
        start, end = statement.start or 0, statement.end or 0
        if start < position:
            continue
        pieces.append(entry.text[position:start])
        pieces.append(_mark(statement))
        position = end
    pieces.append(entry.text[position:])
    if entry.hidden_chars:
        pieces.append(format_html(" … ({} more characters)", entry.hidden_chars))
    return format_html_join("", "{}", ((piece,) for piece in pieces))


def _entry(entry: ArchivedEntry) -> SafeString:
    notes = format_html_join(
        "",
        "<li>{} — {}</li>",
        ((_mark(s), fate_note(s)) for s in entry.statements),
    )
    return format_html(
        '<div class="archived-entry" id="archived-entry-{}"><h3>Memory <a href="{}">#{}</a></h3>'
        '<p class="entry-text">{}</p><ul class="statement-notes">{}</ul></div>',
        entry.entry_id,
        reverse("admin:memory_memoryentry_change", args=[entry.entry_id]),
        entry.entry_id,
        _text(entry),
        notes,
    )


def archived_statements_html(archived: ArchivedStatements) -> SafeString | str:
    if not archived.entries:
        return "—"
    more = (
        format_html(
            '<p class="more-entries">… and {} more archived memories (their ids are in the '
            "diff).</p>",
            archived.more_entries,
        )
        if archived.more_entries
        else ""
    )
    return format_html(
        '<div class="statement-highlights"><p class="legend">{}</p>{}{}</div>',
        LEGEND_ANNOTATED if archived.annotated else LEGEND_PLAIN,
        format_html_join("", "{}", ((_entry(e),) for e in archived.entries)),
        more,
    )
