"""Crawl strategies, one scorer per module; ``make_scorer`` is the registry.

- ``bfs``, ``dfs``: by depth (:mod:`.bfs`, :mod:`.dfs`);
- focused (need ``--topic`` or ``--topic-file``): ``pdd`` (seed 001), ``weight`` (seed 003),
  ``cosine`` (naive best-first) and ``shark`` (SharkSearch) of seed 002, with seed 000's
  tunnelling (:mod:`.topic`);
- importance (seed 004): ``backlinks`` and ``pagerank`` (OPIC) (:mod:`.importance`), which
  use the optional ``on_page`` hook.
"""

from __future__ import annotations

from typing import Any

from .base import ParentContext, Scorer
from .bfs import BreadthFirst
from .cosine import CosineScorer
from .dfs import DepthFirst
from .importance import BacklinkScorer, OPICScorer
from .pdd import PDDScorer
from .shark import SharkScorer
from .weight import WeightScorer

STRATEGIES: dict[str, type] = {
    "bfs": BreadthFirst,
    "dfs": DepthFirst,
    "pdd": PDDScorer,
    "weight": WeightScorer,
    "cosine": CosineScorer,
    "shark": SharkScorer,
    "backlinks": BacklinkScorer,
    "pagerank": OPICScorer,
}

FOCUSED = ("pdd", "weight", "cosine", "shark")
IMPORTANCE = ("backlinks", "pagerank")


def make_scorer(name: str, config: Any = None) -> Scorer:
    """A fresh scorer for one crawl. With ``config`` (a CrawlConfig) a strategy that needs
    settings (the topic, thresholds) takes them from it, and a focused one the exemplary
    documents of ``--topic-file`` (read here: the scorers themselves do no I/O); a focused
    strategy without a topic raises UsageError."""
    cls = STRATEGIES[name]
    factory = getattr(cls, "from_config", None)
    if config is None or factory is None:
        return cls()
    if name in FOCUSED:
        from .exemplars import exemplars_of

        return factory(config, exemplars_of(config))
    return factory(config)


__all__ = ["ParentContext", "Scorer", "STRATEGIES", "FOCUSED", "IMPORTANCE", "make_scorer"]
