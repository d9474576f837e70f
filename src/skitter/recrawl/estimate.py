"""Change-frequency estimators (pure: numbers in, numbers out; no I/O).

A page is modelled, as by Cho and Garcia-Molina, as a Poisson process of changes with an unknown
rate λ (changes per second). The crawler never sees the changes themselves: at each revisit it
learns whether the content differs from the previous visit (a checksum) and, from some servers, a
trustworthy ``Last-Modified`` time. A page's record of that is a `History`; every estimator turns
one into an `Estimate` (a rate with an interval that covers the true rate with probability about
``level``).

| function | uses | source |
| --- | --- | --- |
| `ep_regular(n, x, interval)` | X changes seen in n equal intervals | [TOIT] §4, the improved estimator |
| `ep(history)` | the changed flags, any intervals (EP) | [TOIT] §4, irregular access |
| `lm(history)` | Last-Modified times | [TOIT] §5 |
| `eb(history, prior=…)` | a posterior over frequency classes (EB) | [TOIT] §6 |
| `pooled(histories)` | one rate for all of a site's pages | seed 000 |
| `fit_site_prior(histories)` | a gamma prior fitted on a site's pages | empirical Bayes |
| `sitemap_prior(changefreq, lastmod_age)` | a sitemap's hints, as a gamma prior | sitemaps.org |
| `estimate(history, prior)` | the recommended choice among the above | |

[TOIT]: J. Cho and H. Garcia-Molina, "Estimating frequency of change", ACM Transactions on
Internet Technology 3(3), 2003: §4 "Estimation of frequency: existence of change" (the naive
X/T, the improved estimator, irregular access intervals), §5 "Estimation of frequency: last date
of change", §6 "Categorization of frequency: Bayesian inference". Seed 000 names the two estimators
EP and EB and suggests site-level statistics, which give a tighter interval than one page's.

Shrinkage: while a page's own history is short, `fit_site_prior` + `eb` pull its estimate towards
what its site's pages do. The prior is a gamma distribution (two numbers, so a handful of pages
fit it; its spread is fitted too, so a site whose pages change at very different rates gets a wide
prior and shrinks little, which answers seed 000's warning about such sites), with a small heavy
tail (`TAIL_SHARE`), so a page whose own history says it is unlike its site is let go. The
posterior is computed on the class grid, exactly, because a changed flag is not conjugate to a
gamma prior.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

LEVEL = 0.95
"""Default coverage of the intervals."""

CLASSES = np.geomspace(1e-9, 1e-1, 129)
"""EB's frequency classes, changes per second: from once in about 32 years to once every 10 s,
sixteen classes per decade (each 1.155 times the previous, about as fine as the narrowest site
prior `fit_site_prior` fits, ±10 %). Without another prior every class is equally likely a
priori: a log-uniform prior, which favours no time scale."""

LM_RESOLUTION = 1.0
"""HTTP dates are whole seconds: a Last-Modified in the second of the fetch says "less than a
second ago", taken as half a second."""

CHANGEFREQ_SECONDS = {
    "always": 60.0,
    "hourly": 3600.0,
    "daily": 86400.0,
    "weekly": 7 * 86400.0,
    "monthly": 30.4375 * 86400.0,
    "yearly": 365.25 * 86400.0,
    "never": 1e9,
}
"""A sitemap ``changefreq`` as the mean time between changes it claims. "always" ("changes each
time it is accessed") is taken as once a minute; "never" (archived) as the slowest class."""

TAIL_SHARE = 0.02
"""The share of a fitted site prior's mass on its heavy tail (`GammaPrior`): the prior chance that
a page is unlike its site's gamma. A page's history must be about 50 times likelier under the
tail than under the gamma before it leaves the site's shrinkage. At 0.02 the estimator table of
docs/recrawl.md moves by at most 0.03 in RMSE and 0.01 in coverage (two seeds). The tail is heavy
on the right only, for that is where a gamma pins pages (`GammaPrior.log_weights`): a tail
log-uniform on both sides also let pages never seen changing drift slower, and with no upper
bound at all (the flat prior) even a share of 0.003 put pages seen changing at each of 50 daily
visits at many changes an hour (a cell's RMSE from 0.18 to 4.45)."""

