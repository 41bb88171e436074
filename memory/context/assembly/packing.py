"""Packing a context's sections within a token budget: each candidate counted once, as late
as possible; an item shortened only at a sentence end; each item kept once, where it first
appears; turns shown under their day, said once. An item costs its line's tokens and its
metadata echo's (``budget.echo``), and its bytes in the answer come out of the body allowance
(``budget.BODY_BYTES_PER_TOKEN``). Used by ``memory.context.assembly.assemble``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memory.context.assembly import budget
from memory.context.assembly.sources import Candidate
from memory.tuning import TUNING

# Below min_room tokens left, a section stops looking for an item that fits; at most
# max_shortened items are shortened per call: ``TUNING.packing`` (memory.tuning).
# Candidates counted at a time (most of a section's are never shown, so never counted).
COUNT_BATCH = 24


@dataclass
class Item:
    candidate: Candidate
    text: str  # as shown: the candidate's text, or its leading sentences
    tokens: int  # of its whole line (prefix and text) and of its metadata echo
    metadata: dict[str, Any] = field(default_factory=dict)  # the echo (``budget.echo``)
    metadata_truncated: bool = False

    def as_json(self) -> dict[str, Any]:
        c = self.candidate
        return {
            "kind": c.kind,
            "id": c.id,
            "score": round(float(c.score), 6),
            "tokens": self.tokens,
            "text": self.text,
            "metadata": self.metadata,
            "metadata_truncated": self.metadata_truncated,
            "source": c.source,
        }


@dataclass
class Section:
    name: str
    title: str
    candidates: list[Candidate] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    header_tokens: int = 0
    counts: dict[int, int] = field(default_factory=dict)
    chosen: set[int | str] = field(default_factory=set)

    # The group lines shown (a day above its turns), with their tokens.
    groups: dict[str, int] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        if not self.items:
            return 0
        return self.header_tokens + sum(self.groups.values()) + sum(i.tokens for i in self.items)


def header_line(title: str, markdown: bool) -> str:
    return f"## {title}" if markdown else f"{title}:"


def _line(prefix: str, text: str, markdown: bool) -> str:
    return f"- {prefix}{text}" if markdown else f"{prefix}{text}"


def _group_line(group: str, markdown: bool) -> str:
    return f"**{group}**" if markdown else f"[{group}]"


class Packer:
    """Packs candidates into sections within the budget, keeping each item once; ``body_bytes``
    is what the items may weigh in the answer (None: no bound, for the query's own line)."""

    def __init__(self, markdown: bool, body_bytes: int | None = None) -> None:
        self.markdown = markdown
        self.taken: set[tuple[str, Any]] = set()
        self.texts: set[str] = set()
        self.group_tokens: dict[str, int] = {}
        self.bytes_left = body_bytes
        # Each candidate's metadata echo, its cut and its tokens (by id() of the candidate).
        self.echoes: dict[int, tuple[dict[str, Any], bool, int]] = {}

    def echo(self, candidate: Candidate) -> tuple[dict[str, Any], bool, int]:
        """The candidate's metadata echo, whether it was cut, and its tokens."""
        known = self.echoes.get(id(candidate))
        if known is None:
            shown, cut = budget.echo(candidate.metadata)
            text = budget.echo_text(shown)
            known = (shown, cut, budget.tokens_of([text])[0] if text else 0)
            self.echoes[id(candidate)] = known
        return known

    def _echoes(self, candidates: Sequence[Candidate]) -> None:
        """The echoes of ``candidates`` not known yet, their tokens counted in one batch."""
        fresh = [c for c in candidates if id(c) not in self.echoes]
        shown = [budget.echo(c.metadata) for c in fresh]
        texts = [budget.echo_text(s) for s, _ in shown]
        counts = budget.tokens_of([t for t in texts if t])
        position = 0
        for candidate, (echoed, cut), text in zip(fresh, shown, texts, strict=True):
            tokens = 0
            if text:
                tokens, position = counts[position], position + 1
            self.echoes[id(candidate)] = (echoed, cut, tokens)

    def weight(self, item: Item, group: str) -> int:
        """The bytes ``item`` adds to the answer: its JSON among the section's items, its line
        in ``context`` (and its group's line, when it is the group's first)."""
        line = _line(item.candidate.prefix, item.text, self.markdown)
        added = budget.json_bytes(item.as_json()) + 1 + budget.json_bytes(line)
        if group:
            added += budget.json_bytes(_group_line(group, self.markdown)) + 1
        return added

    def _group(self, group: str) -> int:
        if group not in self.group_tokens:
            self.group_tokens[group] = budget.tokens_of([_group_line(group, self.markdown)])[0]
        return self.group_tokens[group]

    def duplicate(self, candidate: Candidate) -> bool:
        """Kept already: the same item or text, or everything it was made from (a knowledge
        item extracted from turns the context shows)."""
        if candidate.same[0] != "" and candidate.same in self.taken:
            return True
        if candidate.made_from and self.taken.issuperset(candidate.made_from):
            return True
        return " ".join(candidate.text.split()).lower() in self.texts

    def whole(self, section: Section, index: int) -> int:
        """The tokens of candidate ``index``'s whole line and its metadata echo, counted in
        batches of the next ``COUNT_BATCH`` uncounted candidates: a section rarely shows more
        than a few dozen of its candidates, so most are never counted."""
        if index not in section.counts:
            batch = [
                i
                for i in range(index, min(index + COUNT_BATCH, len(section.candidates)))
                if i not in section.counts
            ]
            self._echoes([section.candidates[i] for i in batch])
            counts = budget.tokens_of(
                [self.prefix(section.candidates[i]) + section.candidates[i].text for i in batch]
            )
            section.counts.update(
                (i, count + self.echo(section.candidates[i])[2])
                for i, count in zip(batch, counts, strict=True)
            )
        return section.counts[index]

    def prefix(self, candidate: Candidate) -> str:
        return "- " + candidate.prefix if self.markdown else candidate.prefix

    def take(self, section: Section, limit: int) -> int:
        """Add the section's candidates, best first, within ``limit`` tokens (its header
        included when it gets its first item); answers the tokens used. An item that does not
        fit whole is shortened to its leading sentences (at most ``max_shortened`` tries per
        call: each costs a count per sentence); its metadata echo is never shortened. An item
        whose bytes pass what is left of the body allowance is left out."""
        used = 0
        tries = 0
        for index, candidate in enumerate(section.candidates):
            if candidate.id in section.chosen or self.duplicate(candidate):
                continue
            header = section.header_tokens if not section.items else 0
            if candidate.group and candidate.group not in section.groups:
                header += self._group(candidate.group)
            room = limit - used - header
            if room < TUNING.packing.min_room:
                break
            whole = self.whole(section, index)
            shown, cut, echo_tokens = self.echo(candidate)
            if whole <= room:
                text, tokens = candidate.text, whole
            else:
                if (
                    tries >= TUNING.packing.max_shortened
                    or room - echo_tokens < TUNING.packing.min_room
                ):
                    continue
                tries += 1
                fitted = budget.fit_sentences(
                    self.prefix(candidate), candidate.text, room - echo_tokens
                )
                if fitted is None:
                    continue
                text, tokens = fitted[0], fitted[1] + echo_tokens
            item = Item(candidate, text, tokens, shown, cut)
            if self.bytes_left is not None:
                new_group = candidate.group if candidate.group not in section.groups else ""
                weight = self.weight(item, new_group)
                if weight > self.bytes_left:
                    continue
                self.bytes_left -= weight
            section.items.append(item)
            if candidate.group:
                section.groups[candidate.group] = self._group(candidate.group)
            section.chosen.add(candidate.id)
            self.taken.add(candidate.same)
            self.texts.add(" ".join(candidate.text.split()).lower())
            used += header + tokens
        return used


def reading_order(section: Section) -> list[Item]:
    return sorted(section.items, key=lambda i: (i.candidate.kind != "turn", i.candidate.order))


def render(sections: Sequence[Section], markdown: bool) -> str:
    blocks = []
    for section in sections:
        if not section.items:
            continue
        lines = [header_line(section.title, markdown)]
        # Each group once, in the order of its first item; its items under it.
        grouped: dict[str, list[Item]] = {}
        for item in reading_order(section):
            grouped.setdefault(item.candidate.group, []).append(item)
        for group, items in grouped.items():
            if group:
                lines.append(_group_line(group, markdown))
            lines += [_line(i.candidate.prefix, i.text, markdown) for i in items]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
