"""The offline entity and relation extractor (``rag.graph.entities``): its precision on
hand-labelled documents, the junk it names, its speed, and the cost of building a graph.

    uv run python bench/rag/graph_extraction.py [--scifact 2000] [--locomo-build]
        [--legacy-module /path/to/an/older/entities.py]

- ``labelled``: entity precision / recall (by normalised name), type accuracy of the entities
  found, relation precision / recall (typed: the relation's name and direction; pair: the two
  entities linked by a typed relation, whatever its name), on ``bench/rag/graph_extraction_data.py``
  (``dev``: what the extractor was developed against; ``held_out``: never tuned on).
- ``verb_ngrams``: names and key phrases holding a verb ("jonas lind was", "lind runs"), over
  the labelled documents and the LoCoMo sessions.
- ``throughput``: extraction alone (no database), SciFact abstracts one unit each, LoCoMo
  sessions as documents of one line a turn.
- ``--multihop N``: on ``bench/rag/multihop.py``'s first N worlds (seed 0), extraction alone: the
  share of hops whose fact's two ends are both entities of its evidence document (aliases
  resolved across the world's documents), and joined by a typed relation.
- ``--locomo-build``: the graph of the ``bench/rag/locomo_documents.py`` account (run that first)
  deleted and built again, timed (extraction + writing, then communities); then run
  ``bench/rag/locomo_documents.py --modes hybrid,graph`` for its recall on the new graph.
- ``--build PREFIX``: the same for the accounts whose slug starts with PREFIX (``multihop``
  for ``bench/rag/multihop.py``'s worlds).
- ``--legacy-module``: an older ``entities.py`` (its ``text_entities``, one unit at a time) in
  place of the current extractor, for before / after figures.

Reads ../shared/data/scifact/corpus.jsonl and ../shared/data/locomo/locomo-dev.json (the
product never does).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session
from bench.rag.graph_extraction_data import DEV, HELD_OUT, HELD_OUT_2, Labelled

NAMED = ("person", "place", "organisation", "term")
_VERBS_TEXT = (
    "is was are were be been has have had runs run leads led works worked lives lived born "
    "grew moved founded manages managed heads headed said says went goes"
)
_VERBS = frozenset(_VERBS_TEXT.split())

Extract = Callable[[Sequence[str]], list[Any]]


def _extractor(legacy: str | None) -> Extract:
    if not legacy:
        from rag.graph.entities import document_entities

        return lambda texts: document_entities(texts)
    spec = importlib.util.spec_from_file_location("legacy_entities", legacy)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["legacy_entities"] = module
    spec.loader.exec_module(module)
    return lambda texts: [module.text_entities(t) for t in texts]


def _key(name: str) -> str:
    from rag.graph.names import name_key

    return name_key(name)


def _symmetric(relation: str) -> bool:
    from rag.graph.relation_patterns import is_symmetric

    return is_symmetric(relation)


def _triple(source: str, relation: str, target: str) -> tuple[str, str, str]:
    ends = [_key(source), _key(target)]
    if _symmetric(relation):
        ends.sort()
    return ends[0], relation, ends[1]


def _labelled(extract: Extract, documents: Sequence[Labelled]) -> dict[str, Any]:
    tp = fp = fn = typed_ok = 0
    rel_tp = rel_fp = rel_fn = pair_tp = pair_fp = 0
    mistakes: list[str] = []
    for labelled in documents:
        units = extract(labelled.chunks)
        found: dict[str, str] = {}
        relations: set[tuple[str, str, str]] = set()
        for unit in units:
            for entity in unit.entities:
                if entity.entity_type in NAMED:
                    found.setdefault(_key(entity.name), entity.entity_type)
            relations |= {_triple(r.source, r.relation_type, r.target) for r in unit.relations}
        gold = {_key(name): kind for name, kind in labelled.entities.items()}
        for key, kind in found.items():
            if key in gold:
                tp += 1
                typed_ok += kind == gold[key]
                if kind != gold[key]:
                    mistakes.append(f"type {key}: {kind} (gold {gold[key]})")
            else:
                fp += 1
                mistakes.append(f"entity {key!r} not in gold")
        fn += len(set(gold) - set(found))
        mistakes.extend(f"missed entity {k!r}" for k in set(gold) - set(found))
        gold_relations = {_triple(*r) for r in labelled.relations}
        rel_tp += len(relations & gold_relations)
        rel_fp += len(relations - gold_relations)
        rel_fn += len(gold_relations - relations)
        gold_pairs = {frozenset((s, t)) for s, _, t in gold_relations}
        for s, _, t in relations:
            if frozenset((s, t)) in gold_pairs:
                pair_tp += 1
            else:
                pair_fp += 1
        mistakes.extend(f"wrong relation {r}" for r in relations - gold_relations)
        mistakes.extend(f"missed relation {r}" for r in gold_relations - relations)

    def ratio(a: int, b: int) -> float:
        return round(a / b, 4) if b else 0.0

    return {
        "documents": len(documents),
        "entities": {
            "precision": ratio(tp, tp + fp),
            "recall": ratio(tp, tp + fn),
            "type_accuracy": ratio(typed_ok, tp),
        },
        "relations": {
            "typed_precision": ratio(rel_tp, rel_tp + rel_fp),
            "typed_recall": ratio(rel_tp, rel_tp + rel_fn),
            "pair_precision": ratio(pair_tp, pair_tp + pair_fp),
            "found": rel_tp + rel_fp,
            "gold": rel_tp + rel_fn,
        },
        "mistakes": mistakes,
    }


def _verb_ngrams(extract: Extract, documents: Sequence[Sequence[str]]) -> dict[str, Any]:
    names = 0
    junk: Counter[str] = Counter()
    for chunks in documents:
        for unit in extract(chunks):
            for entity in unit.entities:
                names += 1
                words = entity.name.lower().split()
                if len(words) > 1 and any(w in _VERBS for w in words):
                    junk[entity.name.lower()] += 1
    return {
        "entities": names,
        "with_a_verb": sum(junk.values()),
        "share": round(sum(junk.values()) / max(1, names), 4),
        "examples": [name for name, _ in junk.most_common(8)],
    }


def _locomo_sessions(path: Path) -> list[list[str]]:
    data = json.loads(path.read_text())
    out = []
    for sample in data:
        conversation = sample["conversation"]
        for key in sorted(k for k in conversation if re.fullmatch(r"session_\d+", k)):
            turns = conversation[key]
            out.append([f"{t['speaker']}: {t['text']}" for t in turns])
    return out


def _multihop(extract: Extract, worlds: int, seed: int) -> dict[str, Any]:
    """On ``bench/rag/multihop.py``'s worlds (``--multihop-seed``), extraction alone: for each
    hop of each question, are both ends of its fact entities of its evidence document (after
    aliases: a name another document of the world gives as an alias of one full name is that
    name), and does
    a typed relation join them? By how the final document names the bridge entity too."""
    from bench.rag import multihop_data as data

    linked: Counter[str] = Counter()
    typed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for world in data.dataset(seed, worlds, persons=16, questions=24):
        extracted = {d.id: extract([d.text]) for d in world.documents}
        owners: dict[str, set[str]] = {}
        for units in extracted.values():
            for unit in units:
                for entity in unit.entities:
                    for alias in getattr(entity, "aliases", ()):
                        owners.setdefault(_key(alias), set()).add(_key(entity.name))

        def canonical(name: str, owners: dict[str, set[str]] = owners) -> str:
            key = _key(name)
            found = owners.get(key, set())
            return next(iter(found)) if len(found) == 1 else key

        for question in world.questions:
            for hop, (fact_id, doc_id) in enumerate(
                zip(question.facts, question.evidence, strict=False)
            ):
                fact = world.facts[fact_id]
                ends = {canonical(world.entities[e].name) for e in (fact.s, fact.o)}
                units = extracted[doc_id]
                names = {canonical(e.name) for u in units for e in u.entities}
                pairs = {
                    frozenset((canonical(r.source), canonical(r.target)))
                    for u in units
                    for r in u.relations
                }
                kinds = ["all", "final" if hop == len(question.facts) - 1 else "earlier"]
                if hop == len(question.facts) - 1:
                    kinds.append(f"final_{question.final_mention}")
                for kind in kinds:
                    total[kind] += 1
                    linked[kind] += ends <= names
                    typed[kind] += frozenset(ends) in pairs
    return {
        kind: {
            "hops": total[kind],
            "both_ends_found": round(linked[kind] / total[kind], 4),
            "typed_relation": round(typed[kind] / total[kind], 4),
        }
        for kind in sorted(total)
    }


def _throughput(extract: Extract, units: list[list[str]]) -> dict[str, Any]:
    chars = sum(len(t) for u in units for t in u)
    started = time.perf_counter()
    for texts in units:
        extract(texts)
    seconds = time.perf_counter() - started
    return {
        "documents": len(units),
        "units": sum(len(u) for u in units),
        "seconds": round(seconds, 3),
        "ms_per_unit": round(seconds * 1000 / max(1, sum(len(u) for u in units)), 3),
        "chars_per_second": round(chars / seconds),
    }


def _build(slug_prefix: str, legacy: str | None) -> dict[str, Any]:
    """Delete and build again the graphs of the accounts whose slug starts with the prefix."""
    from core.models import Account
    from rag.graph.services import build as graph_build
    from rag.graph.services.communities import communities_compute
    from rag.graph.services.index import IndexOutcome
    from rag.models import GraphCommunity, GraphEdge, GraphScope, KnowledgeBase

    accounts = list(Account.objects.filter(slug__startswith=slug_prefix).order_by("pk"))
    if not accounts:
        return {"error": f"no account {slug_prefix}*: run its benchmark first"}
    if legacy:
        extract = _extractor(legacy)

        def offline(texts: Any, names: Any, groups: Any, across: Any) -> dict[int, Any]:
            ids = [u for u, _ in texts]
            return dict(zip(ids, extract([t for _, t in texts]), strict=True))

        graph_build._offline = offline  # type: ignore[assignment]
    GraphCommunity.objects.filter(account__in=accounts).delete()
    GraphScope.objects.filter(account__in=accounts).delete()  # nodes, edges, mentions...
    started = time.perf_counter()
    outcome = IndexOutcome()
    for kb in KnowledgeBase.objects.filter(account__in=accounts).order_by("pk"):
        outcome.add(graph_build.knowledge_base_graph_rebuild(kb=kb))
    built = time.perf_counter() - started
    started = time.perf_counter()
    for account in accounts:
        communities_compute(account_id=account.pk)
    communities = time.perf_counter() - started
    edges = Counter(
        GraphEdge.objects.filter(account__in=accounts).values_list("relation_type", flat=True)
    )
    return {
        "chunks": outcome.units,
        "build_seconds": round(built, 2),
        "ms_per_chunk": round(built * 1000 / max(1, outcome.units), 2),
        "communities_seconds": round(communities, 2),
        "nodes": outcome.nodes_created,
        "mentions": outcome.mentions,
        "edges": sum(edges.values()),
        "co_occurs": edges.get("co_occurs", 0),
        "typed_edges": sum(n for r, n in edges.items() if r != "co_occurs"),
        "relation_types": dict(edges.most_common(15)),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact", type=int, default=2000, help="abstracts timed")
    parser.add_argument("--locomo-build", action="store_true")
    parser.add_argument("--multihop", type=int, default=0, help="multihop worlds to check")
    parser.add_argument("--multihop-seed", type=int, default=0)
    parser.add_argument(
        "--build", default=None, help="rebuild the graphs of accounts with this slug prefix"
    )
    parser.add_argument("--legacy-module", default=None)
    parser.add_argument("--data", default="/work/shared/data")
    parser.add_argument("--mistakes", action="store_true", help="list each mistake")
    args = parser.parse_args()
    with django_session():
        extract = _extractor(args.legacy_module)
        out: dict[str, Any] = {"extractor": args.legacy_module or "current"}
        for name, documents in (("dev", DEV), ("held_out", HELD_OUT), ("held_out_2", HELD_OUT_2)):
            result = _labelled(extract, documents)
            if not args.mistakes:
                result.pop("mistakes")
            out[f"labelled_{name}"] = result
        sessions = _locomo_sessions(Path(args.data) / "locomo" / "locomo-dev.json")
        out["verb_ngrams"] = {
            "labelled": _verb_ngrams(extract, [d.chunks for d in (*DEV, *HELD_OUT, *HELD_OUT_2)]),
            "locomo_sessions": _verb_ngrams(extract, sessions),
        }
        abstracts = []
        with (Path(args.data) / "scifact" / "corpus.jsonl").open() as handle:
            for line in handle:
                row = json.loads(line)
                abstracts.append([f"{row.get('title', '')}. {row.get('text', '')}"])
                if len(abstracts) >= args.scifact:
                    break
        out["throughput"] = {
            "scifact_abstracts": _throughput(extract, abstracts),
            "locomo_sessions": _throughput(extract, sessions),
        }
        if args.multihop:
            out["multihop_extraction"] = _multihop(extract, args.multihop, args.multihop_seed)
        if args.locomo_build:
            out["locomo_build"] = _build("locomo-documents-128-16", args.legacy_module)
        if args.build:
            out["build"] = _build(args.build, args.legacy_module)
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
