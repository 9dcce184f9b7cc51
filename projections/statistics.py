"""Paired statistics of a baseline arm against a treatment arm, over benchmark tasks.

The unit is the benchmark *task*: a task's trials share its difficulty, so they
are not independent of one another, and every quantity here treats a task's
trials as one cluster (docs/statistics.md says why, and what these numbers do
not claim):

* each arm's pass rate is the mean over tasks of the task's pass rate (a task
  with ten trials weighs as much as a task with one);
* the difference is the mean over tasks of (treatment rate - baseline rate);
* its interval is a cluster-bootstrap percentile interval: tasks are resampled
  with replacement, each keeping all its trials;
* the test is the exact McNemar test when every task has one trial per arm, else
  the exact sign test on the per-task differences (the same binomial test: with
  one trial per arm the per-task difference is -1, 0 or +1);
* ``holm_adjust`` adjusts the p-values of the benchmarks compared in one call,
  and ``verdict`` reads an adjusted p-value and a difference as words.

Pure: no database, no clock. NumPy is imported inside ``compare_arms`` only,
so nothing that merely imports this module pays for it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Any

from benchledger.errors import InvalidInput

MCNEMAR_EXACT = "mcnemar_exact"
SIGN_EXACT = "sign_exact"
TREATMENT_BETTER = "treatment better"
NO_DETECTABLE_DIFFERENCE = "no detectable difference"
TREATMENT_WORSE = "treatment worse"
# The design the minimum detectable difference is stated for (docs/statistics.md).
DETECTION_ALPHA = 0.05
DETECTION_POWER = 0.8
# The binomial tail sum stops once a term is below 2**-64 of the sum so far: far
# below a float's resolution, and it keeps 10^5 discordant tasks to a few thousand terms.
_NEGLIGIBLE_TERM_BITS = 64
# Bootstrap resamples are drawn in blocks of about this many counts, so memory
# stays bounded however many distinct per-task differences there are.
_BLOCK_CELLS = 1 << 20


class NoPairedTasks(InvalidInput, ValueError):
    """``compare_arms`` was given no task: no task has evidence in both arms, so there is nothing to compare."""


@dataclass(frozen=True)
class TaskOutcomes:
    """One benchmark task: whether each of its trials passed, in each arm (both non-empty)."""

    task_id: str
    baseline: tuple[bool, ...]
    treatment: tuple[bool, ...]

    def __post_init__(self) -> None:
        for arm in ("baseline", "treatment"):
            if not getattr(self, arm):
                raise ValueError(f"task {self.task_id!r} has no {arm} trial: a compared task needs evidence in both arms")


@dataclass(frozen=True)
class ArmComparison:
    """A treatment arm against a baseline arm over the tasks with evidence in both (module docstring).

    Rates and differences are fractions in [0, 1] and [-1, 1] (0.1 is ten points).
    ``discordant`` is (tasks where the baseline did better, tasks where the
    treatment did better): McNemar's b and c with one trial per arm, else the
    sign test's negative and positive differences; tied tasks count in neither.
    ``minimum_detectable_difference`` is ``None`` when this evidence can state
    none (docs/statistics.md, "The minimum detectable difference").
    """

    tasks: int
    baseline_pass_rate: float
    treatment_pass_rate: float
    difference: float
    interval: tuple[float, float]
    test: str
    p_value: float
    discordant: tuple[int, int]
    minimum_detectable_difference: float | None
    confidence: float
    resamples: int
    seed: int

    def as_dict(self) -> dict[str, Any]:
        """The comparison as plain JSON values (tuples as lists)."""
        fields = asdict(self)
        fields["interval"] = list(self.interval)
        fields["discordant"] = list(self.discordant)
        return fields


def compare_arms(
    tasks: Sequence[TaskOutcomes], *, seed: int = 0, resamples: int = 2000, confidence: float = 0.95
) -> ArmComparison:
    """Compare the treatment arm with the baseline arm over ``tasks`` (each task's trials in both arms).

    The same tasks and seed give the same comparison in any order of ``tasks``:
    the bootstrap draws from the tasks' differences in a fixed order, not from
    the order given. Raises :class:`NoPairedTasks` when ``tasks`` is empty and
    ``ValueError`` when a task id repeats or ``resamples``/``confidence`` is out of range.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    if not tasks:
        raise NoPairedTasks("no task has evidence in both arms: there is nothing to compare")
    repeated = sorted(task_id for task_id, count in Counter(task.task_id for task in tasks).items() if count > 1)
    if repeated:
        raise ValueError(f"each task must appear once; repeated: {', '.join(repeated)}")
    # A task counts through its passes and trials in each arm only: grouping tasks by them keeps
    # the exact arithmetic below to the few distinct profiles, and makes the order of ``tasks`` irrelevant.
    profiles = Counter((sum(task.baseline), len(task.baseline), sum(task.treatment), len(task.treatment)) for task in tasks)
    baseline_rates: Counter[Fraction] = Counter()
    treatment_rates: Counter[Fraction] = Counter()
    differences: Counter[Fraction] = Counter()
    for (baseline_passed, baseline_trials, treatment_passed, treatment_trials), times in profiles.items():
        baseline_rates[Fraction(baseline_passed, baseline_trials)] += times
        treatment_rates[Fraction(treatment_passed, treatment_trials)] += times
        differences[Fraction(treatment_passed, treatment_trials) - Fraction(baseline_passed, baseline_trials)] += times
    difference = _mean(differences)
    negative = sum(times for value, times in differences.items() if value < 0)
    positive = sum(times for value, times in differences.items() if value > 0)
    one_trial_each = all(baseline_trials == treatment_trials == 1 for _, baseline_trials, _, treatment_trials in profiles)
    return ArmComparison(
        tasks=len(tasks),
        baseline_pass_rate=float(_mean(baseline_rates)),
        treatment_pass_rate=float(_mean(treatment_rates)),
        difference=float(difference),
        interval=_bootstrap_interval(differences, seed=seed, resamples=resamples, confidence=confidence),
        test=MCNEMAR_EXACT if one_trial_each else SIGN_EXACT,
        p_value=binomial_two_sided_p(positive, negative + positive),
        discordant=(negative, positive),
        minimum_detectable_difference=_minimum_detectable_difference(differences, difference),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )


def binomial_two_sided_p(successes: int, trials: int) -> float:
    """The exact two-sided p-value of ``successes`` in ``trials`` fair coin flips (1.0 for no trial).

    Twice the smaller tail, capped at 1: for a fair coin this is the p-value of
    SciPy's ``binomtest`` and of statsmodels' exact McNemar and sign tests. The
    tail is summed in integers, from its largest term down, until the terms are
    negligible, so it is exact to far below a float's resolution.
    """
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be between 0 and trials ({trials}), not {successes}")
    smaller = min(successes, trials - successes)
    term = math.comb(trials, smaller)
    tail = term
    # C(n, i-1) = C(n, i) * i / (n - i + 1), exactly, walking down the tail from its largest term.
    for i in range(smaller, 0, -1):
        if term <= tail >> _NEGLIGIBLE_TERM_BITS:
            break
        term = term * i // (trials - i + 1)
        tail += term
    return min(1.0, 2 * tail / (1 << trials))


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the order given.

    The i-th smallest p-value (from 1) of m is multiplied by m - i + 1, capped
    at 1, and raised to the largest adjusted value before it, so the adjusted
    p-values keep the order of the raw ones. Rejecting each hypothesis whose
    adjusted p-value is at most alpha keeps the chance of any false rejection
    among the m at most alpha, whatever their dependence.
    """
    for p in p_values:
        if not 0 <= p <= 1:
            raise ValueError(f"a p-value must be between 0 and 1, not {p}")
    count = len(p_values)
    adjusted = [0.0] * count
    running = 0.0
    for rank, index in enumerate(sorted(range(count), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (count - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def verdict(adjusted_p: float, difference: float, alpha: float = 0.05) -> str:
    """The comparison in words: a difference is detected when ``adjusted_p <= alpha`` (at alpha exactly, too).

    Its direction is the sign of ``difference``; a detected difference of
    exactly zero (possible only when the test and the mean disagree) is no
    detectable difference.
    """
    if adjusted_p <= alpha and difference > 0:
        return TREATMENT_BETTER
    if adjusted_p <= alpha and difference < 0:
        return TREATMENT_WORSE
    return NO_DETECTABLE_DIFFERENCE


def _mean(values: Mapping[Fraction, int]) -> Fraction:
    """The exact mean of values given with how many times each occurs."""
    return sum((value * times for value, times in values.items()), Fraction(0)) / sum(values.values())


def _bootstrap_interval(
    differences: Counter[Fraction], *, seed: int, resamples: int, confidence: float
) -> tuple[float, float]:
    """The percentile interval of the mean per-task difference over tasks resampled with replacement.

    Drawing n tasks with replacement and averaging their differences only
    depends on how often each distinct difference is drawn: a multinomial draw
    of n over the distinct differences, weighted by how many tasks have each.
    That costs resamples x distinct differences, not resamples x tasks.
    """
    import numpy as np

    values = sorted(differences)
    count = sum(differences.values())
    weights = np.array([differences[value] for value in values], dtype=np.float64) / count
    points = np.array([float(value) for value in values], dtype=np.float64)
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // len(values))
    means = np.concatenate(
        [
            rng.multinomial(count, weights, size=min(block, resamples - start)) @ points / count
            for start in range(0, resamples, block)
        ]
    )
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def _minimum_detectable_difference(differences: Counter[Fraction], mean: Fraction) -> float | None:
    """The smallest true mean difference a paired two-sided test at DETECTION_ALPHA detects with DETECTION_POWER.

    The normal approximation (z_{1-alpha/2} + z_power) * s / sqrt(n), with s the
    sample standard deviation of the n per-task differences. ``None`` when no
    number can be stated: the exact test could not reach alpha even with every
    task on one side (fewer than 6 tasks), every task shows the same difference
    (no spread to estimate s from), or no difference within [-1, 1] would be
    detected with that power.
    """
    count = sum(differences.values())
    if binomial_two_sided_p(0, count) > DETECTION_ALPHA:
        return None
    variance = sum((value - mean) ** 2 * times for value, times in differences.items()) / (count - 1)
    if variance == 0:
        return None
    normal = NormalDist()
    z = normal.inv_cdf(1 - DETECTION_ALPHA / 2) + normal.inv_cdf(DETECTION_POWER)
    detectable = z * math.sqrt(variance) / math.sqrt(count)
    return detectable if detectable <= 1 else None
