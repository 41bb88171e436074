"""What a pending change would archive, statement by statement
(``memory.maintenance.selectors.change_archives``): the archived entries of each kind, their
statements at their offsets, the fate each statement gets from ``after.statements`` when the
change carries it, the bounds, and the change's account as the only place its entries are
read from."""

from __future__ import annotations

from typing import Any

import pytest

from core.actors import Actor, actor_for_agent
from memory.long_term import services as ltm
from memory.maintenance.selectors import change_archives
from memory.maintenance.selectors.change_archives import (
    ARCHIVED,
    CARRIED,
    COVERED,
    change_archived_ids,
    change_archived_statements,
)
from memory.maintenance.services import changes
from memory.maintenance.services.cluster_rewrite import rewrite_offline, rewrite_payload
from memory.maintenance.statements import statements_of
from memory.models import MemoryContext, MemoryEntry, PendingChange
from tests.conftest import AuthedAgent

pytestmark = pytest.mark.django_db

KEPT = "Lena works at Acme in Lyon."
ABSORBED = "Lena works at Acme and is allergic to peanuts; she drinks <b>green</b> tea."
OTHER = "Lena drinks green tea every morning."


def context_of(actor: Actor, name: str = "people") -> MemoryContext:
    return ltm.context_create(actor=actor, name=name, change_policy="review")


def entries(actor: Actor, context: MemoryContext, *texts: str) -> list[MemoryEntry]:
    return ltm.entries_write(
        actor=actor, context=context, items=[ltm.EntryInput(content=t) for t in texts]
    )


def statement_records(
    absorbed: MemoryEntry, kept: MemoryEntry, other: MemoryEntry
) -> list[dict[str, Any]]:
    """The fact check's records (the "facts" package's contract): the first statement still
    said by the kept entry, the second carried into its new text, the third said by another."""
    first, second, third = statements_of(absorbed.content)
    return [
        {
            "entry_id": absorbed.pk,
            "text": first.text,
            "start": first.start,
            "end": first.end,
            "covered_by": {"entry_id": kept.pk, "text": "Lena works at Acme in Lyon"},
            "carried": False,
        },
        {
            "entry_id": absorbed.pk,
            "text": second.text,
            "start": second.start,
            "end": second.end,
            "covered_by": None,
            "carried": True,
        },
        {
            "entry_id": absorbed.pk,
            "text": third.text,
            "start": third.start,
            "end": third.end,
            "covered_by": {"entry_id": other.pk, "text": "Lena drinks green tea every morning"},
            "carried": False,
        },
    ]


def cluster_rewrite(
    actor: Actor, context: MemoryContext, *, with_statements: bool
) -> tuple[PendingChange, list[MemoryEntry]]:
    kept, absorbed, other = entries(actor, context, KEPT, ABSORBED, OTHER)
    replacement = rewrite_offline(kept, [absorbed])
    after: dict[str, Any] = {
        "entries": [{"id": kept.pk, "content": replacement["content"]}],
        "archived": [absorbed.pk],
    }
    if with_statements:
        after["statements"] = statement_records(absorbed, kept, other)
    submitted = changes.change_submit(
        actor=actor,
        account_id=context.account_id,
        kind="cluster_rewrite",
        payload=rewrite_payload(
            kept=kept, absorbed=[absorbed], replacement=replacement, cluster={"size": 2}
        ),
        context=context,
        before={"entries": [{"id": e.pk, "content": e.content} for e in (kept, absorbed)]},
        after=after,
        reason="A cluster of two.",
    )
    assert submitted.change is not None and submitted.change.is_open
    return submitted.change, [kept, absorbed, other]


