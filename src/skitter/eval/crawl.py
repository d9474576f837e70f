"""A crawl's order against ground-truth labels: the metrics of ``skitter eval-crawl`` (pure).

Labels: JSON lines ``{"url", "topic", "pagerank"[, "reachable"]}`` (for the demo web,
``python -m skitter.demo.labels``). The crawl: the fetch records of a crawl directory
in ``fetch_order`` (every URL the crawler requested counts against the budget: errors, redirects
and duplicates included).

Metrics (:func:`evaluate`):

- harvest rate (focused crawling): relevant fetched / fetched, as the crawl goes on; a page is
  relevant iff its label's topic is the evaluated topic;
- topic recall at budgets: relevant fetched / relevant pages in the labels (but those labelled
  ``"reachable": false``, which a polite crawler never fetches), after a budget of
  ``b`` × (number of labelled pages) fetches, for b in ``BUDGETS``;
- importance (seed 004): the share of the top-1% pages by ground-truth PageRank fetched after
  10/25/50/100% of the crawl, and the average ground-truth PageRank (× number of labelled pages,
  so 1 = an average page) of the pages fetched in each tenth of the crawl (seed 004's figure 6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

BUDGETS = (0.05, 0.1, 0.2, 0.5, 1.0)
CRAWL_SHARES = (0.1, 0.25, 0.5, 1.0)
TOP_SHARE = 0.01
DECILES = 10


@dataclass
class Labels:
    topic: dict[str, str | None]
    pagerank: dict[str, float]
    unreachable: set[str] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.topic)

    @property
    def topics(self) -> set[str]:
        return {t for t in self.topic.values() if t}


def guess_topic(config: dict, labels: Labels) -> str | None:
    """The labelled topic the crawl was about: a topic name among its --topic words."""
    from ..strategies.topic import tokenize

    words = set(tokenize(config.get("topic") or ""))
    words |= set(tokenize(Path(config.get("topic_file") or "").stem))
    for name in sorted(labels.topics):
        if set(tokenize(name)) & words:
            return name
    return None


@dataclass
class Evaluation:
    fetched: int
    pages: int                                    # labelled pages
    topic: str | None = None
    relevant_total: int = 0
    harvest: list[float] = field(default_factory=list)       # after each fetch
    recall_at: dict[float, float] = field(default_factory=dict)   # budget share -> recall
    recall_curve: list[float] = field(default_factory=list)
    top_k: int = 0
    top_share_at: dict[float, float] = field(default_factory=dict)  # crawl share -> top-1% share
    avg_pagerank: list[float] = field(default_factory=list)   # per tenth of the crawl

    @property
    def harvest_rate(self) -> float | None:
        return self.harvest[-1] if self.harvest else None

    def harvest_at(self, n: int) -> float | None:
        if not self.harvest:
            return None
        return self.harvest[min(n, len(self.harvest)) - 1]

    def to_dict(self) -> dict:
        return {"fetched": self.fetched, "pages": self.pages, "topic": self.topic,
                "relevant_total": self.relevant_total, "harvest_rate": self.harvest_rate,
                "recall_at": {str(k): v for k, v in self.recall_at.items()},
                "top_k": self.top_k, "top_share_at": {str(k): v for k, v in self.top_share_at.items()},
                "avg_pagerank": self.avg_pagerank}


def evaluate(urls: list[str], labels: Labels, topic: str | None = None) -> Evaluation:
    """The metrics of one crawl order (see the module docstring)."""
    n = len(urls)
    ev = Evaluation(fetched=n, pages=len(labels), topic=topic)
    if topic is not None:
        relevant = [labels.topic.get(u) == topic for u in urls]
        ev.relevant_total = sum(1 for u, t in labels.topic.items() if t == topic and u not in labels.unreachable)
        hits = 0
        for i, r in enumerate(relevant, 1):
            hits += r
            ev.harvest.append(hits / i)
            ev.recall_curve.append(hits / ev.relevant_total if ev.relevant_total else 0.0)
        for b in BUDGETS:
            k = int(round(b * len(labels)))
            if 0 < k <= n:
                ev.recall_at[b] = ev.recall_curve[k - 1]
    if labels.pagerank and n:
        ranked = sorted(labels.pagerank, key=lambda u: -labels.pagerank[u])
        ev.top_k = max(1, int(round(TOP_SHARE * len(ranked))))
        top = set(ranked[:ev.top_k])
        for s in CRAWL_SHARES:
            k = max(1, int(math.ceil(s * n)))
            ev.top_share_at[s] = sum(1 for u in urls[:k] if u in top) / ev.top_k
        scale = len(labels.pagerank)
        for d in range(DECILES):
            part = urls[d * n // DECILES:(d + 1) * n // DECILES]
            if part:
                ev.avg_pagerank.append(sum(labels.pagerank.get(u, 0.0) for u in part) / len(part) * scale)
    return ev


def report(name: str, ev: Evaluation) -> str:
    """A plain-text report of one evaluation."""
    lines = [f"{name}: {ev.fetched} fetched, {ev.pages} labelled pages"]
    if ev.topic is not None:
        lines.append(f"  topic {ev.topic!r}: {ev.relevant_total} relevant pages; harvest rate "
                     f"{_pct(ev.harvest_rate)}")
        marks = [k for k in (10, 50, 100, 200, 500, 1000, 2000, 5000) if k < ev.fetched] + [ev.fetched]
        lines.append("  harvest rate after " + ", ".join(f"{k}: {_pct(ev.harvest_at(k))}" for k in marks))
        lines.append("  topic recall at budget " + ", ".join(
            f"{int(b * 100)}% ({int(round(b * ev.pages))}): {_pct(r)}" for b, r in ev.recall_at.items()))
    if ev.top_share_at:
        lines.append(f"  top-1% PageRank pages ({ev.top_k}) fetched after " + ", ".join(
            f"{int(s * 100)}%: {_pct(v)}" for s, v in ev.top_share_at.items()) + " of the crawl")
        lines.append("  average PageRank (1 = average page) by tenth of the crawl: "
                     + " ".join(f"{v:.2f}" for v in ev.avg_pagerank))
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"
