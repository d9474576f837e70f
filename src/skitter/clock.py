"""The crawl's two clocks, injected wherever time is read (the frontier, the loop, the robots cache),
so that tests can make time jump, or pass a 30-second Crawl-delay in milliseconds.

- ``monotonic()``: intervals (politeness, timeouts). Never goes back.
- ``time()``: seconds since the epoch, for what is stored: fetch times, and a URL's due time
  (a retry, a revisit), which must mean the same thing after a restart.
"""

from __future__ import annotations

import asyncio
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


async def wait_event(event: asyncio.Event, seconds: float | None) -> bool:
    """``event.wait()`` for at most ``seconds`` (None: no limit): whether it was set.

    Not ``asyncio.wait_for``: in Python 3.11 it drops a cancel that comes as the wait it runs
    completes (the event set in the same turn of the loop), and a task that loops around such a
    wait then never ends; a crawl's end, which cancels its tasks and waits for them, hung on one.
    Here a cancel always reaches the caller."""
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        done, _ = await asyncio.wait((waiter,), timeout=seconds)
    finally:
        if not waiter.done():
            waiter.cancel()
    return bool(done)
