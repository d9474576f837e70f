"""Freshness and age of a schedule against a change log (exact time averages, checked by hand and
against dense sampling), and the policy simulator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.recrawl.freshness import Events, page_scores, periodic_schedule, poisson_changes, score, simulate
from skitter.recrawl.policy import POLICIES, expected_age, expected_freshness, freshness_optimal

DAY = 86400.0
NONE = Events([], [])


def one_page(fetches, changes, start=0.0, end=10.0):
    freshness, age = page_scores(Events([0] * len(fetches), fetches), Events([0] * len(changes), changes),
                                 1, start, end)
    return freshness[0], age[0]


def test_by_hand():
    # [0, 3): in sync at 0, stale from the change at 2 (age 0 → 1: area ½)
    # [3, 6): fetched at 3, stale from 5 (area ½); [6, 10]: fresh. Fresh 8 of 10 s, age 1/10 s.
    assert one_page([3.0, 6.0], [2.0, 5.0]) == pytest.approx((0.8, 0.1))


def test_copy_fetched_before_the_window():
    # fetched at −5, changed at −2: stale all window long, aged 2 … 12 s, 7 s on average
    assert one_page([-5.0], [-2.0]) == pytest.approx((0.0, 7.0))
    # without a fetch before the window the copy counts as taken at its start
    assert one_page([], [-2.0, 4.0]) == pytest.approx((0.4, 1.8))


def test_a_fetch_at_the_instant_of_a_change_sees_it():
    assert one_page([5.0], [5.0]) == pytest.approx((1.0, 0.0))


def test_events_outside_the_window():
    assert one_page([12.0], [11.0]) == pytest.approx((1.0, 0.0))
    s = score(Events([0, 0, 0, 0], [-1.0, 0.0, 9.99, 10.0]), NONE, 1, 0.0, 10.0)
    assert s.fetches == 2 and s.freshness == 1.0


def test_weighted_scores():
    # page 0 never changes (fresh, age 0); page 1 changed at 1 and was never fetched again:
    # fresh 1 s of 10, age ∫ (t − 1) dt over [1, 10] = 40.5 → 4.05 s on average
    s = score(NONE, Events([1], [1.0]), 2, 0.0, 10.0, weights=np.array([1.0, 3.0]))
    assert (s.freshness, s.weighted_freshness) == pytest.approx((0.55, 0.325))
    assert (s.age, s.weighted_age) == pytest.approx((2.025, 3.0375))


def test_validation():
    with pytest.raises(ValueError):
        page_scores(NONE, Events([3], [1.0]), 2, 0.0, 10.0)
    with pytest.raises(ValueError):
        page_scores(NONE, NONE, 2, 5.0, 5.0)
    with pytest.raises(ValueError):
        score(NONE, NONE, 2, 0.0, 1.0, weights=np.zeros(2))
    with pytest.raises(ValueError):
        Events([0, 1], [1.0])


def sampled(fetches: list[float], changes: list[float], start: float, end: float, points: int = 40_000):
    """The definitions applied at the midpoints of a fine grid: the copy is from the last fetch at
    or before t (or from the window's start if none came before it); it is stale once a change
    follows that fetch, and its age is the time since the first such change."""
    t = start + (np.arange(points) + 0.5) * (end - start) / points
    before = [f for f in fetches if f <= start]
    fetch_times = np.array([max(before) if before else start] + sorted(f for f in fetches if f > start))
    copy = fetch_times[np.searchsorted(fetch_times, t, side="right") - 1]
    ch = np.append(np.sort(changes), math.inf)
    first = ch[np.searchsorted(ch, copy, side="right")]
    missed = first <= t
    return float(1 - missed.mean()), float(np.where(missed, t - first, 0.0).mean())


times = st.lists(st.floats(-20.0, 120.0).map(lambda v: round(v, 3)), max_size=12)


@given(times, times)
@settings(max_examples=60, deadline=None, derandomize=True)
def test_exact_averages_match_dense_sampling(fetches, changes):
    """Sampling at 40,000 points errs by at most one grid step per event (a jump of freshness, or
    of age by at most the window's length)."""
    exact = one_page(sorted(fetches), changes, 0.0, 100.0)
    approx = sampled(sorted(fetches), changes, 0.0, 100.0)
    events = len(fetches) + len(changes) + 2
    assert exact[0] == pytest.approx(approx[0], abs=events / 40_000)
    assert exact[1] == pytest.approx(approx[1], abs=events * 100 / 40_000)


def test_steady_state_matches_the_closed_forms():
    """3,000 pages changing once a day, fetched every 8 hours (r = 1/3) with a fetch before the
    window: their mean freshness and age are F(λ, f) and A(λ, f) within 4.5 standard errors."""
    rng = np.random.default_rng(2)
    n, rate, gap = 3000, 1 / DAY, DAY / 3
    changes = poisson_changes(np.full(n, rate), -gap, 10 * DAY, rng)
    phase = rng.random(n)
    fetch_page = np.repeat(np.arange(n), 31)
    fetch_time = (phase[fetch_page] + np.tile(np.arange(-1, 30), n)) * gap
    freshness, age = page_scores(Events(fetch_page, fetch_time), changes, n, 0.0, 10 * DAY)
    for values, expected in ((freshness, expected_freshness(np.array([rate]), np.array([1 / gap]))[0]),
                             (age, expected_age(np.array([rate]), np.array([1 / gap]))[0])):
        assert abs(values.mean() - expected) <= 4.5 * values.std() / math.sqrt(n)


def test_periodic_schedule_spends_exactly():
    events = periodic_schedule(np.array([1.0, 2.0, 0.0, 0.5]), 35, 0.0, 70.0, np.full(4, 0.5))
    counts = np.bincount(events.page, minlength=4)
    assert counts.sum() == 35 and counts[2] == 0 and counts.tolist() == [10, 20, 0, 5]
    assert np.allclose(np.diff(events.time[events.page == 0]), 7.0)
    assert events.time.min() >= 0 and events.time.max() < 70.0


def site(n: int = 4000, seed: int = 0):
    """Rates log-uniform from once in two days to once in two hours, weights log-normal."""
    rng = np.random.default_rng(seed)
    return np.exp(rng.uniform(math.log(1 / (2 * DAY)), math.log(1 / 7200), n)), rng.lognormal(0, 1, n)


def test_simulator_is_deterministic_and_fair():
    rates, weights = site(1000)
    first = simulate(rates, 1000 / DAY, 10 * DAY, weights=weights, seed=4)
    assert first == simulate(rates, 1000 / DAY, 10 * DAY, weights=weights, seed=4)
    assert first != simulate(rates, 1000 / DAY, 10 * DAY, weights=weights, seed=5)
    assert set(first) == set(POLICIES)
    assert {s.fetches for s in first.values()} == {10_000}


def test_simulator_against_the_closed_forms():
    """4,000 pages, a fetch every 12 hours each on average, scored over 20 days after 20 days of
    warm-up (steady state): each policy's simulated weighted freshness is its expected one within
    0.012 (4.5 standard errors: per-page averages over ~40 visits vary by about 0.1, and the
    log-normal weights leave some 1,500 pages' worth of them), and so is the optimal policy's gain."""
    rates, weights = site()
    budget, window = rates.size / (DAY / 2), 20 * DAY
    scores = simulate(rates, budget, window, weights=weights, seed=1, warmup=window)
    expected = {}
    for name, policy in POLICIES.items():
        f = policy(rates, budget, weights)
        expected[name] = float(weights @ expected_freshness(rates, f) / weights.sum())
        assert scores[name].weighted_freshness == pytest.approx(expected[name], abs=0.012)
    gain = scores["optimal"].weighted_freshness - scores["uniform"].weighted_freshness
    assert gain == pytest.approx(expected["optimal"] - expected["uniform"], abs=0.012) and gain > 0.05
    assert scores["age-optimal"].weighted_age < scores["uniform"].weighted_age


def test_simulator_scores_other_allocations():
    """An allocation from rates known within a factor of 1.6 or so, scored next to the others
    with the same fetches: better than uniform, not better than the optimal one."""
    rates, _ = site(500)
    guessed = freshness_optimal(rates * np.exp(np.random.default_rng(0).normal(0, 0.5, rates.size)), 500 / DAY)
    scores = simulate(rates, 500 / DAY, 10 * DAY, seed=2, frequencies={"estimated": guessed})
    assert scores["estimated"].fetches == scores["uniform"].fetches == 5000
    assert scores["uniform"].freshness < scores["estimated"].freshness < scores["optimal"].freshness + 0.01
