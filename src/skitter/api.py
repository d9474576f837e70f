"""The composition root and skitter's Python API.

:func:`build_crawler` is the one place that builds a crawl's parts and wires them into the crawl
loop (skitter.loop): the store (SQLite + WARC), the frontier, the transport, the robots cache, the
scorer, the link filter and the duplicate tests. Hand in another frontier, transport, clock or
scorer and the same loop runs with it: that is how the tests run the loop without a server
(:mod:`skitter.testing`), how a distributed worker plugs in its Redis frontier, and how a user
plugs in a crawl strategy of their own.

    >>> import skitter
    >>> summary = skitter.crawl(["https://example.org/"], "crawl", max_pages=100)
    >>> for page in skitter.open_crawl("crawl").pages():
    ...     print(page.url, page.title)
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast
from collections.abc import Callable, Iterator

from .clock import SYSTEM, Clock
from .config import CrawlConfig
from .neardup import DuplicateTests, NearDupIndex
from .frontier.base import Frontier
from .frontier.local import LocalFrontier
from .frontier.politeness import Politeness
from .linkfilter import LinkFilter
from .loop import Crawler, check_seeds
from .robots.cache import RobotsCache
from .robots.rules import product_token
from .store.crawlstore import CrawlStore
from .strategies import Scorer, make_scorer
from .strategies.base import Restorable
from .transport import Transport

__all__ = ["build_crawler", "crawl", "open_crawl", "StoredCrawl", "StoredPage"]

#: An unreachable robots.txt is tried again --retries times, 3 at most (4 s, 16 s, 64 s apart): a
#: --retries of 100 for pages must not hold a host whose robots.txt is down for hours.
ROBOTS_RETRIES = 3


def build_crawler(directory: Path | str, config: CrawlConfig, *,
                  frontier: Frontier | Callable[[CrawlStore], Frontier] | None = None,
                  transport: Transport | None = None, clock: Clock | None = None, scorer: Scorer | None = None,
                  on_progress: Callable[[Crawler], None] | None = None, until: float | None = None) -> Crawler:
    """A crawl of ``config.seeds`` into ``directory`` (an unfinished crawl there is resumed),
    ready to ``await crawler.run()``.

    ``frontier``: a frontier, or a function of the opened store that makes one (default: the
    local SQLite frontier). ``transport``: how to fetch (default: libcurl). ``clock``: the
    crawl's clocks (default: the system's). ``scorer``: a crawl strategy of your own, any object
    with the :class:`skitter.strategies.Scorer` methods (default: ``config.strategy``'s).

    With ``config.recrawl`` the crawl goes on revisiting its collection (skitter.recrawl.revisit:
    the same loop with the recrawl's part handed in) until stopped, or until ``until`` (epoch
    seconds, the end of ``skitter recrawl --for``)."""
    clock = clock or SYSTEM
    seeds = check_seeds(list(config.seeds))
    scorer = scorer if scorer is not None else make_scorer(config.strategy, config)   # a bad topic fails first
    form_words = _form_words(config)   # an unreadable --form-words file fails before the directory is made
    store = CrawlStore.open(Path(directory), config.with_(seeds=tuple(seeds)).to_dict(),
                            software=config.user_agent, now=clock.time())
    try:
        config = config.with_(seeds=tuple(store.config["seeds"]))
        if store.resumed and isinstance(scorer, Restorable):   # importance state (backlinks, OPIC)
            scorer.restore(store.replay_seeds(), store.replay_pages())
        front: Frontier
        if frontier is None:
            front = LocalFrontier(store.db, Politeness(delay=config.delay, per_host=config.per_host,
                                                          adaptive=config.adaptive_delay,
                                                          max_crawl_delay=config.max_crawl_delay,
                                                          max_adaptive=config.max_adaptive_delay), clock=clock)
        elif callable(frontier) and not hasattr(frontier, "next_ready"):
            front = frontier(store)
        else:   # an object with next_ready: a frontier (mypy does not narrow the union on hasattr)
            front = cast(Frontier, frontier)
        if transport is None:
            from .fetch import Fetcher
            from .netguard import allowed_classes

            transport = Fetcher(config, allowed=allowed_classes(list(config.seeds), config.allow_private,
                                                                resolved=dict(config.resolve)),
                                resolver_overrides=dict(config.resolve))
        robots = RobotsCache(transport.get, config.user_agent, expiry=config.robots_expiry, clock=clock.monotonic,
                             retries=min(config.retries, ROBOTS_RETRIES), epoch=clock.time)
        duplicates = DuplicateTests(store, _near_duplicate_index(store, config), config.near_duplicates)
        link_filter = LinkFilter(config, list(config.seeds), store.admitted_per_host())
        forms = None
        if form_words is not None:   # --forms (issue #22): the form crawler, docs/forms.md
            from .formcrawl import FormCrawl

            forms = FormCrawl(store, config, robots=robots, link_filter=link_filter, scorer=scorer,
                              seed_words=form_words, now=clock.time)
        recrawl = None
        if config.recrawl:   # revisiting (issue #20): docs/recrawl.md
            from .recrawl.revisit import Recrawl

            recrawl = Recrawl(store, config, clock, front, until=until)
        crawler = Crawler(config=config, seeds=seeds, store=store, frontier=front, transport=transport,
                          robots=robots, scorer=scorer, link_filter=link_filter,
                          duplicates=duplicates, clock=clock, analyse_options=_analyse_options(config, scorer, duplicates),
                          on_progress=on_progress, forms=forms, recrawl=recrawl)
        if scorer.name in ("dfs", "bfs") and forms is None and recrawl is None and isinstance(front, LocalFrontier):
            # --max-depth: the URLs cut because the crawl found them deeper first (dfs often; bfs when
            # a fast host's deep page is parsed before a slow host's shallow one), when the frontier
            # runs dry (skitter.depthrepair; a distributed crawl: not yet, docs/strategies.md)
            front.refill = partial(crawler.refill_depths, front)
        return crawler
    except BaseException:
        store.close()
        raise


def _form_words(config: CrawlConfig) -> list[str] | None:
    """With ``--forms``, the seed words of search boxes: the ``--topic`` words, then the
    ``--form-words`` file's (None: forms are off)."""
    if not config.forms:
        return None
    from .formcrawl import read_form_words

    return config.topic.split() + (read_form_words(config.form_words) if config.form_words else [])


def _near_duplicate_index(store: CrawlStore, config: CrawlConfig) -> NearDupIndex | None:
    """The near-duplicate index as the crawl left it: the newest ``near_dup_window`` pages'
    sketches, oldest first (None when the test is off)."""
    if config.near_duplicates == "off":
        return None
    window = config.near_dup_window or None
    index = NearDupIndex(window=window)
    index.add_records(store.recent_sketches(None if window is None else window + window // 4))
    return index


def _analyse_options(config: CrawlConfig, scorer: Scorer, duplicates: DuplicateTests) -> tuple:
    """What ``analyse`` needs besides the response: the same for every page of the crawl. The
    analysis process deflates the page text (``pack``), except with one process running the Python
    walk (skitter._speedups not built): that process is then the busier of the two, so the crawl
    process does it (docs/benchmarks.md)."""
    from . import neardup

    pack = config.analysis_process_count() != 1 or neardup._speedups is not None
    probe = 0 if duplicates.index is None else duplicates.index.probe
    return (product_token(config.user_agent), probe, scorer.reads_text, pack, scorer.reads_link_context,
            config.forms, config.recrawl)


def crawl(seeds: list[str], directory: Path | str = "crawl", *, scorer: Scorer | None = None,
          **settings: Any) -> dict[str, Any]:
    """Crawl from ``seeds`` into ``directory`` with the settings of ``skitter crawl`` (as keyword
    arguments: ``max_pages=100``, ``strategy="shark"``, ``topic="…"``…) and return the crawl's
    summary (as ``skitter stats --json``). Runs its own event loop: call it from synchronous code;
    from a coroutine, ``await build_crawler(...).run()`` instead."""
    from .stats import load_summary

    config = CrawlConfig(seeds=tuple(seeds), **settings).validate()
    crawler = build_crawler(directory, config, scorer=scorer)
    asyncio.run(crawler.run())
    return load_summary(Path(directory))


@dataclass(frozen=True, slots=True)
class StoredPage:
    """A stored HTML page of a crawl, as :meth:`StoredCrawl.pages` yields it."""

    url: str
    status: int | None
    fetched_at: str | None
    title: str
    description: str
    headings: list[str]
    text: str
    links: list[str]


class StoredCrawl:
    """A crawl directory opened for reading (also while a crawl runs in it)."""

    def __init__(self, directory: Path | str) -> None:
        from .store.db import CrawlDB

        self.directory = Path(directory)
        self._db = CrawlDB(self.directory, readonly=True)

    def pages(self) -> Iterator[StoredPage]:
        """Every stored HTML page, in fetch order, with its text and the URLs it links to."""
        from .store.text import page_text

        conn = self._db.conn
        rows = conn.execute(
            "SELECT p.fp, p.url, f.status, f.fetched_at, p.title, p.description, p.headings, p.text"
            " FROM pages p LEFT JOIN fetches f ON f.fp = p.fp ORDER BY f.fetch_order")
        for fp, url, status, fetched_at, title, description, headings, text in rows:
            links = [r[0] for r in conn.execute("SELECT dst_url FROM links WHERE src = ? ORDER BY rowid", (fp,))]
            yield StoredPage(url, status, fetched_at, title or "", description or "",
                             (headings or "").split("\n") if headings else [], page_text(text) or "", links)

    def records(self) -> Iterator[dict[str, Any]]:
        """The export records (docs/export.md), one per URL the crawl tried."""
        from .store.export import iter_records

        yield from iter_records(self._db)

    def close(self) -> None:
        self._db.conn.close()

    def __enter__(self) -> StoredCrawl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_crawl(directory: Path | str) -> StoredCrawl:
    """Read a crawl directory: ``open_crawl(dir).pages()``, ``.records()``."""
    return StoredCrawl(directory)
