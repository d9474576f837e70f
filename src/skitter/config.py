"""Crawl configuration: typed, frozen objects with named defaults, and one settings registry.

Every crawl setting is a field of ``CrawlConfig`` made with ``setting()`` (default, help, choices,
lower bound, typed once). ``SETTINGS`` lists them: the CLI builds its flags from it and
``docs/settings.md`` is checked against it by a test (tests/unit/test_docs.py), so no setting
exists that the docs do not describe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

from . import __version__

DEFAULT_USER_AGENT = f"skitter/{__version__}"


@dataclass(frozen=True, slots=True)
class Setting:
    """One user setting as the CLI and docs/settings.md see it (derived from CrawlConfig's fields)."""

    name: str          # the dataclass field on CrawlConfig, and --name-with-dashes on the CLI
    default: Any
    help: str
    type: type = str
    choices: tuple[str, ...] | None = None
    at_least: float | None = None   # validate() refuses a smaller value
    at_most: float | None = None    # ... and a larger one (every number: MAX_NUMBER at most)


#: The largest number any setting takes (SQLite's integers are 64-bit; a larger --max-pages or
#: --near-dup-window was "datatype mismatch", a larger --max-body an overflow in curl).
MAX_NUMBER = 2 ** 62
DAY = 86400.0


def setting(default: Any, help: str, *, choices: tuple[str, ...] | None = None,
            at_least: float | None = None, at_most: float | None = None) -> Any:
    """A CrawlConfig field that is a user setting: its default, help, choices and bounds."""
    return field(default=default, metadata={"help": help, "choices": choices, "at_least": at_least,
                                            "at_most": at_most})


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    """Every crawl setting. Each field made with ``setting()`` is a CLI flag and a row of
    docs/settings.md; ``SETTINGS`` below is derived from these fields, so a default is typed once."""

    max_pages: int = setting(0, "stop after this many fetched pages (0 = no limit); with --redis, for the whole cluster",
                             at_least=0)
    max_depth: int = setting(10, "links deeper than this many hops from a seed are not followed (seed 004)", at_least=0)
    strategy: str = setting("bfs", "crawl order: bfs (breadth-first), dfs (depth-first); focused on --topic: pdd, "
        "weight, cosine (naive best-first), shark (SharkSearch); by importance: backlinks, pagerank (OPIC) "
        "(docs/strategies.md)",
        choices=("bfs", "dfs", "pdd", "weight", "cosine", "shark", "backlinks", "pagerank"))
    topic: str = setting("", "focused strategies: the topic, as words (stemmed, stop words dropped)")
    topic_file: str = setting("", "focused strategies: exemplary documents of the topic (seed 000), a text or HTML "
        "file or a directory of them; their most frequent terms join --topic")
    threshold: float = setting(3.0, "pdd and weight: a page is relevant iff its weight is above this (seed 001: t > 3)")
    min_similarity: float = setting(0.1, "cosine and shark: a page is relevant iff its cosine similarity to the topic "
        "is above this", at_least=0, at_most=1)
    tunnel: int = setting(3, "focused strategies: follow links through at most this many off-topic pages in a row "
        "(tunnelling, seed 000; SharkSearch's depth bound d); links beyond go to the end of the queue (pdd and weight "
        "order links so already: it changes cosine and shark crawls)", at_least=0, at_most=1000)
    shark_gamma: float = setting(0.3, "shark: weight γ of the inherited score against the anchor neighbourhood")
    shark_delta: float = setting(0.5, "shark: decay δ of the inherited score per page")
    shark_beta: float = setting(0.8, "shark: weight β of the anchor text against the anchor context")
    link_weights: bool = setting(False, "backlinks and pagerank: weigh links by visibility × position / distance "
        "(seed 004)")
    forms: bool = setting(False, "the hidden web: fill in searchable GET forms found on crawled pages and follow the "
        "submissions like links (robots.txt, scope, politeness, traps, URL-seen); never POST, login, sign-up, "
        "vote, comment or cart forms (docs/forms.md)")
    form_budget: int = setting(500, "--forms: submissions per form at most (docs/forms.md: 90 % of the demo's hidden "
        "records within it)", at_least=1)
    form_words: str = setting("", "--forms: a text file of seed words for search boxes, tried first (the --topic "
        "words are too); then words of the result pages")
    scope: str = setting("host", "follow links within the seeds' hosts, their registrable domains, or anywhere",
        choices=("host", "domain", "any"))
    concurrency: int = setting(16, "requests in flight at once, over all hosts", at_least=1, at_most=10_000)
    per_host: int = setting(1, "connections to one host at once", at_least=1, at_most=1000)
    delay: float = setting(1.0, "seconds between two requests to one host (at least; robots Crawl-delay and "
        "the adaptive delay may make it longer)", at_least=0, at_most=DAY)
    adaptive_delay: float = setting(10.0, "wait at least this multiple of the host's last response time "
        "between requests (seed 002 suggests 10; 0 turns it off)", at_least=0, at_most=1000)
    max_crawl_delay: float = setting(60.0, "cap on a robots.txt Crawl-delay, in seconds", at_least=0, at_most=DAY)
    max_adaptive_delay: float = setting(60.0, "cap on the adaptive delay, in seconds (a host that answers in a "
        "minute is visited about once a minute, not every ten)", at_least=0, at_most=DAY)
    user_agent: str = setting(DEFAULT_USER_AGENT, "User-Agent header and the robots.txt product token")
    allow_private: bool = setting(False, "allow private, loopback and link-local addresses even when no seed is in "
        "that class")
    max_body: int = setting(10 * 1024 * 1024, "body cap in bytes; also caps the decompressed size", at_least=1024, at_most=1 << 40)
    connect_timeout: float = setting(10.0, "seconds to connect", at_least=0.001, at_most=DAY)
    read_timeout: float = setting(20.0, "seconds of under 1 byte/s (curl's low-speed limit: a stalled or dripping "
        "response) before a read times out (whole seconds: a fraction is rounded up)", at_least=0.001, at_most=DAY)
    total_timeout: float = setting(60.0, "seconds for a whole response", at_least=0.001, at_most=DAY)
    retries: int = setting(2, "retries (with exponential backoff) after a timeout, a refused or reset connection, "
        "a body cut short (fewer bytes than its Content-Length, or a reset mid-body: the last attempt's part is kept, "
        "`WARC-Truncated`), a 5xx or a 429; an unreachable robots.txt is tried as often, 3 times at most (4 s, 16 s, 64 s apart), before its host is disallowed",
        at_least=0, at_most=100)
    max_redirects: int = setting(5, "redirect hops followed from one URL", at_least=0, at_most=100)
    max_pages_per_host: int = setting(0, "page budget per host (0 = no limit)", at_least=0)
    host_burst: int = setting(0, "spider-trap throttle (seed 002): accept at most this many new URLs of one host "
        "every --host-window URLs processed (0 = off)", at_least=0)
    host_window: int = setting(1000, "the window, in processed URLs, of --host-burst", at_least=1)
    max_url_length: int = setting(2048, "longer URLs are dropped", at_least=16, at_most=1 << 20)
    max_repeated_segments: int = setting(3, "URLs whose path repeats one segment more often are dropped", at_least=0)
    robots_expiry: float = setting(86400.0, "seconds a cached robots.txt stays valid (RFC 9309: at most 24 h)",
                                   at_least=0, at_most=DAY)
    # the incremental crawler (issue #20, docs/recrawl.md); `skitter recrawl DIR` takes the same four
    recrawl: bool = setting(False, "go straight on from the discovery crawl into revisiting the collection, until "
        "Ctrl-C (or --for with skitter recrawl); reads robots.txt's sitemaps and /sitemap.xml too")
    rate: float = setting(1.0, "recrawl: revisits a second over the whole collection (the budget: above 0, at "
        "most 1000000; each host's politeness applies on top)")
    collection: int = setting(0, "recrawl: keep at most this many pages (0: every page found); a more important "
        "URL found outside replaces the least important page inside", at_least=0)
    policy: str = setting("optimal", "recrawl: how revisits are spread: optimal (most fresh pages for the budget, "
        "Cho and Garcia-Molina), age-optimal, uniform, proportional (to the change rate)",
        choices=("optimal", "age-optimal", "uniform", "proportional"))
    importance: str = setting("pagerank", "recrawl: what makes a page important (revisited more often, kept in a "
        "bounded collection): pagerank, backlinks (in-links) or none", choices=("pagerank", "backlinks", "none"))
    analysis_processes: int = setting(-1, "processes for parsing, hashing and WARC compression (-1: one per "
        "spare core, at most 4; 0: all in the crawl process)", at_least=-1, at_most=64)
    near_duplicates: str = setting("new-links", "near-duplicate detection (winnowing): off, or on and follow a "
        "near-duplicate's links only if it has links its original lacks (new-links) or always (all)",
        choices=("off", "new-links", "all"))
    near_dup_window: int = setting(50000, "pages the near-duplicate test compares a new page with: the last N "
        "indexed (about 800 bytes each in memory; 0: every page, memory growing with the crawl)", at_least=0)
    index_interval: float = setting(1.0, "seconds the live search index pauses when it has caught up with the "
        "crawl (it indexes in steps of 125 pages; 0: only when the crawl stops; -1: no index, build it "
        "later with skitter index)", at_most=DAY)
    stall_after: float = setting(30.0, "seconds without a request starting or finishing, while URLs are queued "
        "or the crawl's end waits, before the crawl writes what it is waiting for (DIR/crawl.log, skitter stats)", at_least=0.1, at_most=DAY)
    obey_robots: bool = setting(True, "obey robots.txt (the benchmark and the demo keep this on)")
    # Not user settings: how the crawl was started.
    seeds: tuple[str, ...] = field(default=())
    resolve: tuple[tuple[str, str], ...] = field(default=())  # host -> IP overrides (curl --resolve)

    def validate(self) -> CrawlConfig:
        """UsageError for a setting out of range (a crawl that would do nothing, or hang)."""
        from .errors import UsageError

        if not 0 < self.rate <= 1e6:   # (inf, or 1e300, broke the planning pass: an internal error)
            raise UsageError(f"--rate must be above 0 and at most 1000000 revisits a second, got {self.rate}")
        for s in SETTINGS:
            value = getattr(self, s.name)
            flag = f"--{s.name.replace('_', '-')}"
            if s.type is float and not math.isfinite(value):   # nan passes every comparison
                raise UsageError(f"{flag} must be a finite number, got {value}")
            if s.at_least is not None and value < s.at_least:
                raise UsageError(f"{flag} must be at least {s.at_least}, got {value}")
            if s.type in (int, float) and value > (MAX_NUMBER if s.at_most is None else s.at_most):
                raise UsageError(f"{flag} must be at most {_number(s.at_most or MAX_NUMBER)}, got {value}")
        if not self.user_agent.strip() or not all(" " <= c <= "~" for c in self.user_agent):
            # (a CR LF in it added header lines to every request; a non-ASCII one failed on the first)
            raise UsageError(f"--user-agent must be printable ASCII on one line, got {self.user_agent!r}")
        if 0 < self.near_dup_window < 100:
            raise UsageError(f"--near-dup-window must be 0 (every page) or at least 100, got {self.near_dup_window}")
        return self

    def analysis_process_count(self) -> int:
        if self.analysis_processes >= 0:
            return self.analysis_processes
        import os

        return max(0, min(4, (os.cpu_count() or 1) - 1))

    def with_(self, **changes: Any) -> CrawlConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _number(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else str(x)


_TYPES = {"int": int, "float": float, "str": str, "bool": bool}

SETTINGS: tuple[Setting, ...] = tuple(
    Setting(f.name, f.default, f.metadata["help"], _TYPES[str(f.type)], f.metadata["choices"], f.metadata["at_least"],
            f.metadata["at_most"])
    for f in fields(CrawlConfig) if "help" in f.metadata)
