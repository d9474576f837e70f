"""``weight``: the page-weight crawler of seed 003.

``weight(page) = weight(URL) + weight(outlinks) + weight(title) + weight(body)`` where

- weight(URL) = 4 if a topic term occurs in the URL's words, else 0 (a predefined weight);
- weight(title) = 3 if a topic term occurs in the title, else 0;
- weight(outlinks) = 1 per occurrence of a topic term in the anchor texts of the page's links;
- weight(body) = 1 per occurrence of a topic term in the body text.

A page is relevant iff its weight is above ``--threshold`` (default 3, the scale of seed 001's
threshold: a page needs more than a URL hit or a title hit alone). The seed adds the links of
pages over the threshold and discards the others; as with ``pdd``, the links of relevant pages
come first (heavier pages first) and the others are kept below them for tunnelling (``--tunnel``).
"""

from __future__ import annotations

from ..models import Link, Page
from .base import ParentContext
from .topic import FocusedScorer, relevant_first, tokenize, url_words

W_URL, W_TITLE, W_OUTLINK, W_BODY = 4, 3, 1, 1
SCALE = 100.0


class WeightScorer(FocusedScorer):
    name = "weight"
    default_threshold = 3.0

    @classmethod
    def options(cls, config) -> dict:
        return {"threshold": config.threshold}

    def parts(self, url: str, page: Page) -> dict[str, float]:
        count = self.topic.count
        anchors = sum(count(tokenize(l.anchor)) for l in page.links if l.anchor)
        return {
            "url": W_URL if count(url_words(url)) else 0,
            "outlinks": W_OUTLINK * anchors,
            "title": W_TITLE if count(tokenize(page.title)) else 0,
            "body": W_BODY * count(tokenize(page.text)),
        }

    def relevance(self, url: str, page: Page) -> float:
        return float(sum(self.parts(url, page).values()))

    def estimate(self, link: Link, parent: ParentContext, relevance: float, band: int) -> float:
        return relevant_first(relevance, self.threshold, band, SCALE)
