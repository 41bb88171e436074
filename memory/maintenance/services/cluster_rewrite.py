"""Rewriting one group of near-duplicate memories into one (docs/memory/maintenance.md, "Cluster
maintenance"), in two steps that can happen apart:

- *plan* (``rewrite_offline`` / ``rewrite_llm`` then ``rewrite_payload``): a JSON payload naming
  the kept entry (the group's most central member, at the version read), the absorbed entries
  and the replacement (content, tags, metadata, importance). Offline, the replacement's text is
  the kept entry's plus every statement of the others that it does not cover (``memory.
  fact_check``); a model's text must cover every statement of the group, or the rewrite is
  refused (``would_lose_facts``). A dry run stops here; a review queue can store the payload
  (kind ``cluster_rewrite``) and apply it when a reviewer approves.
- *apply* (``cluster_rewrite_apply``): the fact check again (a payload may have waited or been
  edited: one whose text drops a statement is refused, 409 ``would_lose_facts``), then the kept
  entry takes the replacement (a content or tags change writes a new version; the previous one
  stays readable as history), each absorbed entry is archived with ``merged_into`` in its
  metadata. Nothing is deleted: every absorbed entry stays readable by id and in its history.
  ``cluster_rewrite_undo`` reverses an apply from its result: the kept entry gets its previous
  content, tags, metadata and importance back (as a new version) and the absorbed entries are
  unarchived.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.actors import Actor, actor_for_account
from core.errors import Conflict, EngramError, ValidationFailed
from core.llm import LLMError, LLMProvider
from core.models import Account
from memory.long_term import services as ltm
from memory.long_term.services.index import context_lock
from memory.maintenance import fact_check
from memory.maintenance.services.changes import change_kind_register
from memory.maintenance.services.consolidation import account_lock
from memory.models import MemoryContext, MemoryEntry, MemoryMaintenanceReport
from memory.roles import MANAGE_MEMORY
from memory.tuning import TUNING

CLUSTER_REWRITE = "cluster_rewrite"
MAX_TAGS = 50
# What one LLM prompt carries of a group (enough members and characters for a faithful merge):
# ``TUNING.upkeep`` (memory.tuning).
LLM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["content", "tags"],
    "properties": {
        "content": {"type": "string", "minLength": 1, "maxLength": ltm.MAX_CONTENT_CHARS},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 100}},
    },
}
LLM_SYSTEM = (
    "You consolidate an agent's long-term memories. The memories below say nearly the same "
    "thing. Write ONE memory that keeps every fact, number, name and date any of them states, "
    "without repeating itself and without adding anything none of them says. Give a few short "
    "lowercase tags."
)


# --- plan ------------------------------------------------------------------------------------


def _tags(groups: Sequence[Sequence[str]]) -> list[str]:
    merged: list[str] = []
    for tags in groups:
        for tag in tags:
            if tag and tag not in merged:
                merged.append(tag)
    return merged[:MAX_TAGS]


def _metadata(kept: MemoryEntry, absorbed: Sequence[MemoryEntry]) -> dict[str, Any]:
    """The kept entry's metadata, with the keys only absorbed entries have (the kept entry's
    value wins; between absorbed ones, the first in the group). Bookkeeping of earlier merges
    is not carried over from absorbed entries."""
    merged = dict(kept.metadata)
    for entry in absorbed:
        for key, value in entry.metadata.items():
            if key in {"merged_into", "merged_into_lineage", "consolidated_by", "consolidations"}:
                continue
            merged.setdefault(key, value)
    return merged


def _merged(kept: MemoryEntry, absorbed: Sequence[MemoryEntry], content: str) -> dict[str, Any]:
    """The replacement: ``content``, with the group's tags, metadata and importance (the
    highest) merged."""
    return {
        "content": content,
        "tags": _tags([kept.tags, *(e.tags for e in absorbed)]),
        "metadata": _metadata(kept, absorbed),
        "importance": max([kept.importance, *(e.importance for e in absorbed)]),
    }


def rewrite_offline_plan(
    kept: MemoryEntry, absorbed: Sequence[MemoryEntry]
) -> tuple[dict[str, Any], list[fact_check.Checked]]:
    """The central member's text plus every statement of the others that it (or a statement
    carried before) does not cover, each appended as a sentence (a clause without its subject
    carries its sentence's subject); the others' tags, metadata and importance merged. Answers
    the replacement and the check of every absorbed statement (embeds: outside any
    transaction)."""
    checked = fact_check.statements_check(
        [(e.pk, e.content) for e in absorbed], [(kept.pk, kept.content)], carry_into=kept.pk
    )
    return _merged(kept, absorbed, fact_check.carried_text(kept.content, checked)), checked


def rewrite_offline(kept: MemoryEntry, absorbed: Sequence[MemoryEntry]) -> dict[str, Any]:
    """The offline replacement alone (``rewrite_offline_plan``)."""
    return rewrite_offline_plan(kept, absorbed)[0]


def replacement_check(
    kept: MemoryEntry, absorbed: Sequence[MemoryEntry], content: str
) -> list[fact_check.Checked]:
    """Every statement that the replacement ``content`` of the kept entry must cover: the
    absorbed entries', and the kept entry's own when its text changes; each with its cover
    (``fact_check.lost`` names those without one)."""
    archived = [(e.pk, e.content) for e in absorbed]
    if content and content != kept.content:
        archived.insert(0, (kept.pk, kept.content))
    return fact_check.statements_check(archived, [(kept.pk, content or kept.content)])


def _llm_prompt(members: Sequence[MemoryEntry]) -> str:
    lines = [
        f"Memory {n}: {entry.content[: TUNING.upkeep.llm_max_chars_per_member]}"
        + (f" (tags: {', '.join(entry.tags)})" if entry.tags else "")
        for n, entry in enumerate(members[: TUNING.upkeep.llm_max_members], start=1)
    ]
    return "\n".join(lines)


def llm_answer_validate(answer: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The model's content and tags, or ValueError naming what is wrong."""
    content = answer.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValueError("content must be a non-empty string")
    if len(content) > ltm.MAX_CONTENT_CHARS:
        raise ValueError(f"content is longer than {ltm.MAX_CONTENT_CHARS} characters")
    tags = answer.get("tags")
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
        raise ValueError("tags must be a list of non-empty strings")
    if any(len(t) > 100 for t in tags):
        raise ValueError("a tag is longer than 100 characters")
    return content.strip(), [t.strip() for t in tags]


def rewrite_llm(
    provider: LLMProvider, kept: MemoryEntry, absorbed: Sequence[MemoryEntry]
) -> dict[str, Any]:
    """The model's one memory for the group, with the offline merge's tags, metadata and
    importance around it. Raises ValueError (an invalid answer) or LLMError (no answer): the
    caller falls back to ``rewrite_offline`` and says why."""
    members = [kept, *absorbed]
    answer = provider.complete_json(
        _llm_prompt(members), schema=LLM_SCHEMA, system=LLM_SYSTEM, max_tokens=1024
    )
    content, tags = llm_answer_validate(answer)
    merged = _merged(kept, absorbed, content)
    merged["tags"] = _tags([tags, merged["tags"]])
    return merged


def rewrite_payload(
    *,
    kept: MemoryEntry,
    absorbed: Sequence[MemoryEntry],
    replacement: Mapping[str, Any],
    cluster: Mapping[str, Any],
) -> dict[str, Any]:
    """The JSON-serialisable description of one rewrite (``cluster_rewrite_apply``'s input)."""
    payload = {
        "kind": CLUSTER_REWRITE,
        "context_id": kept.context_id,
        "kept_id": kept.pk,
        "kept_version": kept.version,
        "absorbed_ids": [e.pk for e in absorbed],
        "replacement": dict(replacement),
        "cluster": dict(cluster),
    }
    json.dumps(payload)  # fail here, not in a queue, if something is not JSON
    return payload


# --- apply -----------------------------------------------------------------------------------


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationFailed(f"{name} must be a positive integer.", code="invalid_payload")
    return value


def payload_validate(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The payload's fields, typed, or 400 ``invalid_payload``."""
    if not isinstance(payload, Mapping):
        raise ValidationFailed("The payload must be an object.", code="invalid_payload")
    absorbed = payload.get("absorbed_ids")
    if not isinstance(absorbed, list) or not absorbed:
        raise ValidationFailed("absorbed_ids must be a non-empty list.", code="invalid_payload")
    replacement = payload.get("replacement")
    if not isinstance(replacement, Mapping):
        raise ValidationFailed("replacement must be an object.", code="invalid_payload")
    content = replacement.get("content", "")
    tags = replacement.get("tags", [])
    metadata = replacement.get("metadata", {})
    importance = replacement.get("importance")
    if (
        not isinstance(content, str)
        or not isinstance(tags, list)
        or not all(isinstance(t, str) for t in tags)
        or not isinstance(metadata, Mapping)
        or isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not 0 <= importance <= 1
    ):
        raise ValidationFailed(
            "replacement needs content (text), tags (texts), metadata (an object) and "
            "importance (0 to 1).",
            code="invalid_payload",
        )
    cluster = payload.get("cluster", {})
    kept_id = _int(payload.get("kept_id"), "kept_id")
    absorbed_ids = [_int(i, "absorbed_ids[]") for i in absorbed]
    if kept_id in absorbed_ids or len(set(absorbed_ids)) != len(absorbed_ids):
        raise ValidationFailed("absorbed_ids repeat an entry.", code="invalid_payload")
    return {
        "context_id": _int(payload.get("context_id"), "context_id"),
        "kept_id": kept_id,
        "kept_version": _int(payload.get("kept_version"), "kept_version"),
        "absorbed_ids": absorbed_ids,
        "content": content,
        "tags": list(tags),
        "metadata": dict(metadata),
        "importance": float(importance),
        "cluster": dict(cluster) if isinstance(cluster, Mapping) else {},
    }


def _changed(reason: str, **details: Any) -> Conflict:
    return Conflict(
        f"The memories of this rewrite have changed since it was planned: {reason}.",
        code="cluster_changed",
        details=details,
    )


def _snapshot(entry: MemoryEntry) -> dict[str, Any]:
    return {
        "id": entry.pk,
        "version": entry.version,
        "content": entry.content,
        "tags": list(entry.tags),
        "metadata": dict(entry.metadata),
        "importance": entry.importance,
    }


def cluster_rewrite_apply(
    *, account: Account, actor: Actor, payload: Mapping[str, Any]
) -> dict[str, Any]:
    """Apply one planned rewrite (``rewrite_payload``) in ``account``: a memory manager (or an
    agent whose key has the ``admin`` scope, or the system). 409 ``cluster_changed`` when the
    kept entry is no longer the version planned or an absorbed entry is no longer current and
    searchable; 409 ``would_lose_facts`` when the replacement's text does not cover a statement
    of an absorbed entry (or of the kept entry's text it replaces), the statements in
    ``details``. Nothing is changed then. Returns what ``cluster_rewrite_undo`` needs."""
    actor.require(account.pk, MANAGE_MEMORY)
    actor.require_scope("admin")
    plan = payload_validate(payload)
    entries = MemoryEntry.objects.filter(
        account_id=account.pk, pk__in=[plan["kept_id"], *plan["absorbed_ids"]]
    ).defer("embedding")
    found = {e.pk: e for e in entries}
    kept = found.get(plan["kept_id"])
    if kept is None or kept.context_id != plan["context_id"]:
        raise _changed("the kept entry is gone", kept_id=plan["kept_id"])
    if not kept.is_current or kept.version != plan["kept_version"] or kept.is_archived:
        raise _changed("the kept entry has a new version or was archived", kept_id=kept.pk)
    absorbed = [found.get(i) for i in plan["absorbed_ids"]]
    stale = [
        i
        for i, e in zip(plan["absorbed_ids"], absorbed, strict=True)
        if e is None or e.context_id != kept.context_id or not e.is_current or e.is_archived
    ]
    if stale:
        raise _changed("absorbed entries are gone, changed or archived", entry_ids=stale)
    absorbed_entries = [e for e in absorbed if e is not None]
    # The payload may have waited or been edited: the fact check again, before any write
    # (it embeds: outside any transaction).
    lost = fact_check.lost(replacement_check(kept, absorbed_entries, plan["content"]))
    if lost:
        raise fact_check.refusal(lost)
    before = _snapshot(kept)
    report_id = plan["cluster"].get("report_id")
    record = {
        "report_id": report_id,
        "absorbed": plan["absorbed_ids"],
        "absorbed_lineages": [str(e.lineage) for e in absorbed_entries],
        "method": plan["cluster"].get("method", ""),
        "previous_version": kept.version,
        "at": timezone.now().isoformat(),
    }
    metadata = dict(plan["metadata"])
    metadata["consolidations"] = [*kept.metadata.get("consolidations", []), record]
    fields: dict[str, Any] = {"metadata": metadata, "importance": plan["importance"]}
    if plan["content"] and plan["content"] != kept.content:
        fields["content"] = plan["content"]
    if plan["tags"] != list(kept.tags):
        fields["tags"] = plan["tags"]
    # The kept entry first (a content change embeds it: outside any transaction); then the
    # absorbed ones, all or none (archiving entries outside a thread calls no provider).
    new_kept = ltm.entry_update(
        actor=actor, entry=kept, fields=fields, expected_version=kept.version
    )
    context = MemoryContext.objects.get(pk=kept.context_id)
    with transaction.atomic():
        # The writers' lock order: the context's row before any of its entries.
        context_lock(context.pk)
        for entry in absorbed_entries:
            ltm.entry_update(
                actor=actor,
                entry=entry,
                fields={
                    "metadata": {
                        **entry.metadata,
                        "merged_into": new_kept.pk,
                        "merged_into_lineage": str(new_kept.lineage),
                        "consolidated_by": report_id,
                    }
                },
            )
        ltm.entries_archive(
            actor=actor,
            context=context,
            entries=absorbed_entries,
            archived=True,
            reason=CLUSTER_REWRITE,
        )
    return {
        "context_id": kept.context_id,
        "kept_id": new_kept.pk,
        "kept_lineage": str(new_kept.lineage),
        "kept_version": new_kept.version,
        "kept_before": before,
        "absorbed_ids": plan["absorbed_ids"],
    }


def cluster_rewrite_undo(
    *, account: Account, actor: Actor, result: Mapping[str, Any]
) -> dict[str, Any]:
    """Reverse one applied rewrite from ``cluster_rewrite_apply``'s result: the kept memory
    gets its previous content, tags, metadata and importance back (a new version when content
    or tags differ: the rewrite stays in its history) and the absorbed entries come back.
    409 ``cluster_changed`` when the kept memory changed since the rewrite."""
    actor.require(account.pk, MANAGE_MEMORY)
    actor.require_scope("admin")
    try:
        kept_id = _int(result.get("kept_id"), "kept_id")
        absorbed_ids = [_int(i, "absorbed_ids[]") for i in result.get("absorbed_ids", [])]
        before = dict(result["kept_before"])
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValidationFailed("Not an applied rewrite.", code="invalid_payload") from exc
    kept = MemoryEntry.objects.filter(account_id=account.pk, pk=kept_id).first()
    if kept is None or not kept.is_current or kept.version != result.get("kept_version"):
        raise _changed("the kept memory has changed since", kept_id=kept_id)
    fields: dict[str, Any] = {
        "metadata": before.get("metadata", {}),
        "importance": before.get("importance", kept.importance),
        "content": before.get("content", kept.content),
        "tags": before.get("tags", list(kept.tags)),
    }
    fields = {k: v for k, v in fields.items() if getattr(kept, k) != v}
    if fields:
        ltm.entry_update(actor=actor, entry=kept, fields=fields, expected_version=kept.version)
    absorbed = list(
        MemoryEntry.objects.filter(
            account_id=account.pk, pk__in=absorbed_ids, is_current=True
        ).defer("embedding")
    )
    context = MemoryContext.objects.get(pk=kept.context_id)
    with transaction.atomic():
        context_lock(context.pk)  # the writers' lock order, as above
        for entry in absorbed:
            metadata = {
                k: v
                for k, v in entry.metadata.items()
                if k not in {"merged_into", "merged_into_lineage", "consolidated_by"}
            }
            if metadata != entry.metadata:
                ltm.entry_update(actor=actor, entry=entry, fields={"metadata": metadata})
    # Coming back indexes (and embeds) them again: outside the transaction above.
    restored = ltm.entries_archive(
        actor=actor,
        context=context,
        entries=[e for e in absorbed if e.context_id == context.pk],
        archived=False,
        reason=f"{CLUSTER_REWRITE}_undo",
    )
    return {"kept_id": kept_id, "restored": restored}


def llm_failure(exc: Exception) -> str:
    """A short reason for the report when the model's rewrite was not used."""
    if isinstance(exc, LLMError):
        return f"llm_unavailable: {str(exc)[:200]}"
    return f"llm_invalid: {str(exc)[:200]}"


def maintenance_report_undo(*, actor: Actor, report: MemoryMaintenanceReport) -> dict[str, Any]:
    """Undo every rewrite a real run applied, newest first (a memory manager). A rewrite whose
    kept memory changed since is left and named (409 ``cluster_changed`` for that one); the
    report records who undid it and when. 409 ``report_not_undoable`` for a dry run, a
    short-circuited run or one undone already."""
    actor.require(report.account_id, MANAGE_MEMORY)
    actor.require_scope("admin")
    if report.dry_run or report.undone_at is not None or not report.kept:
        raise Conflict(
            "Only a real run that changed something, and was not undone, can be undone.",
            code="report_not_undoable",
        )
    account = Account.objects.get(pk=report.account_id)
    system = actor_for_account(report.account_id)
    undone, refused = 0, []
    with account_lock(report.account_id):
        for item in reversed(report.kept):
            if not item.get("applied"):
                continue
            try:
                cluster_rewrite_undo(account=account, actor=system, result=item["applied"])
            except EngramError as exc:
                if exc.status_code >= 500:
                    raise
                refused.append({"kept": item["kept"], "reason": exc.code})
                continue
            undone += 1
        MemoryMaintenanceReport.objects.filter(pk=report.pk).update(
            undone_at=timezone.now(), undone_by=str(actor)[:200]
        )
    report.refresh_from_db()
    return {"undone": undone, "refused": refused}


change_kind_register(
    CLUSTER_REWRITE, cluster_rewrite_apply, "Rewrite a cluster of near-duplicate memories"
)
