"""Which discovered links may enter the frontier: scope and spider-trap defences. Pure, no I/O.

Checked for every link, cheapest first:
1. depth: a link deeper than ``max_depth`` hops from a seed is not followed (seed 004: 10);
2. URL length (seed 002: "consider limiting the url size");
3. repeated path segments (``/a/b/a/b/a/b/...``, a classic relative-link trap);
4. scope: the seeds' hosts, their registrable domains, or any host;
5. per-host budget: at most ``max_pages_per_host`` URLs admitted for one host;
6. the seed-002 throttle: at most ``host_burst`` new URLs of one host every ``host_window`` URLs
   processed ("only accept k urls for the same domain every n urls processed").

The URL-seen test comes after these, in the frontier (``INSERT OR IGNORE`` on the fingerprint).
"""

from __future__ import annotations

from collections import Counter

from .config import CrawlConfig
from .urls import host_key, host_of, in_scope, path_depth_and_repeats, registrable_domain


class LinkFilter:
    def __init__(self, config: CrawlConfig, seeds: list[str], admitted: Counter[str] | None = None) -> None:
        self.config = config
        self.seed_hosts = frozenset(host_of(s) for s in seeds)
        self.seed_domains = frozenset(registrable_domain(h) for h in self.seed_hosts)
        # URLs admitted per host so far (rebuilt from the database on resume).
        self.admitted: Counter[str] = admitted if admitted is not None else Counter()
        self._burst: Counter[str] = Counter()
        self._processed = 0
        self.rejected: Counter[str] = Counter()

    def reject_reason(self, url: str, depth: int) -> str | None:
        """Why ``url`` (canonical, at ``depth``) may not be admitted, or None if it may."""
        c = self.config
        if depth > c.max_depth:
            return "depth"
        reason = self._url_reason(url)
        if reason is not None:
            return reason
        key = host_key(url)
        if c.max_pages_per_host and self.admitted[key] >= c.max_pages_per_host:
            return "host-budget"
        if c.host_burst and self._burst[key] >= c.host_burst:
            return "host-burst"
        return None

    def _url_reason(self, url: str) -> str | None:
        """What in the URL alone keeps it out, whatever its depth and the hosts' budgets."""
        c = self.config
        if len(url) > c.max_url_length:
            return "url-length"
        if c.max_repeated_segments:
            _, repeats = path_depth_and_repeats(url)
            if repeats > c.max_repeated_segments:
                return "repeated-segments"
        if not in_scope(url, c.scope, self.seed_hosts, self.seed_domains):
            return "scope"
        return None

    def may_enter(self, url: str) -> bool:
        """Whether ``url`` could pass :meth:`admit` at some depth while its host has budget left:
        its length, its repeated path segments, its scope. Counts nothing (the distributed crawl
        shares in-link counts and cash only for such URLs)."""
        return self._url_reason(url) is None

    def admit(self, url: str, depth: int) -> bool:
        reason = self.reject_reason(url, depth)
        if reason is not None:
            self.rejected[reason] += 1
            return False
        return True

    def admitted_new(self, url: str) -> None:
        """The frontier took ``url`` as new: count it against its host's budgets."""
        key = host_key(url)
        self.admitted[key] += 1
        self._burst[key] += 1

    def processed(self) -> None:
        """One URL processed; every ``host_window`` of them the burst counters start again."""
        self._processed += 1
        if self.config.host_burst and self._processed % max(1, self.config.host_window) == 0:
            self._burst.clear()
