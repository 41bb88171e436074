"""bench/rag/multihop_data.py, the multi-hop benchmark's generator, keeps its promises: the same
seed gives the same world, at least 20 relation types, the final evidence document shares no
content word with its question, persons are named by surname, title or pronoun, distractors share
the question's words, and worlds of different seeds share few names. No database."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

import pytest

# Real embeddings: a benchmark's data.
pytestmark = pytest.mark.real_embeddings

BENCH = Path(__file__).resolve().parent.parent / "bench" / "rag"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("multihop_data", BENCH / "multihop_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("multihop_data", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def worlds(gen: ModuleType) -> list:
    return gen.dataset(0, 4)


def test_same_seed_same_world_other_seed_other_world(gen: ModuleType) -> None:
    assert asdict(gen.world(7)) == asdict(gen.world(7))
    assert [d.text for d in gen.world(7).documents] != [d.text for d in gen.world(8).documents]
    assert gen.fingerprint([gen.world(7)]) == gen.fingerprint([gen.world(7)])


def test_worlds_share_few_names(worlds: list) -> None:
    people = [{e.name for e in w.entities.values() if e.type == "person"} for w in worlds]
    for other in people[1:]:
        assert len(people[0] & other) <= 2


def test_at_least_twenty_relation_types_with_paraphrases(gen: ModuleType, worlds: list) -> None:
    assert len(gen.RELATIONS) >= 20
    assert all(len(r.doc) >= 3 for r in gen.RELATIONS)
    in_facts = {f.relation for w in worlds for f in w.facts.values()}
    in_questions = {name for w in worlds for q in w.questions for name in q.chain}
    assert len(in_facts) >= 20
    assert len(in_questions) >= 20
    # Several question templates are used for the same final relation.
    by_relation: dict[str, set[str]] = {}
    for q in (q for w in worlds for q in w.questions):
        by_relation.setdefault(q.chain[-1], set()).add(q.template)
    assert sum(1 for templates in by_relation.values() if len(templates) >= 2) >= 5


def test_questions_two_and_three_hops_final_document_shares_no_content_word(
    gen: ModuleType, worlds: list
) -> None:
    hops = Counter(q.hops for w in worlds for q in w.questions)
    assert hops[2] >= 40 and hops[3] >= 20
    for w in worlds:
        docs = {d.id: d for d in w.documents}
        for q in w.questions:
            assert len(q.evidence) == q.hops == len(set(q.evidence)) == len(q.chain)
            assert q.final_doc == q.evidence[-1]
            final = docs[q.final_doc]
            assert not gen.shared_words(q.text, final.text), (
                q.text,
                final.text,
            )
            # The question names its anchor, which the first evidence document holds.
            assert gen.shared_words(q.text, docs[q.evidence[0]].text)
            answer = next(e for e in w.entities.values() if e.name == q.answer)
            assert (answer.surname or answer.name.removeprefix("the ")) in final.text


def test_words_meet_across_inflections(gen: ModuleType) -> None:
    for a, b in [("runs", "run"), ("founder", "founded"), ("libraries", "Library"),
                 ("marry", "married"), ("study", "studied"), ("sibling", "siblings"),
                 ("cities", "city"), ("live", "lives")]:  # fmt: skip
        assert gen.meets(a, b) and gen.meets(b, a)
    assert not gen.meets("born", "birthplace")
    assert not gen.meets("led", "leads")


def test_final_document_shares_no_index_term_with_the_question(worlds: list) -> None:
    """The promise checked with the product's own analysis (Snowball stems, stop words, a
    question's function words dropped): the keyword stage cannot match the final document."""
    from rag.analysis import analyze, analyze_query

    for w in worlds:
        docs = {d.id: d for d in w.documents}
        for q in w.questions:
            shared = set(analyze_query(q.text)) & set(analyze(docs[q.final_doc].text))
            assert not shared, (q.text, docs[q.final_doc].text, shared)


def test_aliases_and_pronouns(worlds: list) -> None:
    forms = Counter(m for w in worlds for d in w.documents for m in d.mentions.values())
    assert forms["surname"] and forms["title"] and forms["pronoun"]
    final_forms = Counter(q.final_mention for w in worlds for q in w.questions)
    assert final_forms["surname"] + final_forms["title"] + final_forms["pronoun"] >= 10
    # Some documents name their person only by surname or title: never the full name.
    only_alias = [
        d
        for w in worlds
        for d in w.documents
        if w.entities[d.topic].type == "person"
        and w.entities[d.topic].name not in d.text
        and w.entities[d.topic].surname in d.text
    ]
    assert only_alias
    pronouns = [d for w in worlds for d in w.documents if "pronoun" in d.mentions.values()]
    assert any((" She " in d.text or " He " in d.text) for d in pronouns)


def test_distractors_share_the_questions_words(gen: ModuleType, worlds: list) -> None:
    lookalike = 0
    for w in worlds:
        docs = {d.id: d for d in w.documents}
        for q in w.questions:
            assert q.distractors
            for doc_id in q.distractors:
                assert doc_id not in q.evidence
                assert len(gen.shared_words(q.text, docs[doc_id].text)) >= 2
        names = [e.name.removeprefix("the ") for e in w.entities.values() if e.type != "person"]
        lookalike += sum(1 for a in names for b in names if a != b and a in b)
    assert lookalike >= len(worlds)  # "Old Harbor Library" beside "Harbor Library"


def test_folds_split_worlds_and_templates(gen: ModuleType, worlds: list) -> None:
    questions = [q for w in worlds for q in w.questions]
    by_world = {q.world: gen.question_fold(q, 3) for q in questions}
    assert len(set(by_world.values())) == 3
    assert all(by_world[q.world] == gen.question_fold(q, 3) for q in questions)
    template_folds = Counter(gen.template_fold(q, 3) for q in questions)
    assert len(template_folds) == 3


def test_every_hop_has_one_answer(gen: ModuleType, worlds: list) -> None:
    """Each noun phrase and the question pick out one entity: the known end of every hop's fact
    has exactly one fact of that relation in that role."""
    for w in worlds:
        for q in w.questions:
            facts = [w.facts[f] for f in q.facts]
            first, second = facts[0], facts[1]
            known = first.o if first.s in (second.s, second.o) else first.s
            for fact in facts:
                symmetric = gen.RELATION[fact.relation].symmetric
                same = [
                    f
                    for f in w.facts.values()
                    if f.relation == fact.relation
                    and (
                        (f.o == known) if known == fact.o and not symmetric
                        else known in ((f.s,) if not symmetric else (f.s, f.o))
                    )
                ]  # fmt: skip
                assert same == [fact], (q.text, fact)
                known = fact.o if known == fact.s else fact.s
