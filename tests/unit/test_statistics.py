"""The statistics of ``benchledger compare`` agree with SciPy and statsmodels, and hold at their edges.

SciPy and statsmodels are test dependencies only: the module under test
computes its exact tests in integers and its bootstrap with NumPy. The
reference values here are computed from the tasks independently of the
module (per-task rates as floats, tables counted by hand).
"""

from __future__ import annotations

import gc
import json
import math
import random
import statistics
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.descriptivestats import sign_test
from statsmodels.stats.multitest import multipletests

from benchledger.errors import BenchledgerError
from benchledger.projections.statistics import (
    MCNEMAR_EXACT,
    NO_DETECTABLE_DIFFERENCE,
    SIGN_EXACT,
    TREATMENT_BETTER,
    TREATMENT_WORSE,
    NoPairedTasks,
    TaskOutcomes,
    binomial_two_sided_p,
    compare_arms,
    holm_adjust,
    verdict,
)

# A task of one trial per arm: (baseline passed, treatment passed).
single_trials = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300)
# Several trials per arm, at least one task with more than one (else it is McNemar's case).
trials = st.lists(st.booleans(), min_size=1, max_size=6)
multi_trials = st.lists(st.tuples(trials, trials), min_size=1, max_size=120).filter(
    lambda tasks: any(len(baseline) > 1 or len(treatment) > 1 for baseline, treatment in tasks)
)


def outcomes(arms) -> list[TaskOutcomes]:
    """Tasks from (baseline, treatment) pairs, each a trial's outcome or a list of them."""
    def as_trials(arm) -> tuple[bool, ...]:
        return tuple(arm) if isinstance(arm, list) else (arm,)

    return [TaskOutcomes(f"task-{i}", as_trials(baseline), as_trials(treatment)) for i, (baseline, treatment) in enumerate(arms)]


def per_task_differences(tasks: list[TaskOutcomes]) -> np.ndarray:
    return np.array([np.mean(task.treatment) - np.mean(task.baseline) for task in tasks])


def generated_ledger(seed: int, effect: float, tasks: int = 200, trials: int = 5) -> list[TaskOutcomes]:
    """``tasks`` tasks of ``trials`` trials per arm; each task's baseline pass chance is drawn, the treatment's is ``effect`` higher."""
    rng = random.Random(seed)
    ledger = []
    for i in range(tasks):
        chance = rng.uniform(0.2, 0.7)
        ledger.append(TaskOutcomes(
            f"task-{i:03d}",
            tuple(rng.random() < chance for _ in range(trials)),
            tuple(rng.random() < chance + effect for _ in range(trials)),
        ))
    return ledger


# --- the exact tests, against statsmodels and SciPy ---------------------------------------------

@settings(max_examples=200, deadline=None)
@given(single_trials)
def test_one_trial_per_arm_is_the_exact_mcnemar_test_of_statsmodels(arms):
    comparison = compare_arms(outcomes(arms), resamples=10)
    table = [[sum(b and t for b, t in arms), sum(b and not t for b, t in arms)],
             [sum(t and not b for b, t in arms), sum(not b and not t for b, t in arms)]]
    assert comparison.test == MCNEMAR_EXACT
    assert comparison.discordant == (table[0][1], table[1][0])
    assert comparison.p_value == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(multi_trials)
def test_several_trials_per_arm_is_the_exact_sign_test_of_scipy_and_statsmodels(arms):
    tasks = outcomes(arms)
    comparison = compare_arms(tasks, resamples=10)
    differences = per_task_differences(tasks)
    positive, negative = int(np.sum(differences > 0)), int(np.sum(differences < 0))
    assert comparison.test == SIGN_EXACT
    assert comparison.discordant == (negative, positive)
    if positive + negative == 0:
        assert comparison.p_value == 1.0  # both libraries refuse a sign test of ties only
        return
    assert comparison.p_value == pytest.approx(scipy.stats.binomtest(positive, positive + negative).pvalue, rel=1e-9)
    assert comparison.p_value == pytest.approx(sign_test(differences)[1], rel=1e-9)


