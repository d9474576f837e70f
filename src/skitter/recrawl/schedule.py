"""The update decision in O(1) a page: each policy as a function of one page's rate and weight and
one number for the whole collection (pure; NumPy for the whole-collection solve only).

:mod:`skitter.recrawl.policy` allocates a budget over every page at once. Every one of its
policies is, page by page, a function of that page alone and of a multiplier shared by all:

- ``uniform``: f = B / n;
- ``proportional``: f = λ · (B / Σλ);
- ``optimal`` (freshness): f = λ / r with g(r) = μλ/w, 0 when μλ/w >= 1 (the page changes too
  fast for its share of the budget);
- ``age-optimal``: f = λ / r with q(r) = μλ²/w.

So the recrawl solves for the multiplier now and then, off the hot path, over every page's current
estimate (:func:`solve`: one vectorised Newton solve, a second at a million pages), and after each
visit computes the page's own frequency from its new estimate and the last multiplier
(:meth:`Allocation.frequency`, a few microseconds) and puts the page back in the frontier due
1/f later (seed 000's "position in CollUrls determined by the page's estimated change frequency
and its importance"). Estimates move between solves, so the spend drifts a little from the
budget until the next solve; the crawl's token bucket holds the rate to the budget meanwhile.

Every page also gets at least ``EXPLORE`` of the uniform share (``Allocation.floor``): the
freshness-optimal policy gives nothing to a page it believes static or hopelessly fast, and an
estimate can be wrong (a page that stopped changing, one whose changes were all missed); the
floor keeps looking at such pages now and then, for 5 % of the budget at most.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import policy as _policy

POLICY_NAMES = ("optimal", "uniform", "proportional", "age-optimal")
EXPLORE = 0.05

_STEPS = 60
_TOL = 1e-12


@dataclass(frozen=True)
class Allocation:
    """One solve of a policy: ``frequency(rate, weight)`` gives any page its revisits a second."""

    policy: str
    budget: float        # fetches a second over the whole collection
    pages: int           # pages in the collection
    multiplier: float    # uniform: B/n; proportional: B/Σλ; optimal and age-optimal: μ
    floor: float = 0.0   # no page gets fewer revisits a second than this

    def frequency(self, rate: float, weight: float = 1.0) -> float:
        """Revisits a second for a page of change ``rate`` (per second) and importance ``weight``."""
        return max(_frequency(self.policy, self.multiplier, rate, weight), self.floor)

    def interval(self, rate: float, weight: float = 1.0) -> float:
        """Seconds from one visit of the page to the next (∞ for a frequency of 0)."""
        f = self.frequency(rate, weight)
        return 1.0 / f if f > 0 else math.inf


def _frequency(name: str, mu: float, rate: float, weight: float) -> float:
    if name == "uniform":
        return mu
    if name == "proportional":
        return mu * rate
    if rate <= 0 or weight <= 0 or mu <= 0:
        return 0.0
    if name == "optimal":
        c = mu * rate / weight
        if c >= 1.0:
            return 0.0
        return rate / _g_inverse(c)
    if name == "age-optimal":
        return rate / _q_inverse(mu * rate * rate / weight)
    raise ValueError(f"unknown policy {name!r}; choose from {', '.join(POLICY_NAMES)}")


def _g_inverse(c: float) -> float:
    """r with g(r) = 1 − (1 + r)e^(−r) = c, i.e. φ(r) = r − log(1 + r) = −log(1 − c) (policy._phi),
    by Newton's method from above (monotone)."""
    y = -math.log1p(-c)
    r = y + math.sqrt(y * y + 2 * y)
    for _ in range(_STEPS):
        value = r - math.log1p(r) if r >= 1e-2 else r * r * (0.5 - r * (1 / 3 - r * (0.25 - r / 5)))
        step = (value - y) * (1 + r) / r
        r -= step
        if abs(step) <= _TOL * r:
            break
    return r


def _q_inverse(c: float) -> float:
    """r with q(r) = r²/2 − 1 + (1 + r)e^(−r) = c (policy._q), by Newton's method from above."""
    r = max((12 * c) ** (1 / 3), 2 * math.sqrt(c))
    for _ in range(_STEPS):
        if r < 0.1:
            value = r ** 3 * (1 / 3 - r * (1 / 8 - r * (1 / 30 - r / 144)))
        else:
            value = r * r / 2 - 1 + (1 + r) * math.exp(-r)
        slope = r * -math.expm1(-r)
        step = (value - c) / slope
        r -= step
        if abs(step) <= _TOL * r:
            break
    return r


