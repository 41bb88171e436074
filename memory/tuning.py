"""memory's tunables: long-term search's weights and lifts, effective relevance, the search
across tiers, the memory tools, context assembly (its candidates, floors, shares and packing),
conversations' summaries and extraction, and upkeep, each with what it means and the benchmark
that chose it (``core.tuning``; docs/tuning.md lists them all). Code reads
``TUNING.<area>.<name>`` at call time; bench/ overrides them with
``core.tuning.override("memory.<area>.<name>", value)``.

"log" below is docs/benchmarks-log.md (its section), "figures" docs/benchmarks.md. Numbers that
are not tunables stay in their modules: API bounds (a search's MAX_RANKED, MAX_RELATED, text
lengths), batch sizes, time limits, a model's JSON schema sizes.

The document chunks a context shows keep graph RAG's floor on calibrated evidence, which is
rag's (``rag.evidence.context_min``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.tuning import register, tunable
from rag.tuning import SpaceWeights

_LOCOMO = "log 'LoCoMo retrieval (long-term memory)'"
_CONTEXT = (
    "bench/memory/context_locomo.py (log 'Context assembly: evidence recall on LoCoMo within a"
    " token budget')"
)
_SCALE = (
    "bench/memory/context_assembly.py (log 'Context assembly: latency and throughput at scale')"
)
_FLOORS = "bench/memory/context_floors.py (log 'Every source on topic')"
_CLUSTERS = "bench/memory/memory_maintenance.py (log 'Cluster maintenance')"
_EXTRACTION = "bench/memory/extraction_locomo.py (log 'Conversation extraction')"
_SUMMARY = "not measured: a short extractive summary an agent reads at a glance"
_FACTS = (
    "bench/memory/memory_fact_preservation.py and statement_coverage_sweep.py on the"
    " fact-preservation set (log 'Fact preservation in upkeep')"
)


@dataclass(frozen=True)
class LongTermSearch:
    """Long-term memory search (``memory.long_term.selectors``)."""

    vector_weight: float = tunable(
        0.4,
        meaning="Hybrid fusion of memory entries: the vector stage's weight when the caller gives"
        " none (a weight the caller gives overrides its stage's).",
        bench=f"LoCoMo dev: on short chat turns BM25 beats the small local embedding model, 0.4 /"
        f" 0.6 retrieves more evidence than the documents' 0.5 / 0.5 ({_LOCOMO})",
    )
    keyword_weight: float = tunable(
        0.6,
        meaning="Hybrid fusion of memory entries: the keyword (BM25) stage's weight when the"
        " caller gives none.",
        bench=f"LoCoMo dev ({_LOCOMO})",
    )
    min_candidates: int = tunable(
        100,
        meaning="The fewest candidates each stage reads (weighted fusion normalises each stage"
        " between its best and last candidate: a short list sets a high floor).",
        bench=f"LoCoMo Recall@10: 50 0.741, 100 0.756, 200 0.755, 400 0.762; 100 takes most of the"
        f" gain within the latency budget at 100k entries ({_LOCOMO})",
    )
    candidate_factor: int = tunable(
        10,
        meaning="Candidates each stage reads per requested hit (between min_candidates and the"
        " search's MAX_DEPTH).",
        bench=f"not swept on its own: the depth of the first LoCoMo runs ({_LOCOMO})",
    )
    speaker_lift: float = tunable(
        1.0,
        meaning="Query analysis of named speakers: how much of its score an entry spoken by a"
        " speaker the query names gains.",
        bench="leave-one-conversation-out on LoCoMo dev (log 'named speakers')",
    )
    session_diversity: float = tunable(
        0.2,
        meaning="A graph search for a question asking for several things spreads its best"
        " entries over sessions: each further entry of a session counts (1 - this) ** n of its"
        " score; 0: off.",
        bench="leave-one-conversation-out on LoCoMo dev in graph mode: both folds best at"
        " 0.2-0.25 (log 'Sessions spread')",
    )


@dataclass(frozen=True)
class Relevance:
    """Effective relevance (``memory.long_term.relevance``): the sum of weight x component."""

    similarity: float = tunable(
        0.7,
        meaning="Effective relevance: the weight of the entry's similarity to the query.",
        bench="not swept: similarity leads, the others order memories about equally relevant"
        " (docs/memory/long-term.md)",
    )
    importance: float = tunable(
        0.1,
        meaning="Effective relevance: the weight of the entry's importance.",
        bench="not swept (docs/memory/long-term.md)",
    )
    confidence: float = tunable(
        0.1,
        meaning="Effective relevance: the weight of the entry's confidence.",
        bench="not swept (docs/memory/long-term.md)",
    )
    recency: float = tunable(
        0.1,
        meaning="Effective relevance: the weight of the entry's recency (halving every"
        " MEMORY_RECENCY_HALF_LIFE_DAYS).",
        bench="not swept (docs/memory/long-term.md)",
    )


@dataclass(frozen=True)
class MemorySpaces:
    # The memory entries' ranking weights (``rag.spaces.space_weights``), each chosen by
    # leave-one-conversation-out on LoCoMo dev: the session lift 0.3 (0.3 and 0.35 at or above
    # 0.2 in every fold, hybrid and graph: log 'the session lift again'); graph weight 0.2 (each
    # fold chooses it: log 'Graph weight per space'); hop decay 0.2 (the middle of what both
    # folds share: log 'Hop decay per space'); graph similarity 0.5 (both conversations best,
    # 0.855 / 0.855 -> 0.858 / 0.874 Recall@10); late weight 1.25 (the middle of the plateau
    # both folds share, 1.0 to 1.5: log 'Late interaction'); 250 units read per node (no cut
    # at 5,000 turns: log 'Graph-mode memory search at 20,000 turns'); 600 mentions read per
    # search (each fold is lossless from 150, the 5,000-turn proxy from 300 or less: log 'A
    # budget of units per graph search'); passage entities not walked on (conv-30 loses 0.006
    # when they are, conv-26 nothing: log 'The first hop's relation').
    entries: SpaceWeights = SpaceWeights(  # noqa: RUF009 (frozen: shared safely)
        group_weight=0.3,
        graph_weight=0.2,
        hop_decay=0.2,
        graph_similarity=0.5,
        late_weight=1.25,
        units_read_per_node=250,
        units_read_per_search=600,
        passage_nodes_walked=False,
    )


@dataclass(frozen=True)
class Indexing:
    """The text a conversation's turn is indexed by (``memory.long_term.indexing``): read when an
    entry is indexed, so a change shows after ``index_rebuild``."""

    keyword_radius: int = tunable(
        2,
        meaning="A turn's keyword text holds this many neighbour turns on each side of it.",
        bench=f"LoCoMo dev ({_LOCOMO})",
    )
    embedding_radius: int = tunable(
        1,
        meaning="A turn's embedded text holds this many neighbour turns on each side of it.",
        bench=f"LoCoMo dev ({_LOCOMO})",
    )


@dataclass(frozen=True)
class TierSearch:
    """The search across tiers (``memory.context.selectors.search``, ``POST /memory/search``)."""

    candidate_factor: int = tunable(
        5,
        meaning="Candidates each list keeps per requested hit.",
        bench="not swept: bench/memory/memory_search.py times it (log 'Search across tiers at"
        " scale')",
    )
    min_candidates: int = tunable(
        50,
        meaning="The fewest candidates each list keeps.",
        bench="not swept: bench/memory/memory_search.py (log 'Search across tiers at scale')",
    )


@dataclass(frozen=True)
class Tools:
    """The memory tools (``memory.context.services.tools``)."""

    search_results: int = tunable(
        5,
        meaning="Semantic search: at most this many memories.",
        bench="not measured: a handful an agent reads",
    )
    min_relevance_score: float = tunable(
        0.5,
        meaning="Semantic search: a memory's cosine similarity to the query at least this (0.5 is"
        " clearly on topic for all-MiniLM-L6-v2).",
        bench="LoCoMo dev (log 'knowledge items on topic only (kept)'), the same floor",
    )
    search_candidates: int = tunable(
        50,
        meaning="Semantic search: the nearest entries read before the floor.",
        bench="not measured: the engine's usual stage depth",
    )
    related_results: int = tunable(
        20,
        meaning="Related memories: the nearest entries read for each kind asked for.",
        bench="not measured",
    )
    summary_sentences: int = tunable(
        4,
        meaning="A summary of memories holds at most this many sentences.",
        bench=_SUMMARY,
    )


@dataclass(frozen=True)
class ContextSources:
    """Where a context's candidates come from (``memory.context.assembly.sources``)."""

    history_min_candidates: int = tunable(
        60,
        meaning="History: the fewest turns asked of the search, whatever the budget.",
        bench=f"{_CONTEXT}, '2026-11-26: the benchmark and the settings chosen'",
    )
    history_candidates: int = tunable(
        300,
        meaning="History: the most turns asked of the search (past them, the rest of the"
        " conversation follows, newest first).",
        bench=f"{_CONTEXT}: 100 or 300 tie up to 2,000 tokens, 300 matter past it",
    )
    history_tokens_per_candidate: int = tunable(
        20,
        meaning="History: one candidate asked per this many tokens of budget (a turn is about"
        " 20 tokens).",
        bench=f"{_CONTEXT}: one per 12 tokens no better; {_SCALE}: a third of the time",
    )
    history_depth_factor: int = tunable(
        2,
        meaning="History: candidates per retrieval stage for each history candidate asked for"
        " (at least 100).",
        bench=f"{_CONTEXT}: 2 chosen over 1, 3 and 4 on LoCoMo dev's evidence recall",
    )
    history_weights: tuple[float, float] | None = tunable(
        None,
        meaning="History's fusion weights (vector, keyword); None: long-term search's own.",
        bench=f"{_CONTEXT}: 0.5 / 0.5 and 0.3 / 0.7 were no better",
    )
    speaker_boost: float = tunable(
        0.35,
        meaning="History: how much of its score a turn of a speaker the query names gains.",
        bench=f"{_CONTEXT}, 'four more settings, and the speaker boost again': 0.35 no worse than"
        " 0.25 in any figure, better in three",
    )
    max_summaries: int = tunable(
        1,
        meaning="The newest this-many summaries (the conversation's older turns are the"
        " history's).",
        bench=f"{_CONTEXT}: the newest summary only (the recent section stays, smaller)",
    )
    memory_candidates: int = tunable(
        20,
        meaning="Memories (outside the conversation): the most candidates.",
        bench=f"not swept: {_SCALE}",
    )
    memory_depth: int = tunable(
        100,
        meaning="Memories: candidates per retrieval stage (the floor long-term search keeps for"
        " any page).",
        bench=f"{_SCALE}: the 20 best of 100 per stage at about two thirds of the vector stage's"
        " time over 100k memories",
    )
    knowledge_candidates: int = tunable(
        10,
        meaning="Knowledge items: the most candidates.",
        bench="not swept: bench/memory/knowledge_floor.py",
    )
    document_candidates: int = tunable(
        10, meaning="Document chunks: the most candidates.", bench=f"not swept: {_FLOORS}"
    )
    page_candidates: int = tunable(
        5, meaning="Pages: the most candidates.", bench=f"not swept: {_FLOORS}"
    )
    skill_candidates: int = tunable(
        5, meaning="Skills: the most candidates.", bench=f"not swept: {_FLOORS}"
    )
    task_candidates: int = tunable(
        10,
        meaning="Pool values and working memory: the most candidates.",
        bench=f"not swept: {_FLOORS}",
    )


