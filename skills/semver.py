"""Semantic versions (``MAJOR.MINOR.PATCH[-prerelease]``) and the requirements a dependency edge
may carry (``^1.2.0``, ``~1.2``, ``>=1.0.0,<2.0.0``, ``1.4.2``), for version-mismatch conflicts.

Small on purpose: build metadata is refused, and prereleases compare as semver 2.0 says (a
prerelease sorts before its release; dot-separated identifiers numerically or lexically).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

from core.errors import ValidationFailed

_VERSION = re.compile(
    r"^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)
_PARTIAL = re.compile(r"^(0|[1-9]\d{0,8})(?:\.(0|[1-9]\d{0,8}))?(?:\.(0|[1-9]\d{0,8}))?$")
_CLAUSE = re.compile(r"^(\^|~|>=|<=|>|<|=)?\s*(.+)$")
MAX_VERSION_LENGTH = 50
MAX_REQUIREMENT_LENGTH = 100


@total_ordering
@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: str = ""

    def __str__(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return f"{core}-{self.prerelease}" if self.prerelease else core

    def _pre_key(self) -> tuple[tuple[int, int | str], ...]:
        return tuple(
            (0, int(part)) if part.isdigit() else (1, part) for part in self.prerelease.split(".")
        )

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return mine < theirs
        if self.prerelease == other.prerelease:
            return False
        if not self.prerelease:
            return False  # a release sorts after its prereleases
        if not other.prerelease:
            return True
        return self._pre_key() < other._pre_key()


def version_parse(text: str) -> Version:
    """``1.2.3`` or ``1.2.3-beta.1``; 400 ``invalid_version`` otherwise."""
    match = _VERSION.match(text.strip()) if len(text) <= MAX_VERSION_LENGTH else None
    if match is None:
        raise ValidationFailed(
            "A version is MAJOR.MINOR.PATCH with an optional -prerelease, e.g. 1.4.0 or "
            "2.0.0-beta.1.",
            code="invalid_version",
            details={"version": text[:MAX_VERSION_LENGTH]},
        )
    major, minor, patch, pre = match.groups()
    return Version(int(major), int(minor), int(patch), pre or "")


def _partial(text: str, requirement: str) -> tuple[int, int | None, int | None]:
    match = _PARTIAL.match(text.strip())
    if match is None:
        raise _invalid_requirement(requirement)
    major, minor, patch = match.groups()
    return int(major), None if minor is None else int(minor), None if patch is None else int(patch)


def _invalid_requirement(requirement: str) -> ValidationFailed:
    return ValidationFailed(
        "A version requirement is one or more comma-separated clauses: ^1.2.0, ~1.2, >=1.0.0, "
        "<2.0.0 or an exact version.",
        code="invalid_version_requirement",
        details={"requirement": requirement[:MAX_REQUIREMENT_LENGTH]},
    )


@dataclass(frozen=True)
class Requirement:
    """Lower and upper bounds (each inclusive or not) that every clause narrowed."""

    text: str
    clauses: tuple[tuple[str, Version], ...]

    def allows(self, version: Version) -> bool:
        checks = {
            ">=": lambda v, b: v >= b,
            ">": lambda v, b: v > b,
            "<=": lambda v, b: v <= b,
            "<": lambda v, b: v < b,
            "=": lambda v, b: v == b,
        }
        return all(checks[op](version, bound) for op, bound in self.clauses)

    def __str__(self) -> str:
        return self.text


def requirement_parse(text: str) -> Requirement:
    """Parse a requirement; 400 ``invalid_version_requirement`` when it is not one."""
    text = text.strip()
    if not text or len(text) > MAX_REQUIREMENT_LENGTH:
        raise _invalid_requirement(text)
    clauses: list[tuple[str, Version]] = []
    for raw in text.split(","):
        match = _CLAUSE.match(raw.strip())
        if match is None:
            raise _invalid_requirement(text)
        op, rest = match.group(1) or "=", match.group(2).strip()
        if op in ("^", "~"):
            major, minor, patch = _partial(rest, text)
            low = Version(major, minor or 0, patch or 0)
            if op == "^":
                # The leftmost non-zero part may not change (semver caret).
                if major > 0 or minor is None:
                    high = Version(major + 1, 0, 0)
                elif minor > 0 or patch is None:
                    high = Version(0, minor + 1, 0)
                else:
                    high = Version(0, 0, (patch or 0) + 1)
            else:
                high = Version(major + 1, 0, 0) if minor is None else Version(major, minor + 1, 0)
            clauses += [(">=", low), ("<", Version(high.major, high.minor, high.patch, "0"))]
            continue
        if _VERSION.match(rest):
            bound = version_parse(rest)
        else:
            major, minor, patch = _partial(rest, text)
            bound = Version(major, minor or 0, patch or 0)
        clauses.append((op, bound))
    return Requirement(text=text, clauses=tuple(clauses))
