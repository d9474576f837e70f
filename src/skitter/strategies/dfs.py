"""Depth-first: deepest first, so a branch is followed down before its siblings (seed 004's
depth-first strategy). Ties in discovery order. ``--max-depth`` bounds how deep it goes."""

from __future__ import annotations

from ..models import Link, Page
from .base import ParentContext


class DepthFirst:
    name = "dfs"
    reads_text = False
    reads_link_context = False

    def seed_priority(self, url: str) -> float:
        return 0.0

    def relevance(self, url: str, page: Page) -> float | None:
        return None

    def score(self, link: Link, parent: ParentContext) -> float:
        return float(parent.depth + 1)
