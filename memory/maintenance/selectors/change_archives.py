"""What a pending change would archive, statement by statement (docs/admin.md, "The review
queue"): for each entry the change archives, its text and the statements in it
(``memory.maintenance.statements.statements_of``), each with its fate.

Which entries a change archives depends on its kind: a cluster rewrite's absorbed entries
(``payload.absorbed_ids``), a dedup merge's (``payload.absorbed[].id``), a rot archival's
(``payload.entry_ids``); any other kind that lists ``after.archived``. The text is the archived
version's own row (an entry's content never changes in place: a new content is a new version, a
new row), read inside the change's account; an entry deleted since falls back to what ``before``
showed of it.

A change whose ``after`` carries ``statements`` (cluster rewrites and dedup merges checked by
the fact-preservation rule: one record per statement of each archived entry, ``{"entry_id",
"text", "start", "end", "covered_by": {"entry_id", "text"} | null, "carried"}``) says what
becomes of each statement: carried over into the kept memory, or still said by another current
memory. Without it (older changes, other kinds) every statement is simply archived.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memory.maintenance.statements import statements_of
from memory.models import MemoryEntry, PendingChange

# A page shows at most this many archived entries (a rot archival may hold hundreds) and this
# many characters of each: the rest is counted, never silently dropped.
MAX_ENTRIES_SHOWN = 50
MAX_CHARS_SHOWN = 4000

CARRIED = "carried"  # carried over into the kept memory's new text
COVERED = "covered"  # still said by another memory that stays current
ARCHIVED = "archived"  # archived with its entry (nothing said how it is kept)


@dataclass(frozen=True)
class MarkedStatement:
    """One statement of an archived entry and its fate. ``start``/``end`` locate it in the
    entry's text; ``None`` when a record of ``after.statements`` matches no statement of the
    text shown (it is listed, not marked)."""

    text: str
    start: int | None
    end: int | None
    fate: str = ARCHIVED
    covered_by_id: int | None = None
    covered_by_text: str = ""


@dataclass(frozen=True)
class ArchivedEntry:
    entry_id: int
    text: str  # what is shown of the entry's content
    hidden_chars: int  # characters of the content past ``text``
    statements: list[MarkedStatement] = field(default_factory=list)


@dataclass(frozen=True)
class ArchivedStatements:
    entries: list[ArchivedEntry]
    more_entries: int  # archived entries not shown
    annotated: bool  # the change says what becomes of each statement


def _ints(values: Any) -> list[int]:
    found: list[int] = []
    for value in values if isinstance(values, list) else []:
        if isinstance(value, bool):
            continue
        try:
            number = int(value)
        except (TypeError, ValueError):
            continue
        if number not in found:
            found.append(number)
    return found


def _absorbed_ids(payload: Mapping[str, Any]) -> Any:
    absorbed = payload.get("absorbed")
    return (
        [a.get("id") for a in absorbed if isinstance(a, dict)] if isinstance(absorbed, list) else []
    )


_ARCHIVED_BY_KIND: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "cluster_rewrite": lambda payload: payload.get("absorbed_ids"),
    "dedup_merge": _absorbed_ids,
    "rot_archive": lambda payload: payload.get("entry_ids"),
}


def change_archived_ids(change: PendingChange) -> list[int]:
    """The ids of the entries the change archives, in the change's order."""
    payload = change.payload if isinstance(change.payload, dict) else {}
    after = change.after if isinstance(change.after, dict) else {}
    by_kind = _ARCHIVED_BY_KIND.get(change.kind)
    ids = _ints(by_kind(payload)) if by_kind is not None else []
    return ids or _ints(after.get("archived"))


def _texts(change: PendingChange, ids: list[int]) -> dict[int, str]:
    found = dict(
        MemoryEntry.objects.filter(account_id=change.account_id, pk__in=ids).values_list(
            "pk", "content"
        )
    )
    before = change.before if isinstance(change.before, dict) else {}
    for shown in before.get("entries") or []:
        if isinstance(shown, dict) and isinstance(shown.get("content"), str):
            entry_id = _ints([shown.get("id")])
            if entry_id and entry_id[0] in ids:
                found.setdefault(entry_id[0], shown["content"])
    return found


def _records(change: PendingChange) -> dict[int, list[dict[str, Any]]] | None:
    """``after.statements`` by entry id (well-formed records only), or None without the key."""
    after = change.after if isinstance(change.after, dict) else {}
    records = after.get("statements")
    if not isinstance(records, list):
        return None
    by_entry: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            continue
        entry_id = _ints([record.get("entry_id")])
        if entry_id:
            by_entry.setdefault(entry_id[0], []).append(record)
    return by_entry


def _marked(
    text: str, start: int | None, end: int | None, record: dict[str, Any] | None
) -> MarkedStatement:
    if record is None:
        return MarkedStatement(text, start, end)
    covered = record.get("covered_by")
    if record.get("carried") is True:
        return MarkedStatement(text, start, end, CARRIED)
    if isinstance(covered, dict):
        keeper = _ints([covered.get("entry_id")])
        return MarkedStatement(
            text,
            start,
            end,
            COVERED,
            keeper[0] if keeper else None,
            str(covered.get("text") or ""),
        )
    return MarkedStatement(text, start, end)


def _statements(text: str, records: list[dict[str, Any]] | None) -> list[MarkedStatement]:
    """The statements of ``text``, each with the record that speaks of it (same offsets, else
    the same words); records that match none are listed after them, unplaced."""
    unused = list(records or [])

    def take(start: int, end: int, words: str) -> dict[str, Any] | None:
        for match in (
            lambda r: r.get("start") == start and r.get("end") == end and r["text"] == words,
            lambda r: r["text"].strip() == words,
        ):
            for record in unused:
                if match(record):
                    unused.remove(record)
                    return record
        return None

    marked = [
        _marked(s.text, s.start, s.end, take(s.start, s.end, s.text)) for s in statements_of(text)
    ]
    if records is not None:
        marked += [_marked(r["text"], None, None, r) for r in unused]
    return marked


def change_archived_statements(change: PendingChange) -> ArchivedStatements:
    """The entries ``change`` archives (at most MAX_ENTRIES_SHOWN), each with its statements
    marked by fate. Read for a change the caller may see (the admin's scoped queryset), inside
    that change's account."""
    ids = change_archived_ids(change)
    shown = ids[:MAX_ENTRIES_SHOWN]
    texts = _texts(change, shown)
    records = _records(change)
    entries = []
    for entry_id in shown:
        content = texts.get(entry_id)
        if content is None:
            continue
        text = content[:MAX_CHARS_SHOWN]
        statements = [
            s
            for s in _statements(content, None if records is None else records.get(entry_id, []))
            if s.end is None or s.end <= len(text)  # a statement past the cut is hidden with it
        ]
        entries.append(ArchivedEntry(entry_id, text, len(content) - len(text), statements))
    return ArchivedStatements(entries, len(ids) - len(shown), records is not None)
