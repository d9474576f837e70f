"""The changing demo web's change model, pure: which pages change, how often, and exactly when.

Issue #20's incremental crawler needs a web whose pages change as Poisson processes, with a
ground truth to score it against. This module is that ground truth; :mod:`skitter.demo.web`
renders the pages from it (``DemoConfig(changing=ChangeConfig(...))``), so what the server sends
and what a test computes in-process agree to the version.

Rates. Every page key (``"<host>:<path>"``: the port never matters) gets a mean interval between
changes from a mix: a share ``static_share`` never changes; the others have an interval drawn
log-uniformly between ``min_interval`` and ``max_interval`` (model seconds). Host ``g`` also gets
new articles as a Poisson process of ``new_per_hour`` a model hour (:meth:`ChangeModel.born`).

Time. ``speed`` compresses time: model time ``u = (t - start_epoch) * speed`` for wall-clock
``t``. Every public method takes and returns wall-clock times (what a crawler sees: the clock of
its requests, Last-Modified, the log), and :meth:`ChangeModel.rate` is in changes per wall-clock
second; the realisation is the same at every speed, only compressed. Versions count the changes in
``(start_epoch, t]``: 0 at the start; earlier changes exist too (the process runs backwards, so a
page's Last-Modified at the start is its last change before it).

Realisation, lazily and reproducibly. A page's events on the model time line are cut into root
blocks of 2^24 s (194 days). A block's count is Poisson; each node of a binary tree under it
splits its count between its halves Binomial(n, 1/2); a leaf, short enough to hold about four
events, places them uniformly. Each node draws from its own stream keyed by (seed, page, level,
index) (blake2b bits for a split of up to 4,096 events, a popcount, and for a leaf's times; a
seeded ``random.Random`` for a root's count and bigger splits), so any node is computed from its
ancestors alone: the count of
changes before ``t``, the last change before ``t`` and the changes in a window each cost
O(tree depth + changes returned), whatever ``t`` is, and node counts are memoised. Counts per
block are exactly Poisson (Knuth's gamma and beta recursions, TAOCP 3.4.1, on the standard
library's variates), and the splits make the counts in disjoint intervals independent Poisson
variables: the process is a Poisson process, not an approximation of one.
"""

from __future__ import annotations

import functools
import hashlib
import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["ChangeConfig", "ChangeModel", "changefreq"]

_ROOT = float(1 << 24)   # model seconds in a root block
_MAX_LEVEL = 40          # leaves of at least 2^-16 s
_LOOKBACK = 2            # root blocks searched backwards for the last change before a time


@dataclass(frozen=True)
class ChangeConfig:
    """How the demo web changes. Intervals are mean model seconds between changes of a page;
    ``speed`` model seconds pass per wall-clock second."""

    speed: float = 1.0
    static_share: float = 0.5        # pages that never change
    min_interval: float = 5.0        # the fastest pages: every few seconds
    max_interval: float = 4 * 3600.0  # the slowest changing pages: every few hours
    noise_share: float = 0.3         # pages with per-request noise in their boilerplate
    link_share: float = 0.5          # changes that also link another article
    new_per_hour: float = 6.0        # new articles a host gets per model hour

    def __post_init__(self) -> None:
        if not self.speed > 0:
            raise ValueError("speed must be > 0")
        if not 0 < self.min_interval <= self.max_interval:
            raise ValueError("need 0 < min_interval <= max_interval")
        for name in ("static_share", "noise_share", "link_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within [0, 1]")
        if self.new_per_hour < 0:
            raise ValueError("new_per_hour must be >= 0")


def changefreq(rate: float) -> str:
    """The sitemap protocol's ``changefreq`` for a rate in changes per second."""
    if rate <= 0:
        return "never"
    interval = 1.0 / rate
    for limit, name in ((60, "always"), (3600, "hourly"), (86400, "daily"), (7 * 86400, "weekly"),
                        (31 * 86400, "monthly")):
        if interval < limit:
            return name
    return "yearly"


# ----------------------------------------------------------------------------------------------
# exact Poisson and binomial variates (TAOCP 3.4.1), from one random.Random


def _binomial(rng: random.Random, n: int, p: float) -> int:
    """Binomial(n, p): the a-th smallest of n uniforms is Beta(a, n + 1 - a); the count below p
    is then a smaller binomial on one side of it."""
    k = 0
    while n > 64:
        a = 1 + n // 2
        x = rng.betavariate(a, n + 1 - a)
        if x >= p:
            n, p = a - 1, p / x
        else:
            k += a
            n, p = n - a, (p - x) / (1.0 - x)
    return k + sum(rng.random() < p for _ in range(n))


def _poisson(rng: random.Random, mu: float) -> int:
    """Poisson(mu): the m-th arrival of a unit-rate process is Gamma(m); if it falls past mu, the
    arrivals before it are uniform on [0, X] (a binomial count below mu), else recurse on the
    rest. Knuth's product of uniforms for small means."""
    k = 0
    while mu > 30:
        m = int(mu * 7 / 8)
        x = rng.gammavariate(m, 1.0)
        if x >= mu:
            return k + _binomial(rng, m - 1, mu / x)
        k += m
        mu -= x
    limit = math.exp(-mu)
    prod = rng.random()
    while prod > limit:
        k += 1
        prod *= rng.random()
    return k


