"""skills' tunables: the learning profile's and agent ranking's weights, the outcome rates, trust,
health and gap thresholds, and conflict detection's similarities, each with what it means and
where it was chosen (``core.tuning``; docs/tuning.md lists them all). Code reads
``TUNING.<area>.<name>`` at call time; bench/ overrides them with
``core.tuning.override("skills.<area>.<name>", value)``.

Most were set by the design card's formulas (docs/skills.md states them, and
tests/skills/test_learning.py checks the numbers); bench/skills/skills_graph.py measures the
latency of ranking and discovery with them, not their quality: no quality benchmark has moved
them yet.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.tuning import register, tunable

_CARD = "the design card's formula (docs/skills.md 'Usage and learning'); not swept"
_HEALTH = "the design card's formula (docs/skills.md, health scores); not swept"
_CONFLICTS = "the design card's thresholds (docs/skills.md, conflict kinds); not swept"


@dataclass(frozen=True)
class Learning:
    recent_days: float = tunable(
        7.0, meaning="Executions this recent (days) weigh recent_weight.", bench=_CARD
    )
    recent_weight: float = tunable(
        3.0, meaning="The weight of a recent execution (older ones weigh 1).", bench=_CARD
    )
    decay_days: float = tunable(
        7.0, meaning="An execution d days old weighs exp(-d / decay_days).", bench=_CARD
    )
    confidence_executions: int = tunable(
        20, meaning="Confidence is min(1, executions / this).", bench=_CARD
    )
    weight_base: float = tunable(
        0.3, meaning="Agent ranking: the weight of the base success rate.", bench=_CARD
    )
    weight_expertise: float = tunable(
        0.5, meaning="Agent ranking: the weight of the recency-weighted expertise.", bench=_CARD
    )
    weight_confidence: float = tunable(
        0.2, meaning="Agent ranking: the weight of the confidence.", bench=_CARD
    )
    default_capacity: int = tunable(
        5,
        meaning="An agent's capacity when its metadata names none (max_concurrent_tasks).",
        bench=_CARD,
    )
    coverage_proficiency: float = tunable(
        0.5,
        meaning="An agent covers a category with an active assignment to an active skill of it"
        " at least this proficient.",
        bench=_CARD,
    )


@dataclass(frozen=True)
class Outcomes:
    effectiveness_rate: float = tunable(
        0.1,
        meaning="How far one outcome moves a skill's effectiveness score (an exponential moving"
        " average's rate).",
        bench=_CARD,
    )
    proficiency_rate: float = tunable(
        0.1, meaning="How far one outcome moves an assignment's proficiency.", bench=_CARD
    )
    trust_rate: float = tunable(
        0.05, meaning="How far one outcome moves an agent's trust score.", bench=_CARD
    )
    trust_idle_days: int = tunable(
        7, meaning="Trust decays toward neutral for agents idle this long.", bench=_CARD
    )
    trust_neutral: float = tunable(0.5, meaning="The trust idle agents decay to.", bench=_CARD)
    trust_decay: float = tunable(
        0.95,
        meaning="An idle agent's trust decays toward neutral by this factor a day.",
        bench=_CARD,
    )


@dataclass(frozen=True)
class Health:
    outcomes_weight: float = tunable(
        0.5, meaning="Health: the weight of the skill's effectiveness.", bench=_HEALTH
    )
    recency_weight: float = tunable(
        0.3, meaning="Health: the weight of its recency of use.", bench=_HEALTH
    )
    conflicts_weight: float = tunable(
        0.2, meaning="Health: the weight of its open conflicts (fewer is healthier).", bench=_HEALTH
    )
    recency_days: float = tunable(
        30.0, meaning="Health: recency is exp(-days idle / this).", bench=_HEALTH
    )
    conflict_weight_scale: float = tunable(
        4.0,
        meaning="Health: the conflicts term is 1 / (1 + open conflicts' weight / this).",
        bench=_HEALTH,
    )
    stale_after_days: int = tunable(
        30, meaning="A skill unused this long has its effectiveness decayed.", bench=_HEALTH
    )
    stale_factor: float = tunable(
        0.9, meaning="A stale skill's effectiveness keeps this share each week.", bench=_HEALTH
    )
    gap_days: int = tunable(
        30, meaning="Gaps: the window of executions a task type is judged over.", bench=_HEALTH
    )
    gap_min_executions: int = tunable(
        5, meaning="Gaps: the fewest executions a task type is judged on.", bench=_HEALTH
    )
    gap_failure_rate: float = tunable(
        0.5, meaning="Gaps: a task type failing at least this often is a gap.", bench=_HEALTH
    )
    capable_success_rate: float = tunable(
        0.5,
        meaning="Gaps: a task type is a gap when no agent succeeds at least this often (over at"
        " least gap_min_executions).",
        bench=_HEALTH,
    )


@dataclass(frozen=True)
class Conflicts:
    overlap_similarity: float = tunable(
        0.85,
        meaning="Two active skills overlap from this cosine similarity of their embeddings"
        " (also the proposals' duplicate check).",
        bench=_CONFLICTS,
    )
    overlap_medium: float = tunable(
        0.90, meaning="An overlap is of medium severity from this similarity.", bench=_CONFLICTS
    )
    overlap_high: float = tunable(
        0.95, meaning="An overlap is of high severity from this similarity.", bench=_CONFLICTS
    )
    name_similarity: float = tunable(
        0.85,
        meaning="Two names are near-duplicates from this difflib ratio.",
        bench=_CONFLICTS,
    )
    neighbours: int = tunable(
        10,
        meaning="Each skill is compared with its this-many nearest active skills.",
        bench=_CONFLICTS,
    )
    contradiction_similarity: float = tunable(
        0.60,
        meaning="Two skills are checked for contradicting instructions from this similarity.",
        bench=_CONFLICTS,
    )
    priority_usage_days: int = tunable(
        30,
        meaning="A conflict's priority counts its skills' uses in this many recent days.",
        bench=_CONFLICTS,
    )
    priority_age_days: int = tunable(
        30,
        meaning="A conflict's priority grows with its age up to this many days.",
        bench=_CONFLICTS,
    )


@dataclass(frozen=True)
class Context:
    research_results: int = tunable(
        5,
        meaning="Skill research: the documents and pages read for a draft procedure.",
        bench="not measured: enough sources for a short procedure",
    )
    snippet_chars: int = tunable(
        300,
        meaning="Skill research: each source's snippet is cut to this many characters.",
        bench="not measured: enough sources for a short procedure",
    )
    context_documents: int = tunable(
        5,
        meaning="A skill's context: the document chunks it brings along.",
        bench="not measured: a context an agent reads at a glance",
    )
    context_pages: int = tunable(
        5,
        meaning="A skill's context: the pages it brings along.",
        bench="not measured: a context an agent reads at a glance",
    )


@dataclass(frozen=True)
class SkillsTuning:
    learning: Learning = Learning()
    outcomes: Outcomes = Outcomes()
    health: Health = Health()
    conflicts: Conflicts = Conflicts()
    context: Context = Context()


TUNING = register("skills", SkillsTuning())
