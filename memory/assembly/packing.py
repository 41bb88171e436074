"""Packing a context's sections within a token budget: each candidate counted once, as late
as possible; an item shortened only at a sentence end; each item kept once, where it first
appears; turns shown under their day, said once. Used by ``memory.assembly.assemble``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memory.assembly import budget
from memory.assembly.sources import Candidate

# Below this many tokens left, a section stops looking for an item that fits.
MIN_ROOM = 4
MAX_SHORTENED = 3
# Candidates counted at a time (most of a section's are never shown, so never counted).
COUNT_BATCH = 24


@dataclass
class Item:
    candidate: Candidate
    text: str  # as shown: the candidate's text, or its leading sentences
    tokens: int  # of its whole line (prefix and text)

    def as_json(self) -> dict[str, Any]:
        c = self.candidate
        return {
            "kind": c.kind,
            "id": c.id,
            "score": round(float(c.score), 6),
            "tokens": self.tokens,
            "text": self.text,
            "metadata": c.metadata,
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
    """Packs candidates into sections within the budget, keeping each item once."""

    def __init__(self, markdown: bool) -> None:
        self.markdown = markdown
        self.taken: set[tuple[str, Any]] = set()
        self.texts: set[str] = set()
        self.group_tokens: dict[str, int] = {}

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
        """The tokens of candidate ``index``'s whole line, counted in batches of the next
        ``COUNT_BATCH`` uncounted candidates: a section rarely shows more than a few dozen of its
        candidates, so most are never counted."""
        if index not in section.counts:
            batch = [
                i
                for i in range(index, min(index + COUNT_BATCH, len(section.candidates)))
                if i not in section.counts
            ]
            counts = budget.tokens_of(
                [self.prefix(section.candidates[i]) + section.candidates[i].text for i in batch]
            )
            section.counts.update(zip(batch, counts, strict=True))
        return section.counts[index]

    def prefix(self, candidate: Candidate) -> str:
        return "- " + candidate.prefix if self.markdown else candidate.prefix

    def take(self, section: Section, limit: int) -> int:
        """Add the section's candidates, best first, within ``limit`` tokens (its header
        included when it gets its first item); answers the tokens used. An item that does not
        fit whole is shortened to its leading sentences (at most ``MAX_SHORTENED`` tries per
        call: each costs a count per sentence)."""
        used = 0
        tries = 0
        for index, candidate in enumerate(section.candidates):
            if candidate.id in section.chosen or self.duplicate(candidate):
                continue
            header = section.header_tokens if not section.items else 0
            if candidate.group and candidate.group not in section.groups:
                header += self._group(candidate.group)
            room = limit - used - header
            if room < MIN_ROOM:
                break
            whole = self.whole(section, index)
            if whole <= room:
                text, tokens = candidate.text, whole
            else:
                if tries >= MAX_SHORTENED:
                    continue
                tries += 1
                fitted = budget.fit_sentences(self.prefix(candidate), candidate.text, room)
                if fitted is None:
                    continue
                text, tokens = fitted
            section.items.append(Item(candidate, text, tokens))
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
