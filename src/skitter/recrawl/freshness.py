"""Freshness and age of a fetch schedule against a change log, and a policy simulator (pure).

Cho's definitions (Cho and Garcia-Molina, "Synchronizing a database to improve freshness", SIGMOD
2000, and TODS 2003, "Freshness and age"): at time t a page's copy is *fresh* if the page has not
changed since the copy was fetched; its *age* is 0 while fresh, else the time since the first
change the copy misses. A collection's freshness (age) at t is the mean over its pages, optionally
weighted by importance; the scores here are time averages over [start, end], computed exactly from
the event times (no sampling): between two fetches a copy is fresh until the first change after
the fetch, and its age then grows linearly.

Conventions: a fetch at the very instant of a change sees the change; the copy held at ``start``
is the one from the page's last fetch at or before ``start``, or, for a page not fetched by then,
one taken at ``start`` (the collection starts in sync, as after an initial crawl).

Comparing policies: report differences of freshness (gains), not ratios. Pages that never change
are fresh under any policy and inflate every policy's score alike, so a ratio shrinks towards 1 as
a collection holds more static pages while the gain in fresh pages stays what it is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .policy import POLICIES

MAX_SIMULATED_CHANGES = 50_000_000
"""The simulator holds every change of the window in memory (16 bytes each)."""


@dataclass(frozen=True, eq=False)
class Events:
    """Timestamped events of many pages (fetches or changes): event k is page ``page[k]`` at
    ``time[k]`` seconds. Pages are numbered 0 … n − 1; any order."""

    page: np.ndarray
    time: np.ndarray

    def __post_init__(self) -> None:
        page = np.asarray(self.page, dtype=np.int64).reshape(-1)
        time = np.asarray(self.time, dtype=float).reshape(-1)
        if page.shape != time.shape:
            raise ValueError("page and time must have the same length")
        if page.size and page.min() < 0:
            raise ValueError("page numbers must not be negative")
        if not np.isfinite(time).all():
            raise ValueError("event times must be finite")
        object.__setattr__(self, "page", page)
        object.__setattr__(self, "time", time)


@dataclass(frozen=True)
class Score:
    """Time-averaged freshness (0 … 1) and age (seconds) of a collection, plain and weighted by
    importance, and the number of fetches made in the window."""

    freshness: float
    age: float
    weighted_freshness: float
    weighted_age: float
    fetches: int


def _first_change_after(changes: Events, page: np.ndarray, time: np.ndarray) -> np.ndarray:
    """For each query (page[k], time[k]), the page's first change strictly after time[k] (∞ if
    none). One sort of changes and queries together: changes sort before queries at equal times,
    so a change at the query's instant does not count as after it."""
    m = changes.page.size
    pages = np.concatenate([changes.page, page])
    times = np.concatenate([changes.time, time])
    is_query = np.concatenate([np.zeros(m, dtype=bool), np.ones(page.size, dtype=bool)])
    order = np.lexsort((is_query, times, pages))
    sorted_query = is_query[order]
    positions = np.arange(order.size)
    # the position of the next change at or after each position (order.size if none)
    next_change = np.minimum.accumulate(np.where(sorted_query, order.size, positions)[::-1])[::-1]
    query_positions = positions[sorted_query]
    found = next_change[query_positions]
    has_next = found < order.size
    found = np.minimum(found, order.size - 1)
    sorted_pages, sorted_times = pages[order], times[order]
    same_page = sorted_pages[found] == sorted_pages[query_positions]
    result = np.empty(page.size)
    result[order[query_positions] - m] = np.where(has_next & same_page, sorted_times[found], math.inf)
    return result


def page_scores(fetches: Events, changes: Events, n_pages: int, start: float,
                end: float) -> tuple[np.ndarray, np.ndarray]:
    """Each page's time-averaged freshness and age (seconds) over [start, end]."""
    if not end > start:
        raise ValueError("the window must have end > start")
    if max(int(fetches.page.max(initial=-1)), int(changes.page.max(initial=-1))) >= n_pages:
        raise ValueError("an event names a page >= n_pages")
    before = fetches.time <= start
    synced = np.full(n_pages, -math.inf)
    np.maximum.at(synced, fetches.page[before], fetches.time[before])
    synced[np.isneginf(synced)] = start
    inside = (fetches.time > start) & (fetches.time < end)
    # segments: from `begin` until the page's next fetch (or `end`), holding the copy fetched at `copy`
    seg_page = np.concatenate([np.arange(n_pages), fetches.page[inside]])
    seg_begin = np.concatenate([np.full(n_pages, float(start)), fetches.time[inside]])
    seg_copy = np.concatenate([synced, fetches.time[inside]])
    order = np.lexsort((seg_begin, seg_page))
    seg_page, seg_begin, seg_copy = seg_page[order], seg_begin[order], seg_copy[order]
    seg_end = np.full(seg_page.size, float(end))
    same = seg_page[1:] == seg_page[:-1]
    seg_end[:-1][same] = seg_begin[1:][same]
    stale_since = np.minimum(_first_change_after(changes, seg_page, seg_copy), seg_end)
    fresh_time = np.maximum(stale_since - seg_begin, 0.0)
    # ∫ (t − stale_since) dt over [max(begin, stale_since), end], written to avoid cancellation
    lower = np.maximum(stale_since, seg_begin)
    age_area = (seg_end - lower) * (seg_end + lower - 2 * stale_since) / 2
    span = end - start
    freshness = np.bincount(seg_page, fresh_time, minlength=n_pages) / span
    age = np.bincount(seg_page, age_area, minlength=n_pages) / span
    return freshness, age


