"""Revisit policies: how often to fetch each page (pure; NumPy arrays in, arrays out).

Each policy takes the pages' change rates λ_i (per second), a fetch budget B (fetches per second)
and optionally importance weights w_i, and returns revisit frequencies f_i >= 0 with Σ f_i = B
exactly (to rounding). A page fetched f times a second at even spacing, its changes a Poisson
process of rate λ, is up to date on average F(λ, f) of the time and stale by A(λ, f) seconds on
average (Cho and Garcia-Molina's fixed-order policy; with r = λ/f):

    F(λ, f) = (1 − e^(−r)) / r
    A(λ, f) = (1/f) · (1/2 − 1/r + (1 − e^(−r))/r²)

- ``uniform``: f_i = B/n, whatever the page does.
- ``proportional``: f_i ∝ λ_i. Counter-intuitively worse than uniform in freshness (the papers'
  "superiority of uniform"): it spends most of the budget on pages that change too often to be
  kept fresh.
- ``freshness_optimal``: maximises Σ w_i F(λ_i, f_i) subject to Σ f_i = B. The Lagrange condition
  w_i ∂F/∂f_i = μ reads g(r_i) = μ λ_i / w_i with g(r) = 1 − (1 + r)e^(−r), an increasing map of
  [0, ∞) onto [0, 1). So a page gets f_i = λ_i / g⁻¹(μ λ_i / w_i) while μ λ_i / w_i < 1 and
  nothing otherwise: a page that changes faster than its share of the budget can follow (relative
  to its importance) is not revisited at all, and a more important page with the same rate is
  revisited more often. g(r) = c is r − log(1 + r) = −log(1 − c), whose root is the Lambert-W
  expression r = −1 − W₋₁(−(1 − c)/e); it is computed by Newton's method, which converges
  monotonically from the upper bound y + √(y² + 2y) (y = −log(1 − c)) and costs less than W.
- ``age_optimal``: minimises Σ w_i A(λ_i, f_i). The condition w_i ∂A/∂f_i = −μ reads
  q(r_i) = μ λ_i² / w_i with q(r) = r²/2 − 1 + (1 + r)e^(−r), increasing from 0 to ∞, so every
  changing page gets some visits (age grows without bound otherwise); solved by Newton from the
  upper bound max((12c)^(1/3), 2√c).

The multiplier μ is found by Newton's method on log Σ f_i(μ) = log B in log μ (Σ f_i decreases
in μ, and its derivative has a closed form), kept in a bracket by bisection; each step is one
vectorised solve over all pages, about ten steps in all. The frequencies are then scaled by
B / Σ f_i so the budget is spent exactly. A million pages take about a second (docs/recrawl.md).

Sources: J. Cho and H. Garcia-Molina, "Synchronizing a database to improve freshness", SIGMOD
2000, and "Effective page refresh policies for Web crawlers", ACM TODS 28(4), 2003 (sections
"Freshness and age", "Synchronization-order policies", "Resource-allocation policies", and the
weighted freshness of the experiments).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

Allocation = Callable[..., np.ndarray]

_NEWTON_TOLERANCE = 1e-12
_NEWTON_STEPS = 100
_BRACKET_STEPS = 400
_MULTIPLIER_TOLERANCE = 1e-12
_LEAVING = 1e-9


def _validate(rates: np.ndarray, budget: float, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    lam = np.asarray(rates, dtype=float)
    w = np.ones_like(lam) if weights is None else np.asarray(weights, dtype=float)
    if lam.ndim != 1 or w.shape != lam.shape:
        raise ValueError("rates and weights must be one-dimensional arrays of the same length")
    if not (np.isfinite(lam).all() and (lam >= 0).all()):
        raise ValueError("rates must be finite and non-negative")
    if not (np.isfinite(w).all() and (w >= 0).all()):
        raise ValueError("weights must be finite and non-negative")
    if not (math.isfinite(budget) and budget >= 0):
        raise ValueError("the budget must be finite and non-negative")
    return lam, w


def uniform(rates: np.ndarray, budget: float, weights: np.ndarray | None = None) -> np.ndarray:
    """B/n for every page (weights are not part of this policy)."""
    lam, _ = _validate(rates, budget, weights)
    return np.full(lam.size, budget / lam.size) if lam.size else lam.copy()


def proportional(rates: np.ndarray, budget: float, weights: np.ndarray | None = None) -> np.ndarray:
    """f_i = B · λ_i / Σ λ; uniform if no page changes (weights are not part of this policy)."""
    lam, _ = _validate(rates, budget, weights)
    total = lam.sum()
    return lam * (budget / total) if total > 0 else uniform(lam, budget)


# --- the per-page inverse functions -------------------------------------------------------------

def _newton(fn_and_slope: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], target: np.ndarray,
            start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve fn(r) = target elementwise for an increasing convex fn, from a start at or above the
    root (Newton's steps then decrease r monotonically to it). Returns r and fn'(r)."""
    r = start
    for _ in range(_NEWTON_STEPS):
        value, slope = fn_and_slope(r)
        step = (value - target) / slope
        r = r - step
        if not (np.abs(step) > _NEWTON_TOLERANCE * r).any():
            break
    return r, fn_and_slope(r)[1]


