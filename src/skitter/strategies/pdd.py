"""``pdd``: the PDD crawler of seed 001, best-first on tag-weighted topic-word counts.

A page's weight is ``t = 1·Nb + 3·Nt + 5·Nm + 2·Nh + 4·Nu`` where N counts the occurrences of
topic terms (stemmed, :mod:`.topic`) in the body text, the title, the meta description and
keywords, the h1–h6 headings and the words of the URL (terms taken from exemplary documents count
by their weight, ``Topic.count``; ``--topic`` words count 1 each, as the seed's search string). The page is relevant iff ``t > threshold``
(``--threshold``, default 3: the seed's "relevant iff t > 3"); ``relevance()`` returns t, exported
as the page's ``score``.

The seed follows only the links of relevant pages (breadth-first among them) and throws the others
away. Here the links of relevant pages come first, those of heavier pages before lighter ones
(ties in discovery order); the links of irrelevant pages are kept below them, for tunnelling
(seed 000): they are followed through at most ``--tunnel`` off-topic pages in a row and moved to the
very end of the queue beyond that (:mod:`.topic`).
"""

from __future__ import annotations

from ..models import Link, Page
from .base import ParentContext
from .topic import FocusedScorer, relevant_first, tokenize, url_words

B, T, M, H, U = 1, 3, 5, 2, 4   # body, title, meta, headings, URL (seed 001)
SCALE = 100.0                   # t at which a relevant page's links sit half-way up their range


class PDDScorer(FocusedScorer):
    name = "pdd"
    default_threshold = 3.0

    @classmethod
    def options(cls, config) -> dict:
        return {"threshold": config.threshold}

    def weights(self, url: str, page: Page) -> dict[str, float]:
        """The occurrence counts N of each part of the page."""
        count = self.topic.count
        return {
            "body": count(tokenize(page.text)),
            "title": count(tokenize(page.title)),
            "meta": count(tokenize(page.description)) + count(tokenize(page.keywords)),
            "headings": sum(count(tokenize(h)) for h in page.headings),
            "url": count(url_words(url)),
        }

    def relevance(self, url: str, page: Page) -> float:
        n = self.weights(url, page)
        return float(B * n["body"] + T * n["title"] + M * n["meta"] + H * n["headings"] + U * n["url"])

    def estimate(self, link: Link, parent: ParentContext, relevance: float, band: int) -> float:
        return relevant_first(relevance, self.threshold, band, SCALE)
