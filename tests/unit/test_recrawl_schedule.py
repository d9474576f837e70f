"""The per-page form of each policy (skitter.recrawl.schedule) against the whole-collection
allocations of skitter.recrawl.policy: with no floor they are the same frequencies, with the floor
every page gets at least its share and the budget is still spent."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skitter.recrawl import policy
from skitter.recrawl.schedule import POLICY_NAMES, Allocation, _g_inverse, _q_inverse, frequencies, solve, spent


def pages(n=400, seed=5):
    rng = np.random.default_rng(seed)
    rates = np.where(rng.random(n) < 0.3, 0.0, 10 ** rng.uniform(-6, -1, n))
    weights = np.exp(rng.normal(0, 1, n))
    return rates, weights


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_the_per_page_frequencies_are_the_policy_s(name):
    rates, weights = pages()
    budget = 0.2
    alloc = solve(name, rates, budget, weights, explore=0.0)
    want = policy.allocate(name, rates, budget, weights)
    got = np.array([alloc.frequency(r, w) for r, w in zip(rates, weights)])
    assert np.allclose(got, want, rtol=1e-6, atol=1e-12 * budget)


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_the_floor_keeps_every_page_and_the_budget(name):
    rates, weights = pages(seed=9)
    budget = 0.05
    alloc = solve(name, rates, budget, weights, explore=0.05)
    f = np.array([alloc.frequency(r, w) for r, w in zip(rates, weights)])
    assert (f >= 0.05 * budget / rates.size * (1 - 1e-9)).all()
    assert math.isclose(f.sum(), budget, rel_tol=1e-6)
    assert math.isclose(spent(alloc, rates, weights), budget, rel_tol=1e-6)
    assert np.allclose(frequencies(alloc, rates, weights), f, rtol=1e-9)


def test_the_scalar_inverses():
    for c in (1e-9, 1e-4, 0.01, 0.3, 0.9, 0.999999):
        r = _g_inverse(c)
        assert math.isclose(1 - (1 + r) * math.exp(-r), c, rel_tol=1e-7)
    for c in (1e-12, 1e-5, 0.02, 1.0, 50.0, 1e6):
        r = _q_inverse(c)
        assert math.isclose(policy._q(np.array([r]))[0][0], c, rel_tol=1e-6)


def test_a_page_too_fast_for_the_budget_gets_only_the_floor():
    alloc = solve("optimal", np.array([1e-4, 1e-4, 10.0]), 1e-4, explore=0.05)
    assert alloc.frequency(10.0) == pytest.approx(alloc.floor)
    assert alloc.frequency(1e-4) > 10 * alloc.floor
    assert alloc.interval(1e-4) == pytest.approx(1 / alloc.frequency(1e-4))


def test_empty_and_idle_collections():
    assert solve("optimal", np.array([]), 1.0).pages == 0
    a = solve("optimal", np.zeros(4), 1.0)
    assert a.frequency(0.0) == pytest.approx(0.25)
    assert Allocation("uniform", 2.0, 4, 0.5).interval(1.0) == 2.0
