"""Cluster maintenance (docs/memory/maintenance.md, "Cluster maintenance"; seed 004): per account,
per context, the long-term entries that say nearly the same thing are rewritten into one.

A run, under the account's consolidation lock:

1. (scheduled runs) short-circuits when a report of a real run exists for today, or when
   fewer than MEMORY_MAINTENANCE_MIN_NEW_MEMORIES memories were written since the last one;
   the reason is recorded in a short-circuited report (updated, not repeated, while it holds);
2. re-embeds the entries whose vector is missing or from another model than the current one;
3. reduces the vectors with UMAP and clusters them with HDBSCAN (``memory.maintenance.clustering``:
   seeded, reproducible), one context at a time;
4. splits each cluster into groups of near-duplicates and rewrites each group into one memory:
   with a configured LLM (its JSON answer validated; an invalid or missing answer falls back to
   the offline rewrite and says so; an answer that drops a statement of the group is refused,
   the members stay current: ``would_lose_facts``), or offline: the most central member's text
   plus every statement of the others that it does not cover (``memory.maintenance.fact_check``),
   with the others' tags, metadata and importance merged into it;
5. replaces: the kept entry takes the replacement, the others are archived (readable as
   versions, and every statement they made still said by the kept entry) -
   ``memory.maintenance.services.cluster_rewrite``; a dry run stops before;
6. writes a ``MemoryMaintenanceReport``: clusters with sizes and members, what was kept,
   replaced and skipped (with reasons), timings, models, and the plans a run can be undone by.

Entries of a thread (conversation messages) are never clustered: a line of dialogue is not a
memory to merge.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone

from core.actors import Actor, actor_for_account
from core.embeddings import get_embedding_provider
from core.errors import Conflict, EngramError, ValidationFailed
from core.llm import LLMError, get_llm_provider
from core.models import Account
from memory.long_term import indexing
from memory.long_term.context_access import visible_contexts
from memory.long_term.selectors import context_get
from memory.maintenance import clustering, fact_check
from memory.maintenance.services import changes, cluster_rewrite
from memory.maintenance.services.change_kinds import entry_view
from memory.maintenance.services.consolidation import account_lock
from memory.maintenance.services.rules import short_circuit_reason, short_circuited
from memory.models import MemoryContext, MemoryEntry, MemoryMaintenanceReport
from memory.roles import MANAGE_MEMORY
from rag.vector import vector_literal

logger = logging.getLogger("engram.memory")

Report = MemoryMaintenanceReport
MAX_CONTEXT_IDS = 100
EMBED_BATCH = 256
OFFLINE_METHOD = "offline:central-member+uncovered-statements"
# How much of a replacement's text a report shows (the payload keeps all of it).
PREVIEW_CHARS = 500
# fmt: off
_ENTRY_FIELDS = (
    "id", "account_id", "context_id", "lineage", "version", "is_current", "archived_at",
    "content", "data", "speaker", "tags", "metadata", "importance", "embedding",
    "embedding_model", "thread", "position", "created_at",
)
# fmt: on


def params_from_settings() -> clustering.ClusterParams:
    return clustering.ClusterParams(
        min_cluster_size=settings.MEMORY_MAINTENANCE_MIN_CLUSTER_SIZE,
        min_similarity=float(settings.MEMORY_MAINTENANCE_MIN_SIMILARITY),
        seed=settings.MEMORY_MAINTENANCE_SEED,
        umap_min_entries=settings.MEMORY_MAINTENANCE_UMAP_MIN_ENTRIES,
        umap_sample=settings.MEMORY_MAINTENANCE_UMAP_SAMPLE,
    )


# --- the run ---------------------------------------------------------------------------------


def _candidates(context_id: int) -> list[MemoryEntry]:
    return list(
        MemoryEntry.objects.filter(
            context_id=context_id, is_current=True, archived_at__isnull=True, thread=""
        )
        .only(*_ENTRY_FIELDS)
        .order_by("id")
    )


def _reembed(entries: list[MemoryEntry], model_id: str, dry_run: bool) -> int:
    """Embed the entries lacking a vector of ``model_id`` (stored unless ``dry_run``; the
    instances get the vectors either way)."""
    lacking = [e for e in entries if e.embedding is None or e.embedding_model != model_id]
    provider = get_embedding_provider()
    for start in range(0, len(lacking), EMBED_BATCH):
        batch = lacking[start : start + EMBED_BATCH]
        texts = [indexing.entry_text(e.content, e.data, e.speaker) or " " for e in batch]
        matrix = provider.embed_documents(texts)
        for entry, row in zip(batch, matrix, strict=True):
            entry.embedding = np.asarray(row)
            entry.embedding_model = model_id
        if dry_run:
            continue
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memory_memoryentry e SET embedding = v.embedding::vector, "
                "embedding_model = %s "
                "FROM unnest(%s::bigint[], %s::text[]) AS v(id, embedding) "
                "WHERE e.id = v.id AND e.is_current",
                [
                    model_id,
                    [e.pk for e in batch],
                    [vector_literal(np.asarray(e.embedding)) for e in batch],
                ],
            )
    return len(lacking)


class _Run:
    """One run's state: the report being filled and the choices fixed at its start."""

    def __init__(self, report: Report, *, actor: Actor, dry_run: bool) -> None:
        self.report = report
        self.actor = actor
        self.dry_run = dry_run
        self.params = params_from_settings()
        self.llm = get_llm_provider()
        self.offline = self.llm.model_id.startswith("offline:")
        self.account = Account.objects.get(pk=report.account_id)
        self.rewrites = 0
        self.timings: dict[str, float] = {}

    def time(self, stage: str, started: float) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        self.timings[stage] = round(self.timings.get(stage, 0.0) + elapsed, 1)

    def skip(self, entry_ids: list[int], reason: str, **where: Any) -> None:
        self.report.skipped.append({**where, "entry_ids": entry_ids, "reason": reason})

    def context(self, context: MemoryContext, model_id: str) -> None:
        started = time.perf_counter()
        entries = _candidates(context.pk)
        self.time("load", started)
        started = time.perf_counter()
        reembedded = _reembed(entries, model_id, self.dry_run)
        self.time("reembed", started)
        summary: dict[str, Any] = {
            "context_id": context.pk,
            "entries": len(entries),
            "reembedded": reembedded,
        }
        self.report.contexts.append(summary)
        self.report.entries_seen += len(entries)
        self.report.reembedded += reembedded
        if len(entries) < self.params.min_cluster_size:
            summary.update(reduction="none", clusters=0, noise=len(entries))
            return
        found = clustering.cluster(
            np.stack([np.asarray(e.embedding) for e in entries]), self.params
        )
        for stage, ms in found.timings_ms.items():
            self.timings[stage] = round(self.timings.get(stage, 0.0) + ms, 1)
        summary.update(reduction=found.reduction, clusters=len(found.clusters), noise=found.noise)
        for cluster in found.clusters:
            self.cluster(context, entries, cluster)

    def cluster(
        self, context: MemoryContext, entries: list[MemoryEntry], cluster: clustering.Cluster
    ) -> None:
        where = {"context_id": context.pk, "cluster": cluster.label}
        self.report.cluster_count += 1
        self.report.clusters.append(
            {
                **where,
                "size": len(cluster.members),
                "members": [entries[i].pk for i in cluster.members],
                "groups": [
                    {
                        "kept": entries[g.central].pk,
                        "absorbed": [entries[i].pk for i in g.members[1:]],
                        "similarities": g.similarities[1:],
                    }
                    for g in cluster.groups
                ],
            }
        )
        for positions, reason in cluster.left_out:
            self.skip([entries[i].pk for i in positions], reason, **where)
        for number, group in enumerate(cluster.groups):
            members = [entries[i] for i in group.members]
            if self.rewrites >= settings.MEMORY_MAINTENANCE_MAX_REWRITES:
                self.skip([e.pk for e in members], "run_limit", **where)
                continue
            self.rewrites += 1
            self.group(members, {**where, "group": number, "similarities": group.similarities})

    def group(self, members: list[MemoryEntry], where: dict[str, Any]) -> None:
        kept, absorbed = members[0], members[1:]
        started = time.perf_counter()
        method, fallback = OFFLINE_METHOD, ""
        replacement, checked = cluster_rewrite.rewrite_offline_plan(kept, absorbed)
        if not self.offline:
            try:
                replacement = cluster_rewrite.rewrite_llm(self.llm, kept, absorbed)
                method = self.llm.model_id
            except (LLMError, ValueError) as exc:
                fallback = cluster_rewrite.llm_failure(exc)
            else:
                checked = cluster_rewrite.replacement_check(kept, absorbed, replacement["content"])
        self.time("rewrite", started)
        lost = fact_check.lost(checked)
        if lost:
            self.skip(
                [e.pk for e in members],
                "would_lose_facts",
                **where,
                method=method,
                lost=[c.as_json() for c in lost],
            )
            return
        statements = fact_check.statements_json(c for c in checked if c.entry_id != kept.pk)
        payload = cluster_rewrite.rewrite_payload(
            kept=kept,
            absorbed=absorbed,
            replacement=replacement,
            cluster={
                **where,
                "report_id": self.report.pk,
                "size": len(members),
                "method": method,
            },
        )
        item: dict[str, Any] = {
            "context_id": kept.context_id,
            "cluster": where["cluster"],
            "group": where["group"],
            "kept": kept.pk,
            "absorbed": [e.pk for e in absorbed],
            "method": method,
            "replacement": {
                "content": replacement["content"][:PREVIEW_CHARS],
                "tags": replacement["tags"],
                "importance": replacement["importance"],
            },
            "statements": statements,
            "carried": [s["text"] for s in statements if s["carried"]],
            "payload": payload,
            "applied": None,
        }
        if fallback:
            item["fallback"] = fallback
        if self.dry_run:
            self._kept(item)
            return
        started = time.perf_counter()
        try:
            item["applied"] = rewrite_dispatch(
                account=self.account,
                actor=self.actor,
                payload=payload,
                kept=kept,
                absorbed=absorbed,
                statements=statements,
            )
        except EngramError as exc:
            if exc.status_code >= 500:
                raise
            self.skip([kept.pk, *item["absorbed"]], exc.code, **where, details=exc.details)
            return
        finally:
            self.time("apply", started)
        self._kept(item)

    def _kept(self, item: dict[str, Any]) -> None:
        self.report.kept.append(item)
        self.report.kept_count += 1
        self.report.replaced_count += len(item["absorbed"])