@dataclass(frozen=True)
class ContextFloors:
    """Relevance floors of a context's sources (``memory.context.assembly``): an item is a
    candidate only when it is on topic; None turns a floor off (the benchmarks' baseline)."""

    memory_min_similarity: float | None = tunable(
        0.4,
        meaning="A memory is shown only when its cosine similarity to the query reaches this.",
        bench="bench/memory/memory_floor.py on LoCoMo dev's gold observations beside unrelated"
        " memories: 0.4 keeps 198 of 201 and drops 99% of the unrelated (log 'Memories on topic"
        " only (kept)')",
    )
    knowledge_min_similarity: float | None = tunable(
        0.5,
        meaning="A knowledge item is shown only when its embedding's cosine similarity to the"
        " query reaches this.",
        bench="bench/memory/knowledge_floor.py and context_locomo.py on LoCoMo dev (log"
        " 'knowledge items on topic only (kept)')",
    )
    page_min_similarity: float | None = tunable(
        0.3,
        meaning="A page is shown only when its graph node's cosine similarity to the query"
        " reaches this.",
        bench=_FLOORS,
    )
    skill_min_similarity: float | None = tunable(
        0.3,
        meaning="A skill is shown only when its cosine similarity to the query reaches this.",
        bench=_FLOORS,
    )
    pool_min_similarity: float | None = tunable(
        0.3,
        meaning="A pool value is shown only when its text's cosine similarity to the query"
        " reaches this.",
        bench=_FLOORS,
    )
    working_min_similarity: float | None = tunable(
        0.3,
        meaning="A working-memory value is shown only when its text's cosine similarity to the"
        " query reaches this.",
        bench=_FLOORS,
    )