def test_each_statement_gets_the_fate_the_change_gives_it(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    change, (kept, absorbed, other) = cluster_rewrite(
        actor, context_of(actor), with_statements=True
    )
    assert change_archived_ids(change) == [absorbed.pk]

    found = change_archived_statements(change)
    assert found.annotated and found.more_entries == 0
    (entry,) = found.entries
    assert (entry.entry_id, entry.text, entry.hidden_chars) == (absorbed.pk, ABSORBED, 0)
    fates = [(s.text, s.fate, s.covered_by_id) for s in entry.statements]
    assert fates == [
        ("Lena works at Acme", COVERED, kept.pk),
        ("is allergic to peanuts", CARRIED, None),
        ("she drinks <b>green</b> tea", COVERED, other.pk),
    ]
    for statement in entry.statements:
        assert statement.start is not None and statement.end is not None
        assert entry.text[statement.start : statement.end] == statement.text
    assert entry.statements[2].covered_by_text == "Lena drinks green tea every morning"


def test_without_the_key_every_statement_is_archived(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    change, (_, absorbed, _) = cluster_rewrite(actor, context_of(actor), with_statements=False)
    found = change_archived_statements(change)
    assert not found.annotated
    (entry,) = found.entries
    assert entry.entry_id == absorbed.pk
    assert [s.text for s in entry.statements] == [s.text for s in statements_of(ABSORBED)]
    assert {s.fate for s in entry.statements} == {ARCHIVED}


def test_records_are_matched_by_words_when_offsets_differ_and_listed_when_unmatched(
    agent_client: AuthedAgent,
) -> None:
    actor = actor_for_agent(agent_client.agent)
    change, (kept, absorbed, other) = cluster_rewrite(
        actor, context_of(actor), with_statements=True
    )
    records: list[Any] = statement_records(absorbed, kept, other)
    records[1] = {**records[1], "start": 0, "end": 3}  # offsets of another split
    records.append({"entry_id": absorbed.pk, "text": "Lena owns a cat", "start": 999, "end": 1014})
    records.append({"entry_id": "junk", "text": "ignored"})
    records.append("not a record")
    PendingChange.objects.filter(pk=change.pk).update(after={**change.after, "statements": records})
    (entry,) = change_archived_statements(PendingChange.objects.get(pk=change.pk)).entries
    assert [(s.text, s.fate) for s in entry.statements] == [
        ("Lena works at Acme", COVERED),
        ("is allergic to peanuts", CARRIED),
        ("she drinks <b>green</b> tea", COVERED),
        ("Lena owns a cat", ARCHIVED),  # said by the change, found nowhere in the text
    ]
    assert entry.statements[-1].start is None


def test_each_kind_archives_its_own_entries(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    context = context_of(actor)
    first, second = entries(actor, context, "The gate code is 4711.", "Parking is on level 2.")

    def held(kind: str, payload: dict[str, Any], after: dict[str, Any]) -> PendingChange:
        submitted = changes.change_submit(
            actor=actor,
            account_id=context.account_id,
            kind=kind,
            payload=payload,
            context=context,
            after=after,
        )
        assert submitted.change is not None
        return submitted.change

    merge = held(
        "dedup_merge",
        {"context_id": context.pk, "survivor_id": first.pk, "absorbed": [{"id": second.pk}]},
        {"archived": [second.pk]},
    )
    rot = held("rot_archive", {"context_id": context.pk, "entry_ids": [first.pk, second.pk]}, {})
    decay = held(
        "importance_decay",
        {"context_id": context.pk, "computed_at": "2026-01-01T00:00:00+00:00", "entries": []},
        {"entries": []},
    )
    other = held("agent_write", {"agent_id": agent_client.agent.pk}, {"archived": [first.pk]})
    assert change_archived_ids(merge) == [second.pk]
    assert change_archived_ids(rot) == [first.pk, second.pk]
    assert change_archived_ids(decay) == []
    assert change_archived_ids(other) == [first.pk]  # any kind that lists after.archived
    assert change_archived_statements(decay).entries == []
    shown = change_archived_statements(rot).entries
    assert [(e.entry_id, [s.text for s in e.statements]) for e in shown] == [
        (first.pk, ["The gate code is 4711"]),
        (second.pk, ["Parking is on level 2"]),
    ]


def test_what_is_shown_is_bounded_and_counted(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    actor = actor_for_agent(agent_client.agent)
    context = context_of(actor)
    long_text = "The first fact is short. " + "The second fact goes on and on. " * 5
    first, second = entries(actor, context, long_text, "Another fact.")
    submitted = changes.change_submit(
        actor=actor,
        account_id=context.account_id,
        kind="rot_archive",
        payload={"context_id": context.pk, "entry_ids": [first.pk, second.pk]},
        context=context,
    )
    assert submitted.change is not None
    monkeypatch.setattr(change_archives, "MAX_ENTRIES_SHOWN", 1)
    monkeypatch.setattr(change_archives, "MAX_CHARS_SHOWN", 40)
    found = change_archived_statements(submitted.change)
    (entry,) = found.entries
    assert found.more_entries == 1
    assert entry.text == long_text[:40] and entry.hidden_chars == len(long_text) - 40
    # Only the statements wholly inside what is shown are marked.
    assert [s.text for s in entry.statements] == ["The first fact is short"]


def test_entries_are_read_in_the_changes_account_only(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    actor, intruder = (
        actor_for_agent(agent_client.agent),
        actor_for_agent(other_agent_client.agent),
    )
    (secret,) = entries(intruder, context_of(intruder, "secrets"), "Bramble's vault code is 991.")
    context = context_of(actor)
    (mine,) = entries(actor, context, "Our own fact.")
    submitted = changes.change_submit(
        actor=actor,
        account_id=context.account_id,
        kind="rot_archive",
        payload={"context_id": context.pk, "entry_ids": [secret.pk, mine.pk]},
        context=context,
        before={"entries": [{"id": 123456789, "content": "Gone since, shown as it was."}]},
    )
    assert submitted.change is not None
    found = change_archived_statements(submitted.change)
    assert [e.entry_id for e in found.entries] == [mine.pk]
    assert "991" not in repr(found)

    # An entry deleted since the change was proposed is shown as ``before`` showed it.
    PendingChange.objects.filter(pk=submitted.change.pk).update(
        payload={"context_id": context.pk, "entry_ids": [123456789]}
    )
    (gone,) = change_archived_statements(PendingChange.objects.get(pk=submitted.change.pk)).entries
    assert gone.text == "Gone since, shown as it was."
