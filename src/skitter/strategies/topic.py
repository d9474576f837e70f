"""What the focused strategies share: the tokenizer, the topic, and the tunnelling code.

Pure: no I/O (the ``--topic-file`` is read by :mod:`skitter.strategies.exemplars`).

Tokens: lower-cased runs of letters and digits, English stop words dropped, one-letter tokens
dropped, stemmed with PyStemmer's English (Porter 2) stemmer when it is installed (it is a
dependency; without it words are kept as they are).

The topic (:class:`Topic`) is a term vector: the ``--topic`` words (each weight 1), plus, from
``--topic-file`` (exemplary documents, seed 000: a text or HTML file, or a directory of them), the
``EXEMPLAR_TERMS`` most frequent terms of the documents, each document's term frequencies
normalised to sum 1 and the documents averaged, scaled so that the heaviest term weighs 1.

Tunnelling (seed 000) and SharkSearch's depth bound d (seed 002) are one mechanism: a link found on
a page that is *not* relevant is one step further from the last relevant page on its path; links
more than ``tunnel`` steps away are not dropped (the scorer cannot drop a link) but moved below
everything else (:data:`DROPPED`), so they are fetched only if nothing else is left. The distance
("band") travels inside the priority, so it needs no extra field and survives a resume:

    priority = floor(f · 2²⁰) / 2²⁰ + (1023 − band) · 2⁻³⁰        (− 2 when dropped)

where ``f`` in [0, 1) is the strategy's estimate: f orders the links, and at equal f the shallower
tunnel goes first. Powers of two make the arithmetic exact, so :func:`band_of` recovers the band of
any priority :func:`encode` made (bands up to 1022; a priority the scheme cannot have made, from
another strategy, reads as band 0).
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from operator import itemgetter

try:  # PyStemmer: 4.6 M tokens/s (DESIGN.md); optional at import time, a dependency in pyproject
    import Stemmer

    _STEMMER = Stemmer.Stemmer("english")
    _STEMMER.maxCacheSize = 100_000
    stem_words = _STEMMER.stemWords
except ImportError:  # pragma: no cover - PyStemmer is a dependency
    _STEMMER = None

    def stem_words(words: list[str]) -> list[str]:
        return words

__all__ = ["STOP_WORDS", "Topic", "tokenize", "url_words", "encode", "band_of",
           "DROPPED", "SEED_PRIORITY", "MAX_F"]

# A classic English stop list (the Snowball list, without the contractions).
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other ought our ours ourselves out over own same
she should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves also may might must shall us
""".split())

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
EXEMPLAR_TERMS = 60


def tokenize(text: str) -> list[str]:
    """Stemmed content words of ``text`` (see the module docstring)."""
    if not text:
        return []
    words = [w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOP_WORDS]
    return stem_words(words) if words else words


