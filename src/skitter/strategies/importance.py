"""Importance-driven crawling (seed 004): ``backlinks`` and ``pagerank`` (OPIC).

Both order the frontier by an estimate of a page's importance that grows while the crawl runs, so
a URL already queued must move up when new links to it are found. They have the optional scorer
hook ``on_page(parent, links) -> [(url, new priority), ...]``: the crawl loop calls it once per
parsed page, before scoring the page's links, and raises the priority of each returned URL that is
still queued (the frontier's ``reprioritize``). Without the hook in the loop, ``score`` does the
same bookkeeping the first time it sees a page (only the queued URLs' priorities then stay as
they were when queued).

- ``backlinks``: the number of fetched pages seen linking to the URL (Cho, Garcia-Molina and
  Page's backlink count: seed 004's "importance is the number of URLs linking to the current URL").
- ``pagerank``: OPIC, the On-line Page Importance Computation (Abiteboul, Preda and Cobena 2003), an
  online estimate of PageRank: every seed starts with cash 1; a fetched page hands its cash on to
  the pages it links to, split evenly; the priority of a queued URL is the cash it has received.
  Cash that reaches pages already fetched is kept out of the frontier (a one-pass crawl does not
  revisit), which leaves the order among the queued URLs as OPIC's.

Links marked nofollow (or on a nofollow page) and self-links count for nothing, a page's repeated
links to one URL count once. ``weighted`` (off by default; see docs/strategies.md) weighs each
link by seed 004's attributes, ``visibility × position / distance``.

In a distributed crawl (docs/distributed.md) the counts and cash are the cluster's: with
``shared`` set, ``spread`` also records what it adds to each URL (``take_deltas``), the Redis
frontier adds that to the URL's total in Redis and hands the totals back (``absorb``), so a URL
linked from pages that several workers fetched gets the sum of their links.

The state (counts, cash) is in memory, about 150 bytes per URL discovered. On a resume the
composition root (skitter.api) calls ``restore(seeds, pages)`` with what the crawl store replays:
the seeds, then every parsed page's stored links in fetch order (exactly what the interrupted
crawl had done), so the estimate goes on where it stopped; the priorities stored in the frontier
are kept as they are.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..models import Link, Page
from .base import ParentContext

SEED_PRIORITY = 1e9


def link_weight(link: Link) -> float:
    return link.visibility * link.position / max(1, link.distance)


class _Importance:
    name = "importance"
    reads_text = False
    reads_link_context = False

    def __init__(self, *, weighted: bool = False) -> None:
        self.weighted = weighted
        self.fetched: set[str] = set()
        self._counted: str | None = None   # the last page whose links were taken into account
        self._hooked = False               # the loop calls on_page
        self.shared = False                # a distributed crawl: what spread adds is also recorded
        self.deltas: dict[str, float] = {}   # URL -> what spread added to it, not yet shared

    def take_deltas(self) -> dict[str, float]:
        """What ``spread`` added to each URL since the last call (with ``shared``)."""
        deltas, self.deltas = self.deltas, {}
        return deltas

    def _added(self, url: str, amount: float) -> None:
        if self.shared:
            self.deltas[url] = self.deltas.get(url, 0.0) + amount

    def absorb(self, totals: dict[str, float]) -> None:
        """The cluster's totals of some URLs (each at least what this worker added): they replace
        this worker's own."""
        raise NotImplementedError

    @classmethod
    def from_config(cls, config) -> _Importance:
        return cls(weighted=getattr(config, "link_weights", False))

    def seed_priority(self, url: str) -> float:
        return SEED_PRIORITY

    def targets(self, parent: ParentContext, links: list[Link]) -> dict[str, float]:
        """The followable link targets of a page, each with its weight (the heaviest link to it)."""
        if parent.page.nofollow:
            return {}
        out: dict[str, float] = {}
        for link in links:
            if link.nofollow or link.url == parent.url:
                continue
            w = link_weight(link) if self.weighted else 1.0
            if w > out.get(link.url, 0.0):
                out[link.url] = w
        return out

    def on_page(self, parent: ParentContext, links: list[Link]) -> list[tuple[str, float]]:
        self._hooked = True
        return self._take_in(parent, links)

    def _take_in(self, parent: ParentContext, links: list[Link]) -> list[tuple[str, float]]:
        if self._counted == parent.url:
            return []
        self._counted = parent.url
        return self.spread(parent, self.targets(parent, links))

    def score(self, link: Link, parent: ParentContext) -> float:
        # a loop without the on_page hook: the page is taken in now. (With the hook, never here:
        # other pages may be taken in between a page's on_page and its links' scores, while the
        # loop awaits the frontier, and the page would be counted twice.)
        if not self._hooked and self._counted != parent.url:
            self._take_in(parent, parent.page.links)
        return self.priority_of(link.url)

    def restore(self, seeds: Iterable[str],
                pages: Iterable[tuple[str, bool, list[tuple[str, int, int, int, bool]]]]) -> int:
        """Rebuild the state of an interrupted crawl from what it stored (on resume; the store's
        ``replay_seeds`` and ``replay_pages``).

        Replays what the crawl did: ``seed_priority`` for each seed (in queue order), then, for
        every page whose links were extracted, in fetch order, ``relevance`` and then ``on_page``'s
        bookkeeping over its stored links ``(target, visibility, position, distance, nofollow)``,
        in page order, unless the page was nofollow. Returns the number of pages replayed.
        About 7 s per million stored links."""
        for url in seeds:
            self.seed_priority(url)
        n = 0
        empty = Page()
        weighted = self.weighted
        for url, nofollow, links in pages:
            targets: dict[str, float] = {}
            if not nofollow:
                for dst, visibility, position, distance, link_nofollow in links:
                    if link_nofollow or dst == url:
                        continue
                    w = visibility * position / max(1, distance) if weighted else 1.0
                    if w > targets.get(dst, 0.0):
                        targets[dst] = w
            relevance = self.relevance(url, empty)
            parent = ParentContext(url=url, page=empty, depth=0, priority=0.0, relevance=relevance)
            self.spread(parent, targets)
            n += 1
        self._counted = None
        return n

    def relevance(self, url: str, page: Page) -> float:
        raise NotImplementedError

    def spread(self, parent: ParentContext, targets: dict[str, float]) -> list[tuple[str, float]]:
        raise NotImplementedError

    def priority_of(self, url: str) -> float:
        raise NotImplementedError


