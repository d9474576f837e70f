"""Crawl strategies, one scorer per module; ``make_scorer`` is the registry."""

from __future__ import annotations

from .base import ParentContext, Scorer
from .bfs import BreadthFirst
from .dfs import DepthFirst

STRATEGIES = {"bfs": BreadthFirst, "dfs": DepthFirst}


def make_scorer(name: str) -> Scorer:
    return STRATEGIES[name]()


__all__ = ["ParentContext", "Scorer", "STRATEGIES", "make_scorer"]
