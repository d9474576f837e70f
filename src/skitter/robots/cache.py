"""An asyncio cache of robots.txt rules, one entry per origin (scheme, host, port).

The HTTP access rules of RFC 9309 2.3.1 live here:

* 2xx: the body (its first ``max_bytes``) is parsed (2.3.1.1).
* 3xx: the Location is followed, up to ``max_redirects`` hops (five by default, the RFC's
  "at least five"); a longer chain, or a 3xx without Location, counts as unavailable (2.3.1.2).
* 4xx: "unavailable", everything is allowed (2.3.1.3) -- except 429 Too Many Requests, which
  is a request to slow down and is treated like 5xx, as Google does.
* 5xx, network errors, timeouts: "unreachable", everything is disallowed (2.3.1.4). The file is
  tried again ``retries`` times, ``retry_wait`` (4 s) × 4^k apart, or after the server's Retry-After
  if longer (at most ``error_expiry``): :meth:`RobotsCache.retry_in` tells the crawl loop, which
  holds the origin's URLs until then rather than record them as disallowed (one 503 or reset lost a
  whole host for the crawl, found on a hold-out web). After the last try the verdict is final for
  ``error_expiry`` seconds; a later load tries once more.

Parsed (and unavailable) rules are kept ``expiry`` seconds: 24 hours by default, the most
RFC 9309 2.4 recommends. Concurrent callers for one origin share a single fetch.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable

from skitter import urls
from skitter.errors import BodyTooLarge, UnaskedCoding
from skitter.frontier.politeness import parse_retry_after
from skitter.models import FetchResult
from skitter.robots.rules import MAX_BYTES, RobotsRules

__all__ = ["Getter", "Origin", "RobotsCache", "origin_of", "robots_url"]

#: Fetches ONE hop (no redirect following) and reports failures in ``FetchResult.error``.
Getter = Callable[[str], Awaitable[FetchResult]]
Origin = tuple[str, str, int]

_PURGE_EVERY = 1024  # stores between two sweeps of expired entries


def origin_of(url: str) -> Origin:
    """``(scheme, host, port)`` of an absolute URL, lower-cased, with the default port filled in.

    Raises ``urls.URLError`` (a ValueError) for a URL that is not http(s) or has no host. Called for every
    discovered link, so the parse is memoised on the URL's ``scheme://authority`` prefix.
    """
    s = url.strip()
    j = s.find("://")
    if j > 0:
        end = s.find("/", j + 3)
        return _origin_of_prefix(s if end < 0 else s[:end])
    return _origin_of_prefix(s)


@functools.lru_cache(maxsize=65536)
def _origin_of_prefix(url: str) -> Origin:
    return urls.origin(url)


def robots_url(origin: Origin) -> str:
    """The robots.txt URL of an origin (RFC 9309 2.3: at the top level path, "/robots.txt")."""
    scheme, host, port = origin
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port == urls.DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return f"{scheme}://{netloc}/robots.txt"


class RobotsCache:
    """robots.txt rules per origin, fetched on demand through ``get``."""

    def __init__(
        self,
        get: Getter,
        user_agent: str,
        *,
        expiry: float = 86400.0,
        error_expiry: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int = MAX_BYTES,
        max_redirects: int = 5,
        retries: int = 0,
        retry_wait: float = 4.0,
        epoch: Callable[[], float] = time.time,
    ) -> None:
        self._get = get
        self.user_agent = user_agent
        self.expiry = expiry
        self.error_expiry = error_expiry
        self.retries = retries
        self.retry_wait = retry_wait
        self._epoch = epoch    # a Retry-After may be an HTTP date
        self._failures: dict[Origin, int] = {}   # unreachable loads in a row, per origin
        self._times: dict[Origin, float] = {}      # the server's time for the latest robots.txt request
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self._clock = clock
        self._entries: dict[Origin, tuple[RobotsRules, float]] = {}
        self._inflight: dict[Origin, asyncio.Future[RobotsRules]] = {}
        self._stores = 0
        #: Number of robots.txt loads started (each may take several requests).
        self.loads = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def pending(self) -> int:
        """robots.txt loads under way."""
        return len(self._inflight)

    async def rules_for(self, url: str) -> RobotsRules:
        """The rules for ``url``'s origin, fetching robots.txt if not cached (or expired).

        All the tasks that ask for one origin while it is being fetched await the same fetch;
        a caller being cancelled does not cancel the fetch for the others.
        """
        origin = origin_of(url)
        rules = self._lookup(origin)
        if rules is not None:
            return rules
        future = self._inflight.get(origin)
        if future is None:
            future = asyncio.ensure_future(self._load(origin))
            self._inflight[origin] = future
        return await asyncio.shield(future)

    def retry_in(self, url: str) -> float | None:
        """Seconds until the unreachable robots.txt of ``url``'s origin is tried again, if it will
        be (tries are left); None when the cached verdict is not "unreachable", or is final."""
        origin = origin_of(url)
        entry = self._entries.get(origin)
        if entry is None or entry[0].reason != "unreachable" or self._failures.get(origin, 0) > self.retries:
            return None
        return max(0.0, entry[1] - self._clock())

    def tries(self, url: str) -> int:
        """How many loads of ``url``'s origin's robots.txt in a row found it unreachable."""
        return self._failures.get(origin_of(url), 0)

    def cached(self, url: str) -> RobotsRules | None:
        """The cached rules for ``url``'s origin, or None if absent or expired. Never fetches."""
        return self._lookup(origin_of(url))

    def forget(self, url: str) -> None:
        """Drop the cached rules of ``url``'s origin (a fetch under way is not affected)."""
        self._entries.pop(origin_of(url), None)

    # -- internals ------------------------------------------------------------------------

    def response_time(self, url: str) -> float | None:
        """The server's time for the latest robots.txt request of ``url``'s origin, once (the
        host's adaptive delay counts it like a page's; None: no answer timed)."""
        return self._times.pop(origin_of(url), None)

    def _lookup(self, origin: Origin) -> RobotsRules | None:
        entry = self._entries.get(origin)
        if entry is None:
            return None
        rules, expires = entry
        if self._clock() >= expires:
            del self._entries[origin]
            return None
        return rules

    async def _load(self, origin: Origin) -> RobotsRules:
        self.loads += 1
        try:
            wait = None
            try:
                rules, ttl, wait = await self._fetch(robots_url(origin))
            except Exception:  # the getter should not raise; if it does: unreachable
                rules, ttl = RobotsRules.disallow_all("unreachable"), self.error_expiry
            if rules.reason == "unreachable":
                n = self._failures[origin] = self._failures.get(origin, 0) + 1
                if n <= self.retries:   # tried again after a wait (the last try's verdict is final)
                    ttl = min(self.error_expiry, max(wait or 0.0, self.retry_wait * 4 ** (n - 1)))
            else:
                self._failures.pop(origin, None)
            self._store(origin, rules, ttl)
            return rules
        finally:
            self._inflight.pop(origin, None)

    def _store(self, origin: Origin, rules: RobotsRules, ttl: float) -> None:
        now = self._clock()
        self._entries[origin] = (rules, now + ttl)
        self._stores += 1
        if self._stores % _PURGE_EVERY == 0:
            for key in [k for k, (_, exp) in self._entries.items() if now >= exp]:
                del self._entries[key]

    async def _fetch(self, url: str) -> tuple[RobotsRules, float, float | None]:
        """Fetch robots.txt at ``url`` following redirects; the rules, how long to keep them and,
        for a 429 or 503, the server's Retry-After (seconds)."""
        def unreachable(detail: str | None, wait: float | None = None) -> tuple[RobotsRules, float, float | None]:
            return RobotsRules.disallow_all("unreachable", detail), self.error_expiry, wait

        unavailable = RobotsRules.allow_all("unavailable"), self.expiry, None
        for hop in range(self.max_redirects + 1):
            result = await self._get(url)
            if hop == 0 and result.response_time is not None:
                self._times[origin_of(url)] = result.response_time
            status = result.status
            if status is None:
                return unreachable(result.error)
            ok = 200 <= status < 300
            if UnaskedCoding.recorded(result.error):
                # a compression we did not ask for: a 2xx body we cannot read is no rules, as an
                # unparseable file is (RFC 9309 2.3.1.4 speaks of unreachable servers, not of this);
                # any other status says what it says
                if ok:
                    return unavailable
            elif result.error is not None and not (ok and result.error.startswith(BodyTooLarge.code)):
                # A failed request (or a body cut by a network error) cannot be trusted; a body
                # over the fetcher's cap is still a good prefix, parsed like any (RFC 9309 2.5).
                return unreachable(result.error)
            if ok:
                rules = RobotsRules.parse(result.body, self.user_agent, max_bytes=self.max_bytes)
                return rules, self.expiry, None
            if 300 <= status < 400:
                location = result.header("location")
                if not location or not location.strip() or hop == self.max_redirects:
                    return unavailable  # RFC 9309 2.3.1.2: MAY treat as unavailable
                target = urls.resolve(url, urls.header_url(location.strip()))
                if target is None:
                    return unavailable
                url = target
                continue
            wait = parse_retry_after(result.header("retry-after"), self._epoch()) if status in (429, 503) else None
            if status == 429:
                return unreachable(f"HTTP {status}", wait)
            if 400 <= status < 500:
                return unavailable
            return unreachable(f"HTTP {status}", wait)  # 5xx, and anything else unexpected
        return unavailable  # not reached: the last hop returns above
