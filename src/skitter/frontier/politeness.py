"""Per-host politeness, pure (no I/O): how long to wait before the next request to a host.

The rules (DESIGN.md, seed 002):
- at most ``per_host`` requests to one host at once;
- request *starts* at least ``gap`` apart, and at least ``gap`` from the end of the previous
  response to the next start, where
      gap = max(delay, robots Crawl-delay (capped), adaptive × last response time (capped))
  (seed 002: "for example 10 times the time it took to download the last page"; capped at
  ``max_adaptive`` as Scrapy's AutoThrottle (60 s) and Heritrix (30 s) cap theirs: a host that
  answers in a minute is not left for ten);
- a 429/503 with Retry-After (or a retry's backoff) pushes the host's next time further.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC


#: The longest a 429's or 503's Retry-After is obeyed (10 minutes), for the host's hold and the
#: URL's retry: a server that asks for 31 years, or for 10^399 seconds, gets this
MAX_RETRY_AFTER = 600.0


@dataclass(frozen=True, slots=True)
class Politeness:
    delay: float = 1.0
    per_host: int = 1
    adaptive: float = 10.0
    max_crawl_delay: float = 60.0
    max_adaptive: float = 60.0
    max_retry_after: float = MAX_RETRY_AFTER


class HostClock:
    """The politeness clock of one host."""

    __slots__ = ("policy", "crawl_delay", "last_elapsed", "next_time", "active", "starts", "before", "backed_off")

    def __init__(self, policy: Politeness) -> None:
        self.policy = policy
        self.crawl_delay = 0.0
        self.last_elapsed = 0.0
        self.next_time = 0.0
        self.active = 0
        self.starts = 0            # requests started, the token of the latest one
        self.before = 0.0          # next_time before the latest start (see cancelled)
        self.backed_off = 0.0      # the latest back_off's time (what holds the host, if it is next_time)

    def gap(self) -> float:
        p = self.policy
        return max(p.delay, min(self.crawl_delay, p.max_crawl_delay), min(p.adaptive * self.last_elapsed, p.max_adaptive))

    def why(self) -> str:
        """What sets the host's next time: a back-off (a Retry-After, a retry's or robots.txt's
        wait), else the largest term of :meth:`gap` (the watchdog's report of a waiting crawl)."""
        p = self.policy
        if self.backed_off and self.backed_off >= self.next_time:
            return "a Retry-After or a retry's back-off"
        crawl_delay = min(self.crawl_delay, p.max_crawl_delay)
        adaptive = min(p.adaptive * self.last_elapsed, p.max_adaptive)
        if adaptive > max(p.delay, crawl_delay):
            return f"adaptive delay {adaptive:.3g} s ({p.adaptive:g} × a {self.last_elapsed:.3g} s response)"
        if crawl_delay > p.delay:
            return f"Crawl-delay {crawl_delay:g} s"
        return f"--delay {p.delay:g} s"

    def can_start(self, now: float) -> bool:
        return self.active < self.policy.per_host and now >= self.next_time

    def started(self, now: float) -> int:
        """A request starts now; returns its token (for :meth:`cancelled`)."""
        self.active += 1
        self.starts += 1
        self.before = self.next_time
        self.next_time = max(self.next_time, now + self.gap())
        return self.starts

    def cancelled(self, token: int) -> None:
        """A start that sent no request after all (robots.txt disallows the URL): its slot is
        free again and, if no other request started since, the host's time is what it was."""
        self.active -= 1
        if token == self.starts:
            self.next_time = self.before

    def finished(self, now: float, elapsed: float | None) -> None:
        """A request ended ``now``; ``elapsed``: the server's time for it (None: no response).
        With a response time the host's time is made again: the gap from now, a back-off kept
        (now + gap is past every start's own start + gap, so starts stay a gap apart). A start
        reserves its gap from the response time before it: a 3.6 s response followed by a 0.3 s
        one held the host 36 s after each, where the second asks for 3 s (a hold-out tester's
        stalling server)."""
        self.active -= 1
        if elapsed is None:
            self.next_time = max(self.next_time, now + self.gap())
            return
        self.last_elapsed = elapsed
        gap = self.gap()
        held = self.backed_off if self.backed_off > now else 0.0
        self.next_time = max(held, now + gap)

    def back_off(self, now: float, seconds: float) -> None:
        self.backed_off = now + min(seconds, self.policy.max_retry_after)
        self.next_time = max(self.next_time, self.backed_off)


def parse_retry_after(value: str | None, now_epoch: float) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP-date, RFC 9110 10.2.3),
    at most :data:`MAX_RETRY_AFTER`: the host's hold and the URL's retry alike (a URL held for 10^9
    s waited 31 years, and one held for a 400-digit number for ever, while only its host's hold
    was capped)."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # str.isdigit() alone also takes "²" and "١٢"
        return min(float(value), MAX_RETRY_AFTER)
    from ..httpdate import parse_http_date

    try:
        when = parse_http_date(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a year past C int
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # the asctime form has no zone; every HTTP-date is GMT
        when = when.replace(tzinfo=UTC)
    return min(max(0.0, when.timestamp() - now_epoch), MAX_RETRY_AFTER)
