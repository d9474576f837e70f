"""The scorer seam: a crawl strategy turns a candidate link into a priority (higher = sooner).

Scorers are pure: they see the link, what is known of the page that links to it, and the depth,
and never do I/O. BFS and DFS are scorers too. The focused and importance strategies of seeds
001-004 plug in here (``relevance`` gives a page's own score, stored and exported as ``score``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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
    context); if not, the worker processes leave it empty: ``parse_html`` takes 0.26 ms a page
    of the benchmark web instead of 0.30. A scorer without the attribute gets it."""

    def seed_priority(self, url: str) -> float:
        """Priority of a seed URL."""

    def relevance(self, url: str, page: Page) -> float | None:
        """The page's own score (relevance or importance), or None if the strategy has none."""

    def score(self, link: Link, parent: ParentContext) -> float:
        """Priority of a link found on ``parent`` (its depth is parent.depth + 1)."""