def score(fetches: Events, changes: Events, n_pages: int, start: float, end: float,
          weights: np.ndarray | None = None) -> Score:
    """The collection's time-averaged freshness and age over [start, end], plain and weighted
    (Σ w_i·F_i / Σ w_i; equal weights if none are given)."""
    freshness, age = page_scores(fetches, changes, n_pages, start, end)
    w = np.ones(n_pages) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n_pages,) or not (w >= 0).all() or not w.sum() > 0:
        raise ValueError("weights must be n_pages non-negative numbers, not all zero")
    fetched = int(((fetches.time >= start) & (fetches.time < end)).sum())
    return Score(float(freshness.mean()), float(age.mean()), float(w @ freshness / w.sum()),
                 float(w @ age / w.sum()), fetched)


def poisson_changes(rates: np.ndarray, start: float, end: float, rng: np.random.Generator) -> Events:
    """A change log: each page's changes a Poisson process of its rate over [start, end] (given
    their number, the times of a Poisson process are independent and uniform)."""
    lam = np.asarray(rates, dtype=float)
    counts = rng.poisson(lam * (end - start))
    total = int(counts.sum())
    if total > MAX_SIMULATED_CHANGES:
        raise ValueError(f"{total} changes to simulate: shorten the window or slow the pages")
    return Events(np.repeat(np.arange(lam.size), counts), start + rng.random(total) * (end - start))


def _apportion(shares: np.ndarray, total: int) -> np.ndarray:
    """Whole numbers proportional to ``shares`` that add up to ``total`` (largest remainders)."""
    if total == 0 or not shares.sum() > 0:
        return np.zeros(shares.size, dtype=np.int64)
    quotas = shares * (total / shares.sum())
    counts = np.floor(quotas).astype(np.int64)
    missing = total - int(counts.sum())
    counts[np.argsort(counts - quotas, kind="stable")[:missing]] += 1
    return counts


def periodic_schedule(frequencies: np.ndarray, total: int, start: float, end: float,
                      phase: np.ndarray) -> Events:
    """Exactly ``total`` fetches over [start, end), shared in proportion to ``frequencies``, each
    page's evenly spaced (Cho's fixed-order policy) and offset by its ``phase`` (0 … 1) of a gap."""
    counts = _apportion(np.asarray(frequencies, dtype=float), total)
    page = np.repeat(np.arange(counts.size), counts)
    index = np.arange(page.size) - np.repeat(np.cumsum(counts) - counts, counts)
    gap = (end - start) / np.maximum(counts, 1)
    return Events(page, start + (np.asarray(phase)[page] + index) * gap[page])


def simulate(rates: np.ndarray, budget: float, window: float, *, weights: np.ndarray | None = None,
             seed: int = 0, warmup: float = 0.0,
             frequencies: Mapping[str, np.ndarray] | None = None) -> dict[str, Score]:
    """Score every policy of `POLICIES` (computed from the true ``rates`` and ``weights``), and any
    further named ``frequencies`` (e.g. from estimated rates), on one simulated change log.

    Each policy makes exactly round(budget × (warmup + window)) fetches over [−warmup, window),
    evenly spaced per page with the same random phase for a page under every policy; the copies
    are in sync at −warmup, and [0, window] is scored. ``warmup=0`` is a recrawl that starts
    right after its crawl, fetch for fetch comparable with a real one; a warm-up of a few of the
    longest revisit intervals approaches the papers' steady state (a page left unvisited is then
    stale, not still fresh from the crawl). The same seed gives the same change log, phases and
    scores.
    """
    if not (window > 0 and warmup >= 0):
        raise ValueError("need window > 0 and warmup >= 0")
    lam = np.asarray(rates, dtype=float)
    rng = np.random.default_rng(seed)
    changes = poisson_changes(lam, -warmup, window, rng)
    phase = rng.random(lam.size)
    total = round(budget * (warmup + window))
    allocations = {name: policy(lam, budget, weights) for name, policy in POLICIES.items()}
    allocations.update(frequencies or {})
    scores = {}
    for name, f in allocations.items():
        fetches = periodic_schedule(f, total, -warmup, window, phase)
        if warmup > 0:
            fetches = Events(np.concatenate([np.arange(lam.size), fetches.page]),
                             np.concatenate([np.full(lam.size, -warmup), fetches.time]))
        scores[name] = score(fetches, changes, lam.size, 0.0, window, weights)
    return scores
