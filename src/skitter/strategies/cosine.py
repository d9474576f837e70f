"""``cosine``: the naive best-first crawler of seed 002.

A page is a term-frequency vector of its title, meta description and keywords, headings and body
text (stemmed, stop words out: :mod:`.topic`); its relevance is the cosine similarity
``sim(q, p) = Vq·Vp / (‖Vq‖ ‖Vp‖)`` with the topic vector q, exported as ``score``. Every link of
the page inherits that similarity as its priority: the frontier is a best-first queue on the
parents' similarity (ties in discovery order).

A page is relevant iff sim > ``--min-similarity`` (default 0.1); links found on irrelevant pages
are followed through at most ``--tunnel`` of them in a row (seed 000), then moved to the end.
"""

from __future__ import annotations

from collections import Counter

from ..models import Link, Page
from .base import ParentContext
from .topic import FocusedScorer, tokenize

DEFAULT_MIN_SIMILARITY = 0.1


def page_tokens(page: Page) -> Counter:
    parts = [page.title, page.description, page.keywords, *page.headings, page.text]
    return Counter(tokenize(" ".join(p for p in parts if p)))


class CosineScorer(FocusedScorer):
    name = "cosine"
    default_threshold = DEFAULT_MIN_SIMILARITY

    @classmethod
    def options(cls, config) -> dict:
        return {"threshold": config.min_similarity}

    def relevance(self, url: str, page: Page) -> float:
        return self.topic.cosine(page_tokens(page))

    def estimate(self, link: Link, parent: ParentContext, relevance: float, band: int) -> float:
        return relevance
