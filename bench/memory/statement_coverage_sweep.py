"""The statement-coverage threshold and rules of upkeep's fact check
(``memory.maintenance.fact_check``; docs/benchmarks-log.md, "Fact preservation in upkeep"), chosen
on the fact-preservation set.

Every statement of every member of the set (``bench/memory/fact_preservation_data.py``) is labelled
with the fact it states: a group's base fact (its paraphrases are one fact), or a member's extra
fact (the statement holding the fact's token), or a twin's own value. For each ordered pair of
statements (s, c) of two different members it asks "does c cover s?" under each rule set and
threshold:

- a *paraphrase pair* (the same fact): covering is right; the share covered is what lets
  upkeep shrink a group without carrying a second wording of the same fact;
- a *different-fact pair*: covering it loses a fact (``false_covers`` must be 0).

Rule sets (``memory.maintenance.fact_check.key_tokens``): every one keeps numbers, codes and
names and the negation rule; ``content`` adds every noun and adjective, ``content+rare`` those
and rare words, ``rare`` rare words only, ``names`` nothing more; ``similarity`` is the
embedding alone. Seeds are split in two halves: the threshold is chosen on the first (the lowest
with no false cover) and checked on the second.

    uv run python bench/memory/statement_coverage_sweep.py [--seeds 35-44]

Reads nothing but the generated set; needs the embedding model (not the database).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session
from bench.memory.fact_preservation_data import groups

THRESHOLDS = [round(0.70 + 0.01 * i, 2) for i in range(28)]
RULES = ("words", "content", "content+rare", "rare", "names", "similarity")
# Statements that differ in their verb only: different facts to every rule but ``words``, and
# nearly the same to the embedding model (cosine 0.82 to 0.97 with all-MiniLM-L6-v2).
CONTRASTS = [
    ("Maria bought a Volvo.", "Maria sold a Volvo."),
    ("Tom joined the billing team.", "Tom left the billing team."),
    ("The backup job starts at 9:00.", "The backup job stops at 9:00."),
    ("Maria won the chess tournament.", "Maria lost the chess tournament."),
    ("Aisha accepted the offer from Acme.", "Aisha rejected the offer from Acme."),
    ("The API returns JSON.", "The API accepts JSON."),
    ("Tom Berg teaches mathematics.", "Tom Berg studies mathematics."),
    ("Maria opened the account.", "Maria closed the account."),
    ("The price increased in May.", "The price decreased in May."),
    ("Tom arrives on Monday.", "Tom leaves on Monday."),
    ("Lea Fischer sent the contract to Omar.", "Lea Fischer signed the contract for Omar."),
    ("The team added a cache to search.", "The team removed a cache from search."),
]


def labelled(seed: int) -> list[tuple[int, int, str, Any]]:
    """(group, member, fact label, compared statement) of one seed's set."""
    from memory.maintenance import fact_check

    rows = []
    for g, group in enumerate(groups(seed)):
        for m, member in enumerate(group.members):
            for statement, said in fact_check._statements(g * 100 + m, member.text):
                token = member.fact_token
                if token and token.lower() in statement.text.lower():
                    # one fact: this person's (the same may be said in two groups)
                    label = f"{seed}:{group.subject}:{token}:extra"
                elif group.kind == "twin":
                    label = f"{seed}:{g}:{m}:twin"
                else:
                    label = f"{seed}:{g}:base"
                rows.append((g, m, label, said))
    return rows


def rule_keys(rule: str, said: Any, subject: frozenset[str]) -> frozenset[str]:
    from memory.maintenance import fact_check
    from memory.maintenance.statements import pronoun_led

    if rule == "similarity":
        return frozenset()
    keys = fact_check.key_tokens(said.alone, rule)
    return keys | subject if pronoun_led(said.alone) else keys


