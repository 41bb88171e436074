"""Derived data keeps the visibility of its source (docs/architecture.md, rule 11).

Rows derived from the units of a search space (graph nodes made from the entities a unit
names, mentions, edges, community summaries) are visible to those who may read the units they
came from. What decides it is the unit's *scope* in its space:

- a space whose scopes are account-wide (``rag.spaces.CHUNKS``: every agent of an account
  reads every knowledge base) is *open*: what its units teach is visible to the account;
- a space whose scopes may be private (``memory.spaces.MEMORY_ENTRIES``: a conversation's
  context is its owner's and its grantees') registers, from the app that owns it, a
  ``ScopeReader`` saying which of its scopes an actor may read (``scope_reader_register``).
  rag never imports that app: the rule is registered at start-up (``memory.apps``), and a
  space registered by nobody is closed: its rows are visible to no agent (fail closed).

A derived row records where it came from: a mention its ``space`` and ``scope_id``; a node
or an edge ``derived_space`` and ``derived_scope_id`` (blank and NULL: an open source or a
person's or agent's explicit write made it, so it is account-wide). Then, for an actor:

- a mention is visible when its scope is readable;
- an edge is visible when its source is readable and the node it leads to is visible (walks
  enter a node only through visible edges from visible nodes);
- a node is visible when it is account-wide, when its own source is readable, or when a
  visible mention names it: a node that a public document and a private conversation both
  mention stays visible through the document, while the private mentions, edges and facts
  do not.

``visibility_of(actor)`` reads the rules once per call into a ``Visibility``, whose methods
give the conditions as SQL (the graph's raw queries) and as ``Q`` objects (its querysets),
inside the query like every access rule of the project. People who manage memory and tools
acting on an account see everything of their accounts: the condition is then ``TRUE``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import count
from typing import Any

from django.db.models import Exists, OuterRef, Q

from core.actors import Actor


@dataclass(frozen=True)
class Readable:
    """The scopes of one space an actor may read: every scope of ``account_ids``, and the
    scopes ``scope_ids`` (of the actor's own account)."""

    account_ids: tuple[int, ...] = ()
    scope_ids: tuple[int, ...] = ()


ScopeReader = Callable[[Actor], Readable]

# Spaces whose scopes are account-wide: their units' derived rows are the account's.
_OPEN: set[str] = {"chunks"}
_READERS: dict[str, ScopeReader] = {}
_names = count()


def space_open_register(space: str) -> None:
    """Declare ``space``'s scopes account-wide (every reader of the account reads them)."""
    _OPEN.add(space)


def scope_reader_register(space: str, reader: ScopeReader) -> None:
    """Register the rule of a space whose scopes may be private (the owning app, at start-up)."""
    _READERS[space] = reader


def is_open(space: str) -> bool:
    return space in _OPEN


@dataclass(frozen=True)
class Source:
    """Where a derived node or edge came from: blank and None for an account-wide source."""

    space: str = ""
    scope_id: int | None = None

    @property
    def is_public(self) -> bool:
        return self.scope_id is None


PUBLIC = Source()


def source_of(space: str, scope_id: int | None) -> Source:
    """What a row derived from a unit of ``space`` in ``scope_id`` records: an open space's
    units teach the account (``PUBLIC``), another space's their scope."""
    if scope_id is None or is_open(space):
        return PUBLIC
    return Source(space, int(scope_id))


def open_spaces() -> list[str]:
    return sorted(_OPEN)


@dataclass(frozen=True)
class Visibility:
    """What derived rows of the graph an actor may see (see the module's docstring)."""

    account_ids: tuple[int, ...]
    # Per registered private space, what the actor reads; None: everything of its accounts.
    readable: Mapping[str, Readable] | None = None

    @property
    def everything(self) -> bool:
        return self.readable is None

    def reads_source(self, space: str, scope_id: int | None, account_id: int) -> bool:
        """May the actor read the source a node or edge records (in Python, for rows already
        loaded)?"""
        if self.everything or scope_id is None or is_open(space):
            return True
        readable = (self.readable or {}).get(space)
        if readable is None:
            return False
        return account_id in readable.account_ids or scope_id in readable.scope_ids

    # --- SQL (named parameters) --------------------------------------------------------------

    def _param(self, params: dict[str, Any], value: Any) -> str:
        name = f"v{next(_names)}"
        params[name] = value
        return f"%({name})s"

    def _scope_sql(
        self, space_col: str, scope_col: str, account_col: str, params: dict[str, Any]
    ) -> str:
        """The condition that a row whose space, scope and account are these columns has a
        readable scope."""
        assert self.readable is not None
        arms = [f"{space_col} = ANY({self._param(params, open_spaces())}::varchar[])"]
        for name, readable in sorted(self.readable.items()):
            checks = []
            if readable.account_ids:
                checks.append(
                    f"{account_col} = ANY({self._param(params, list(readable.account_ids))}"
                    "::bigint[])"
                )
            if readable.scope_ids:
                checks.append(
                    f"{scope_col} = ANY({self._param(params, list(readable.scope_ids))}::bigint[])"
                )
            if checks:
                arms.append(
                    f"({space_col} = {self._param(params, name)} AND ({' OR '.join(checks)}))"
                )
        return "(" + " OR ".join(arms) + ")"

    def mention_sql(self, alias: str, params: dict[str, Any]) -> str:
        """A mention ``alias`` (rag_graphmention) of a readable scope."""
        if self.everything:
            return "TRUE"
        return self._scope_sql(f"{alias}.space", f"{alias}.scope_id", f"{alias}.account_id", params)

    def source_sql(self, alias: str, params: dict[str, Any]) -> str:
        """A node or edge ``alias`` whose own source is account-wide or readable."""
        if self.everything:
            return "TRUE"
        scoped = self._scope_sql(
            f"{alias}.derived_space", f"{alias}.derived_scope_id", f"{alias}.account_id", params
        )
        return f"({alias}.derived_scope_id IS NULL OR {scoped})"

    def node_sql(self, alias: str, params: dict[str, Any]) -> str:
        """A node ``alias`` (rag_graphnode) the actor may see."""
        if self.everything:
            return "TRUE"
        mention = f"vm{next(_names)}"
        return (
            f"({self.source_sql(alias, params)} OR EXISTS (SELECT FROM rag_graphmention "
            f"{mention} WHERE {mention}.node_id = {alias}.id AND "
            f"{self.mention_sql(mention, params)}))"
        )

    def edge_sql(self, alias: str, params: dict[str, Any]) -> str:
        """An edge ``alias`` whose own source is readable (the caller checks the node it
        leads to with ``node_sql``)."""
        return self.source_sql(alias, params)

    # --- querysets -----------------------------------------------------------------------------

    def _scope_q(self, space: str, scope: str, account: str) -> Q:
        assert self.readable is not None
        q = Q(**{f"{space}__in": open_spaces()})
        for name, readable in self.readable.items():
            checks = []
            if readable.account_ids:
                checks.append(Q(**{f"{account}__in": list(readable.account_ids)}))
            if readable.scope_ids:
                checks.append(Q(**{f"{scope}__in": list(readable.scope_ids)}))
            if checks:  # none: nothing of this space is readable
                either = checks[0] if len(checks) == 1 else checks[0] | checks[1]
                q |= Q(**{space: name}) & either
        return q

    def mention_q(self, prefix: str = "") -> Q:
        if self.everything:
            return Q()
        return self._scope_q(f"{prefix}space", f"{prefix}scope_id", f"{prefix}account_id")

    def source_q(self, prefix: str = "") -> Q:
        if self.everything:
            return Q()
        return Q(**{f"{prefix}derived_scope_id__isnull": True}) | self._scope_q(
            f"{prefix}derived_space", f"{prefix}derived_scope_id", f"{prefix}account_id"
        )

    def node_q(self) -> Q:
        """Nodes (a GraphNode queryset's rows) the actor may see."""
        if self.everything:
            return Q()
        from rag.models import GraphMention

        mentioned = GraphMention.objects.filter(node_id=OuterRef("pk")).filter(self.mention_q())
        return self.source_q() | Q(Exists(mentioned))


def visibility_of(actor: Actor) -> Visibility:
    """The actor's visibility over derived data: each registered rule read once."""
    accounts = tuple(sorted(actor.account_ids))
    if actor.agent is None and actor.user is None:
        return Visibility(accounts)  # a tool acting on its accounts: everything
    readable = {space: reader(actor) for space, reader in sorted(_READERS.items())}
    if all(set(accounts) <= set(r.account_ids) for r in readable.values()):
        return Visibility(accounts)
    return Visibility(accounts, readable)