def _unit(text: str) -> float:
    """A uniform [0, 1) number from a string, the same on every platform."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") / 2.0 ** 64


def _bits(text: str, n: int) -> int:
    """``n`` random bits from a string (blake2b in counter mode: cheaper than seeding a
    ``random.Random`` for the small draws that most tree nodes need)."""
    out = b"".join(hashlib.blake2b(f"{text}:{c}".encode()).digest() for c in range((n + 511) // 512))
    return int.from_bytes(out, "little") & ((1 << n) - 1)


def _half(text: str, n: int) -> int:
    """Binomial(n, 1/2), exactly: the popcount of n random bits (a seeded generator's recursion
    past 4,096)."""
    if n <= 4096:
        return _bits(text, n).bit_count()
    return _binomial(random.Random(text), n, 0.5)


# ----------------------------------------------------------------------------------------------
# one Poisson process on the model time line


class _Process:
    """The events of one Poisson process of ``lam`` per model second, keyed by ``key``: node
    (level, i) of the tree covers [i * w, (i + 1) * w) with w = 2^24 / 2^level; level 0 are the
    root blocks (i may be negative: the process runs before the start too)."""

    def __init__(self, key: str, lam: float, counts: Callable[[str, float, int, int], int]) -> None:
        self.key = key
        self.lam = lam
        # leaves hold about four events (2^24 / 2^leaf ~ 4 / lam): fewer nodes, short leaves
        self.leaf = 0 if lam <= 0 else min(_MAX_LEVEL, max(0, math.ceil(math.log2(lam * _ROOT / 4))))
        self._counts = counts

    def count(self, level: int, i: int) -> int:
        return self._counts(self.key, self.lam, level, i)

    def width(self, level: int) -> float:
        return _ROOT / (1 << level)

    def leaf_times(self, i: int) -> list[float]:
        n = self.count(self.leaf, i)
        if not n:
            return []
        w = self.width(self.leaf)
        bits = _bits(f"{self.key}:leaf:{self.leaf}:{i}", 53 * n)
        mask = (1 << 53) - 1
        return sorted((i + ((bits >> (53 * k)) & mask) / 2.0 ** 53) * w for k in range(n))

    def count_upto(self, u: float) -> int:
        """Events in [0, u] (u >= 0)."""
        if self.lam <= 0 or u < 0:
            return 0
        b = math.floor(u / _ROOT)
        total = sum(self.count(0, j) for j in range(b))
        i = b
        for level in range(1, self.leaf + 1):
            left = 2 * i
            if u >= (left + 1) * self.width(level):
                total += self.count(level, left)
                i = left + 1
            else:
                i = left
        return total + sum(1 for x in self.leaf_times(i) if x <= u)

    def events(self, u0: float, u1: float) -> list[float]:
        """Events in (u0, u1], in order."""
        if self.lam <= 0 or u1 <= u0:
            return []
        out: list[float] = []
        for b in range(math.floor(u0 / _ROOT), math.floor(u1 / _ROOT) + 1):
            self._collect(0, b, u0, u1, out)
        return out

    def _collect(self, level: int, i: int, u0: float, u1: float, out: list[float]) -> None:
        w = self.width(level)
        if i * w > u1 or (i + 1) * w <= u0 or not self.count(level, i):
            return
        if level == self.leaf:
            out.extend(x for x in self.leaf_times(i) if u0 < x <= u1)
            return
        self._collect(level + 1, 2 * i, u0, u1, out)
        self._collect(level + 1, 2 * i + 1, u0, u1, out)

    def last(self, u: float) -> float | None:
        """The last event at or before u, searched back _LOOKBACK root blocks; None if none."""
        if self.lam <= 0:
            return None
        b = math.floor(u / _ROOT)
        path = [b]
        for level in range(1, self.leaf + 1):   # the leaf holding u, and the way down to it
            left = 2 * path[-1]
            path.append(left + 1 if u >= (left + 1) * self.width(level) else left)
        before = [x for x in self.leaf_times(path[-1]) if x <= u]
        if before:
            return before[-1]
        for level in range(self.leaf, 0, -1):   # climb: the nearest left sibling with events
            i = path[level]
            if i % 2 and self.count(level, i - 1):
                return self._rightmost(level, i - 1)
        for j in range(b - 1, b - 1 - _LOOKBACK, -1):
            if self.count(0, j):
                return self._rightmost(0, j)
        return None

    def _rightmost(self, level: int, i: int) -> float:
        while level < self.leaf:
            level += 1
            i = 2 * i + 1 if self.count(level, 2 * i + 1) else 2 * i
        return self.leaf_times(i)[-1]

    def nth(self, n: int) -> float | None:
        """The time of the n-th event (0-based) after u = 0, or None beyond 4 root blocks."""
        if self.lam <= 0:
            return None
        b = 0
        while self.count(0, b) <= n:
            n -= self.count(0, b)
            b += 1
            if b > 4:
                return None
        i = b
        for level in range(1, self.leaf + 1):
            left = self.count(level, 2 * i)
            if n < left:
                i = 2 * i
            else:
                n -= left
                i = 2 * i + 1
        return self.leaf_times(i)[n]


# ----------------------------------------------------------------------------------------------
# the model


class ChangeModel:
    """The change ground truth of one run: ``config``, the server's ``start_epoch`` (wall clock,
    seconds) and the web's ``seed``. Pages are named by keys (the demo web uses
    ``"<host>:<path>"``); hosts by their index."""

    def __init__(self, config: ChangeConfig, start_epoch: float, *, seed: int = 1) -> None:
        self.config = config
        self.start_epoch = float(start_epoch)
        self.seed = seed
        self._counts = functools.lru_cache(maxsize=1 << 17)(self._count)
        self._processes = functools.lru_cache(maxsize=1 << 15)(self._process)

    # model <-> wall clock
    def _model(self, t: float) -> float:
        return (t - self.start_epoch) * self.config.speed

    def _wall(self, u: float) -> float:
        return self.start_epoch + u / self.config.speed

    def _count(self, key: str, lam: float, level: int, i: int) -> int:
        if level == 0:
            return _poisson(random.Random(f"{key}:root:{i}"), lam * _ROOT)
        parent = self._counts(key, lam, level - 1, i // 2)
        if not parent:
            return 0
        left = _half(f"{key}:split:{level - 1}:{i // 2}", parent)
        return left if i % 2 == 0 else parent - left

    def _process(self, stream: str, lam: float) -> _Process:
        return _Process(f"{self.seed}:{stream}", lam, self._counts)

    def _page(self, key: str) -> _Process:
        return self._processes(f"page:{key}", self.model_rate(key))

    def _births(self, host: int) -> _Process:
        return self._processes(f"births:{host}", self.config.new_per_hour / 3600.0)

    # ------------------------------------------------------------------ pages

    def model_rate(self, key: str) -> float:
        """Changes per model second of page ``key`` (0 for a static page)."""
        c = self.config
        if _unit(f"{self.seed}:static:{key}") < c.static_share:
            return 0.0
        lo, hi = math.log(c.min_interval), math.log(c.max_interval)
        return 1.0 / math.exp(lo + (hi - lo) * _unit(f"{self.seed}:interval:{key}"))

    def rate(self, key: str) -> float:
        """Changes per wall-clock second of page ``key``."""
        return self.model_rate(key) * self.config.speed

    def version(self, key: str, t: float) -> int:
        """Changes of page ``key`` in ``(start_epoch, t]``."""
        return self._page(key).count_upto(self._model(t)) if t > self.start_epoch else 0

    def change_times(self, key: str, t0: float, t1: float) -> list[float]:
        """Wall-clock times of the changes of page ``key`` in ``(t0, t1]``, in order."""
        return [self._wall(u) for u in self._page(key).events(self._model(t0), self._model(t1))]

    def last_changed(self, key: str, t: float) -> float | None:
        """Wall-clock time of the last change of ``key`` at or before ``t`` (possibly before the
        start), or None for a page that never changes (or not within about a year of model time)."""
        u = self._page(key).last(self._model(t))
        return None if u is None else self._wall(u)

    def log(self, keys: Iterable[str], t0: float, t1: float) -> list[tuple[float, str]]:
        """Every change of the pages ``keys`` in ``(t0, t1]``: ``(time, key)``, in time order."""
        return sorted((x, key) for key in keys for x in self.change_times(key, t0, t1))

    def noisy(self, key: str) -> bool:
        """Whether page ``key`` carries per-request noise in its boilerplate (not a change)."""
        return _unit(f"{self.seed}:noise:{key}") < self.config.noise_share

    # ------------------------------------------------------------------ new articles

    def born(self, host: int, t: float) -> int:
        """New articles of ``host`` that have appeared by ``t`` (none before the start)."""
        return self._births(host).count_upto(self._model(t)) if t > self.start_epoch else 0

    def birth_time(self, host: int, j: int) -> float | None:
        """When the ``j``-th new article (0-based) of ``host`` appears (None: not within years)."""
        u = self._births(host).nth(j)
        return None if u is None else self._wall(u)

    def births(self, host: int, t0: float, t1: float) -> list[float]:
        """Times of the new articles of ``host`` appearing in ``(t0, t1]`` (after the start)."""
        u0 = max(0.0, self._model(t0))
        return [self._wall(u) for u in self._births(host).events(u0, self._model(t1))]

    def unit(self, *parts: object) -> float:
        """A reproducible uniform [0, 1) number for ``parts`` (the renderer's choices)."""
        return _unit(":".join(map(str, (self.seed,) + parts)))
