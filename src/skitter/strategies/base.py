"""The scorer seam: a crawl strategy turns a candidate link into a priority (higher = sooner).

Scorers are pure: they see the link, what is known of the page that links to it, and the depth,
and never do I/O. BFS and DFS are scorers too. The focused and importance strategies of seeds
001-004 plug in here (``relevance`` gives a page's own score, stored and exported as ``score``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from collections.abc import Iterable

from ..models import Link, Page


@dataclass(frozen=True, slots=True)
class ParentContext:
    """What the scorer knows about the page a link was found on."""

    url: str
    page: Page
    depth: int
    priority: float
    relevance: float | None = None


class Scorer(Protocol):
    name: str
    reads_text: bool
    """Whether ``relevance``/``score`` read ``page.text``; if not, the worker processes do not
    send the text to the crawl process (only its packed form, for storage)."""
    reads_link_context: bool
    """Whether ``score`` reads ``link.context`` (the words around a link: SharkSearch's anchor
    context); if not, the analysis processes leave it empty: ``parse_html`` takes 0.26 ms a page
    of the benchmark web instead of 0.30."""

    def seed_priority(self, url: str) -> float:
        """Priority of a seed URL."""

    def relevance(self, url: str, page: Page) -> float | None:
        """The page's own score (relevance or importance), or None if the strategy has none."""

    def score(self, link: Link, parent: ParentContext) -> float:
        """Priority of a link found on ``parent`` (its depth is parent.depth + 1)."""


@runtime_checkable
class PageObserver(Protocol):
    """An optional capability: a scorer that learns from every parsed page (the importance
    strategies: in-link counts, OPIC cash) and asks the frontier to raise queued URLs."""

    def on_page(self, parent: ParentContext, links: list[Link]) -> list[tuple[str, float]]:
        """Called once per parsed page, before its links are scored: [(queued URL, new priority)]."""


@runtime_checkable
class Restorable(Protocol):
    """An optional capability: a scorer whose state a resumed crawl rebuilds from what the crawl
    stored (skitter.store.crawlstore.CrawlStore.replay_seeds / replay_pages)."""

    def restore(self, seeds: Iterable[str],
                pages: Iterable[tuple[str, bool, list[tuple[str, int, int, int, bool]]]]) -> int:
        """Replay; returns the number of pages replayed."""