def rewrite_dispatch(
    *,
    account: Account,
    actor: Actor,
    payload: dict[str, Any],
    kept: MemoryEntry,
    absorbed: Sequence[MemoryEntry],
    statements: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Where a planned rewrite goes (``memory.maintenance.services.changes``): applied now under its
    context's ``auto`` policy; under ``review`` held as a pending change of kind
    ``cluster_rewrite`` until a person approves it. Answers the applier's result, or the
    pending change's id and status."""
    replacement = payload["replacement"]
    submitted = changes.change_submit(
        actor=actor,
        account_id=account.pk,
        kind=cluster_rewrite.CLUSTER_REWRITE,
        payload=payload,
        context=kept.context,
        before={"entries": [entry_view(e) for e in (kept, *absorbed)]},
        after={
            "entries": [
                {
                    "id": kept.pk,
                    "content": replacement["content"],
                    "tags": list(replacement["tags"]),
                    "importance": replacement["importance"],
                }
            ],
            "archived": [e.pk for e in absorbed],
            # Every statement of each entry archived: what covers it, or carried into the
            # kept entry's new text (the review queue highlights them).
            "statements": list(statements),
        },
        members=[{**entry_view(e, 300), "kept": e.pk == kept.pk} for e in (kept, *absorbed)],
        # The same rewrite proposed by a later run (another report, the same entries and
        # versions) is the change already waiting, or the rejected one.
        fingerprint=changes.fingerprint_of(
            cluster_rewrite.CLUSTER_REWRITE,
            {
                "kept": [kept.pk, kept.version],
                "absorbed": sorted([e.pk, e.version] for e in absorbed),
                "replacement": replacement,
            },
        ),
        reason=f"{len(absorbed) + 1} memories of context {kept.context.name!r} form one cluster "
        "of near-duplicates (cluster maintenance): the most central is kept and rewritten, the "
        "others are archived into it; every statement they make is still said by the rewrite "
        f"({sum(1 for s in statements if s.get('carried'))} carried into it).",
    )
    if submitted.applied:
        return submitted.result
    assert submitted.change is not None
    return {"pending_change_id": submitted.change.pk, "status": submitted.change.status}


def _account_contexts(account_id: int, context_ids: Sequence[int] | None) -> list[MemoryContext]:
    contexts = MemoryContext.objects.filter(account_id=account_id, archived_at__isnull=True)
    if context_ids is not None:
        contexts = contexts.filter(pk__in=list(context_ids))
    return list(contexts.order_by("pk"))


def maintenance_run(
    *,
    account_id: int,
    trigger: str,
    actor_name: str = "",
    dry_run: bool = False,
    context_ids: Sequence[int] | None = None,
    check_rules: bool = False,
    agent_id: int | None = None,
    on_report: Callable[[Report], None] | None = None,
) -> Report:
    """One run for one account (its unarchived contexts, or those of ``context_ids``), as
    the system; ``check_rules``: the scheduled run's short-circuits first. Returns its report
    (a failed run's is saved with the error before the error propagates; ``on_report`` is told
    of it as soon as it exists, so a job can name it either way)."""
    actor = actor_for_account(account_id)
    name = actor_name or "system"
    with account_lock(account_id):
        contexts = _account_contexts(account_id, context_ids)
        ids = [c.pk for c in contexts]
        if check_rules:
            reason = short_circuit_reason(account_id, ids)
            if reason is not None:
                return short_circuited(account_id, reason, ids, trigger, name)
        report = Report.objects.create(
            account_id=account_id,
            trigger=trigger,
            actor=name[:200],
            dry_run=dry_run,
            status=Report.Status.COMPLETED,
            context_ids=ids,
            agent_id=agent_id,
        )
        if on_report is not None:
            on_report(report)
        run = _Run(report, actor=actor, dry_run=dry_run)
        model_id = get_embedding_provider().model_id
        report.embedding_model = model_id
        report.rewrite_model = OFFLINE_METHOD if run.offline else run.llm.model_id
        report.params = run.params.as_json()
        started = time.perf_counter()
        try:
            for context in contexts:
                run.context(context, model_id)
        except Exception as exc:
            report.status = Report.Status.FAILED
            report.error = f"{type(exc).__name__}: {exc}"[:5000]
            raise
        finally:
            run.time("total", started)
            report.timings_ms = run.timings
            report.skipped_count = sum(len(s["entry_ids"]) for s in report.skipped)
            report.finished_at = timezone.now()
            report.save()
    return report


def requested_contexts(actor: Actor, context_ids: Sequence[int] | None) -> list[int] | None:
    """The contexts of a run asked for: an agent whose key lacks the ``admin`` scope maintains
    only contexts it may write (those named: 404 ``context_not_found`` / 403
    ``context_read_only`` otherwise; none named: every one it may write)."""
    whole_account = actor.agent is None or actor.api_key is None or actor.api_key.has_scope("admin")
    if context_ids is None:
        if whole_account:
            return None
        return list(
            visible_contexts(actor, writable_only=True)
            .filter(archived_at__isnull=True)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
    if len(context_ids) > MAX_CONTEXT_IDS:
        raise ValidationFailed(
            f"Name at most {MAX_CONTEXT_IDS} contexts.",
            code="too_many_contexts",
            details={"max": MAX_CONTEXT_IDS},
        )
    ids = list(dict.fromkeys(context_ids))
    for context_id in ids:
        # 404 context_not_found, foreign or missing alike; 403 context_read_only
        context = context_get(actor, context_id, write=not whole_account)
        if context.is_archived:
            raise Conflict(
                "The context is archived: unarchive it to maintain it.",
                code="context_archived",
                details={"context_id": context_id},
            )
    return ids


def memory_maintenance_request(
    *,
    actor: Actor,
    trigger: str,
    dry_run: bool = False,
    context_ids: Sequence[int] | None = None,
    account_id: int | None = None,
) -> Report:
    """A run asked for now (the API, the admin, the MCP tool, the command): by a memory
    manager, an agent whose key has the ``admin`` scope (any context of the account), or an
    agent with the ``write`` scope (the contexts it may write). Always runs (the short-circuits
    are the schedule's); ``context_ids`` narrows it to contexts the actor may read (404
    ``context_not_found`` otherwise)."""
    account = actor.account_id if account_id is None else account_id
    actor.require(account, MANAGE_MEMORY)
    actor.require_scope("write")
    ids = requested_contexts(actor, context_ids)
    return maintenance_run(
        account_id=account,
        trigger=trigger,
        actor_name=str(actor),
        dry_run=dry_run,
        context_ids=ids,
        agent_id=actor.agent_id,
    )


def maintenance_run_all(*, dry_run: bool = False) -> dict[str, int]:
    """The scheduled job: every account, the short-circuits checked; counts summed. One
    account's failure is logged and counted; the others run."""
    totals = {"accounts": 0, "short_circuited": 0, "failed": 0, "kept": 0, "replaced": 0}
    for account_id in Account.objects.order_by("pk").values_list("pk", flat=True):
        totals["accounts"] += 1
        try:
            report = maintenance_run(
                account_id=account_id,
                trigger=Report.Trigger.SCHEDULE,
                dry_run=dry_run,
                check_rules=True,
            )
        except EngramError as exc:
            if exc.status_code >= 500:
                raise  # a provider or store down: the job fails and runs again next time
            totals["failed"] += 1
            logger.warning("maintenance of account %s refused: %s", account_id, exc.message)
            continue
        if report.status == Report.Status.SHORT_CIRCUITED:
            totals["short_circuited"] += 1
        totals["kept"] += report.kept_count
        totals["replaced"] += report.replaced_count
    return totals