@dataclass(frozen=True)
class ContextPacking:
    """How a context packs its budget (``memory.context.assembly.assemble``, ``packing``)."""

    immediate_max: float = tunable(
        0.3,
        meaning="The last turns' cap, as a share of the budget.",
        bench=f"{_CONTEXT}: 0.2 changed nothing (the last turns take less)",
    )
    more_room: int = tunable(
        64,
        meaning="The rest of a conversation is read only when at least this many tokens are left"
        " once every candidate found was taken.",
        bench=f"not swept: {_CONTEXT}",
    )
    min_turn_tokens: int = tunable(
        6,
        meaning="The rest of a conversation: no more turns than this many tokens each could fill.",
        bench=f"not swept: {_CONTEXT}",
    )
    min_room: int = tunable(
        4,
        meaning="Below this many tokens left, a section stops looking for an item that fits.",
        bench=f"not swept: {_CONTEXT}",
    )
    max_shortened: int = tunable(
        3,
        meaning="A section shortens at most this many items to make them fit.",
        bench=f"not swept: {_CONTEXT}",
    )


_SHARE = "Its share of what the last turns leave (renormalised over the sections with candidates)"
_SHARES_BENCH = (
    f"conversation's: {_CONTEXT}; the other task types': the design's starting values, not measured"
)


