"""Crawl configuration: typed, frozen objects with named defaults, and one settings registry.

``SETTINGS`` is the single list of every crawl setting: the CLI builds its flags from it and
``docs/settings.md`` is checked against it by a test (tests/unit/test_docs.py), so no setting
exists that the docs do not describe.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from . import __version__

DEFAULT_USER_AGENT = f"skitter/{__version__}"


@dataclass(frozen=True, slots=True)
class Setting:
    name: str          # the dataclass field on CrawlConfig, and --name-with-dashes on the CLI
    default: Any
    help: str
    type: type = str
    choices: tuple[str, ...] | None = None


SETTINGS: tuple[Setting, ...] = (
    Setting("max_pages", 0, "stop after this many fetched pages (0 = no limit)", int),
    Setting("max_depth", 10, "links deeper than this many hops from a seed are not followed (seed 004)", int),
    Setting("strategy", "bfs", "crawl order: bfs (breadth-first), dfs (depth-first); focused on --topic: pdd, "
            "weight, cosine (naive best-first), shark (SharkSearch); by importance: backlinks, pagerank (OPIC) "
            "(docs/strategies.md)", str,
            ("bfs", "dfs", "pdd", "weight", "cosine", "shark", "backlinks", "pagerank")),
    Setting("topic", "", "focused strategies: the topic, as words (stemmed, stop words dropped)", str),
    Setting("topic_file", "", "focused strategies: exemplary documents of the topic (seed 000), a text or HTML "
            "file or a directory of them; their most frequent terms join --topic", str),
    Setting("threshold", 3.0, "pdd and weight: a page is relevant iff its weight is above this (seed 001: t > 3)",
            float),
    Setting("min_similarity", 0.1, "cosine and shark: a page is relevant iff its cosine similarity to the topic "
            "is above this", float),
    Setting("tunnel", 3, "focused strategies: follow links through at most this many off-topic pages in a row "
            "(tunnelling, seed 000; SharkSearch's depth bound d); links beyond go to the end of the queue", int),
    Setting("shark_gamma", 0.3, "shark: weight γ of the inherited score against the anchor neighbourhood", float),
    Setting("shark_delta", 0.5, "shark: decay δ of the inherited score per page", float),
    Setting("shark_beta", 0.8, "shark: weight β of the anchor text against the anchor context", float),
    Setting("link_weights", False, "backlinks and pagerank: weigh links by visibility × position / distance "
            "(seed 004)", bool),
    Setting("scope", "host", "follow links within the seeds' hosts, their registrable domains, or anywhere",
            str, ("host", "domain", "any")),
    Setting("concurrency", 16, "requests in flight at once, over all hosts", int),
    Setting("per_host", 1, "connections to one host at once", int),
    Setting("delay", 1.0, "seconds between two requests to one host (at least; robots Crawl-delay and "
            "the adaptive delay may make it longer)", float),
    Setting("adaptive_delay", 10.0, "wait at least this multiple of the host's last response time "
            "between requests (seed 002 suggests 10; 0 turns it off)", float),
    Setting("max_crawl_delay", 60.0, "cap on a robots.txt Crawl-delay, in seconds", float),
    Setting("user_agent", DEFAULT_USER_AGENT, "User-Agent header and the robots.txt product token", str),
    Setting("allow_private", False, "allow private, loopback and link-local addresses even when no seed is in "
            "that class", bool),
    Setting("max_body", 10 * 1024 * 1024, "body cap in bytes; also caps the decompressed size", int),
    Setting("connect_timeout", 10.0, "seconds to connect", float),
    Setting("read_timeout", 20.0, "seconds without a byte before a read times out (whole seconds: a fraction is rounded up)", float),
    Setting("total_timeout", 60.0, "seconds for a whole response", float),
    Setting("retries", 2, "retries (with exponential backoff) after a timeout, refused connection or 5xx", int),
    Setting("max_redirects", 5, "redirect hops followed from one URL", int),
    Setting("max_pages_per_host", 0, "page budget per host (0 = no limit)", int),
    Setting("host_burst", 0, "spider-trap throttle (seed 002): accept at most this many new URLs of one host "
            "every --host-window URLs processed (0 = off)", int),
    Setting("host_window", 1000, "the window, in processed URLs, of --host-burst", int),
    Setting("max_url_length", 2048, "longer URLs are dropped", int),
    Setting("max_repeated_segments", 3, "URLs whose path repeats one segment more often are dropped", int),
    Setting("robots_expiry", 86400.0, "seconds a cached robots.txt stays valid (RFC 9309: at most 24 h)", float),
    # the incremental crawler (issue #20, docs/recrawl.md); `skitter recrawl DIR` takes the same four
    Setting("recrawl", False, "go straight on from the discovery crawl into revisiting the collection, until "
            "Ctrl-C (or --for with skitter recrawl); reads robots.txt's sitemaps and /sitemap.xml too", bool),
    Setting("rate", 1.0, "recrawl: revisits a second over the whole collection (the budget; each host's "
            "politeness applies on top)", float),
    Setting("collection", 0, "recrawl: keep at most this many pages (0: every page found); a more important "
            "URL found outside replaces the least important page inside", int),
    Setting("policy", "optimal", "recrawl: how revisits are spread: optimal (most fresh pages for the budget, "
            "Cho and Garcia-Molina), age-optimal, uniform, proportional (to the change rate)", str,
            ("optimal", "age-optimal", "uniform", "proportional")),
    Setting("importance", "pagerank", "recrawl: what makes a page important (revisited more often, kept in a "
            "bounded collection): pagerank, backlinks (in-links) or none", str, ("pagerank", "backlinks", "none")),
    Setting("analysis_processes", -1, "processes for parsing, hashing and WARC compression (-1: one per "
            "spare core, at most 4; 0: all in the crawl process)", int),
    Setting("near_duplicates", "new-links", "near-duplicate detection (winnowing): off, or on and follow a "
            "near-duplicate's links only if it has links its original lacks (new-links) or always (all)",
            str, ("off", "new-links", "all")),
    Setting("near_dup_window", 50000, "pages the near-duplicate test compares a new page with: the last N "
            "indexed (about 800 bytes each in memory; 0: every page, memory growing with the crawl)", int),
    Setting("index_interval", 1.0, "seconds the live search index pauses when it has caught up with the "
            "crawl (it indexes in steps of 250 pages; 0: only when the crawl stops; -1: no index, build it "
            "later with skitter index)", float),
    Setting("stall_after", 30.0, "seconds without a request starting or finishing, while URLs are queued, "
            "before the crawl writes what it is waiting for (DIR/crawl.log, skitter stats)", float),
    Setting("obey_robots", True, "obey robots.txt (the benchmark and the demo keep this on)", bool),
)


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    """Every crawl setting, defaults from ``SETTINGS``."""

    max_pages: int = 0
    max_depth: int = 10
    strategy: str = "bfs"
    topic: str = ""
    topic_file: str = ""
    threshold: float = 3.0
    min_similarity: float = 0.1
    tunnel: int = 3
    shark_gamma: float = 0.3
    shark_delta: float = 0.5
    shark_beta: float = 0.8
    link_weights: bool = False
    scope: str = "host"
    concurrency: int = 16
    per_host: int = 1
    delay: float = 1.0
    adaptive_delay: float = 10.0
    max_crawl_delay: float = 60.0
    user_agent: str = DEFAULT_USER_AGENT
    allow_private: bool = False
    max_body: int = 10 * 1024 * 1024
    connect_timeout: float = 10.0
    read_timeout: float = 20.0
    total_timeout: float = 60.0
    retries: int = 2
    max_redirects: int = 5
    max_pages_per_host: int = 0
    host_burst: int = 0
    host_window: int = 1000
    max_url_length: int = 2048
    max_repeated_segments: int = 3
    robots_expiry: float = 86400.0
    recrawl: bool = False
    rate: float = 1.0
    collection: int = 0
    policy: str = "optimal"
    importance: str = "pagerank"
    analysis_processes: int = -1
    near_duplicates: str = "new-links"
    near_dup_window: int = 50000
    index_interval: float = 1.0
    stall_after: float = 30.0
    obey_robots: bool = True
    # Not user settings: how the crawl was started.
    seeds: tuple[str, ...] = field(default=())
    resolve: tuple[tuple[str, str], ...] = field(default=())  # host -> IP overrides (curl --resolve)

    def validate(self) -> "CrawlConfig":
        """UsageError for a setting out of range (a crawl that would do nothing, or hang)."""
        from .errors import UsageError

        at_least = {"concurrency": 1, "per_host": 1, "max_depth": 0, "max_pages": 0, "delay": 0,
                    "adaptive_delay": 0, "max_crawl_delay": 0, "max_body": 1024, "connect_timeout": 0.001,
                    "read_timeout": 0.001, "total_timeout": 0.001, "retries": 0, "max_redirects": 0,
                    "max_pages_per_host": 0, "host_burst": 0, "host_window": 1, "max_url_length": 16,
                    "max_repeated_segments": 0, "robots_expiry": 0, "analysis_processes": -1, "tunnel": 0,
                    "near_dup_window": 0, "stall_after": 0.1, "collection": 0}
        for name, low in at_least.items():
            if getattr(self, name) < low:
                raise UsageError(f"--{name.replace('_', '-')} must be at least {low}, got {getattr(self, name)}")
        if not self.rate > 0:
            raise UsageError(f"--rate must be above 0, got {self.rate}")
        if 0 < self.near_dup_window < 100:
            raise UsageError(f"--near-dup-window must be 0 (every page) or at least 100, got {self.near_dup_window}")
        return self

    def analysis_process_count(self) -> int:
        if self.analysis_processes >= 0:
            return self.analysis_processes
        import os

        return max(0, min(4, (os.cpu_count() or 1) - 1))

    def with_(self, **changes: Any) -> "CrawlConfig":
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _check_registry() -> None:
    defaults = CrawlConfig()
    for s in SETTINGS:
        assert getattr(defaults, s.name) == s.default, s.name


_check_registry()
