"""Skill versions and the comparison of A/B variants: each version's success rate with a
Wilson score interval, and each variant's difference from the baseline with a (Wald) interval
(docs/skills.md, "Versions and A/B")."""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.errors import NotFound
from skills.models import Skill, SkillVersion

# 95% two-sided.
Z = 1.959963984540054
MAX_VERSIONS_LISTED = 200


def version_get(*, skill: Skill, version_id: int) -> SkillVersion:
    """A version of ``skill`` (found through a skill the caller may read); 404
    ``version_not_found`` otherwise."""
    found = SkillVersion.objects.filter(skill=skill, pk=version_id).first()
    if found is None:
        raise NotFound("No such version of this skill.", code="version_not_found")
    return found


def wilson_interval(successes: int, n: int, z: float = Z) -> tuple[float, float] | None:
    """The Wilson score interval of a success rate (None without outcomes)."""
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def difference_interval(
    successes_a: int, n_a: int, successes_b: int, n_b: int, z: float = Z
) -> tuple[float, float, float] | None:
    """rate(a) - rate(b) and its Wald interval (None unless both have outcomes)."""
    if n_a <= 0 or n_b <= 0:
        return None
    p_a, p_b = successes_a / n_a, successes_b / n_b
    diff = p_a - p_b
    half = z * math.sqrt(p_a * (1 - p_a) / n_a + p_b * (1 - p_b) / n_b)
    return diff, diff - half, diff + half


@dataclass(frozen=True)
class VersionStats:
    version: SkillVersion
    outcomes: int
    success_rate: float | None
    ci_low: float | None
    ci_high: float | None
    # Against the baseline (None for the baseline itself, or without outcomes on either side).
    difference: float | None = None
    difference_low: float | None = None
    difference_high: float | None = None

    @property
    def significant(self) -> bool | None:
        if self.difference_low is None or self.difference_high is None:
            return None
        return self.difference_low > 0 or self.difference_high < 0


@dataclass(frozen=True)
class Comparison:
    baseline: SkillVersion | None
    versions: list[VersionStats]


def version_compare(skill: Skill) -> Comparison:
    """Every version (newest first, at most 200) with its success rate and interval; the
    baseline is the primary active variant (largest share, newest of equals), and each other
    version is compared with it."""
    versions = list(
        SkillVersion.objects.filter(skill=skill).order_by("-major", "-minor", "-patch", "-id")[
            :MAX_VERSIONS_LISTED
        ]
    )
    active = [v for v in versions if v.is_active]
    baseline = max(active, key=lambda v: (v.traffic_share, v.pk)) if active else None
    stats = []
    for version in versions:
        n = version.outcomes
        interval = wilson_interval(version.success_count, n)
        difference = None
        if baseline is not None and version.pk != baseline.pk:
            difference = difference_interval(
                version.success_count, n, baseline.success_count, baseline.outcomes
            )
        stats.append(
            VersionStats(
                version=version,
                outcomes=n,
                success_rate=version.success_rate,
                ci_low=interval[0] if interval else None,
                ci_high=interval[1] if interval else None,
                difference=difference[0] if difference else None,
                difference_low=difference[1] if difference else None,
                difference_high=difference[2] if difference else None,
            )
        )
    return Comparison(baseline=baseline, versions=stats)