class BacklinkScorer(_Importance):
    name = "backlinks"

    def __init__(self, *, weighted: bool = False) -> None:
        super().__init__(weighted=weighted)
        self.inlinks: dict[str, float] = {}

    def relevance(self, url: str, page: Page) -> float:
        self.fetched.add(url)
        return self.inlinks.get(url, 0.0)

    def spread(self, parent: ParentContext, targets: dict[str, float]) -> list[tuple[str, float]]:
        inlinks, fetched = self.inlinks, self.fetched
        updates = []
        for url, w in targets.items():
            n = inlinks.get(url, 0.0) + w
            inlinks[url] = n
            self._added(url, w)
            if url not in fetched:
                updates.append((url, n))
        return updates

    def absorb(self, totals: dict[str, float]) -> None:
        inlinks = self.inlinks
        for url, total in totals.items():
            if total > inlinks.get(url, 0.0):
                inlinks[url] = total

    def priority_of(self, url: str) -> float:
        return self.inlinks.get(url, 0.0)


class OPICScorer(_Importance):
    name = "pagerank"

    def __init__(self, *, weighted: bool = False) -> None:
        super().__init__(weighted=weighted)
        self.cash: dict[str, float] = {}
        self._paid: tuple[str, float] | None = None   # (url, cash) of the page being processed

    def seed_priority(self, url: str) -> float:
        if url not in self.fetched:
            self.cash[url] = max(self.cash.get(url, 0.0), 1.0)
        return SEED_PRIORITY

    def relevance(self, url: str, page: Page) -> float:
        """The page's cash when fetched (its importance estimate); it is handed on by on_page."""
        self.fetched.add(url)
        cash = self.cash.pop(url, 0.0)
        self._paid = (url, cash)
        return cash

    def spread(self, parent: ParentContext, targets: dict[str, float]) -> list[tuple[str, float]]:
        if self._paid is not None and self._paid[0] == parent.url:
            cash = self._paid[1]
            self._paid = None
        else:
            cash = self.cash.pop(parent.url, 0.0)
        total = sum(targets.values())
        if not cash or not total:
            return []
        cash_of, fetched = self.cash, self.fetched
        updates = []
        for url, w in targets.items():
            if url in fetched:
                continue
            c = cash_of.get(url, 0.0) + cash * w / total
            cash_of[url] = c
            self._added(url, cash * w / total)
            updates.append((url, c))
        return updates

    def absorb(self, totals: dict[str, float]) -> None:
        cash_of, fetched = self.cash, self.fetched
        for url, total in totals.items():
            if url not in fetched and total > cash_of.get(url, 0.0):
                cash_of[url] = total

    def priority_of(self, url: str) -> float:
        return self.cash.get(url, 0.0)
