"""Breadth-first: shallower first; ties in discovery order (the frontier's sequence)."""

from __future__ import annotations

from ..models import Link, Page
from .base import ParentContext


class BreadthFirst:
    name = "bfs"
    reads_text = False
    reads_link_context = False

    def seed_priority(self, url: str) -> float:
        return 0.0

    def relevance(self, url: str, page: Page) -> float | None:
        return None

    def score(self, link: Link, parent: ParentContext) -> float:
        return -float(parent.depth + 1)
