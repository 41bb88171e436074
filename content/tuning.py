"""content's tunables: what its answers and its model calls cost, each with what it means and
where it was chosen (``core.tuning``; docs/tuning.md lists them all). Code reads
``TUNING.<area>.<name>`` at call time; bench/ overrides them with
``core.tuning.override("content.<area>.<name>", value)``.

content ranks nothing of its own: page search, related pages and unlinked mentions rank through
rag's engine and the graph, whose tunables are rag's (rag.tuning).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.tuning import register, tunable


@dataclass(frozen=True)
class Answers:
    excerpt_chars: int = tunable(
        200,
        meaning="A backlink's, mention's or related page's excerpt: about this many characters"
        " around the match.",
        bench="not measured: a line an agent reads at a glance; bench/content/content_links.py"
        " times the answers with it (docs/benchmarks.md 'content')",
    )


@dataclass(frozen=True)
class Summaries:
    prose_max_tokens: int = tunable(
        700,
        meaning="The daily summary page's prose: at most this many tokens from the model.",
        bench="not measured: one to three short paragraphs (the prompt asks for them)",
    )


@dataclass(frozen=True)
class ContentTuning:
    answers: Answers = Answers()
    summaries: Summaries = Summaries()


TUNING = register("content", ContentTuning())
