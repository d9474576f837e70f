"""Crawl strategies, one scorer per module; ``make_scorer`` is the registry.

- ``bfs``, ``dfs``: by depth (:mod:`.bfs`, :mod:`.dfs`);
- focused (need ``--topic`` or ``--topic-file``): ``pdd`` (seed 001), ``weight`` (seed 003),
  ``cosine`` (naive best-first) and ``shark`` (SharkSearch) of seed 002, with seed 000's
  tunnelling (:mod:`.topic`);
- importance (seed 004): ``backlinks`` and ``pagerank`` (OPIC) (:mod:`.importance`), which
  use the optional ``on_page`` hook.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from .base import ParentContext, Scorer


class _Registry(Mapping[str, type]):
    """Strategy name -> scorer class, each module imported when its class is first asked for: a
    crawl by depth does not load the focused strategies' text model and stemmer (issue #18)."""

    def __init__(self, where: dict[str, str]) -> None:
        self._where = where   # name -> "module:class"

    def __getitem__(self, name: str) -> type:
        module, cls = self._where[name].split(":")
        return getattr(importlib.import_module(module, __name__), cls)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


STRATEGIES: Mapping[str, type] = _Registry({
    "bfs": ".bfs:BreadthFirst",
    "dfs": ".dfs:DepthFirst",
    "pdd": ".pdd:PDDScorer",
    "weight": ".weight:WeightScorer",
    "cosine": ".cosine:CosineScorer",
    "shark": ".shark:SharkScorer",
    "backlinks": ".importance:BacklinkScorer",
    "pagerank": ".importance:OPICScorer",
})

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