@dataclass(frozen=True)
class SectionShares:
    """Each section's share of a context for one task type (docs/memory/context.md):
    relevant history leads in conversation, knowledge and documents elsewhere."""

    recent: float = tunable(
        0.08,
        meaning=f"The conversation's summaries. {_SHARE}.",
        bench=f"{_SHARES_BENCH}; 0.04 in conversation won on one conversation only",
    )
    history: float = tunable(
        0.70, meaning=f"Relevant history (turns and memories). {_SHARE}.", bench=_SHARES_BENCH
    )
    knowledge: float = tunable(0.08, meaning=f"Knowledge items. {_SHARE}.", bench=_SHARES_BENCH)
    documents: float = tunable(0.05, meaning=f"Document chunks. {_SHARE}.", bench=_SHARES_BENCH)
    pages: float = tunable(0.03, meaning=f"Pages. {_SHARE}.", bench=_SHARES_BENCH)
    skills: float = tunable(0.03, meaning=f"Skills. {_SHARE}.", bench=_SHARES_BENCH)
    task: float = tunable(
        0.03, meaning=f"Task context (working memory, pools). {_SHARE}.", bench=_SHARES_BENCH
    )


@dataclass(frozen=True)
class ContextShares:
    # Conversation's measured on LoCoMo (_CONTEXT); the others are the design's starting
    # values, not measured.
    conversation: SectionShares = SectionShares()
    problem_solving: SectionShares = SectionShares(
        recent=0.05,
        history=0.25,
        knowledge=0.20,
        documents=0.18,
        pages=0.06,
        skills=0.18,
        task=0.08,
    )
    learning: SectionShares = SectionShares(
        recent=0.05,
        history=0.25,
        knowledge=0.28,
        documents=0.24,
        pages=0.12,
        skills=0.03,
        task=0.03,
    )
    analysis: SectionShares = SectionShares(
        recent=0.10,
        history=0.30,
        knowledge=0.23,
        documents=0.18,
        pages=0.11,
        skills=0.03,
        task=0.05,
    )


@dataclass(frozen=True)
class TaskTypes:
    neighbours: int = tunable(
        7,
        meaning="A query's task type: the vote of its this-many nearest labelled examples.",
        bench="bench/memory/context_task_types.py: accuracy 0.958 on the held-out queries (log"
        " 'Task type classification')",
    )


@dataclass(frozen=True)
class Structuring:
    min_content_terms: int = tunable(
        3,
        meaning="A structured write needs at least this many distinct content words (after stop"
        " words and fillers) to be remembered.",
        bench="not measured: the structuring tests' trivial and worthwhile texts",
    )
    name_words: int = tunable(
        8,
        meaning="A structured memory's name: its first this-many content words.",
        bench="not measured: a name an agent reads at a glance",
    )


@dataclass(frozen=True)
class Llm:
    input_chars: int = tunable(
        24_000,
        meaning="A conversation's model calls (its rolling summary, its extraction) read at most"
        " this many characters of turns.",
        bench="cost: the model's context and answer size; not measured for quality",
    )


@dataclass(frozen=True)
class Summaries:
    """A conversation's extractive summary (``memory.conversations.summaries``)."""

    mmr_lambda: float = tunable(
        0.7,
        meaning="Maximal marginal relevance: relevance's share against novelty when choosing"
        " the summary's sentences.",
        bench=_SUMMARY,
    )
    max_sentences: int = tunable(
        8, meaning="A summary holds at most this many sentences.", bench=_SUMMARY
    )
    max_key_points: int = tunable(
        6, meaning="A summary lists at most this many key points.", bench=_SUMMARY
    )
    max_phrase_words: int = tunable(
        4, meaning="A key point is a phrase of at most this many words.", bench=_SUMMARY
    )
    max_sentence_chars: int = tunable(
        300,
        meaning="Sentences over this many characters are cut into clauses first: one run-on line"
        " should not fill a summary on its own.",
        bench=_SUMMARY,
    )


