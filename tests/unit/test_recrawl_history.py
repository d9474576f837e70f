"""The running statistics of skitter.recrawl.history give what skitter.recrawl.estimate computes
from the whole history: EB's posterior (flat or gamma prior), with the Last-Modified likelihood
exactly when lm_trustworthy says so; and they survive a round trip through their stored form."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.recrawl.estimate import GammaPrior, History, eb, lm_trustworthy
from skitter.recrawl.history import PageStats, observe, posterior, probability_fresh, uses_last_modified


def run(history: History) -> PageStats:
    stats = PageStats()
    lms = history.last_modified or (None,) * len(history.visits)
    for i, t in enumerate(history.visits):
        stats = observe(stats, t, None if i == 0 else history.changed[i - 1], lms[i])
    return stats


@st.composite
def histories(draw):
    n = draw(st.integers(1, 25))
    lengths = draw(st.lists(st.sampled_from([0.0, 0.5, 3.0, 60.0, 900.0, 4000.0, 86400.0]), min_size=n, max_size=n))
    visits = np.concatenate([[1000.0], 1000.0 + np.cumsum(lengths)])
    changed = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    mode = draw(st.sampled_from(["none", "truthful", "now", "gaps"]))
    lms: list[float | None] | None
    if mode == "none":
        lms = None
    else:
        lms, last = [], 10.0
        for i, t in enumerate(visits):
            if i and changed[i - 1] and visits[i] > visits[i - 1]:
                last = visits[i - 1] + (visits[i] - visits[i - 1]) * draw(st.sampled_from([0.1, 0.5, 1.0]))
            value = {"truthful": last, "now": t, "gaps": last if i % 3 else None}[mode]
            lms.append(value)
    return History(tuple(visits), tuple(changed), None if lms is None else tuple(lms))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(histories(), st.sampled_from([None, GammaPrior(1.0, 3600.0), GammaPrior(0.3, 50.0), GammaPrior(4.0, 4 * 3600.0, 60.0)]))
def test_running_statistics_give_eb_of_the_whole_history(history, prior):
    stats = run(history)
    trust = lm_trustworthy(history)
    assert uses_last_modified(stats) == trust
    want = eb(history, prior=prior, use_last_modified=trust)
    got = posterior(stats, prior)
    assert got.n == want.n
    for a, b in ((got.rate_per_second, want.rate_per_second), (got.low, want.low), (got.high, want.high)):
        assert math.isclose(a, b, rel_tol=1e-6), (got, want)


def test_the_stored_form_keeps_the_estimate():
    rng = np.random.default_rng(3)
    stats = PageStats()
    t = 0.0
    for _ in range(200):
        t += float(rng.exponential(600.0))
        stats = observe(stats, t, bool(rng.random() < 0.3), None)
    back = PageStats(stats.n, stats.x, PageStats.loglik_from(stats.blob()), stats.lm_ok, stats.lm_x, stats.lm_t,
                     stats.last_visit, stats.last_lm)
    a, b = posterior(stats), posterior(back)
    assert math.isclose(a.rate_per_second, b.rate_per_second, rel_tol=1e-3)
    assert math.isclose(a.high, b.high, rel_tol=1e-3)


def test_an_unknown_change_starts_the_history_again():
    stats = observe(observe(PageStats(), 0.0, None, None), 100.0, True, None)
    assert stats.n == 1
    again = observe(stats, 200.0, None, None)
    assert again.n == 1 and again.last_visit == 200.0
    assert observe(again, 300.0, False, None).n == 2


def test_probability_fresh():
    assert probability_fresh(0.0, 1e9) == 1.0
    assert math.isclose(probability_fresh(1 / 3600, 3600.0), math.exp(-1))
