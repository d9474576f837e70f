"""Text analysis shared by the indexer, the query engine and the tests' reference evaluator.

``tokens(text)`` is the one function that decides what a word is:

1. case folding (``str.lower``) and, for non-ASCII text, removal of diacritics (NFKD, combining
   marks dropped: "Café" → "cafe");
2. words are maximal runs of Unicode letters and digits (``[^\\W_]+``): punctuation, ``_`` and
   every other character separate words ("e-mail" → "e", "mail");
3. English stop words (the Snowball list, below) are dropped, and so are words longer than
   ``MAX_TOKEN`` characters (base64 blobs, hashes);
4. every remaining word is stemmed with PyStemmer's English (Porter 2) stemmer.

The index stores the space-joined result, and FTS5's ``unicode61`` tokenizer (with
``remove_diacritics 0``: the folding is done here) splits it again at exactly those spaces: a token
holds only lower-case letters and digits, which unicode61 keeps as they are, so what the index
holds is exactly what this function returns. Queries go through
the same function, so "Running" finds "runs".

Stop words are removed, not kept as gaps: the phrase "harbour of the north" matches the text
"harbour north" and "harbour in the north" alike (both are ``harbour north`` after analysis).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

from ..compiled import speedups

__all__ = ["STOP_WORDS", "MAX_TOKEN", "GAP", "tokens", "words", "column", "pieces", "stem", "stem_words",
           "index_stem_words", "url_words", "fold"]

MAX_TOKEN = 40

# The Snowball English stop word list (snowballstem.org/algorithms/english/stop.txt).
STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her
hers herself it its itself they them their theirs themselves what which who whom this that these
those am is are was were be been being have has had having do does did doing would should could
ought i'm you're he's she's it's we're they're i've you've we've they've i'd you'd he'd she'd we'd
they'd i'll you'll he'll she'll we'll they'll isn't aren't wasn't weren't hasn't haven't hadn't
doesn't don't didn't won't wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's
who's what's here's there's when's where's why's how's a an the and but if or because as until
while of at by for with about against between into through during before after above below to
from up down in out on off over under again further then once here there when where why how all
any both each few more most other some such no nor not only own same so than too very
""".split()) | frozenset("s t d ll m re ve".split())  # the pieces "don't" and "we'll" split into

_WORD = re.compile(r"[^\W_]+")
_STEMMER = Stemmer.Stemmer("english")
_STEMMER.maxCacheSize = 200_000
_INDEX_STEMMER = Stemmer.Stemmer("english")   # the indexer's, without a cache (see column)
_INDEX_STEMMER.maxCacheSize = 0


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@lru_cache(maxsize=65536)
def _fold_char(c: str) -> str:
    # lower case again: compatibility decompositions can bring capitals back ("™" → "TM")
    return "".join(x for x in unicodedata.normalize("NFKD", c) if not unicodedata.combining(x)).lower()


def fold(text: str) -> str:
    """Lower case; diacritics removed (NFKD, combining marks dropped) from non-ASCII text.

    Character by character (NFKD decomposes each character on its own and the combining marks
    that canonical ordering would move are dropped anyway), through ``str.translate`` with a table
    of the few distinct non-ASCII characters a text has: 10x faster than normalising the text."""
    text = text.lower()
    if text.isascii():
        return text
    chars = set(_NON_ASCII.findall(text))
    if len(chars) > 8:
        return text.translate({ord(c): _fold_char(c) for c in chars})
    for c in chars:
        f = _fold_char(c)
        if f != c:
            text = text.replace(c, f)
    return text


def _words_py(text: str) -> list[str]:
    """The folded words of ``text`` that are not stop words (not stemmed)."""
    return [w for w in _WORD.findall(fold(text)) if w not in STOP_WORDS and len(w) <= MAX_TOKEN]


def _column_py(text: str, counts: dict[str, int]) -> str:
    """The indexed form of ``text`` (the space-joined stems of its :func:`words`), each word (not
    stemmed) counted in ``counts``: what the indexer stores of a page's title, body, ..."""
    ws = words(text)
    for w in ws:
        counts[w] = counts.get(w, 0) + 1
    return " ".join(_STEMMER.stemWords(ws))


# The compiled analyzer (skitter._speedups, if built; SKITTER_PURE_PYTHON=1 runs the Python code):
# the same words in one pass over the text, and column() looks each word up in a vocabulary that
# keeps its str and its stem (docs/benchmarks.md, "The live index": 0.2 instead of 1.6 ms a 25 KB page);
# tests/unit/test_speedups.py checks that both give the same results. The vocabulary is forgotten
# when it holds more than VOCABULARY words (about 150 bytes each); its stems come from a stemmer of
# its own without PyStemmer's cache, which would hold the same words again.
VOCABULARY = 50_000
_speedups = speedups()
if _speedups is not None:
    _compiled = _speedups   # not Optional: the function below does not see the test's narrowing
    _compiled.analyzer_setup(STOP_WORDS, MAX_TOKEN, _fold_char)

    def _column_compiled(text: str, counts: dict[str, int]) -> str:
        try:
            if _compiled.vocabulary_size() > VOCABULARY:
                _compiled.clear_vocabulary()
            return _compiled.column(text, counts, _INDEX_STEMMER.stemWords)
        except _compiled.ColumnBusy:   # another thread is in it (one vocabulary): the same in Python
            return _column_py(text, counts)

    words = _compiled.words
    column = _column_compiled
else:
    words = _words_py
    column = _column_py


# Put between the separate pieces of one field (a page's incoming anchors, its headings, its
# description and its keywords): a token no query can hold, as the analyzer drops words longer than
# MAX_TOKEN, so that a phrase or NEAR/0 never joins the end of one anchor to the start of another
# (an anchor "amber" and another link's "falcon" matched "amber falcon"). It takes one position, as
# Lucene's position increment gap does (100 there): NEAR/k with k >= 1 may still span two pieces.
GAP = "zz" + "0" * MAX_TOKEN


def pieces(parts: list[str], counts: dict[str, int]) -> str:
    """The indexed form of a field made of separate ``parts``: each part's :func:`column`, joined
    by :data:`GAP` (empty parts left out)."""
    cols = [column(p, counts) for p in parts if p]
    return f" {GAP} ".join(c for c in cols if c)


def stem_words(ws: list[str]) -> list[str]:
    """Stems of folded words (PyStemmer's batch call)."""
    return _STEMMER.stemWords(ws)


def index_stem_words(ws: list[str]) -> list[str]:
    """:func:`stem_words` without PyStemmer's cache (the indexer's: its memory stays bounded)."""
    return _INDEX_STEMMER.stemWords(ws)


def tokens(text: str | None) -> list[str]:
    """The index tokens of ``text``: folded, stop words dropped, stemmed."""
    if not text:
        return []
    return _STEMMER.stemWords(words(text))


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """The stem of one folded word."""
    return _STEMMER.stemWord(word)


def url_words(url: str) -> str:
    """The words of a URL for the ``url`` column: host and path split on non-alphanumerics, the
    scheme left out ("http://www.ex.com/blue-whales/2.html" → "www ex com blue whales 2 html")."""
    rest = url.split("://", 1)[-1]
    return " ".join(_WORD.findall(rest))
