"""Search spaces: the kinds of things the one search engine searches.

A search space is a table of *units* (chunks, long-term memory entries, and later pages, skills
and graph nodes) with an embedding and its model id, a BM25 posting table and a term table built
from the abstract models below, and a *scope* (a knowledge base, a memory context) whose row holds
the space's corpus statistics (units indexed, total terms). ``rag.keyword`` and ``rag.search``
take a space and never name a table themselves; apps declare their spaces and call the engine.

Table and column names are code, never user input: they are interpolated into SQL, values never.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import models

from core import tuning
from rag.tuning import SpaceWeights

# (unit id, extra posting values in ``posting_extra_columns`` order, indexed text)
RebuildRow = tuple[int, tuple[object, ...], str]


class AbstractKeywordPosting(models.Model):
    """One (term, unit) pair of a space's BM25 inverted index.

    ``impact`` is the BM25 term-frequency factor at indexing time; postings are read in impact
    order so a query touches only the top postings of each term, then scored exactly from ``tf``
    and the unit's length against the current corpus statistics. Concrete tables add the scope,
    the unit and the unit length (named by their space), a composite primary key
    (scope, term, unit) and a covering index (scope, term, impact desc).
    """

    term = models.CharField(max_length=64)
    tf = models.PositiveSmallIntegerField()
    impact = models.FloatField()

    class Meta:
        abstract = True


class AbstractKeywordTerm(models.Model):
    """Document frequency of a term within one scope of a space (for idf at query time)."""

    term = models.CharField(max_length=64)
    df = models.PositiveIntegerField()

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.term} (df {self.df})"


@dataclass(frozen=True)
class SearchSpace:
    """Where a space's units, index and statistics live. SQL aliases: ``u`` is the unit row,
    ``p`` a posting; filters are SQL conditions over the aliases the space's joins introduce."""

    name: str
    unit_table: str
    # The unit's scope column (in the unit and posting tables) and the scope table, whose rows
    # carry the corpus statistics of their units.
    scope_column: str
    scope_table: str
    scope_count_column: str
    scope_terms_column: str
    posting_table: str
    posting_unit_column: str
    posting_length_column: str
    term_table: str
    # The unit's BM25 length, kept on the unit so that removing it lowers the statistics exactly.
    unit_length_column: str = "keyword_length"
    embedding_column: str = "embedding"
    model_column: str = "embedding_model"
    # Denormalised posting columns written by postings_add, after the unit id.
    posting_extra_columns: tuple[str, ...] = ()
    # Joins that bring filter tables in, from a posting (keyword stage) and from a unit (vector
    # stage); used only when a filter condition is given.
    posting_filter_join: str = ""
    unit_filter_join: str = ""
    # A condition every vector candidate must meet (units without postings are invisible to
    # the keyword stage already), e.g. "only current versions".
    vector_condition: str = ""
    # The units of one scope with their indexed text, for ``index_rebuild``.
    rebuild_rows: Callable[[int], Iterable[RebuildRow]] | None = None
    # The scope table's key column (a scope keyed by its owner: an agent, an account).
    scope_key_column: str = "id"
    # The unit column that groups units (a chunk's document, an entry's thread): a group with
    # several matching units lifts them (``rag.granularity``); empty: no groups.
    group_column: str = ""
    # The space's ranking weights (group lift, graph weight, hop decay, graph similarity, late
    # interaction: ``rag.tuning.SpaceWeights``) are tunables: ``weights`` names their group in
    # the tuning registry (``rag.spaces.chunks``), read by ``space_weights``.
    # A space with none has SpaceWeights' defaults.
    weights: str = ""


def space_weights(space: SearchSpace) -> SpaceWeights:
    """The ranking weights of ``space``, as tuned now (``rag.tuning``)."""
    if space.weights:
        found: SpaceWeights = tuning.group(space.weights)
        return found
    return SpaceWeights()


def _chunk_rebuild_rows(knowledge_base_id: int) -> Iterable[RebuildRow]:
    from rag.indexing import indexed_text
    from rag.models import Chunk

    rows = Chunk.objects.filter(knowledge_base_id=knowledge_base_id).values_list(
        "id", "document_id", "text", "heading_path", "document__title"
    )
    for chunk_id, document_id, text, path, title in rows.iterator(chunk_size=2000):
        yield chunk_id, (document_id,), indexed_text(title=title, heading_path=path, text=text)


CHUNKS = SearchSpace(
    name="chunks",
    unit_table="rag_chunk",
    scope_column="knowledge_base_id",
    scope_table="rag_knowledgebase",
    scope_count_column="chunk_count",
    scope_terms_column="total_terms",
    posting_table="rag_keywordposting",
    posting_unit_column="chunk_id",
    posting_length_column="chunk_length",
    term_table="rag_keywordterm",
    posting_extra_columns=("document_id",),
    posting_filter_join="JOIN rag_document d ON d.id = p.document_id",
    unit_filter_join="JOIN rag_document d ON d.id = u.document_id",
    rebuild_rows=_chunk_rebuild_rows,
    group_column="document_id",
    weights="rag.spaces.chunks",
)


def graph_node_text(*, name: str, aliases: Iterable[str], description: str) -> str:
    """What a graph node is found by: its name, its aliases and its description."""
    return "\n".join([name, *aliases, description])


def _graph_node_rebuild_rows(scope_id: int) -> Iterable[RebuildRow]:
    from rag.models import GraphNode

    rows = GraphNode.objects.filter(scope_id=scope_id).values_list(
        "id", "name", "aliases", "description"
    )
    for node_id, name, aliases, description in rows.iterator(chunk_size=2000):
        yield node_id, (), graph_node_text(name=name, aliases=aliases, description=description)


GRAPH_NODES = SearchSpace(
    name="graph_nodes",
    unit_table="rag_graphnode",
    scope_column="scope_id",
    scope_table="rag_graphscope",
    scope_count_column="node_count",
    scope_terms_column="total_terms",
    posting_table="rag_graphnodeposting",
    posting_unit_column="node_id",
    posting_length_column="node_length",
    term_table="rag_graphnodeterm",
    # Filters are conditions on the node (u).
    posting_filter_join="JOIN rag_graphnode u ON u.id = p.node_id",
    rebuild_rows=_graph_node_rebuild_rows,
    weights="rag.spaces.graph_nodes",
)
