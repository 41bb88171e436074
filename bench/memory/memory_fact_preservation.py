"""Fact preservation in upkeep (docs/benchmarks-log.md, "Fact preservation in upkeep"): the seeded
fact-preservation set (``bench/memory/fact_preservation_data.py``: paraphrase groups, groups whose
members carry one extra fact each, distractor groups about other people) written through the
services into one context (real PostgreSQL, the configured embedding model), then the real
upkeep run over it:

- ``maintenance``: cluster maintenance (``maintenance_run``, not a dry run; offline rewrite
  unless an LLM is configured);
- ``dedup``: consolidation's dedup (``consolidation_dedup``).

Prints, per step: paraphrase groups shrunk (fewer current entries than written), extra facts
kept (the fact's exact token, e.g. the phone number or the allergen, still in the text of a
current entry; ``kept_with_subject``: in a current entry that also names the person), entries
archived, entries that stayed current, and what the run refused or carried.

    uv run python bench/memory/memory_fact_preservation.py [--seed 35] \\
        [--step maintenance|dedup|both]
        [--key-rule words|content|content+rare|rare|names] [--similarity 0.92]

``--key-rule`` and ``--similarity`` override the fact check's rule and statement threshold
(``memory.maintenance.fact_check``) to measure the alternatives (docs/benchmarks-log.md).

The bench account (``engram-bench-facts``) is deleted first and rebuilt for each step.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session
from bench.memory.fact_preservation_data import Group, groups

SLUG = "engram-bench-facts"


def build(found: list[Group], seed: int) -> tuple[int, int, dict[int, tuple[int, int]]]:
    """The account, its context with every member written (in a seeded order) and each
    written entry's lineage -> (group, member)."""
    import random

    from core import services as core_services
    from core.actors import actor_for_account
    from core.models import Account
    from memory.long_term import services as ltm
    from memory.models import MemoryContext

    Account.objects.filter(slug=SLUG).delete()
    account = core_services.account_create(name="Engram fact-preservation benchmark", slug=SLUG)
    actor = actor_for_account(account.pk)
    context = ltm.context_create(
        actor=actor,
        name="facts",
        account_id=account.pk,
        context_type=MemoryContext.ContextType.PROJECT_CONTEXT,
        scope=MemoryContext.Scope.ACCOUNT,
    )
    order = [(g, m) for g, group in enumerate(found) for m in range(len(group.members))]
    random.Random(seed).shuffle(order)
    where: dict[Any, tuple[int, int]] = {}
    for start in range(0, len(order), 50):
        batch = order[start : start + 50]
        written = ltm.entries_write(
            actor=actor,
            context=context,
            items=[ltm.EntryInput(content=found[g].members[m].text) for g, m in batch],
            graph_link=False,
        )
        for entry, place in zip(written, batch, strict=True):
            where[entry.lineage] = place
    return account.pk, context.pk, where


def score(found: list[Group], context_id: int, where: dict[Any, tuple[int, int]]) -> dict[str, Any]:
    from memory.models import MemoryEntry

    current = list(
        MemoryEntry.objects.filter(
            context_id=context_id, is_current=True, archived_at__isnull=True
        ).values_list("lineage", "content")
    )
    texts = [content.lower() for _, content in current]
    per_group: dict[int, int] = {}
    for lineage, _ in current:
        if lineage in where:
            per_group[where[lineage][0]] = per_group.get(where[lineage][0], 0) + 1
    result: dict[str, Any] = {"entries_written": len(where), "entries_current": len(current)}
    result["entries_archived"] = len(where) - len(current)
    for kind in ("paraphrase", "extra", "distractor", "twin"):
        chosen = [g for g, group in enumerate(found) if group.kind == kind]
        shrunk = sum(1 for g in chosen if per_group.get(g, 0) < len(found[g].members))
        facts = [(found[g], m) for g in chosen for m in found[g].facts]
        kept = sum(1 for _, m in facts if any(m.fact_token.lower() in t for t in texts))
        with_subject = sum(
            1
            for group, m in facts
            if any(
                m.fact_token.lower() in t and group.subject.split()[0].lower() in t for t in texts
            )
        )
        result[kind] = {
            "groups": len(chosen),
            "shrunk": shrunk,
            "entries_written": sum(len(found[g].members) for g in chosen),
            "entries_current": sum(per_group.get(g, 0) for g in chosen),
        }
        if facts:
            result[kind] |= {
                "facts": len(facts),
                "facts_kept": kept,
                "facts_kept_with_subject": with_subject,
                "lost": sorted(
                    {
                        m.fact_token
                        for _, m in facts
                        if not any(m.fact_token.lower() in t for t in texts)
                    }
                ),
            }
    para = [g for g, group in enumerate(found) if group.kind == "paraphrase"]
    lengths = [
        len(content)
        for lineage, content in current
        if lineage in where and where[lineage][0] in para
    ]
    written = [len(m.text) for g in para for m in found[g].members]
    result["paraphrase"]["mean_chars_current"] = round(sum(lengths) / max(1, len(lengths)), 1)
    result["paraphrase"]["mean_chars_written"] = round(sum(written) / max(1, len(written)), 1)
    return result


