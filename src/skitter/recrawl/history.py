"""A page's change history kept as running statistics, so that a revisit costs O(1) (pure).

:mod:`skitter.recrawl.estimate` works on a whole :class:`~skitter.recrawl.estimate.History` (every
visit time and changed flag). A recrawl of a million pages cannot re-read every page's visits at
each revisit, and it need not: everything `estimate.eb` computes is a sum over the intervals
between visits, so one running sum per page gives the same answer.

- ``loglik``: the log-likelihood of the changed flags at each of EB's frequency classes
  (`estimate.CLASSES`): an interval of length t adds log(1 − e^(−λt)) if the page changed in it,
  −λt if not. 129 numbers (stored as float32: 516 bytes a page).
- ``lm_x``, ``lm_t``: the Last-Modified estimator's changes and exposure (`estimate.lm`), and
  ``lm_ok``: whether the header has agreed with the checksums on every interval so far
  (`estimate.lm_trustworthy`, one interval at a time).

:func:`posterior` then gives exactly ``estimate.eb(history, prior=…, use_last_modified=…)``: the
posterior over the classes under a prior (a site's fitted gamma, a sitemap's hint, or the flat
log-uniform one), its median and its equal-tailed interval; with the Last-Modified likelihood when
the header is trustworthy (``estimate.estimate``'s choice). tests/unit/test_recrawl_history.py
checks the two against each other on random histories.

A visit whose change is unknown (a page crawled before recrawling was on, so no main-text
checksum to compare, and a different body) starts the history afresh from that visit: the interval
before it says nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .estimate import CLASSES, LEVEL, LM_RESOLUTION, Estimate, GammaPrior, _quantiles, open_above

_LOG_CLASSES = np.log(CLASSES)


def _zeros() -> np.ndarray:
    return np.zeros(CLASSES.size)


@dataclass(frozen=True)
class PageStats:
    """The running statistics of one page's visits (see the module docstring). ``last_visit`` and
    ``last_lm`` are the latest visit's time and Last-Modified (epoch seconds, None if none)."""

    n: int = 0
    x: int = 0
    loglik: np.ndarray = field(default_factory=_zeros)
    lm_ok: bool = True
    lm_x: int = 0
    lm_t: float = 0.0
    last_visit: float | None = None
    last_lm: float | None = None

    def blob(self) -> bytes:
        """``loglik`` as stored (float32, little-endian)."""
        return np.asarray(self.loglik, dtype="<f4").tobytes()

    @staticmethod
    def loglik_from(blob: bytes | None) -> np.ndarray:
        if not blob:
            return _zeros()
        return np.frombuffer(blob, dtype="<f4").astype(float)


def observe(stats: PageStats, t: float, changed: bool | None, last_modified: float | None) -> PageStats:
    """The statistics after a visit at ``t``: ``changed`` says whether the content differs from the
    previous visit's (None: unknown, and the history starts again here), ``last_modified`` is the
    Last-Modified the server gave (None: none)."""
    if stats.last_visit is None or changed is None:
        return replace(stats, last_visit=t, last_lm=last_modified)
    length = t - stats.last_visit
    if length <= 0:   # a zero-length interval says nothing about a Poisson rate (estimate._intervals)
        return replace(stats, last_visit=max(t, stats.last_visit), last_lm=last_modified)
    if changed:
        with np.errstate(divide="ignore"):
            loglik = stats.loglik + np.log(-np.expm1(-CLASSES * length))
    else:
        loglik = stats.loglik - CLASSES * length
    lm_ok, lm_x, lm_t = stats.lm_ok, stats.lm_x, stats.lm_t
    if lm_ok:
        before, after = stats.last_lm, last_modified
        if before is None or after is None:
            lm_ok = False
        elif changed:
            lm_ok = after != before and stats.last_visit - LM_RESOLUTION < after <= t + LM_RESOLUTION
            lm_x += 1
            lm_t += min(max(t - after, LM_RESOLUTION / 2), length)
        else:
            lm_ok = after == before
            lm_t += length
    return PageStats(stats.n + 1, stats.x + int(changed), loglik, lm_ok, lm_x, lm_t, t, last_modified)


def uses_last_modified(stats: PageStats) -> bool:
    """``estimate.lm_trustworthy``: at least one interval, and the header agreed on every one."""
    return stats.lm_ok and stats.n > 0


def log_prior(prior: GammaPrior | None) -> np.ndarray:
    return _zeros() if prior is None else prior.log_weights(CLASSES)


def posterior(stats: PageStats, prior: GammaPrior | None = None, *, level: float = LEVEL,
              prior_weights: np.ndarray | None = None) -> Estimate:
    """``estimate.eb`` of the page's history under ``prior`` (None: log-uniform over the classes),
    with the Last-Modified likelihood when it is trustworthy: the rate is the posterior median,
    ``low``/``high`` the equal-tailed interval at ``level``. ``prior_weights``: ``log_prior(prior)``
    computed once (a scheduler reuses it for every page of a site)."""
    use_lm = uses_last_modified(stats)
    if use_lm:
        loglik = stats.lm_x * _LOG_CLASSES - stats.lm_t * CLASSES
    else:
        loglik = stats.loglik
    log_post = (log_prior(prior) if prior_weights is None else prior_weights) + loglik
    log_post = log_post - log_post.max()
    post = np.exp(log_post)
    tail = (1.0 - level) / 2
    post = post / post.sum()
    low, median, high = _quantiles(post, CLASSES, (tail, 0.5, 1.0 - tail))
    method = ("eb" if prior is None and prior_weights is None else "eb-gamma") + ("-lm" if use_lm else "")
    return Estimate(median, low, open_above(loglik, post, high, tail), method, stats.n)


def probability_fresh(rate: float, since: float) -> float:
    """The chance that a page changing as a Poisson process of ``rate`` has not changed in the
    ``since`` seconds since its last visit: e^(−rate·since)."""
    return math.exp(-rate * max(since, 0.0))
