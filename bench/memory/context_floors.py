"""The relevance floors of a context's documents, pages, skills, pool values and working memory
(``memory.context.assembly.floors``), chosen on what each keeps of the items a question is about and
what it lets through of items from another domain (docs/benchmarks-log.md, "Every source on
topic").

    uv run python bench/memory/context_floors.py [--data ../shared/data] [--claims 200] [--json out]

One account (``context-floors``, built once, then only searched) holds, side by side:

- documents: SciFact train abstracts (the gold ones of ``--claims`` claims and as many others),
  LoCoMo's two dev conversations (one document a session, as ``bench/rag/locomo_documents.py``),
  a facilities handbook (ten sections, several chunks) and a trip itinerary;
- pages: the same SciFact abstracts' first half as pages, and six pages of the synthetic set;
- skills, pool values and working memory of the synthetic set (``context_floors_data.py``).

Questions: the SciFact claims (gold: the chunks and pages of their judged abstracts), LoCoMo's
questions of categories 1-4 (gold: the chunks holding an evidence turn), and the synthetic
set's (gold: the item each names). Every question is asked of every source, with the
context's own searches and candidate counts, floors off; each hit is recorded with the signals
a floor may use. An item is *off topic* for a question when it belongs to another domain
(scifact, locomo, handbook, trip, devops, cooking, ...). For each floor the tables give the
share of gold hits kept and of off-topic hits kept, per group of questions; each group is a
fold: the floor it chooses (the highest that keeps at least 97 % of its gold hits, the rule
the memory floor was chosen by) is read on the others.

Reads ../shared/data (the product never does).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_session
from bench.memory.context_floors_data import (
    HANDBOOK_QUESTIONS,
    HANDBOOK_SECTIONS,
    PAGE_QUESTIONS,
    PAGES,
    POOL_QUESTIONS,
    POOLS,
    SKILL_QUESTIONS,
    SKILLS,
    TRIP_ITINERARY,
    TRIP_QUESTIONS,
    WORKING,
    WORKING_QUESTIONS,
)

ACCOUNT = "context-floors"
SESSION = "floors"
KEEP = 0.97
GRIDS = {
    ("documents", "evidence"): (0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5),
    ("documents", "cosine"): (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5),
    ("pages", "cosine"): (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5),
    ("skills", "cosine"): (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5),
    ("pools", "relevance"): (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
    ("pools", "coverage"): (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
    ("pools", "cosine"): (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5),
    ("working", "relevance"): (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
    ("working", "coverage"): (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
    ("working", "cosine"): (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5),
}
# The floors shipped (tunables: docs/tuning.md), whose off-topic hits kept are listed.
SHIPPED = {
    ("documents", "evidence"): "rag.evidence.context_min",
    ("pages", "cosine"): "memory.floors.page_min_similarity",
    ("skills", "cosine"): "memory.floors.skill_min_similarity",
    ("pools", "cosine"): "memory.floors.pool_min_similarity",
    ("working", "cosine"): "memory.floors.working_min_similarity",
}


class Question(NamedTuple):
    group: str  # scifact, locomo or synthetic: the folds
    domain: str
    text: str
    gold: frozenset[Any]  # (source, item id) pairs


class Hit(NamedTuple):
    source: str
    group: str
    gold: bool
    off_topic: bool
    signals: dict[str, float]
    question: str
    item: Any


def _build(data: Path, claims: int) -> tuple[Any, list[Question]]:
    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from core.models import Account, Agent
    from rag.evaluation import load_beir

    scifact = load_beir(data / "scifact", "train")
    claim_ids = [q for q in scifact.queries if any(d in scifact.corpus for d in scifact.qrels[q])]
    claim_ids = claim_ids[:claims]
    gold_docs = sorted({d for q in claim_ids for d in scifact.qrels[q] if d in scifact.corpus})
    others = [d for d in scifact.corpus if d not in set(gold_docs)][: len(gold_docs)]
    doc_ids = gold_docs + others

    account = Account.objects.filter(slug=ACCOUNT).first()
    if account is None:
        account = core_services.account_create(name="context floors", slug=ACCOUNT)
    agent = Agent.objects.filter(account=account, name="reader").first() or (
        core_services.agent_create(
            actor=actor_for_account(account.pk), account=account, name="reader", description=""
        )
    )
    actor = actor_for_agent(agent)
    from content.models import Page
    from memory.models import MemoryPool
    from rag.models import KnowledgeBase
    from skills.models import Skill

    started = time.perf_counter()
    if not KnowledgeBase.objects.filter(account=account).exists():
        _load_documents(actor, scifact, doc_ids, data)
    if not Page.objects.filter(account=account).exists():
        _load_pages(actor, scifact, doc_ids[: len(doc_ids) // 2])
    if not Skill.objects.filter(account=account).exists():
        _load_skills(_reviewer(account))
    if not MemoryPool.objects.filter(account=account).exclude(pool_id="default").exists():
        _load_pools(actor)
    print(f"built in {time.perf_counter() - started:.0f} s", flush=True)
    _load_working(actor)
    return actor, _questions(actor, scifact, claim_ids, data)


def _load_documents(actor: Any, scifact: Any, doc_ids: list[str], data: Path) -> None:
    from bench.rag.locomo_documents import session_texts
    from memory.context.evaluation.locomo import load_locomo
    from rag import services

    def base(name: str, uploads: list[dict[str, Any]]) -> None:
        kb = services.knowledge_base_create(actor=actor, name=name)
        documents = services.documents_create_batch(
            actor=actor, kb=kb, uploads=uploads, enqueue=False
        )
        services.documents_process_batch(document_ids=[d.pk for d in documents])

    def upload(title: str, text: str, path: str) -> dict[str, Any]:
        return {
            "data": text.encode(),
            "content_type": "text/plain",
            "title": title,
            "source": path,
            "metadata": services.DocumentMetadata(source_path=path),
        }

    base(
        "scifact",
        [upload(scifact.corpus[d].title, scifact.corpus[d].text, f"scifact/{d}") for d in doc_ids],
    )
    locomo = []
    for conversation in load_locomo(data / "locomo" / "locomo-dev.json"):
        for number, (text, _) in session_texts(conversation).items():
            locomo.append(upload(f"{conversation.sample_id} session {number}", text, "locomo/x"))
    base("locomo", locomo)
    handbook = "Facilities handbook\n\n" + "\n\n".join(
        f"{title}\n\n{text}" for title, text in HANDBOOK_SECTIONS
    )
    base("handbook", [upload("Facilities handbook", handbook, "handbook")])
    base("trip", [upload("Lisbon itinerary", TRIP_ITINERARY, "trip")])


def _load_pages(actor: Any, scifact: Any, doc_ids: list[str]) -> None:
    from content.services import links
    from content.services import pages as page_services

    made = []
    for d in doc_ids:
        doc = scifact.corpus[d]
        title = re.sub(r"[\[\]|]", " ", (doc.title or d)[:180]) + f" ({d})"
        made.append(page_services.page_create(actor=actor, title=title, content=doc.text))
    for title, content, _ in PAGES:
        made.append(page_services.page_create(actor=actor, title=title, content=content))
    for page in made:
        links.page_node(actor=actor, page=page)


def _reviewer(account: Any) -> Any:
    """A person with the reviewer role in the account (only people create active skills)."""
    from django.contrib.auth.models import User

    from core import services as core_services
    from core.actors import actor_for_user

    user, _ = User.objects.get_or_create(username=f"{ACCOUNT}-reviewer")
    core_services.membership_grant(account=account, user=user, role="reviewer")
    return actor_for_user(user)


def _load_skills(tool: Any) -> None:
    from skills.services import catalog

    for name, category, description, procedure, _ in SKILLS:
        catalog.skill_create(
            actor=tool,
            name=name,
            category=category,
            status="active",
            description=description,
            procedure=procedure,
        )


def _load_pools(actor: Any) -> None:
    from memory.pools import services as pools

    for pool_id, (values, _) in POOLS.items():
        pools.pool_create(actor=actor, pool_id=pool_id, data=values)


def _load_working(actor: Any) -> None:
    from memory.working import services as working

    for key, (value, _) in WORKING.items():
        working.working_store(actor=actor, session_id=SESSION, key=key, value=value, ttl=3600)


def _questions(actor: Any, scifact: Any, claim_ids: list[str], data: Path) -> list[Question]:
    from memory.context.evaluation.locomo import load_locomo
    from rag.models import Chunk

    chunks = list(
        Chunk.objects.filter(knowledge_base__account_id=actor.account_id).values_list(
            "id", "knowledge_base__name", "document__source_path", "text"
        )
    )
    by_doc: dict[str, set[int]] = defaultdict(set)
    for chunk_id, _base, path, _ in chunks:
        by_doc[path].add(chunk_id)
    out = []
    for q in claim_ids:
        gold = {("documents", c) for d in scifact.qrels[q] for c in by_doc.get(f"scifact/{d}", ())}
        gold |= {("pages", d) for d in scifact.qrels[q]}
        out.append(Question("scifact", "scifact", scifact.queries[q], frozenset(gold)))
    locomo_chunks = [(c, text) for c, base, _, text in chunks if base == "locomo"]
    for conversation in load_locomo(data / "locomo" / "locomo-dev.json"):
        lines = {t.dia_id: f"{t.speaker}: {t.text}" for t in conversation.turns}
        for question in conversation.questions:
            if not question.evidence or question.category > 4:
                continue
            wanted = [lines[d][:80] for d in question.evidence if d in lines]
            gold = {("documents", c) for c, text in locomo_chunks if any(w in text for w in wanted)}
            out.append(Question("locomo", "locomo", question.question, frozenset(gold)))
    handbook = [(c, text) for c, base, _, text in chunks if base == "handbook"]
    for text, section in HANDBOOK_QUESTIONS:
        body = dict(HANDBOOK_SECTIONS)[section][:60]
        gold = {("documents", c) for c, chunk in handbook if body in chunk}
        out.append(Question("synthetic", "handbook", text, frozenset(gold)))
    trip = {("documents", c) for c, base, _, _ in chunks if base == "trip"}
    out += [Question("synthetic", "trip", text, frozenset(trip)) for text in TRIP_QUESTIONS]
    domains = {title: domain for title, _, domain in PAGES}
    out += [
        Question("synthetic", domains[title], text, frozenset({("pages", title)}))
        for text, title in PAGE_QUESTIONS
    ]
    domains = {name: domain for name, *_, domain in SKILLS}
    out += [
        Question("synthetic", domains[name], text, frozenset({("skills", name)}))
        for text, name in SKILL_QUESTIONS
    ]
    out += [
        Question("synthetic", POOLS[pool][1], text, frozenset({("pools", (pool, path))}))
        for text, (pool, path) in POOL_QUESTIONS
    ]
    out += [
        Question("synthetic", WORKING[key][1], text, frozenset({("working", key)}))
        for text, key in WORKING_QUESTIONS
    ]
    return out


def _ask(actor: Any, question: Question, domains: dict[Any, str]) -> list[Hit]:
    """Every source's hits for the question, floors off, with their signals."""
    from content.selectors import page_search
    from core import tuning
    from core.embeddings import get_embedding_provider
    from memory.context.assembly import floors
    from memory.context.selectors.router import RouterFilters
    from memory.context.selectors.search import memory_search
    from memory.tuning import TUNING
    from rag.evidence import chunk_hits_evidence, term_coverage
    from rag.keyword import analyze
    from rag.search import chunk_search
    from skills.selectors.catalog import skill_discover

    vector = np.asarray(get_embedding_provider().embed_query(question.text), dtype=np.float32)
    hits: list[Hit] = []

    def add(source: str, item: Any, signals: dict[str, float]) -> None:
        domain = domains.get((source, item), "")
        gold = (source, item) in question.gold
        off = not gold and domain != question.domain
        hits.append(Hit(source, question.group, gold, off, signals, question.text, item))

    outcome = chunk_search(
        actor=actor,
        query=question.text,
        top_k=TUNING.sources.document_candidates,
        query_vector=vector,
    )
    values = chunk_hits_evidence(question.text, outcome.hits, outcome.knowledge_base_ids)
    for hit, value in zip(outcome.hits, values, strict=True):
        add("documents", hit.chunk_id, {"evidence": value, "cosine": hit.vector_score or 0.0})
    pages = page_search(
        actor=actor, query=question.text, top_k=TUNING.sources.page_candidates, query_vector=vector
    )
    # The pages' and skills' floors off (their hits are measured against every floor).
    with tuning.override(
        {"memory.floors.page_min_similarity": None, "memory.floors.skill_min_similarity": None}
    ):
        for page_hit, similarity in floors.pages_on_topic(pages, vector):
            add("pages", _page_key(page_hit.page.title), {"cosine": similarity})
        found = skill_discover(
            actor=actor,
            description=question.text,
            top_k=TUNING.sources.skill_candidates,
            query_vector=vector,
        )
        for skill_hit, similarity in floors.skills_on_topic(found, vector):
            add("skills", skill_hit.skill.name, {"cosine": similarity})
    task = memory_search(
        actor=actor,
        query=question.text,
        tiers=["shared", "working"],
        top_k=TUNING.sources.task_candidates,
        filters=RouterFilters(session_id=SESSION),
        query_vector=vector,
    )
    terms = list(dict.fromkeys(analyze(question.text)))
    cosines = floors.task_similarities(task.results, vector) if task.results else []
    for task_hit, cosine in zip(task.results, cosines, strict=True):
        shown = set(analyze(floors.task_text(task_hit)))
        signals = {
            "relevance": task_hit.relevance,
            "coverage": term_coverage(terms, shown, task.stats),
            "cosine": cosine,
        }
        if task_hit.tier == "working":
            add("working", task_hit.key, signals)
        else:
            add("pools", (task_hit.pool_id, task_hit.path), signals)
    return hits


