"""``shark``: SharkSearch(d, γ, δ, β) of seed 002 (Hersovici et al. 1998).

A link's potential score is ``γ · inherited(url) + (1 − γ) · neighbourhood(url)``:

- ``inherited(url) = δ · sim(q, p)`` if the page p it was found on is relevant, else
  ``δ · inherited(p)``: the score fades by δ along a path of irrelevant pages;
- ``neighbourhood(url) = β · anchor(url) + (1 − β) · context(url)`` with ``anchor = sim(q, anchor
  text)`` and ``context = 1`` if anchor > 0, else ``sim(q, text around the link)`` — and, for a link
  with no text around it (an item of a list of links, a menu), sim(q, the whole page): the
  augmented context widens to the page;
- the depth bound d: a path is followed through at most d irrelevant pages in a row (``--tunnel``,
  shared with the other focused strategies; links beyond it go to the end of the queue).

sim is the TF cosine of :class:`.topic.Topic`; a page is relevant iff sim > ``--min-similarity``
(the seed's "sim > 0" on the web needs a small floor: almost every page shares a word with the
topic). ``relevance()`` is sim(q, page), exported as ``score``.

Defaults (``--shark-gamma 0.3 --shark-delta 0.5 --shark-beta 0.8``, ``--tunnel 3``): see
docs/strategies.md for the measurements behind them.

``inherited(p)`` of a page is remembered from when its link was scored (a bounded map; after a
resume, or once evicted, δ × the page's own priority stands in for it).
"""

from __future__ import annotations

from ..models import Link, Page
from .base import ParentContext
from .cosine import DEFAULT_MIN_SIMILARITY, page_tokens
from .topic import DEFAULT_TUNNEL, FocusedScorer, Topic, band_of, encode, estimate_of, tokenize

GAMMA = 0.3
DELTA = 0.5
BETA = 0.8
MEMORY = 500_000   # inherited scores remembered (about 100 bytes each)


class SharkScorer(FocusedScorer):
    name = "shark"
    reads_link_context = True   # the anchor context of seed 002
    default_threshold = DEFAULT_MIN_SIMILARITY

    def __init__(self, topic: Topic | None = None, *, threshold: float | None = None,
                 tunnel: int = DEFAULT_TUNNEL, gamma: float = GAMMA, delta: float = DELTA,
                 beta: float = BETA) -> None:
        super().__init__(topic, threshold=threshold, tunnel=tunnel)
        for label, v in (("gamma", gamma), ("delta", delta), ("beta", beta)):
            if not 0.0 <= v <= 1.0:
                from ..errors import UsageError

                raise UsageError(f"--shark-{label} must be within [0, 1], got {v}")
        self.gamma, self.delta, self.beta = gamma, delta, beta
        self._inherited: dict[str, float] = {}

    @classmethod
    def options(cls, config) -> dict:
        return {"threshold": config.min_similarity, "gamma": config.shark_gamma,
                "delta": config.shark_delta, "beta": config.shark_beta}

    def relevance(self, url: str, page: Page) -> float:
        return self.topic.cosine(page_tokens(page))

    def inherited_of_children(self, parent: ParentContext, relevance: float) -> float:
        own = self._inherited.pop(parent.url, None)
        if self.relevant(relevance):
            return self.delta * relevance
        if own is None:  # not remembered: the page's own potential stands in for it
            own = estimate_of(parent.priority)
        return self.delta * own

    def score(self, link: Link, parent: ParentContext) -> float:
        r = parent.relevance
        if r is None:
            r = self.relevance(parent.url, parent.page)
        inherited = self.per_parent(parent, lambda p: self.inherited_of_children(p, r))
        sim = self.topic.cosine
        anchor = sim(tokenize(link.anchor)) if link.anchor else 0.0
        if anchor > 0:
            context = 1.0
        elif link.context:
            context = sim(tokenize(link.context))
        else:  # a link with no text around it (a list item, a menu): its context is the page
            context = r
        neighbourhood = self.beta * anchor + (1.0 - self.beta) * context
        potential = self.gamma * inherited + (1.0 - self.gamma) * neighbourhood
        band = 0 if self.relevant(r) else band_of(parent.priority) + 1
        if link.url not in self._inherited:
            if len(self._inherited) >= MEMORY:
                del self._inherited[next(iter(self._inherited))]
            self._inherited[link.url] = inherited
        return encode(potential, band, dropped=band > self.tunnel)
