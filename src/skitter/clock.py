"""The crawl's two clocks, injected wherever time is read (the frontier, the loop, the robots cache),
so that tests can make time jump, or pass a 30-second Crawl-delay in milliseconds.

- ``monotonic()``: intervals (politeness, timeouts). Never goes back.
- ``time()``: seconds since the epoch, for what is stored: fetch times, and a URL's due time
  (a retry, a revisit), which must mean the same thing after a restart.
"""

from __future__ import annotations

import time as _time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Seconds since the epoch."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""


class SystemClock:
    """The real clocks: ``time.time`` and ``time.monotonic``."""

    time = staticmethod(_time.time)
    monotonic = staticmethod(_time.monotonic)


SYSTEM = SystemClock()
