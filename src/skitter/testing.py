"""Test doubles that skitter ships, for its own tests and for users' tests of their plug-ins.

- ``FakeClock``: a :class:`skitter.clock.Clock` that moves only when told, or by a fixed or random
  amount on every reading (``tick``/``jumps``): a clock that advances while code runs is how a
  stale-reading bug is made to happen every time.
- ``SiteTransport``: an in-memory web for the crawl loop (redirect loops, 429 with Retry-After, an
  unreachable robots.txt), with ``LoopClock`` and ``run_in_fake_time`` to run a whole crawl in
  fake time: ``build_crawler(dir, config, transport=site, clock=LoopClock())``.
- ``WebTransport``: a generated web (``skitter.demo.DemoWeb``, the changing one too) served
  in-process, conditional requests included: hours of a recrawl against a web whose ground truth is
  known, in fake time.
- ``temporary_crawl_dir``.
"""

from __future__ import annotations

import contextlib
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Iterator, Sequence

from .models import FetchResult


class ClockSpin(AssertionError):
    """A clock was read more often than ``max_reads`` since the last ``reset_reads``: the code
    under test is spinning in a synchronous loop instead of returning or waiting."""


EPOCH = 1_700_000_000.0   # what FakeClock.time() says at monotonic 0


class FakeClock:
    """``monotonic()`` (also ``clock()``) returns the fake time, ``time()`` the same moment as
    seconds since the epoch. ``advance(s)`` moves it; ``tick`` moves it by that much on every
    monotonic reading; ``jumps`` (with ``seed``) by a random choice of those amounts. ``reads``
    counts monotonic readings since ``reset_reads()``; beyond ``max_reads`` a reading raises
    :class:`ClockSpin`."""

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

    monotonic = __call__

    def time(self) -> float:
        """The current moment in epoch seconds (not a counted reading; the clock does not move)."""
        return EPOCH + self.t

    def now(self) -> float:
        """The time, without counting as a reading or moving the clock."""
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds

    def reset_reads(self) -> None:
        self.reads = 0


# -- an in-memory web ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Reply:
    """One canned response of :class:`SiteTransport`: a status with headers and a body, or a
    failed request (``error``, e.g. ``"connect: connection refused"``, retryable or not)."""

    status: int | None = 200
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "text/html; charset=utf-8"),)
    body: bytes = b""
    error: str | None = None
    retryable: bool = False
    response_time: float = 0.001


def html(body: str, *, status: int = 200, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    """An HTML page."""
    return Reply(status, (("Content-Type", "text/html; charset=utf-8"), *headers),
                 f"<!DOCTYPE html><html><body>{body}</body></html>".encode())


@dataclass
class Request:
    url: str
    at: float          # the clock's monotonic time when it was made


class SiteTransport:
    """A :class:`skitter.transport.Transport` serving an in-memory web, in the style of httpx's
    ``MockTransport``: ``routes`` maps a URL to a :class:`Reply`, a list of replies (one per
    request, the last one repeated), or a function ``(url, nth request of it) -> Reply``. An
    unknown URL is a 404; an unknown robots.txt too (RFC 9309: everything allowed). Every
    request is logged in :attr:`requests` with the clock's time, so a test checks politeness
    from the server's side."""

    def __init__(self, routes: dict[str, Any], clock: Any) -> None:
        self.routes = dict(routes)
        self.clock = clock
        self.requests: list[Request] = []
        self._counts: dict[str, int] = {}

    async def get(self, url: str, *, headers: dict[str, str] | None = None) -> FetchResult:
        n = self._counts.get(url, 0)
        self._counts[url] = n + 1
        self.requests.append(Request(url, self.clock.monotonic()))
        route = self.routes.get(url)
        if callable(route):
            reply = route(url, n)
        elif isinstance(route, list):
            reply = route[min(n, len(route) - 1)]
        else:
            reply = route if route is not None else Reply(404, (("Content-Type", "text/plain"),), b"not found")
        if reply.error is not None:
            return FetchResult(url=url, error=reply.error, retryable=reply.retryable, started=self.clock.time())
        return FetchResult(url=url, status=reply.status, reason="", headers=list(reply.headers), body=reply.body,
                           raw_body=reply.body, started=self.clock.time(), elapsed=reply.response_time,
                           response_time=reply.response_time, ip="127.0.0.1")

    async def close(self) -> None:
        pass

    def hits(self, url: str) -> list[float]:
        """The times ``url`` was requested."""
        return [r.at for r in self.requests if r.url == url]


class WebTransport:
    """A :class:`skitter.transport.Transport` serving a :class:`skitter.demo.web.DemoWeb` (static or
    changing) in-process: ``web.respond(base, path, if_none_match=…, if_modified_since=…,
    now=clock.time())``, so the changing web changes on the crawl's own clock (fake time with
    :class:`LoopClock`) and answers the crawl's conditional requests. ``requests`` logs
    ``(url, epoch time, status)``; ``fail`` maps a URL to a status to answer instead (a page that
    disappears, a server error)."""

    def __init__(self, web: Any, clock: Any) -> None:
        self.web = web
        self.clock = clock
        self.requests: list[tuple[str, float, int]] = []
        self.fail: dict[str, int] = {}
        self._bases = sorted((b.rstrip("/") for b in web.base_urls), key=len, reverse=True)

    async def get(self, url: str, *, headers: dict[str, str] | None = None) -> FetchResult:
        now = self.clock.time()
        h = {k.lower(): v for k, v in (headers or {}).items()}
        base = next((b for b in self._bases if url.startswith(b + "/") or url == b), None)
        status = self.fail.get(url)
        if base is None or status is not None:
            status = status or 404
            self.requests.append((url, now, status))
            return FetchResult(url=url, status=status, headers=[("Content-Type", "text/plain")], body=b"gone",
                               raw_body=b"gone", started=now, elapsed=0.001, response_time=0.001, ip="127.0.0.1",
                               request_headers=[(k, v) for k, v in (headers or {}).items()])
        r = self.web.respond(base, url[len(base):] or "/", if_none_match=h.get("if-none-match"),
                             if_modified_since=h.get("if-modified-since"), now=now)
        self.requests.append((url, now, r.status))
        return FetchResult(url=url, status=r.status, reason="", headers=list(r.headers), body=r.body,
                           raw_body=r.body, started=now, elapsed=0.001, response_time=0.001, ip="127.0.0.1",
                           request_headers=[(k, v) for k, v in (headers or {}).items()])

    async def close(self) -> None:
        pass


class LoopClock:
    """A :class:`skitter.clock.Clock` on the running event loop's time. With an event loop whose
    time is fake (``looptime``), waits of seconds or hours pass at once and the crawl's politeness
    still sees them; ``time()`` is :data:`EPOCH` plus the loop's time."""

    def monotonic(self) -> float:
        import asyncio

        return asyncio.get_running_loop().time()

    __call__ = monotonic

    def time(self) -> float:
        return EPOCH + self.monotonic()


def run_in_fake_time(main: Any) -> Any:
    """Run the coroutine ``main`` on an event loop whose time jumps ahead whenever every task
    waits (``looptime``): a crawl with a 30-second Crawl-delay runs in milliseconds. Use a
    :class:`LoopClock` for the crawl's clock."""
    import asyncio

    import looptime

    loop = looptime.new_event_loop(start=0.0, noop_cycles=1)
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main)
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@contextlib.contextmanager
def temporary_crawl_dir() -> Iterator[Path]:
    """A crawl directory that is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="skitter-test-") as d:
        yield Path(d) / "crawl"
