"""The formulas of learning profiles and agent scoring (seed 002), as pure functions.

docs/skills.md states each with a worked example; tests/skills/test_learning.py checks the same
numbers. Per agent and task type, over the ``PROFILE_WINDOW`` most recent executions:

- success rate: successes / executions;
- recency-weighted success rate: sum(w_i * s_i) / sum(w_i), where an execution ``d`` days old
  weighs ``w(d) = m(d) * exp(-d / TUNING.learning.decay_days)``, ``m(d) =
  TUNING.learning.recent_weight`` (3) in the last ``TUNING.learning.recent_days`` (7) and 1 before;
- confidence: min(1, executions / TUNING.learning.confidence_executions) (20);
- learning curve: per day (UTC) with executions, that day's success rate and the cumulative one;
- score: 0.3 x base + 0.5 x expertise + 0.2 x confidence, where expertise is the success rate
  (or the recency-weighted one) and base is availability x (1 - load / capacity).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

import numpy as np

from core.errors import ValidationFailed
from skills.tuning import TUNING

PROFILE_WINDOW = 100
SECONDS_PER_DAY = 86_400.0
_TASK_TYPE = re.compile(r"^[a-z0-9][a-z0-9_.:-]{0,99}$")


def task_type_normalise(value: str) -> str:
    """Lower case, runs of spaces as ``_``: ``Code Review`` is ``code_review``. 400
    ``invalid_task_type`` for anything else than letters, digits and ``_ . : -``."""
    text = re.sub(r"\s+", "_", value.strip().lower())
    if not _TASK_TYPE.match(text):
        raise ValidationFailed(
            "A task type is 1 to 100 letters, digits, '_', '.', ':' or '-', starting with a "
            "letter or digit.",
            code="invalid_task_type",
        )
    return text


def success_rate(outcomes: Sequence[bool]) -> float:
    return sum(1 for o in outcomes if o) / len(outcomes) if outcomes else 0.0


def recency_weight(age_days: float) -> float:
    """w(d) = m(d) * exp(-d / 7), m = 3 within the last 7 days, else 1 (ages below 0 count as
    0: a clock a little ahead must not weigh more than now)."""
    age = max(0.0, age_days)
    multiplier = TUNING.learning.recent_weight if age < TUNING.learning.recent_days else 1.0
    return multiplier * math.exp(-age / TUNING.learning.decay_days)


def recent_success_rate(times: Sequence[float], outcomes: Sequence[bool], now: float) -> float:
    """The recency-weighted success rate of executions at epoch seconds ``times``."""
    if not times:
        return 0.0
    ages = np.maximum(0.0, (now - np.asarray(times, dtype=np.float64)) / SECONDS_PER_DAY)
    weights = np.where(
        ages < TUNING.learning.recent_days, TUNING.learning.recent_weight, 1.0
    ) * np.exp(-ages / TUNING.learning.decay_days)
    total = float(weights.sum())
    if total <= 0:
        return 0.0
    return float((weights * np.asarray(outcomes, dtype=np.float64)).sum() / total)


def window_pack(times: Sequence[float], outcomes: Sequence[bool]) -> bytes:
    """A profile's window as stored: the times (float64, little-endian), then the outcomes
    (one byte each)."""
    return np.asarray(times, dtype="<f8").tobytes() + np.asarray(outcomes, dtype="u1").tobytes()


def window_unpack(data: bytes | memoryview) -> tuple[np.ndarray, np.ndarray]:
    """(times, outcomes as 0/1 floats) of a stored window."""
    raw = bytes(data)
    n = len(raw) // 9
    times = np.frombuffer(raw, dtype="<f8", count=n)
    outcomes = np.frombuffer(raw, dtype="u1", count=n, offset=8 * n).astype(np.float64)
    return times, outcomes


def recent_success_rates(windows: Sequence[bytes | memoryview | None], now: float) -> np.ndarray:
    """``recent_success_rate`` of many windows at once (0 for an empty or missing one)."""
    lengths = np.fromiter(
        (len(w) // 9 if w else 0 for w in windows), dtype=np.int64, count=len(windows)
    )
    rates = np.zeros(len(windows))
    if not lengths.any():
        return rates
    parts = [window_unpack(w) for w in windows if w]
    times = np.concatenate([t for t, _ in parts])
    outcomes = np.concatenate([o for _, o in parts])
    ages = np.maximum(0.0, (now - times) / SECONDS_PER_DAY)
    weights = np.where(
        ages < TUNING.learning.recent_days, TUNING.learning.recent_weight, 1.0
    ) * np.exp(-ages / TUNING.learning.decay_days)
    present = lengths > 0
    starts = np.concatenate([[0], np.cumsum(lengths[present])[:-1]])
    weighted = np.add.reduceat(weights * outcomes, starts)
    total = np.add.reduceat(weights, starts)
    with np.errstate(divide="ignore", invalid="ignore"):
        rates[present] = np.where(total > 0, weighted / total, 0.0)
    return rates


def confidence(executions: int) -> float:
    return min(1.0, executions / TUNING.learning.confidence_executions)


def base_score(*, available: bool, load: int, capacity: int) -> float:
    """availability x (1 - load / capacity), within 0..1."""
    if not available or capacity <= 0:
        return 0.0
    return max(0.0, 1.0 - load / capacity)


def agent_score(*, base: float, expertise: float, confidence: float) -> float:
    return (
        TUNING.learning.weight_base * base
        + TUNING.learning.weight_expertise * expertise
        + TUNING.learning.weight_confidence * confidence
    )


def capacity_of(metadata: object) -> int:
    """``max_concurrent_tasks`` from an agent's metadata (a positive integer), else 5."""
    if isinstance(metadata, dict):
        value = metadata.get("max_concurrent_tasks")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return TUNING.learning.default_capacity


@dataclass(frozen=True)
class CurvePoint:
    day: date
    executions: int
    successes: int
    success_rate: float
    cumulative_success_rate: float


def learning_curve(times: Sequence[float], outcomes: Sequence[bool]) -> list[CurvePoint]:
    """Daily windows (UTC), oldest first: how the agent did each day and so far."""
    days: dict[date, list[int]] = {}
    for at, outcome in zip(times, outcomes, strict=True):
        day = datetime.fromtimestamp(at, tz=UTC).date()
        counts = days.setdefault(day, [0, 0])
        counts[0] += 1
        counts[1] += 1 if outcome else 0
    points = []
    seen = wins = 0
    for day in sorted(days):
        executions, successes = days[day]
        seen += executions
        wins += successes
        points.append(
            CurvePoint(
                day=day,
                executions=executions,
                successes=successes,
                success_rate=successes / executions,
                cumulative_success_rate=wins / seen,
            )
        )
    return points