_GEOMETRIC_STEP = 4.0
_SHAPE_MIN, _SHAPE_MAX = 0.05, 100.0
# Widening a fitted prior (fit_site_prior) stops at this shape, the Jeffreys prior's for a Poisson
# rate. With a handful of pages the standard error is large, and widening down to _SHAPE_MIN put
# most of the prior's mass orders of magnitude below its mean: on 8-page sites a new page with one
# unchanged visit got a median of 0.05 times the site's rate (40 simulated sites, docs/recrawl.md).
_WIDEST_SHAPE = 0.5
_AT_BOUND = 1e-6   # log rate parameter this close to its upper bound: the fit ran off the slow end
_MAX_STEPS = 200
_SOLVER_STEPS = 200
_RTOL = 1e-12


@dataclass(frozen=True)
class Estimate:
    """A change rate with an interval: ``low <= rate_per_second <= high`` in the usual case.

    ``method`` names the estimator; ``n`` is the number of visit intervals it used (0: nothing was
    known, and then ``high`` is infinite). The rate is infinite only from `ep` with
    ``pseudo_unchanged=0`` when every interval changed (the maximum-likelihood rate does not exist).
    """

    rate_per_second: float
    low: float
    high: float
    method: str
    n: int

    @property
    def per_day(self) -> float:
        return self.rate_per_second * 86400.0


@dataclass(frozen=True)
class History:
    """One page's visits, in seconds on any one clock.

    ``changed[i]`` says whether the content at ``visits[i + 1]`` differed from that at
    ``visits[i]``; ``last_modified[i]`` is the Last-Modified time the server gave at ``visits[i]``
    (None where it gave none). Visits at the same instant form zero-length intervals, which say
    nothing about a Poisson rate (a change in no time has probability zero) and are left out.
    """

    visits: tuple[float, ...]
    changed: tuple[bool, ...]
    last_modified: tuple[float | None, ...] | None = None

    def __post_init__(self) -> None:
        visits = tuple(float(v) for v in self.visits)
        changed = tuple(bool(c) for c in self.changed)
        if len(changed) != max(len(visits) - 1, 0):
            raise ValueError("changed needs one flag per interval: len(visits) - 1")
        if not all(math.isfinite(v) for v in visits):
            raise ValueError("visit times must be finite")
        if any(b < a for a, b in zip(visits, visits[1:])):
            raise ValueError("visit times must not decrease")
        object.__setattr__(self, "visits", visits)
        object.__setattr__(self, "changed", changed)
        if self.last_modified is not None:
            lms = tuple(None if v is None else float(v) for v in self.last_modified)
            if len(lms) != len(visits):
                raise ValueError("last_modified needs one value (or None) per visit")
            if not all(v is None or math.isfinite(v) for v in lms):
                raise ValueError("last_modified times must be finite")
            object.__setattr__(self, "last_modified", lms)


@dataclass(frozen=True)
class GammaPrior:
    """A gamma prior on λ, Gamma(shape=changes, rate=seconds): as if ``changes`` changes had been
    seen in ``seconds`` of watching. Its mean is ``changes / seconds`` (the gamma's, tail or not);
    the more changes, the narrower it is (coefficient of variation 1/√changes).

    With ``tail_interval`` (seconds, > 0), `TAIL_SHARE` of the mass is a heavy right tail instead:
    below the gamma's mean the gamma's slope, above it flat in log λ (no time scale favoured) times
    e^(−λ·tail_interval/2), half an unchanged interval of that length, as `ep` adds to a page's
    own history (or e^(−bλ), the gamma's own factor, if that is weaker). A gamma's right tail falls
    like e^(−bλ), so a page far faster than its site needs about b seconds of its own watching
    before its evidence wins; under the tail it wins as soon as its history is much likelier there
    than under the gamma, up to about what visits ``tail_interval`` apart can resolve
    (`fit_prior_to_likelihoods`)."""

    changes: float
    seconds: float
    tail_interval: float = 0.0

    def __post_init__(self) -> None:
        if not (0 < self.changes < math.inf and 0 < self.seconds < math.inf):
            raise ValueError("a gamma prior needs positive, finite changes and seconds")
        if not 0 <= self.tail_interval < math.inf:
            raise ValueError("a prior's tail interval must be finite and not negative")

    @property
    def mean(self) -> float:
        return self.changes / self.seconds

    def log_weights(self, classes: np.ndarray) -> np.ndarray:
        """Log prior mass of each class, unnormalised without a tail. On log-spaced classes a class
        holds mass density × λ, so the gamma density λ^(a−1)·e^(−bλ) becomes λ^a·e^(−bλ)."""
        gamma = self.changes * np.log(classes) - self.seconds * classes
        if not self.tail_interval:
            return gamma
        # heavy on the right only: below the gamma's mean its own slope, so a page never seen
        # changing is shrunk as before; never more pseudo-exposure than the gamma's (a weak fit
        # lets fast pages through already)
        log_ratio = np.log(classes * self.seconds / self.changes)
        tail = self.changes * np.minimum(log_ratio, 0.0) - min(0.5 * self.tail_interval, self.seconds) * classes
        return np.logaddexp(math.log1p(-TAIL_SHARE) + gamma - _logsumexp(gamma),
                            math.log(TAIL_SHARE) + tail - _logsumexp(tail))