def _series(r: np.ndarray, coefficients: tuple[float, ...], lowest: int) -> np.ndarray:
    """Σ_k coefficients[k] · r^(lowest + k), by Horner's rule."""
    total = np.zeros_like(r)
    for c in reversed(coefficients):
        total = total * r + c
    return total * r ** lowest


_PHI_SERIES = tuple((-1) ** m / m for m in range(2, 11))
_Q_SERIES = tuple((-1) ** m * (1 - m) / math.factorial(m) for m in range(3, 14))


def _phi(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """φ(r) = r − log(1 + r) (by its series where the difference would cancel) and φ'(r)."""
    value = r - np.log1p(r)
    small = r < 1e-2
    value[small] = _series(r[small], _PHI_SERIES, 2)
    return value, r / (1 + r)


def _q(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """q(r) = r²/2 − 1 + (1 + r)e^(−r) (by its series where the terms would cancel) and
    q'(r) = r(1 − e^(−r))."""
    e = np.expm1(-r)
    value = r * r / 2 + (1 + r) * e + r
    small = r < 0.1
    value[small] = _series(r[small], _Q_SERIES, 3)
    return value, -r * e


def _freshness_frequencies(c: np.ndarray, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f = λ/r with g(r) = c (0 < c < 1), and df/d(log μ) for c = μx: dr/d(log μ) = c/g'(r)
    with g'(r) = r·e^(−r), since g(r) = c is φ(r) = −log(1 − c) = y."""
    y = -np.log1p(-c)
    r, _ = _newton(_phi, y, y + np.sqrt(y * y + 2 * y))
    f = lam / r
    return f, -f * c * np.exp(r) / (r * r)


def _age_frequencies(c: np.ndarray, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f = λ/r with q(r) = c (c > 0), and df/d(log μ) = −f · c / (r · q'(r))."""
    r, slope = _newton(_q, c, np.maximum(np.cbrt(12 * c), 2 * np.sqrt(c)))
    f = lam / r
    return f, -f * c / (r * slope)


# --- the multiplier -----------------------------------------------------------------------------

def _multiplier(spend: Callable[[float], tuple[float, float]], budget: float, guess: float) -> float:
    """log μ with Σ f(μ) = budget, where ``spend(log μ)`` gives Σ f and its derivative in log μ
    (Σ f decreases in μ). Geometric bracketing from ``guess``, then Newton's method on
    log Σ f − log B, which is nearly linear in log μ, kept inside the bracket by bisection.

    In exact arithmetic a page's share falls continuously to 0 as c = μx reaches 1, but only
    logarithmically (r ≈ −log(1 − c)), and 1 − c cannot go below 1e-16: the share drops from
    about λ/40 to 0. If the budget falls in such a drop, the μ just below it is returned."""
    target = math.log(budget)
    lo = hi = s = math.log(guess)
    step = math.log(4.0)
    total, slope = spend(s)
    going_up = total > budget
    for _ in range(_BRACKET_STEPS):
        if (total > budget) != going_up:
            break
        lo, hi = (s, s + step) if going_up else (s - step, s)
        s = hi if going_up else lo
        total, slope = spend(s)
    else:
        raise ArithmeticError("no multiplier spends the budget")
    for _ in range(_NEWTON_STEPS):
        if total > budget:
            lo = s
        else:
            hi = s
        if total > 0 and abs(math.log(total) - target) < _MULTIPLIER_TOLERANCE:
            return s
        if hi - lo < _MULTIPLIER_TOLERANCE:
            break
        newton = s - (math.log(total) - target) * total / slope if total > 0 and slope < 0 else math.nan
        s = newton if lo < newton < hi else (lo + hi) / 2
        total, slope = spend(s)
    # Σ f jumped over the budget: a page leaves (c reaches 1 in floating point) with a share
    # still of λ/40 or so. Take the side that overspends; the caller scales it down.
    return lo


def _spend(frequencies: np.ndarray, budget: float) -> np.ndarray:
    total = frequencies.sum()
    return frequencies * (budget / total) if total > 0 else frequencies


def freshness_optimal(rates: np.ndarray, budget: float, weights: np.ndarray | None = None) -> np.ndarray:
    """Frequencies maximising the (importance-weighted) expected freshness Σ w_i F(λ_i, f_i) for
    Σ f_i = B; see the module docstring. Pages that never change, or weigh nothing, get 0; if no
    page both changes and weighs something every allocation is optimal and the budget is spread
    evenly."""
    lam, w = _validate(rates, budget, weights)
    active = (lam > 0) & (w > 0)
    if budget == 0 or not active.any():
        return uniform(lam, budget)
    lam_a = lam[active]
    x = lam_a / w[active]

    def frequencies(log_mu: float) -> tuple[np.ndarray, np.ndarray]:
        c = math.exp(log_mu) * x
        f, slope = np.zeros_like(c), np.zeros_like(c)
        alive = c < 1
        f[alive], slope[alive] = _freshness_frequencies(c[alive], lam_a[alive])
        return f, slope

    # g(r) <= r²/2 gives f_i <= √(w_i λ_i / 2μ): at this μ the budget is not yet spent.
    guess = min((np.sqrt(w[active] * lam_a / 2).sum() / budget) ** 2, 0.5 / x.min())
    log_mu = _multiplier(lambda s: _totals(frequencies(s)), budget, guess)
    f = frequencies(log_mu)[0]
    excess = f.sum() - budget
    leaving = math.exp(log_mu) * x * (1 + _LEAVING) >= 1
    if excess > _LEAVING * budget and f[leaving].sum() > excess:
        # the budget fell in the drop of the pages about to leave (see _multiplier): they take
        # the cut, and every other page keeps the share its Lagrange condition gives it
        f[leaving] *= 1 - excess / f[leaving].sum()
    out = np.zeros_like(lam)
    out[active] = f
    return _spend(out, budget)


def age_optimal(rates: np.ndarray, budget: float, weights: np.ndarray | None = None) -> np.ndarray:
    """Frequencies minimising the (importance-weighted) expected age Σ w_i A(λ_i, f_i) for
    Σ f_i = B; see the module docstring. Pages that never change, or weigh nothing, get 0."""
    lam, w = _validate(rates, budget, weights)
    active = (lam > 0) & (w > 0)
    if budget == 0 or not active.any():
        return uniform(lam, budget)
    lam_a, w_a = lam[active], w[active]
    x = lam_a * lam_a / w_a

    def frequencies(log_mu: float) -> tuple[np.ndarray, np.ndarray]:
        return _age_frequencies(math.exp(log_mu) * x, lam_a)

    # For a small budget q(r) ≈ r²/2, so f_i ≈ √(w_i / 2μ).
    guess = (np.sqrt(w_a / 2).sum() / budget) ** 2
    log_mu = _multiplier(lambda s: _totals(frequencies(s)), budget, guess)
    out = np.zeros_like(lam)
    out[active] = frequencies(log_mu)[0]
    return _spend(out, budget)


def _totals(frequencies_and_slopes: tuple[np.ndarray, np.ndarray]) -> tuple[float, float]:
    f, slope = frequencies_and_slopes
    return float(f.sum()), float(slope.sum())


POLICIES: dict[str, Allocation] = {
    "uniform": uniform,
    "proportional": proportional,
    "optimal": freshness_optimal,
    "age-optimal": age_optimal,
}
"""The policies by the names ``--policy`` will take."""


def allocate(policy: str, rates: np.ndarray, budget: float, weights: np.ndarray | None = None) -> np.ndarray:
    """The frequencies of the policy named ``policy`` (a key of `POLICIES`)."""
    try:
        chosen = POLICIES[policy]
    except KeyError:
        raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}") from None
    return chosen(rates, budget, weights)


# --- the objective ------------------------------------------------------------------------------

def expected_freshness(rates: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """F(λ, f) per page: 1 for a page that never changes, 0 for a changing page never visited."""
    lam = np.asarray(rates, dtype=float)
    f = np.asarray(frequencies, dtype=float)
    both = (lam > 0) & (f > 0)
    r = np.where(both, lam, 1.0) / np.where(both, f, 1.0)
    return np.where(both, -np.expm1(-r) / r, np.where(lam > 0, 0.0, 1.0))


_AGE_SERIES = tuple((-1) ** m / math.factorial(m + 1) for m in range(2, 12))


def expected_age(rates: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """A(λ, f) per page, in seconds: 0 for a page that never changes, ∞ for a changing page never
    visited. Computed as k(r)/λ with k(r) = r/2 − 1 + (1 − e^(−r))/r (a series for small r)."""
    lam = np.asarray(rates, dtype=float)
    f = np.asarray(frequencies, dtype=float)
    both = (lam > 0) & (f > 0)
    safe_lam = np.where(both, lam, 1.0)
    r = safe_lam / np.where(both, f, 1.0)
    k = np.where(r < 0.1, _series(r, _AGE_SERIES, 2), r / 2 - 1 - np.expm1(-r) / r)
    return np.where(both, k / safe_lam, np.where(lam > 0, math.inf, 0.0))


def next_due(last_visit: np.ndarray | float, frequencies: np.ndarray | float) -> np.ndarray:
    """When each page is next due: its last visit plus 1/f; never (∞) where f = 0. A scheduler
    keeps pages in a heap by this time, so choosing the next revisit costs O(log n)."""
    last = np.asarray(last_visit, dtype=float)
    f = np.asarray(frequencies, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(f > 0, last + 1.0 / np.where(f > 0, f, 1.0), math.inf)