_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}(?=$|[?#])")


def url_words(url: str) -> list[str]:
    """The words of a URL's host, path and query as tokens: the scheme, ``www`` and the file
    extension of the last path segment (``.html``, ``.php``) left out."""
    rest = url.split("://", 1)[-1]
    host, slash, path = rest.partition("/")
    path = _EXTENSION.sub("", path, count=1)
    return [w for w in tokenize(f"{host} {path}".replace("_", " ")) if w != "www"]


# ----------------------------------------------------------------------------------------------
# the topic


class Topic:
    """A weighted set of terms; similarity and occurrence counts against it."""

    def __init__(self, weights: dict[str, float]) -> None:
        self.weights = {t: float(w) for t, w in weights.items() if w > 0}
        self.norm = math.sqrt(sum(w * w for w in self.weights.values()))
        self.terms = frozenset(self.weights)

    @classmethod
    def from_text(cls, words: str) -> Topic:
        return cls({t: 1.0 for t in tokenize(words)})

    @classmethod
    def build(cls, words: str = "", exemplars: Iterable[str] = ()) -> Topic:
        """The topic of ``--topic`` words and the texts of exemplary documents."""
        weights: dict[str, float] = {t: 1.0 for t in tokenize(words)}
        docs = [Counter(tokenize(text)) for text in exemplars]
        docs = [d for d in docs if d]
        if docs:
            acc: defaultdict[str, float] = defaultdict(float)
            for d in docs:
                total = sum(d.values())
                for t, c in d.items():
                    acc[t] += c / total / len(docs)
            # Counter.most_common(n)'s own ordering (heaviest first, ties in insertion order)
            top = heapq.nlargest(EXEMPLAR_TERMS, acc.items(), key=itemgetter(1))
            heaviest = top[0][1]
            for t, w in top:
                weights[t] = max(weights.get(t, 0.0), w / heaviest)
        return cls(weights)

    def __bool__(self) -> bool:
        return bool(self.weights)

    def __repr__(self) -> str:
        top = sorted(self.weights.items(), key=lambda kv: -kv[1])[:8]
        return f"Topic({', '.join(f'{t}:{w:.2f}' for t, w in top)}{', …' if len(self.weights) > 8 else ''})"

    def count(self, tokens: Iterable[str]) -> float:
        """The occurrences of topic terms among ``tokens`` (seed 001's N), each weighted by its
        term's weight: a plain count for ``--topic`` words (weight 1); the less frequent terms of
        exemplary documents count for less."""
        w = self.weights
        return float(sum(w.get(t, 0.0) for t in tokens))

    def cosine(self, tokens: Iterable[str] | Counter) -> float:
        """TF cosine between the topic vector and a bag of tokens (seed 002), in [0, 1]."""
        tf = tokens if isinstance(tokens, Counter) else Counter(tokens)
        if not tf or not self.norm:
            return 0.0
        w = self.weights
        dot = sum(c * w[t] for t, c in tf.items() if t in w)
        if not dot:
            return 0.0
        return min(1.0, dot / (self.norm * math.sqrt(sum(c * c for c in tf.values()))))


# ----------------------------------------------------------------------------------------------
# priorities with the tunnelling band inside

_Q = 2.0 ** 20           # resolution of the estimate f
_B = 2.0 ** 10           # bands per estimate step: band · 2⁻³⁰
MAX_BAND = int(_B) - 2   # band code B - 1 - band: 0 never occurs, so it marks foreign priorities
MAX_F = 1.0 - 1.0 / _Q   # the largest estimate that encodes
DROPPED = -2.0           # offset of links past the tunnel distance
SEED_PRIORITY = 1.0      # above every encoded priority; band 0


def encode(f: float, band: int, *, dropped: bool = False) -> float:
    """A priority: estimate ``f`` (clamped to [0, MAX_F]) with the band hidden in its low bits."""
    if not f > 0.0:   # also NaN
        f = 0.0
    elif f > MAX_F:
        f = MAX_F
    band = min(max(band, 0), MAX_BAND)
    p = math.floor(f * _Q) / _Q + (_B - 1 - band) / (_Q * _B)
    return p + DROPPED if dropped else p


def band_of(priority: float) -> int:
    """The band :func:`encode` put in ``priority`` (0 for a seed or any foreign priority)."""
    p = priority
    if DROPPED <= p < DROPPED + 1.0:
        p -= DROPPED
    if not 0.0 <= p < 1.0:
        return 0
    x = p * _Q
    code = int(round((x - math.floor(x)) * _B))
    return int(_B) - 1 - code if code else 0


def estimate_of(priority: float) -> float:
    """The estimate f :func:`encode` put in ``priority`` (1 for a seed, 0 for a foreign one)."""
    if priority >= SEED_PRIORITY:
        return 1.0
    p = priority - DROPPED if DROPPED <= priority < DROPPED + 1.0 else priority
    if not 0.0 <= p < 1.0:
        return 0.0
    return math.floor(p * _Q) / _Q


def is_dropped(priority: float) -> bool:
    return DROPPED <= priority < DROPPED + 1.0


# ----------------------------------------------------------------------------------------------
# the focused scorers' common frame

DEFAULT_TUNNEL = 3


def topic_from_config(config, exemplars: Sequence[str] = ()) -> Topic:
    """The crawl's topic from its ``topic`` words and the texts of its ``topic_file`` exemplary
    documents (read by :func:`skitter.strategies.exemplars.read_exemplars`)."""
    return Topic.build(getattr(config, "topic", "") or "", list(exemplars))


class FocusedScorer:
    """Base of the focused scorers (pdd, weight, cosine, shark): the topic, the relevance test,
    tunnelling. A subclass gives ``relevance`` (the page's own score, exported as ``score``),
    ``threshold`` (relevant iff relevance > threshold) and ``estimate`` (a link's f in [0, 1))."""

    name = "focused"
    reads_text = True
    reads_link_context = False
    default_threshold = 0.0

    def __init__(self, topic: Topic | None = None, *, threshold: float | None = None,
                 tunnel: int = DEFAULT_TUNNEL) -> None:
        self.topic = topic if topic is not None else Topic({})
        self.threshold = self.default_threshold if threshold is None else float(threshold)
        self.tunnel = int(tunnel)
        self._parent_url: str | None = None
        self._parent_cache: object = None

    @classmethod
    def from_config(cls, config, exemplars: Sequence[str] = ()) -> FocusedScorer:
        topic = topic_from_config(config, exemplars)
        if not topic:
            from ..errors import UsageError

            raise UsageError(f"--strategy {cls.name} needs a topic: give --topic WORDS or --topic-file FILE")
        return cls(topic, tunnel=config.tunnel, **cls.options(config))

    @classmethod
    def options(cls, config) -> dict:
        return {}

    # -- the Scorer protocol ---------------------------------------------------------------------
    def seed_priority(self, url: str) -> float:
        return SEED_PRIORITY

    def relevance(self, url: str, page) -> float:  # pragma: no cover - every subclass has one
        raise NotImplementedError

    def relevant(self, relevance: float) -> bool:
        return relevance > self.threshold

    def score(self, link, parent) -> float:
        r = parent.relevance
        if r is None:
            r = self.relevance(parent.url, parent.page)
        band = 0 if self.relevant(r) else band_of(parent.priority) + 1
        return encode(self.estimate(link, parent, r, band), band, dropped=band > self.tunnel)

    def estimate(self, link, parent, relevance: float, band: int) -> float:  # pragma: no cover
        raise NotImplementedError

    def per_parent(self, parent, compute):
        """``compute(parent)`` once per parent page (score is called once per link of a page)."""
        if parent.url != self._parent_url:
            self._parent_cache = compute(parent)
            self._parent_url = parent.url
        return self._parent_cache


def relevant_first(relevance: float, threshold: float, band: int, scale: float) -> float:
    """The estimate of pdd and weight: links of relevant pages in [0.5, 1), ordered by the page's
    weight; links of irrelevant pages below 0.5, halved at each further band (shallower tunnels
    first), ordered by weight within a band."""
    if band == 0:
        return 0.5 + 0.5 * relevance / (relevance + scale) if relevance > 0 else 0.5
    near = max(0.0, relevance) / (abs(threshold) + 1.0)
    return 0.5 ** band * (0.5 + 0.5 * min(near, 0.999))