def _page_key(title: str) -> str:
    """A SciFact page's document id (``"... (123)"``), else the page's title."""
    if title.endswith(")") and " (" in title and title.rsplit(" (", 1)[1][:-1].isdigit():
        return title.rsplit(" (", 1)[1][:-1]
    return title


def _domains(actor: Any) -> dict[Any, str]:
    from rag.models import Chunk

    out: dict[Any, str] = {}
    for chunk_id, base in Chunk.objects.filter(
        knowledge_base__account_id=actor.account_id
    ).values_list("id", "knowledge_base__name"):
        out[("documents", chunk_id)] = str(base)
    from content.models import Page

    for (title,) in Page.objects.filter(account_id=actor.account_id).values_list("title"):
        key = _page_key(title)
        out[("pages", key)] = (
            "scifact" if key != title else dict((t, d) for t, _, d in PAGES).get(title, "")
        )
    out.update({("skills", name): domain for name, *_, domain in SKILLS})
    for pool, (values, domain) in POOLS.items():
        out.update({("pools", (pool, path)): domain for path in values})
    out.update({("working", key): domain for key, (_, domain) in WORKING.items()})
    return out


def _table(hits: list[Hit], source: str, signal: str) -> dict[str, Any]:
    groups = sorted({h.group for h in hits if h.source == source})
    rows = []
    for floor in GRIDS[(source, signal)]:
        row: dict[str, Any] = {"floor": floor}
        for group in groups:
            mine = [h for h in hits if h.source == source and h.group == group]
            gold = [h for h in mine if h.gold]
            off = [h for h in mine if h.off_topic]
            row[group] = {
                "gold": f"{sum(h.signals[signal] >= floor for h in gold)}/{len(gold)}",
                "off_topic": f"{sum(h.signals[signal] >= floor for h in off)}/{len(off)}",
            }
        rows.append(row)
    chosen = {}
    for group in groups:
        gold = [h for h in hits if h.source == source and h.group == group and h.gold]
        if not gold:
            continue
        keeps = [
            f
            for f in GRIDS[(source, signal)]
            if sum(h.signals[signal] >= f for h in gold) >= KEEP * len(gold)
        ]
        chosen[group] = max(keeps)
    out: dict[str, Any] = {
        "source": source,
        "signal": signal,
        "rows": rows,
        "chosen_by_fold": chosen,
    }
    mine = [h for h in hits if h.source == source]
    out["lowest_gold"] = sorted(round(h.signals[signal], 4) for h in mine if h.gold)[:5]
    if (source, signal) in SHIPPED:
        from core import tuning

        floor = tuning.get(SHIPPED[(source, signal)])
        out["shipped"] = floor
        out["off_topic_kept"] = [
            (h.question, str(h.item), round(h.signals[signal], 4))
            for h in mine
            if h.off_topic and floor is not None and h.signals[signal] >= floor
        ][:20]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with django_session():
        actor, questions = _build(args.data, args.claims)
        domains = _domains(actor)
        print(f"{len(questions)} questions", flush=True)
        hits: list[Hit] = []
        started = time.perf_counter()
        for question in questions:
            hits += _ask(actor, question, domains)
        print(f"asked in {time.perf_counter() - started:.0f} s", flush=True)
        tables = [_table(hits, source, signal) for source, signal in GRIDS]
        for table in tables:
            print(json.dumps(table), flush=True)
        if args.json:
            args.json.write_text(json.dumps(tables, indent=1))


if __name__ == "__main__":
    main()