def step(name: str, found: list[Group], seed: int) -> dict[str, Any]:
    from memory.maintenance.services import cluster_maintenance
    from memory.maintenance.services.upkeep import consolidation_dedup

    account_id, context_id, where = build(found, seed)
    started = time.perf_counter()
    details: dict[str, Any] = {}
    if name == "maintenance":
        report = cluster_maintenance.maintenance_run(
            account_id=account_id, trigger="command", context_ids=[context_id]
        )
        reasons: dict[str, int] = {}
        for skip in report.skipped:
            reasons[skip["reason"]] = reasons.get(skip["reason"], 0) + len(skip["entry_ids"])
        details = {
            "clusters": report.cluster_count,
            "groups_rewritten": report.kept_count,
            "skipped_entries_by_reason": reasons,
            "statements_carried": sum(
                1 for item in report.kept for s in item.get("statements", []) if s.get("carried")
            ),
            "rewrite_model": report.rewrite_model,
        }
    else:
        details = {"counts": consolidation_dedup(account_id=account_id, context_id=context_id)}
    details["wall_s"] = round(time.perf_counter() - started, 2)
    return {**score(found, context_id, where), **details}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--step", choices=["maintenance", "dedup", "both"], default="both")
    parser.add_argument("--key-rule", default=None)
    parser.add_argument("--similarity", type=float, default=None)
    args = parser.parse_args()
    found = groups(args.seed)
    steps = ["maintenance", "dedup"] if args.step == "both" else [args.step]
    with django_session():
        result: dict[str, Any] = {"seed": args.seed, "groups": len(found)}
        try:
            from memory.maintenance import fact_check
        except ImportError:  # the code before the fact check (the baseline)
            fact_check = None  # type: ignore[assignment]
        values: dict[str, Any] = {}
        if fact_check is not None:
            # The fact check's rule and threshold are tunables (docs/tuning.md, memory.facts).
            if args.key_rule:
                values["memory.facts.key_rule"] = args.key_rule
            if args.similarity:
                values["memory.facts.statement_similarity"] = args.similarity
        with _overridden(values):
            if fact_check is not None:
                from memory.tuning import TUNING

                result["key_rule"] = TUNING.facts.key_rule
                result["statement_similarity"] = fact_check.statement_similarity()
            for name in steps:
                result[name] = step(name, found, args.seed)
                print(json.dumps({name: result[name]}), file=sys.stderr, flush=True)
    print(json.dumps(result, indent=2, ensure_ascii=False))


def _overridden(values: dict[str, Any]) -> contextlib.AbstractContextManager[None]:
    """The tunables ``values`` set for the block (``core.tuning.override``); nothing when empty,
    so the baseline (the code before the fact check, which has no memory.facts) still runs."""
    if not values:
        return contextlib.nullcontext()
    from core import tuning

    return tuning.override(values)


if __name__ == "__main__":
    main()