def _exact_two_sided_p(successes: int, trials: int) -> float:
    """The two-sided binomial p at one half, in integers: 2 P(X <= the smaller tail), correctly rounded to a float."""
    tail = min(successes, trials - successes)
    if 2 * tail == trials:
        return 1.0
    term = total = 1
    for j in range(tail):
        term = term * (trials - j) // (j + 1)
        total += term
    return min(1.0, 2 * total / 2**trials)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 100_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_the_binomial_p_value_is_scipys_binomtest_up_to_a_hundred_thousand_discordant_tasks(case):
    successes, trials = case
    expected = scipy.stats.binomtest(successes, trials).pvalue
    if expected == 0.0:  # (SciPy's sum underflows below about 1e-280: 10 or 15 of 1,075 are 0.0 there; the exact p is not)
        expected = _exact_two_sided_p(successes, trials)
    assert binomial_two_sided_p(successes, trials) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_the_binomial_p_value_is_exact_where_scipys_underflows():
    """SciPy's binomtest says 0.0 for 10 and 15 successes of 1,075; the exact two-sided p is about 2.716e-300 and 1.028e-290."""
    for successes, exact in ((10, 2.716e-300), (15, 1.028e-290)):
        assert scipy.stats.binomtest(successes, 1075).pvalue == 0.0
        assert _exact_two_sided_p(successes, 1075) == pytest.approx(exact, rel=1e-3)
        assert binomial_two_sided_p(successes, 1075) == pytest.approx(_exact_two_sided_p(successes, 1075), rel=1e-9)
    # the exact p agrees with SciPy wherever SciPy's does not underflow
    for successes, trials in ((0, 1), (3, 10), (40, 100), (450, 1075), (49_000, 100_000)):
        assert _exact_two_sided_p(successes, trials) == pytest.approx(scipy.stats.binomtest(successes, trials).pvalue, rel=1e-9)


def test_the_binomial_p_value_of_no_trial_is_one_and_a_count_out_of_range_is_refused():
    assert binomial_two_sided_p(0, 0) == 1.0
    with pytest.raises(ValueError, match="between 0 and trials"):
        binomial_two_sided_p(4, 3)


# --- Holm–Bonferroni -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cheap_collections():
    """statsmodels' Holm runs gc.collect() on every call, ~0.1 s over this session's objects:
    frozen, they are not walked, and a hundred comparisons cost milliseconds, not minutes."""
    gc.freeze()
    yield
    gc.unfreeze()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.01, 0.025, 0.05, 1.0])), min_size=1, max_size=30))
def test_holm_is_statsmodels_multipletests_holm_in_the_order_given(cheap_collections, p_values):
    expected = multipletests(p_values, method="holm")[1]
    assert holm_adjust(p_values) == pytest.approx(list(expected), rel=1e-12, abs=1e-300)


def test_holm_of_nothing_is_nothing_and_a_value_that_is_not_a_p_value_is_refused():
    assert holm_adjust([]) == []
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ValueError, match="between 0 and 1"):
            holm_adjust([0.5, bad])


# --- the cluster bootstrap -----------------------------------------------------------------------

@pytest.mark.parametrize(("seed", "tasks", "trials", "effect"), [(1, 40, 5, 0.1), (2, 200, 3, 0.0), (3, 25, 1, 0.2)])
def test_the_interval_is_scipys_percentile_bootstrap_of_the_per_task_differences(seed, tasks, trials, effect):
    ledger = generated_ledger(seed, effect, tasks=tasks, trials=trials)
    differences = per_task_differences(ledger)
    resamples = 20_000
    reference = scipy.stats.bootstrap((differences,), np.mean, method="percentile", confidence_level=0.95,
                                      n_resamples=resamples, rng=np.random.default_rng(seed))
    comparison = compare_arms(ledger, seed=seed, resamples=resamples)
    # Two Monte-Carlo estimates of the same quantiles: each is within about 0.02 standard
    # errors of the mean of the truth at this many resamples, so 0.1 is a wide margin.
    tolerance = 0.1 * np.std(differences) / math.sqrt(tasks)
    assert comparison.interval[0] == pytest.approx(reference.confidence_interval.low, abs=tolerance)
    assert comparison.interval[1] == pytest.approx(reference.confidence_interval.high, abs=tolerance)
    assert comparison.difference == pytest.approx(float(np.mean(differences)), rel=1e-12, abs=1e-15)