# --- the history as intervals -----------------------------------------------------------------

def _intervals(history: History) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positive-length intervals: their lengths, changed flags and end-visit indices."""
    visits = np.asarray(history.visits, dtype=float)
    lengths = np.diff(visits)
    keep = lengths > 0
    return lengths[keep], np.asarray(history.changed, dtype=bool)[keep], np.nonzero(keep)[0] + 1


def _unknown(method: str) -> Estimate:
    return Estimate(0.0, 0.0, math.inf, method, 0)


# --- roots, sums and tails (NumPy and the standard library only: SciPy costs a crawl process
# 30–70 MB and up to a second to import) ------------------------------------------------------

def _solve(fn: Callable[[float], float], a: float, b: float) -> float:
    """The root of ``fn`` between ``a`` and ``b``, where it changes sign: the Illinois variant of
    regula falsi, which converges superlinearly and never leaves the bracket."""
    fa, fb = fn(a), fn(b)
    kept = 0
    c = a
    for _ in range(_SOLVER_STEPS):
        c = (a * fb - b * fa) / (fb - fa)
        fc = fn(c)
        if fc == 0 or abs(b - a) <= _RTOL * abs(c):
            break
        if (fc > 0) == (fb > 0):
            b, fb = c, fc
            if kept == -1:
                fa /= 2
            kept = -1
        else:
            a, fa = c, fc
            if kept == 1:
                fb /= 2
            kept = 1
    return c


def _root(fn: Callable[[float], float], guess: float, decreasing: bool, step: float = _GEOMETRIC_STEP) -> float:
    """The root in (0, ∞) of a monotone ``fn``: steps by a factor ``step`` from ``guess`` until the
    sign changes, then `_solve` in that bracket. Returns 0 or ∞ if the root is beyond reach."""
    f0 = fn(guess)
    if f0 == 0:
        return guess
    up = (f0 > 0) == decreasing
    step = step if up else 1.0 / step
    a = guess
    for _ in range(_MAX_STEPS):
        b = a * step
        fb = fn(b)
        if fb == 0:
            return b
        if (fb > 0) != (f0 > 0):
            return _solve(fn, min(a, b), max(a, b))
        a = b
    return math.inf if up else 0.0


def _logsumexp(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    total = np.log(np.sum(np.exp(values - top), axis=axis, keepdims=True)) + top
    return total.reshape(()) if axis is None else np.squeeze(total, axis=axis)


def _half_chi2_1(level: float) -> float:
    """Half the ``level`` quantile of χ² with one degree of freedom (1.92 at 0.95)."""
    return NormalDist().inv_cdf((1.0 + level) / 2) ** 2 / 2


def _clopper_pearson(n: int, x: int, level: float) -> tuple[float, float]:
    """Bounds on a binomial p with P(X >= x | low) = P(X <= x | high) = (1 − level)/2, solved in
    the odds p/(1 − p) from the Wilson interval, which is close."""
    tail = (1.0 - level) / 2
    z = NormalDist().inv_cdf(1.0 - tail)
    centre, spread = (x + z * z / 2) / (n + z * z), z * math.sqrt(x * (n - x) / n + z * z / 4) / (n + z * z)
    k = np.arange(x + 1)
    log_choose = np.concatenate([[0.0], np.cumsum(np.log(n - k[1:] + 1) - np.log(k[1:]))])

    def cdf(upto: int, odds: float) -> float:
        """P(X <= upto) for X ~ Binomial(n, p), p = odds/(1 + odds): Σ C(n, k) oddsᵏ / (1 + odds)ⁿ."""
        terms = log_choose[: upto + 1] + k[: upto + 1] * math.log(odds)
        top = terms.max()
        return math.exp(top + math.log(np.exp(terms - top).sum()) - n * math.log1p(odds))

    def solve(fn: Callable[[float], float], guess: float, decreasing: bool) -> float:
        guess = min(max(guess, 1e-12), 1 - 1e-12)
        odds = _root(fn, guess / (1.0 - guess), decreasing, step=1.5)
        return odds / (1.0 + odds) if math.isfinite(odds) else 1.0

    low = solve(lambda odds: 1.0 - cdf(x - 1, odds) - tail, centre - spread, False) if x > 0 else 0.0
    high = solve(lambda odds: cdf(x, odds) - tail, centre + spread, True) if x < n else 1.0
    return low, high


def _garwood(x: int, level: float) -> tuple[float, float]:
    """Bounds on a Poisson mean with P(X >= x | low) = P(X <= x | high) = (1 − level)/2, from
    the Wilson–Hilferty approximation, which is close."""
    tail = (1.0 - level) / 2
    z = NormalDist().inv_cdf(1.0 - tail)

    def wilson_hilferty(k: float, sign: float) -> float:
        return k * max(1 - 1 / (9 * k) + sign * z / (3 * math.sqrt(k)), 0.05) ** 3

    low = _root(lambda mean: 1.0 - _poisson_cdf(x - 1, mean) - tail, wilson_hilferty(x, -1), False, step=1.25) \
        if x > 0 else 0.0
    high = _root(lambda mean: _poisson_cdf(x, mean) - tail, wilson_hilferty(x + 1, 1), True, step=1.25)
    return low, high


def _poisson_cdf(x: int, mean: float) -> float:
    """P(X <= x) for X ~ Poisson(mean)."""
    k = np.arange(x + 1)
    terms = k * math.log(mean) - mean - np.concatenate([[0.0], np.cumsum(np.log(k[1:]))])
    top = terms.max()
    return math.exp(top + math.log(np.exp(terms - top).sum()))


# --- EP: existence of change --------------------------------------------------------------------

def ep_regular(n: int, x: int, interval: float, *, level: float = LEVEL) -> Estimate:
    """EP for n intervals of ``interval`` seconds, X = ``x`` of which saw a change ([TOIT] §4).

    The naive X/(n·I) cannot exceed 1/I and is biased low; the improved estimator is
    λ = −log((n − X + 0.5)/(n + 0.5)) / I: the MLE −log(1 − X/n)/I with half an unchanged
    interval added, which keeps it finite when every interval changed and makes it nearly
    unbiased. The interval is the exact binomial (Clopper–Pearson) interval on
    p = 1 − e^(−λI), mapped to λ: it covers the true rate at least ``level`` of the time.
    """
    if not 0 <= x <= n:
        raise ValueError("need 0 <= x <= n")
    if n == 0:
        return _unknown("ep-regular")
    if not interval > 0:
        raise ValueError("the visit interval must be positive")
    rate = -math.log((n - x + 0.5) / (n + 0.5)) / interval
    p_low, p_high = _clopper_pearson(n, x, level)
    low = -math.log1p(-p_low) / interval
    high = -math.log1p(-p_high) / interval if p_high < 1.0 else math.inf
    return Estimate(rate, low, high, "ep-regular", n)


def _ep_loglik(rate: float, changed: np.ndarray, unchanged_time: float) -> float:
    """log L(λ) = Σ_changed log(1 − e^(−λt)) − λ · Σ_unchanged t."""
    return float(np.log(-np.expm1(-rate * changed)).sum()) - rate * unchanged_time


def _ep_mle(changed: np.ndarray, unchanged_time: float) -> float:
    """Root of the score Σ_changed t/(e^(λt) − 1) = Σ_unchanged t ([TOIT] §4); 0 if nothing
    changed, ∞ if nothing stayed the same (the likelihood then grows without bound)."""
    if changed.size == 0:
        return 0.0
    if unchanged_time <= 0:
        return math.inf

    def score(rate: float) -> float:
        e = np.exp(-rate * changed)
        return float((changed * e / -np.expm1(-rate * changed)).sum()) - unchanged_time

    return _root(score, changed.size / (changed.sum() + unchanged_time), decreasing=True)


def _ep_interval(changed: np.ndarray, unchanged_time: float, level: float) -> tuple[float, float]:
    """The likelihood-ratio interval {λ : 2(log L(λ̂) − log L(λ)) <= χ²₁(level)}, which exists at
    any intervals (a Wald interval needs a finite, non-zero λ̂). When no interval or every interval
    changed the one bound is exact instead: P(no change) = e^(−λ·Σt) and P(all changed) =
    Π (1 − e^(−λt)) set to (1 − level)/2, as Clopper–Pearson does; the χ² bound is too tight
    there (it would cover about 0.85 of the time at 0.95)."""
    tail = math.log((1.0 - level) / 2)
    if changed.size == 0:
        return 0.0, -tail / unchanged_time
    if unchanged_time == 0:
        def above_tail(rate: float) -> float:
            return _ep_loglik(rate, changed, 0.0) - tail

        return _root(above_tail, changed.size / changed.sum(), decreasing=False), math.inf
    mle = _ep_mle(changed, unchanged_time)
    cutoff = _ep_loglik(mle, changed, unchanged_time) - _half_chi2_1(level)

    def above(rate: float) -> float:
        return _ep_loglik(rate, changed, unchanged_time) - cutoff

    return _root(above, mle, decreasing=False), _root(above, mle, decreasing=True)


def _ep(lengths: np.ndarray, flags: np.ndarray, level: float, pseudo_unchanged: float,
        method: str) -> Estimate:
    if lengths.size == 0:
        return _unknown(method)
    changed = lengths[flags]
    unchanged_time = float(lengths[~flags].sum())
    rate = _ep_mle(changed, unchanged_time + pseudo_unchanged * float(lengths.mean()))
    low, high = _ep_interval(changed, unchanged_time, level)
    return Estimate(rate, low, high, method, int(lengths.size))


def ep(history: History, *, level: float = LEVEL, pseudo_unchanged: float = 0.5) -> Estimate:
    """EP for visits at any intervals: the maximum-likelihood rate of [TOIT] §4 (irregular
    access), which solves Σ_changed t/(e^(λt) − 1) = Σ_unchanged t, with ``pseudo_unchanged``
    (default ½) of an unchanged interval of the mean length added to the right-hand side.

    That addition carries over the bias reduction of §4's improved estimator: on equal intervals
    it gives exactly −log((n − X + 0.5)/(n + 0.5))/I (the same as `ep_regular`), and it keeps the
    estimate finite when every interval changed. ``pseudo_unchanged=0`` gives the plain MLE. The
    interval is the likelihood-ratio interval of the plain likelihood (see `_ep_interval`).
    """
    if pseudo_unchanged < 0:
        raise ValueError("pseudo_unchanged must not be negative")
    lengths, flags, _ = _intervals(history)
    return _ep(lengths, flags, level, pseudo_unchanged, "ep")


def pooled(histories: Sequence[History], *, level: float = LEVEL, pseudo_unchanged: float = 0.5) -> Estimate:
    """One rate for a set of pages (a site or a directory), as if all their intervals were one
    page's: seed 000's site-level statistics, with an interval as tight as the pooled sample
    allows. Right when the pages change at similar rates; `fit_site_prior` says how similar."""
    parts = [_intervals(h)[:2] for h in histories]
    lengths = np.concatenate([p[0] for p in parts]) if parts else np.empty(0)
    flags = np.concatenate([p[1] for p in parts]) if parts else np.empty(0, dtype=bool)
    return _ep(lengths, flags, level, pseudo_unchanged, "pooled")


# --- LM: last date of change --------------------------------------------------------------------

def _lm_exposure(history: History) -> tuple[int, int, float]:
    """(intervals, changes, T): T adds, per interval, the time the page is known to have stayed
    unchanged: the whole interval if it did not change, else the time from Last-Modified to the
    visit (clipped to the interval, at least half the header's resolution)."""
    if history.last_modified is None:
        raise ValueError("the history has no Last-Modified times: use ep()")
    lengths, flags, ends = _intervals(history)
    lm_at_end = [history.last_modified[i] for i in ends[flags]]
    if any(v is None for v in lm_at_end):
        raise ValueError("a changed interval has no Last-Modified time: use ep()")
    visit_at_end = np.asarray(history.visits, dtype=float)[ends[flags]]
    since = np.clip(visit_at_end - np.asarray(lm_at_end, dtype=float), LM_RESOLUTION / 2, lengths[flags])
    return int(lengths.size), int(flags.sum()), float(since.sum() + lengths[~flags].sum())


def lm(history: History, *, level: float = LEVEL) -> Estimate:
    """The Last-Modified estimator of [TOIT] §5: λ = ((X − 1) − X/(n·log(1 − X/n))) / T, with n
    intervals, X of them changed, and T as in `_lm_exposure`.

    Its likelihood is λ^X·e^(−λT) (a change at the Last-Modified time, none after it), whose MLE
    X/T is biased; §5's form removes most of the bias. At X = 0 it is 0 and at X = n it is
    (n − 1)/T (the limits of the formula); with a single interval that changed the formula gives
    0, so the MLE 1/T is used there. The interval is the exact Poisson (Garwood) interval for X
    events in T seconds, which that likelihood shares.
    """
    n, x, exposure = _lm_exposure(history)
    if n == 0:
        return _unknown("lm")
    fraction = x / n
    correction = 1.0 if x == 0 else 0.0 if x == n else -fraction / math.log1p(-fraction)
    numerator = x - 1 + correction
    rate = (numerator if numerator > 0 else x) / exposure
    low, high = _garwood(x, level)
    return Estimate(rate, low / exposure, high / exposure, "lm", n)


def lm_trustworthy(history: History, *, skew: float = LM_RESOLUTION) -> bool:
    """Whether the server's Last-Modified agrees with the checksums: on every interval it moved
    into the interval (within ``skew`` seconds) when the content changed, and stayed put when
    it did not. Servers that send the time of the request, or of a template, fail this."""
    if history.last_modified is None:
        return False
    lengths, flags, ends = _intervals(history)
    if lengths.size == 0:
        return False
    for end, changed in zip(ends, flags):
        before, after = history.last_modified[end - 1], history.last_modified[end]
        if before is None or after is None:
            return False
        if changed:
            if not (after != before and history.visits[end - 1] - skew < after <= history.visits[end] + skew):
                return False
        elif after != before:
            return False
    return True


# --- EB: posterior over frequency classes -------------------------------------------------------

def _log_likelihood(history: History, classes: np.ndarray, use_last_modified: bool) -> np.ndarray:
    """log L(λ_k) of the history at each class (up to a constant)."""
    if use_last_modified:
        n, x, exposure = _lm_exposure(history)
        return x * np.log(classes) - exposure * classes if n else np.zeros_like(classes)
    lengths, flags, _ = _intervals(history)
    changed = lengths[flags]
    with np.errstate(divide="ignore"):
        per_change = np.log(-np.expm1(-np.outer(changed, classes))).sum(axis=0)
    return per_change - float(lengths[~flags].sum()) * classes


def _log_prior(prior: GammaPrior | None, classes: np.ndarray) -> np.ndarray:
    return np.zeros_like(classes) if prior is None else prior.log_weights(classes)


def _quantiles(posterior: np.ndarray, classes: np.ndarray, qs: Sequence[float]) -> list[float]:
    """Posterior quantiles, each class's mass spread evenly over its bin in log λ (bins meet
    halfway between classes), so they move smoothly instead of jumping from class to class."""
    logs = np.log(classes)
    half = np.diff(logs) / 2
    edges = np.concatenate([[logs[0] - half[0]], logs[:-1] + half, [logs[-1] + half[-1]]])
    cdf = np.concatenate([[0.0], np.cumsum(posterior)])
    cdf /= cdf[-1]
    return [float(np.exp(np.interp(q, cdf, edges))) for q in qs]


def _check_classes(classes: Sequence[float] | np.ndarray) -> np.ndarray:
    grid = np.asarray(classes, dtype=float)
    if grid.ndim != 1 or grid.size < 2 or not (grid > 0).all() or not (np.diff(grid) > 0).all():
        raise ValueError("classes must be at least two increasing positive rates")
    return grid


def eb(history: History, *, prior: GammaPrior | None = None, classes: Sequence[float] | np.ndarray = CLASSES,
       use_last_modified: bool = False, level: float = LEVEL) -> Estimate:
    """EB ([TOIT] §6): the posterior over frequency classes after every visit, P(class | history)
    ∝ P(class) · Π P(visit outcome | class), where an interval of length t changed with
    probability 1 − e^(−λt) (with ``use_last_modified``, the likelihood λ^X·e^(−λT) of `lm`).

    The classes default to `CLASSES` and the prior to log-uniform over them; a `GammaPrior` (a
    site's, from `fit_site_prior`, or a sitemap's) replaces it. The rate is the posterior median
    and the interval the equal-tailed credible interval; with no visits they are the prior's.
    The median, not the mean: when every visit saw a change the posterior is flat up to the
    fastest class, and its mean would be set by where the grid happens to end.
    """
    grid = _check_classes(classes)
    loglik = _log_likelihood(history, grid, use_last_modified)
    log_post = _log_prior(prior, grid) + loglik
    posterior = np.exp(log_post - _logsumexp(log_post))
    tail = (1.0 - level) / 2
    low, median, high = _quantiles(posterior, grid, (tail, 0.5, 1.0 - tail))
    n = int(_intervals(history)[0].size)
    return Estimate(median, low, open_above(loglik, posterior, high, tail), "eb" if prior is None else "eb-gamma", n)


def open_above(loglik: np.ndarray, posterior: np.ndarray, high: float, tail: float) -> float:
    """``high``, or infinity when the likelihood still rises at the fastest class and the upper
    quantile falls in that class (more than ``tail`` of the posterior there): the visits favour a
    rate faster than the grid holds (a page changing every few seconds, seen changed at nearly
    every visit) and no prior bounds it, so no upper bound is known; the rate is the grid's at
    most. (A site's prior that makes the fastest class unlikely keeps its interval.)"""
    return math.inf if loglik[-1] > loglik[-2] and posterior[-1] > tail else high


# --- site priors --------------------------------------------------------------------------------

def fit_site_prior(histories: Sequence[History], *, classes: Sequence[float] | np.ndarray = CLASSES,
                   use_last_modified: bool = False, min_pages: int = 5) -> GammaPrior | None:
    """The gamma prior that makes a site's page histories most likely (empirical Bayes: the
    marginal likelihood Σ_pages log Σ_k π_k(a, b)·L_page(λ_k), maximised over shape a and rate
    b on the class grid, where it has a closed-form gradient). None below ``min_pages`` pages
    with at least one interval: a prior fitted on fewer says more about the pages than the site.
    With ``use_last_modified`` the pages' Last-Modified likelihood is used (every changed
    interval must then have the header).

    A few visits a page tell the site's spread poorly, and a prior fitted too narrow makes every
    page's interval too narrow (coverage fell to 0.83 at 0.95 on one simulated site of 300
    pages). So the fitted shape and rate are both divided by e^(se), se the standard error of the
    log shape (from the observed information): same mean, a wider prior, and intervals that
    cover at about their level (0.94–0.99 in the twenty simulated sites of docs/recrawl.md); but
    never below shape 0.5 (``_WIDEST_SHAPE``) unless the fit itself is. A page's own history is part of the fit; with five or more pages that counts little.

    None, too, while the histories cannot identify a prior (see `fit_prior_to_likelihoods`): no
    page seen changing yet, say a few seconds into a crawl.
    """
    grid = _check_classes(classes)
    known = [h for h in histories if _intervals(h)[0].size]
    if len(known) < max(min_pages, 1):
        return None
    loglik = np.stack([_log_likelihood(h, grid, use_last_modified) for h in known])
    mean = min(max(pooled(known).rate_per_second, grid[0]), grid[-1])
    finest = min(float(_intervals(h)[0].mean()) for h in known)
    return fit_prior_to_likelihoods(loglik, grid, mean, tail_interval=finest)


def fit_prior_to_likelihoods(loglik: np.ndarray, classes: Sequence[float] | np.ndarray = CLASSES,
                             start_mean: float | None = None, *,
                             tail_interval: float | None = None) -> GammaPrior | None:
    """`fit_site_prior`'s fit, from the pages' log-likelihoods at each class (one row a page, as
    :mod:`skitter.recrawl.history` keeps them): what a recrawl fits a site's prior on without
    re-reading any history. ``start_mean``: where the optimiser starts (default: the mean of the
    pages' maximum-likelihood classes).

    ``tail_interval``: the shortest mean visit interval of the site's pages (seconds); with it the
    prior gets the heavy tail of `GammaPrior`, which reaches as fast as those visits can resolve
    (the finest of the site's pages, so a home page visited every 30 s can show it changes every
    10 s, while a site visited daily gets no tail beyond a few changes a day). The gamma is
    fitted without it: on a site whose pages are alike the tail changes nothing.

    None when the likelihoods cannot identify a prior: when no page's likelihood is highest above
    the slowest class (no page seen changing: every rate too slow to have shown a change in the
    time watched explains the site equally well, so the marginal likelihood has no maximum inside
    the grid), or when the fit ends at the bound of its rate parameter on that side. Either way
    the fit's answer was "every page slower than the slowest class", from five unchanged intervals
    of a few seconds as much as from years, and under it a page seen changing within 18 s was
    estimated at 0.00025 changes a day (docs/recrawl.md)."""
    from scipy.optimize import minimize   # here only: the fit runs off the hot path

    grid = _check_classes(classes)
    loglik = np.asarray(loglik, dtype=float)
    known = loglik   # (one row a page)
    if not (np.argmax(loglik, axis=1) > 0).any():
        return None
    if start_mean is None:
        start_mean = float(np.exp(np.log(grid)[np.argmax(loglik, axis=1)].mean()))
    features = np.stack([np.log(grid), -grid])

    def negative(theta: np.ndarray) -> tuple[float, np.ndarray]:
        shape, rate = np.exp(theta)
        log_prior = shape * features[0] + rate * features[1]
        log_prior -= _logsumexp(log_prior)
        joint = log_prior + loglik
        marginal = _logsumexp(joint, axis=1)
        posterior = np.exp(joint - marginal[:, None])
        gradient = posterior.sum(axis=0) @ features.T - len(known) * (np.exp(log_prior) @ features.T)
        return -float(marginal.sum()), -gradient * np.exp(theta)

    mean = min(max(start_mean, grid[0]), grid[-1])
    bounds = [(math.log(_SHAPE_MIN), math.log(_SHAPE_MAX)),
              (math.log(1e-3 / grid[-1]), math.log(1e3 / grid[0]))]
    start = np.array([0.0, min(max(-math.log(mean), bounds[1][0]), bounds[1][1])])
    result = minimize(negative, start, jac=True, method="L-BFGS-B", bounds=bounds)
    if result.x[1] >= bounds[1][1] - _AT_BOUND:
        return None
    shape, rate = np.exp(result.x)
    wider = max(shape * math.exp(-_standard_error(lambda theta: negative(theta)[1], result.x)),
                min(shape, _WIDEST_SHAPE))
    tail = tail_interval if tail_interval is not None and 0 < tail_interval < math.inf else 0.0
    return GammaPrior(float(wider), float(rate * wider / shape), float(tail))


def _standard_error(gradient: Callable[[np.ndarray], np.ndarray], theta: np.ndarray,
                    h: float = 1e-4) -> float:
    """The standard error of θ[0] from the observed information (the Hessian of the negative
    log-likelihood, by central differences of its gradient); 0 if that is not positive definite."""
    columns = [(gradient(theta + h * e) - gradient(theta - h * e)) / (2 * h) for e in np.eye(theta.size)]
    hessian = np.array(columns)
    hessian = (hessian + hessian.T) / 2
    if not (np.linalg.eigvalsh(hessian) > 0).all():
        return 0.0
    return float(math.sqrt(np.linalg.inv(hessian)[0, 0]))


def sitemap_prior(changefreq: str | None = None, lastmod_age: float | None = None) -> GammaPrior | None:
    """A sitemap's hints as a weak gamma prior. ``changefreq`` gives one pseudo-change in the
    period it names (Gamma(1, period): an exponential prior, as wide as its mean, for sitemaps
    are often wrong); ``lastmod_age`` (seconds from the sitemap's lastmod to when it was read)
    counts as a Last-Modified observation, one change followed by that long without one, which
    adds (1, age). With lastmod alone that gives Gamma(1, age): about one change per age.
    Unknown changefreq words and lastmods in the future are ignored; None if nothing is left."""
    period = CHANGEFREQ_SECONDS.get((changefreq or "").strip().lower())
    changes, seconds = (1.0, period) if period else (0.0, 0.0)
    if lastmod_age is not None and lastmod_age >= 0:
        changes, seconds = changes + 1.0, seconds + max(lastmod_age, LM_RESOLUTION)
    return GammaPrior(changes, seconds) if changes else None


def estimate(history: History, prior: GammaPrior | None = None, *, level: float = LEVEL) -> Estimate:
    """The recommended estimate for scheduling: Last-Modified where `lm_trustworthy` says the
    header can be believed (it sees the time of each change, not only its existence), else the
    changed flags; shrunk towards ``prior`` (a site's or a sitemap's) when one is given, which
    matters while the page's own history is short and fades as it grows."""
    use_last_modified = lm_trustworthy(history)
    if prior is not None:
        return eb(history, prior=prior, use_last_modified=use_last_modified, level=level)
    return lm(history, level=level) if use_last_modified else ep(history, level=level)
