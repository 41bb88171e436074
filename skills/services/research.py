"""Research for a skill proposal: the related skills, documents and pages an account already has,
the category the words suggest, and a draft procedure (written by the LLM when one is
configured, from the research offline)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.actors import Actor
from core.llm import get_llm_provider
from rag import selectors as rag_selectors
from rag.graph import selectors as graph
from rag.search import SearchFilters, chunk_search
from skills.categories import CATEGORIES, keyword_votes
from skills.models import Skill
from skills.selectors.catalog import PAGE_ENTITY_TYPES, skill_discover
from skills.tuning import TUNING

QUERY_CHARS = 1000
LLM_SYSTEM = (
    "You write the procedure of a skill for AI agents: numbered, concrete steps an agent can "
    "follow, then how it knows it succeeded. Use the related skills, documents and pages given. "
    "No preamble."
)


@dataclass(frozen=True)
class Research:
    skills: list[dict[str, Any]]
    documents: list[dict[str, Any]]
    pages: list[dict[str, Any]]

    def as_json(self) -> dict[str, Any]:
        return {"skills": self.skills, "documents": self.documents, "pages": self.pages}


def research(*, actor: Actor, account_id: int, name: str, description: str) -> Research:
    """What the account knows about the topic, through the one search engine: related skills
    (any status but archived), chunks of its knowledge bases, and its pages and articles."""
    query = f"{name}. {description}".strip()[:QUERY_CHARS]
    skills = [
        {
            "skill_id": hit.skill.pk,
            "name": hit.skill.name,
            "category": hit.skill.category,
            "status": hit.skill.status,
            "score": round(hit.score, 6),
            "similarity": hit.retrieval["vector_score"],
        }
        for hit in skill_discover(
            actor=actor,
            description=query,
            top_k=TUNING.context.research_results,
            statuses=(Skill.Status.ACTIVE, Skill.Status.DRAFT, Skill.Status.DEPRECATED),
            account_ids=[account_id],
        )
    ]
    kb_ids = rag_selectors.knowledge_base_ids_unarchived(account_id=account_id)
    documents = []
    if kb_ids:
        outcome = chunk_search(
            actor=actor,
            query=query,
            top_k=TUNING.context.research_results,
            filters=SearchFilters(knowledge_base_ids=tuple(kb_ids)),
        )
        documents = [
            {
                "document_id": hit.document_id,
                "chunk_id": hit.chunk_id,
                "title": hit.document_title,
                "score": round(hit.score, 6),
                "snippet": hit.text[: TUNING.context.snippet_chars],
            }
            for hit in outcome.hits
        ]
    pages = [
        {
            "node_id": hit.node.pk,
            "name": hit.node.name,
            "entity_type": hit.node.entity_type,
            "score": round(hit.score, 6),
        }
        for hit in graph.node_search(
            actor=actor,
            query=query,
            top_k=TUNING.context.research_results,
            entity_types=PAGE_ENTITY_TYPES,
            account_ids=[account_id],
        )
    ]
    return Research(skills=skills, documents=documents, pages=pages)


def category_infer(
    *, name: str, description: str, related: Sequence[dict[str, Any]]
) -> tuple[str, float]:
    """The category and how sure: each word of the name and description that suggests a
    category is a vote of 1 (``skills.categories``), each related skill a vote of its search
    score for its own category. The category with most votes wins (the first in the list of
    equals); confidence = its votes / (all votes + 1), the 1 a prior that keeps a single weak
    hint below certainty. No votes: ``general``, confidence 0."""
    votes: dict[str, float] = {k: float(v) for k, v in keyword_votes([name, description]).items()}
    for skill in related:
        category = skill.get("category")
        if category in CATEGORIES:
            votes[category] = votes.get(category, 0.0) + max(0.0, float(skill.get("score") or 0))
    total = sum(votes.values())
    if total <= 0:
        return "general", 0.0
    best = max(CATEGORIES, key=lambda c: (votes.get(c, 0.0), -CATEGORIES.index(c)))
    return best, round(votes[best] / (total + 1), 4)


def offline_procedure(
    *, name: str, description: str, dependencies: Sequence[str], found: Research
) -> str:
    """A deterministic draft from what search found (no LLM configured)."""
    lines = [f"Goal: {name}." + (f" {description.strip()}" if description.strip() else "")]
    steps: list[str] = []
    if dependencies:
        steps.append("Make sure these skills are available first: " + ", ".join(dependencies) + ".")
    if found.skills:
        related = ", ".join(f"{s['name']} ({s['category']})" for s in found.skills)
        steps.append(f"Reuse what related skills do: {related}.")
    if found.documents:
        titles = ", ".join(
            dict.fromkeys(d["title"] or f"document {d['document_id']}" for d in found.documents)
        )
        steps.append(f"Read the relevant documents: {titles}.")
    if found.pages:
        steps.append("Consult the pages: " + ", ".join(p["name"] for p in found.pages) + ".")
    steps.append(f"Carry out: {name}.")
    steps.append("Check the result, then record the outcome (POST /api/v1/skills/usage).")
    lines.append("Steps:")
    lines += [f"{i}. {step}" for i, step in enumerate(steps, start=1)]
    return "\n".join(lines)


def _llm_prompt(
    *, name: str, description: str, dependencies: Sequence[str], found: Research
) -> str:
    parts = [f"Skill: {name}", f"Description: {description or '(none)'}"]
    if dependencies:
        parts.append("Depends on: " + ", ".join(dependencies))
    for skill in found.skills:
        parts.append(f"Related skill: {skill['name']} ({skill['category']})")
    for document in found.documents:
        parts.append(f"Document {document['title']}: {document['snippet']}")
    for page in found.pages:
        parts.append(f"Page: {page['name']}")
    return "\n".join(parts)


def draft_procedure(
    *, name: str, description: str, dependencies: Sequence[str], found: Research
) -> tuple[str, str]:
    """(procedure, drafted_by): the configured LLM's draft, or the offline one. Never inside a
    transaction; an unavailable LLM is 503 ``provider_unavailable``."""
    provider = get_llm_provider()
    if provider.model_id.startswith("offline:"):
        return (
            offline_procedure(
                name=name, description=description, dependencies=dependencies, found=found
            ),
            "offline",
        )
    text = provider.complete(
        _llm_prompt(name=name, description=description, dependencies=dependencies, found=found),
        system=LLM_SYSTEM,
        max_tokens=800,
    )
    return text.strip(), provider.model_id