def test_a_task_is_resampled_with_all_its_trials():
    """Two tasks, one always passing its five trials, one always failing: resampling tasks only
    ever averages 0 and 1 task by task, so with 2 tasks the resampled means are 0, 1/2 and 1."""
    ledger = [TaskOutcomes("a", (False,) * 5, (True,) * 5), TaskOutcomes("b", (False,) * 5, (False,) * 5)]
    comparison = compare_arms(ledger, resamples=4000)
    assert comparison.interval == (0.0, 1.0)


@settings(max_examples=50, deadline=None)
@given(multi_trials, st.randoms(use_true_random=False), st.integers(0, 2**32))
def test_the_same_tasks_and_seed_give_the_same_comparison_in_any_order(arms, shuffler, seed):
    tasks = outcomes(arms)
    shuffled = list(tasks)
    shuffler.shuffle(shuffled)
    assert compare_arms(shuffled, seed=seed, resamples=200) == compare_arms(tasks, seed=seed, resamples=200)


def test_the_pass_rates_are_means_over_tasks_of_each_tasks_rate():
    ledger = [TaskOutcomes("a", (True,) * 9 + (False,), (True,)), TaskOutcomes("b", (False,), (False, True))]
    comparison = compare_arms(ledger)
    assert comparison.baseline_pass_rate == pytest.approx((0.9 + 0.0) / 2)
    assert comparison.treatment_pass_rate == pytest.approx((1.0 + 0.5) / 2)
    assert comparison.difference == pytest.approx((0.1 + 0.5) / 2)


# --- edge cases ----------------------------------------------------------------------------------

def test_no_discordant_pair_gives_p_one_and_no_detectable_difference():
    ledger = outcomes([(True, True)] * 30 + [(False, False)] * 20)
    comparison = compare_arms(ledger)
    assert comparison.discordant == (0, 0)
    assert comparison.p_value == 1.0 == mcnemar([[30, 0], [0, 20]], exact=True).pvalue
    assert comparison.interval == (0.0, 0.0)
    assert verdict(comparison.p_value, comparison.difference) == NO_DETECTABLE_DIFFERENCE
    assert comparison.minimum_detectable_difference is None  # no spread to estimate it from


def test_one_task_is_compared_but_can_detect_nothing():
    comparison = compare_arms([TaskOutcomes("only", (False, False), (True, False))])
    assert (comparison.tasks, comparison.difference, comparison.interval) == (1, 0.5, (0.5, 0.5))
    assert comparison.discordant == (0, 1)
    assert comparison.p_value == 1.0
    assert comparison.minimum_detectable_difference is None
    assert verdict(comparison.p_value, comparison.difference) == NO_DETECTABLE_DIFFERENCE


def test_all_ties_with_several_trials_differ_in_no_task():
    ledger = [TaskOutcomes("a", (True, False), (False, True)), TaskOutcomes("b", (True, True, False), (True, False, True)),
              TaskOutcomes("c", (False,), (False, False))]
    comparison = compare_arms(ledger)
    assert (comparison.test, comparison.discordant, comparison.p_value) == (SIGN_EXACT, (0, 0), 1.0)
    assert (comparison.difference, comparison.interval) == (0.0, (0.0, 0.0))


def test_zero_tasks_raise_no_paired_tasks_a_value_error_a_caller_prints():
    with pytest.raises(NoPairedTasks, match="no task has evidence in both arms") as raised:
        compare_arms([])
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, BenchledgerError)