def solve(policy: str, rates: np.ndarray, budget: float, weights: np.ndarray | None = None, *,
          explore: float = EXPLORE) -> Allocation:
    """The multiplier that spends ``budget`` over pages of these ``rates`` and ``weights``, each page
    getting at least ``explore`` of the uniform share B/n."""
    if policy not in POLICY_NAMES:
        raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(POLICY_NAMES)}")
    lam, w = _policy._validate(rates, budget, weights)
    n = lam.size
    if n == 0 or budget <= 0:
        return Allocation(policy, budget, n, 0.0, 0.0)
    floor = explore * budget / n
    if policy == "uniform":
        return Allocation(policy, budget, n, budget / n, floor)
    if policy == "proportional":
        return _proportional(lam, budget, floor)
    active = (lam > 0) & (w > 0)
    if not active.any():
        return Allocation(policy, budget, n, 0.0, budget / n)
    lam_a, w_a = lam[active], w[active]
    idle = floor * (n - int(active.sum()))   # pages that get the floor whatever μ is
    if policy == "optimal":
        x = lam_a / w_a

        def frequencies(log_mu: float) -> tuple[np.ndarray, np.ndarray]:
            c = math.exp(log_mu) * x
            f, slope = np.zeros_like(c), np.zeros_like(c)
            alive = c < 1
            f[alive], slope[alive] = _policy._freshness_frequencies(c[alive], lam_a[alive])
            return f, slope

        guess = min((np.sqrt(w_a * lam_a / 2).sum() / budget) ** 2, 0.5 / x.min())
    else:
        x = lam_a * lam_a / w_a

        def frequencies(log_mu: float) -> tuple[np.ndarray, np.ndarray]:
            return _policy._age_frequencies(math.exp(log_mu) * x, lam_a)

        guess = (np.sqrt(w_a / 2).sum() / budget) ** 2

    def spend(log_mu: float) -> tuple[float, float]:
        f, slope = frequencies(log_mu)
        above = f > floor
        return float(np.where(above, f, floor).sum()) + idle, float(slope[above].sum())

    try:
        log_mu = _policy._multiplier(spend, budget, guess)
    except ArithmeticError:   # (Σ f grows without bound as μ → 0: not reached in practice)
        return Allocation("uniform", budget, n, budget / n, floor)
    return Allocation(policy, budget, n, math.exp(log_mu), floor)


def _proportional(lam: np.ndarray, budget: float, floor: float) -> Allocation:
    """m with Σ max(m·λ_i, floor) = B: the k fastest pages above the floor share what the others'
    floors leave, in proportion to their rates."""
    n = lam.size
    top = np.sort(lam)[::-1]
    sums = np.cumsum(top)
    for k in range(1, n + 1):
        if sums[k - 1] <= 0:
            break
        m = (budget - floor * (n - k)) / sums[k - 1]
        if m * top[k - 1] >= floor and (k == n or m * top[k] <= floor):
            return Allocation("proportional", budget, n, m, floor)
    return Allocation("proportional", budget, n, 0.0, budget / n)   # no page changes: uniform


def frequencies(allocation: Allocation, rates: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """:meth:`Allocation.frequency` of every page at once (vectorised)."""
    lam = np.asarray(rates, dtype=float)
    w = np.ones_like(lam) if weights is None else np.asarray(weights, dtype=float)
    name, mu = allocation.policy, allocation.multiplier
    if name == "uniform":
        f = np.full(lam.size, mu)
    elif name == "proportional":
        f = mu * lam
    else:
        f = np.zeros(lam.size)
        active = (lam > 0) & (w > 0) & (mu > 0)
        if name == "optimal":
            c = mu * lam[active] / w[active]
            alive = c < 1
            sub = np.zeros(c.size)
            if alive.any():
                sub[alive] = _policy._freshness_frequencies(c[alive], lam[active][alive])[0]
            f[active] = sub
        elif active.any():
            f[active] = _policy._age_frequencies(mu * lam[active] ** 2 / w[active], lam[active])[0]
    return np.maximum(f, allocation.floor)


def spent(allocation: Allocation, rates: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Σ f over the pages (for tests and the crawl's report): the budget, at the solve."""
    lam = np.asarray(rates, dtype=float)
    w = np.ones_like(lam) if weights is None else np.asarray(weights, dtype=float)
    return float(sum(allocation.frequency(float(a), float(b)) for a, b in zip(lam, w)))
