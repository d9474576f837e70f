"""Test doubles that skitter ships, for its own tests and for users' tests of their plug-ins.

``FakeClock``: a monotonic clock (the frontier's and the politeness clock's ``clock()``) that
moves only when told, or by a fixed or random amount on every reading (``tick``/``jumps``): a
clock that advances while code runs is how a stale-reading bug is made to happen every time.
"""

from __future__ import annotations

import random
from typing import Sequence


class ClockSpin(AssertionError):
    """A clock was read more often than ``max_reads`` since the last ``reset_reads``: the code
    under test is spinning in a synchronous loop instead of returning or waiting."""


class FakeClock:
    """``clock()`` returns the fake time. ``advance(s)`` moves it; ``tick`` moves it by that much
    on every reading; ``jumps`` (with ``seed``) moves it by a random choice of those amounts on
    every reading. ``reads`` counts readings since ``reset_reads()``; beyond ``max_reads`` a
    reading raises :class:`ClockSpin`."""

    def __init__(self, t: float = 1000.0, *, tick: float = 0.0, jumps: Sequence[float] = (),
                 seed: int = 0, max_reads: int | None = None) -> None:
        self.t = t
        self.tick = tick
        self.jumps = tuple(jumps)
        self._rng = random.Random(seed)
        self.max_reads = max_reads
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        if self.max_reads is not None and self.reads > self.max_reads:
            raise ClockSpin(f"the clock was read {self.reads} times without the caller returning or waiting")
        if self.jumps:
            self.t += self._rng.choice(self.jumps)
        self.t += self.tick
        return self.t

    def now(self) -> float:
        """The time, without counting as a reading or moving the clock."""
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds

    def reset_reads(self) -> None:
        self.reads = 0