def sweep(seeds: list[int]) -> dict[str, dict[float, dict[str, int]]]:
    from memory.maintenance import fact_check

    rows = [row for seed in seeds for row in labelled(seed)]
    vectors = fact_check.unit_vectors([r[3].alone for r in rows])
    matrix = np.stack([vectors[r[3].alone] for r in rows])
    similarity = matrix @ matrix.T
    keys = {
        rule: [rule_keys(rule, r[3], r[3].keys - fact_check.key_tokens(r[3].alone)) for r in rows]
        for rule in RULES
    }
    seed_of = [r[2].split(":")[0] for r in rows]
    # (similarity, same fact) of the pairs each rule's tokens and negation let through
    passed: dict[str, list[tuple[float, bool]]] = {rule: [] for rule in RULES}
    same_values: list[float] = []
    for i, j in zip(*np.nonzero(similarity >= min(THRESHOLDS)), strict=True):
        a, b = rows[i], rows[j]
        if i == j or (a[0], a[1]) == (b[0], b[1]) or seed_of[i] != seed_of[j]:
            continue
        same = a[2] == b[2]
        value = float(similarity[i, j])
        if same:
            same_values.append(value)
        for rule in RULES:
            negation = rule == "similarity" or a[3].negated == b[3].negated
            if negation and keys[rule][i] <= b[3].tokens:
                passed[rule].append((value, same))
    pairs = sum(
        1
        for i, a in enumerate(rows)
        for j, b in enumerate(rows)
        if i != j and a[2] == b[2] and (a[0], a[1]) != (b[0], b[1])
    )
    counts: dict[str, dict[float, dict[str, int]]] = {}
    for rule in RULES:
        counts[rule] = {}
        for t in THRESHOLDS:
            counts[rule][t] = {
                "paraphrase_pairs": pairs,
                "covered": sum(1 for v, same in passed[rule] if same and v >= t),
                "false_covers": sum(1 for v, same in passed[rule] if not same and v >= t),
            }
    return counts


def contrast_covers() -> list[tuple[float, str]]:
    """(similarity, rule) of each contrast pair (both ways) that a rule's tokens let through."""
    from memory.maintenance import fact_check

    said = {t: fact_check._statements(0, t)[0][1] for pair in CONTRASTS for t in pair}
    vectors = fact_check.unit_vectors([s.alone for s in said.values()])
    found = []
    for a, b in [*CONTRASTS, *((b, a) for a, b in CONTRASTS)]:
        value = float(vectors[said[a].alone] @ vectors[said[b].alone])
        for rule in RULES:
            keys = rule_keys(rule, said[a], frozenset())
            if keys <= said[b].tokens and said[a].negated == said[b].negated:
                found.append((value, rule))
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="35-44")
    args = parser.parse_args()
    first, last = (int(x) for x in args.seeds.split("-"))
    seeds = list(range(first, last + 1))
    half = len(seeds) // 2
    with django_session():
        train, test = sweep(seeds[:half]), sweep(seeds[half:])
        contrasts = contrast_covers()
    result: dict[str, Any] = {"train_seeds": seeds[:half], "test_seeds": seeds[half:]}
    result["contrast_pairs"] = 2 * len(CONTRASTS)
    for rule in RULES:
        result[f"contrast_covers_{rule}"] = {
            str(t): sum(1 for v, r in contrasts if r == rule and v >= t) for t in THRESHOLDS
        }
    for rule in RULES:
        safe = [t for t in THRESHOLDS if train[rule][t]["false_covers"] == 0]
        chosen = min(safe) if safe else None
        result[rule] = {
            "chosen_on_train": chosen,
            "train": {str(t): train[rule][t] for t in THRESHOLDS},
            "test": {str(t): test[rule][t] for t in THRESHOLDS},
        }
        if chosen is not None:
            row = test[rule][chosen]
            result[rule]["test_at_chosen"] = {
                **row,
                "paraphrase_coverage": round(row["covered"] / max(1, row["paraphrase_pairs"]), 3),
            }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