def test_a_task_without_a_trial_in_an_arm_a_repeated_task_and_bad_settings_are_refused():
    with pytest.raises(ValueError, match="'t' has no treatment trial"):
        TaskOutcomes("t", (True,), ())
    twice = TaskOutcomes("t", (True,), (False,))
    with pytest.raises(ValueError, match="repeated: t"):
        compare_arms([twice, twice])
    with pytest.raises(ValueError, match="resamples"):
        compare_arms([twice], resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        compare_arms([twice], confidence=1.0)


def test_an_adjusted_p_exactly_at_alpha_is_a_detected_difference():
    """At the boundary the difference counts (p <= alpha), as statsmodels' multipletests rejects."""
    assert verdict(0.05, 0.1) == TREATMENT_BETTER
    assert verdict(0.05, -0.1) == TREATMENT_WORSE
    assert verdict(math.nextafter(0.05, 1), 0.1) == NO_DETECTABLE_DIFFERENCE
    # A reachable boundary: six tasks all better with the treatment give p = 2/2**6, and Holm
    # over two such benchmarks doubles it; each is detected at exactly its own alpha.
    six = compare_arms(outcomes([(False, True)] * 6))
    assert six.p_value == 2 / 2**6
    assert verdict(six.p_value, six.difference, alpha=2 / 2**6) == TREATMENT_BETTER
    adjusted = holm_adjust([six.p_value, six.p_value])
    assert adjusted == [4 / 2**6, 4 / 2**6]
    assert multipletests([six.p_value] * 2, alpha=4 / 2**6, method="holm")[0].all()
    assert verdict(adjusted[0], six.difference, alpha=4 / 2**6) == TREATMENT_BETTER


def test_a_detected_difference_of_zero_is_no_detectable_difference():
    assert verdict(0.001, 0.0) == NO_DETECTABLE_DIFFERENCE


# --- the minimum detectable difference -----------------------------------------------------------

def test_the_minimum_detectable_difference_is_the_normal_approximation_at_the_observed_spread():
    ledger = generated_ledger(7, 0.05, tasks=120)
    comparison = compare_arms(ledger)
    differences = per_task_differences(ledger)
    z = scipy.stats.norm.ppf(0.975) + scipy.stats.norm.ppf(0.8)
    expected = z * statistics.stdev(differences) / math.sqrt(len(ledger))
    assert comparison.minimum_detectable_difference == pytest.approx(expected, rel=1e-9)


def test_fewer_tasks_than_the_exact_test_needs_detect_nothing():
    """With five tasks even all five on one side give p = 2/2**5 > 0.05; with six, 2/2**6 < 0.05."""
    spread = [(False, True), (True, False), (False, True), (False, False), (False, True), (True, True)]
    assert compare_arms(outcomes(spread[:5])).minimum_detectable_difference is None
    assert compare_arms(outcomes(spread)).minimum_detectable_difference is not None


def test_a_spread_so_wide_that_no_difference_could_be_detected_states_none():
    alternating = outcomes([(False, True), (True, False)] * 3)  # differences +1, -1: z * 1.1 / sqrt(6) > 1
    assert compare_arms(alternating).minimum_detectable_difference is None


# --- output and cost -----------------------------------------------------------------------------

def test_as_dict_is_plain_json_with_every_field():
    comparison = compare_arms(generated_ledger(3, 0.1, tasks=30), seed=5, resamples=100)
    fields = json.loads(json.dumps(comparison.as_dict()))
    assert fields["interval"] == list(comparison.interval) and fields["discordant"] == list(comparison.discordant)
    assert {"tasks", "baseline_pass_rate", "treatment_pass_rate", "difference", "test", "p_value",
            "minimum_detectable_difference", "confidence", "resamples", "seed"} <= fields.keys()


def test_importing_the_module_does_not_import_numpy():
    probe = "import sys, benchledger.projections.statistics; print('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "False"


# --- acceptance (issue 26): a known effect is found, no effect is not invented -----------------

def test_a_ten_point_treatment_effect_over_200_tasks_of_5_trials_is_called_treatment_better():
    comparison = compare_arms(generated_ledger(26, 0.10))
    assert verdict(holm_adjust([comparison.p_value])[0], comparison.difference) == TREATMENT_BETTER
    low, high = comparison.interval
    assert 0 < low < 0.10 < high
    assert comparison.minimum_detectable_difference is not None and comparison.minimum_detectable_difference < 0.10


def test_with_no_effect_at_least_95_percent_of_200_seeded_ledgers_show_no_detectable_difference():
    verdicts = [verdict(c.p_value, c.difference) for c in (compare_arms(generated_ledger(seed, 0.0), seed=seed) for seed in range(200))]
    assert verdicts.count(NO_DETECTABLE_DIFFERENCE) >= 190


def test_with_a_ten_point_effect_at_least_95_percent_of_200_seeded_ledgers_find_it():
    verdicts = [verdict(c.p_value, c.difference) for c in (compare_arms(generated_ledger(seed, 0.10), seed=seed) for seed in range(1000, 1200))]
    assert verdicts.count(TREATMENT_BETTER) >= 190