@dataclass(frozen=True)
class Extraction:
    """Facts and entities from conversations (``memory.conversations.extraction``)."""

    candidates: int = tunable(
        10,
        meaning="The knowledge items most similar to a proposed fact that the model decides"
        " against (add, update, invalidate, none).",
        bench=f"not swept: {_EXTRACTION}",
    )
    llm_confidence: float = tunable(
        0.7,
        meaning="The confidence of a fact or entity the model extracted.",
        bench=f"not measured: above the offline extractor's ({_EXTRACTION})",
    )
    offline_confidence: float = tunable(
        0.4,
        meaning="The confidence of a fact the offline extractor found.",
        bench=f"not measured: below the model's ({_EXTRACTION})",
    )
    offline_entity_confidence: float = tunable(
        0.3,
        meaning="The confidence of an entity the offline extractor found.",
        bench=f"not measured: below the model's ({_EXTRACTION})",
    )
    max_object_words: int = tunable(
        6,
        meaning="Offline extraction: a fact's object is at most this many words.",
        bench=_EXTRACTION,
    )


@dataclass(frozen=True)
class Upkeep:
    """Consolidation and cluster maintenance (``memory.maintenance``)."""

    dedup_neighbours: int = tunable(
        8,
        meaning="Deduplication compares each entry with this many nearest neighbours in its"
        " context (the HNSW index).",
        bench="not swept: bench/memory/memory_maintenance.py times it (docs/memory/maintenance.md)",
    )
    umap_components: int = tunable(
        10,
        meaning="Clustering: UMAP's target dimension, enough for HDBSCAN's density estimate and"
        " small enough for its trees.",
        bench=_CLUSTERS,
    )
    umap_neighbours: int = tunable(
        15, meaning="Clustering: UMAP's n_neighbors (its default).", bench=_CLUSTERS
    )
    llm_max_members: int = tunable(
        20,
        meaning="A cluster rewrite's prompt carries at most this many members of a group.",
        bench=f"cost: enough for a faithful merge ({_CLUSTERS})",
    )
    llm_max_chars_per_member: int = tunable(
        2000,
        meaning="A cluster rewrite's prompt carries at most this many characters of a member.",
        bench=f"cost: enough for a faithful merge ({_CLUSTERS})",
    )


@dataclass(frozen=True)
class FactCheck:
    """Upkeep's fact check (``memory.maintenance.fact_check``): a merge or rewrite keeps every
    statement of what it replaces."""

    key_rule: Literal["words", "content", "content+rare", "rare", "names"] = tunable(
        "words",
        meaning="Which words besides numbers, codes and names a covering statement must keep:"
        " words every word but function words, adverbs of frequency and light verbs; content"
        " every noun or adjective; content+rare those and the rare words; rare the rare words;"
        " names nothing more.",
        bench=f"{_FACTS}: words let no statement of another fact through at any threshold from"
        " 0.70",
    )
    statement_similarity: float | None = tunable(
        None,
        meaning="Two statements are near paraphrases at a cosine similarity of at least this"
        " (with the key-token and negation rules); None: the dedup threshold"
        " (MEMORY_DEDUP_SIMILARITY, 0.92).",
        bench=f"{_FACTS}: lower thresholds cover more paraphrases, but what the tokens cannot see"
        " only the embedding can, so the dedup threshold stays",
    )


@dataclass(frozen=True)
class MemoryTuning:
    search: LongTermSearch = LongTermSearch()
    relevance: Relevance = Relevance()
    spaces: MemorySpaces = MemorySpaces()
    indexing: Indexing = Indexing()
    tiers: TierSearch = TierSearch()
    tools: Tools = Tools()
    sources: ContextSources = ContextSources()
    floors: ContextFloors = ContextFloors()
    packing: ContextPacking = ContextPacking()
    shares: ContextShares = ContextShares()
    task_types: TaskTypes = TaskTypes()
    structuring: Structuring = Structuring()
    llm: Llm = Llm()
    summaries: Summaries = Summaries()
    extraction: Extraction = Extraction()
    upkeep: Upkeep = Upkeep()
    facts: FactCheck = FactCheck()


TUNING = register("memory", MemoryTuning())
