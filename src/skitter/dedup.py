"""Near-duplicate detection with document fingerprints (seed 004: winnowing over K-length substrings).

Pure: no I/O, no event loop, no database. ``main_text`` and ``winnow`` are the CPU part and run
where the page is parsed (``analyse``, in an analysis process); :class:`NearDupIndex` lives in the
crawl process and persists as one ``(doc_id, sketch)`` record a page. :class:`DuplicateTests` is
the crawl's duplicate stage: the content-seen test, then the near-duplicate test, reading and
writing through the store it is given.

The algorithm (seed 004, after Schleimer, Wilkerson and Aiken's winnowing):

1. ``main_text``: the page's main content (boilerplate such as navigation, header, footer, side
   bars and ads left out by :mod:`skitter.boilerplate`'s rules, on the parser's own tree), so that
   two copies of an article under different site chrome look alike. The worker sends the crawl
   process only the smallest fingerprints a query needs (``winnow_smallest``).
2. ``normalise``: case-folded, with every white-space, punctuation and special character removed
   (what is left: letters and digits of any script). Matches are insensitive to spacing, case and
   punctuation.
3. all K-length substrings (k-grams) of the normalised text are hashed (a 64-bit polynomial rolling
   hash, then a 64-bit finaliser so that every bit is well mixed; vectorised in NumPy, or in one
   pass of compiled code where ``skitter._speedups`` was built);
4. in every window of W consecutive hashes the minimum is selected (the rightmost one on ties, each
   selected position recorded once); the set of selected hashes is the document's fingerprint.

Guarantees, for normalised texts: any substring shared by two documents that is at least
``t = W + K - 1`` characters long yields a shared fingerprint (its W k-grams form one whole window,
whose minimum both documents select); a match shorter than K is never detected (noise threshold).
A text of n normalised characters has about ``2 (n - K + 1) / (W + 1)`` fingerprints.

Defaults, measured on the labelled demo web (``bench/neardup_bench.py --sweep``: chosen on seed 1,
evaluated on seeds 2 and 3 in ``tests/eval/test_neardup_eval.py``; docs/benchmarks.md has the table):

- **K = 20** characters (about four words once the spaces are gone). Shorter k-grams make
  unrelated pages of one topic share common phrases ("ofthetime"): with K = 8 a query meets ~490
  stored pages that share a sampled hash and precision falls to 0.86-0.97, with K = 12 to 0.86
  across hosts; longer ones make each changed word cost more k-grams (K = 32: the lowest
  resemblance of a labelled pair drops to 0.58). At K = 20 labelled pairs have an estimated
  resemblance ≥ 0.68, every other pair (articles quoting a paragraph of another included) ≤ 0.11,
  and a query meets ~22 stored pages (main text by ``skitter.boilerplate``; with resiliparse's
  main text: ≥ 0.72, ≤ 0.14, ~18, at 16 times the cost, docs/benchmarks.md).
- **W = 12**: fingerprint density 2/(W+1) ≈ 15 % (~670 fingerprints for a 5 KB page), and the
  guarantee threshold t = W + K - 1 = 31 characters, about one short sentence.

The index (:class:`NearDupIndex`) keeps, per document, only a bottom-s sketch: the S = 64 smallest
fingerprints (a uniform sample of the fingerprint set, as in MinHash), in an inverted index from
hash to document. A query with the full fingerprint set A of a new page looks up every hash of A,
so it meets exactly the stored documents that share a sketch hash with A — the candidates — and
never compares with the others. For a stored document B with sketch sk(B) and threshold
τ = max sk(B) (or +∞ when sk(B) holds all of B), the region [0, τ] of hash space is a uniform sample
in which B is fully known, so::

    resemblance |A∩B| / |A∪B|  ≈  |A ∩ sk(B)| / |A∩[0,τ] ∪ sk(B)|
    containment |A∩B| / |A|    ≈  |A ∩ sk(B)| / |A∩[0,τ]|

A page is a near-duplicate of a stored one when resemblance ≥ ``RESEMBLANCE`` (0.5) or containment
≥ ``CONTAINMENT`` (0.8: the new page is mostly a part of the stored one), with at least
``MIN_SAMPLE`` (16) hashes in the sample the estimate rests on (so a tiny page is never called a
copy of a large one on two or three shared hashes). A sketch hash held by more than ``MAX_DF``
(5,000) stored pages is left out of the lookups: boilerplate that main-content extraction missed.

Memory: 12·S + 20 = 788 bytes per indexed page (S postings of a hash and a document index, 8 + 4
bytes; per document an id, τ and the sketch length), plus at most half a byte a posting for the
bucket directories of large runs (at most 820 bytes a page), plus the slack of growing arrays in the
newest generation, whatever the page's length. ``window`` bounds it: the crawl keeps the last
50,000 indexed pages by default (``--near-dup-window``, about 40 MB), so memory stays flat on long
crawls. A query looks each of the new page's smallest hashes up in each sorted run (O(log n) runs
per generation, one per sealed generation): in a run of 32,768 postings or more through a bucket
directory (two or three cache lines a hash), in a smaller one by binary search; estimates are
computed only for the stored pages that share enough sampled hashes (~0.2 per query on the demo
web).
"""

from __future__ import annotations

import re
from array import array
from collections import defaultdict
from dataclasses import dataclass
from typing import Protocol
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .compiled import speedups
from .winnow import BASE, BASE_INV, K, POWERS_KEPT, W   # k-gram length 20, window 12: t = W + K - 1 = 31
from .urls import URLError, fingerprint, host_key

__all__ = [
    "K", "W", "SKETCH", "RESEMBLANCE", "CONTAINMENT", "MIN_SAMPLE", "MAX_DF",
    "main_text", "normalise", "kgram_hashes", "winnow", "winnow_reference", "fingerprints",
    "resemblance",
    "containment", "NearDupIndex", "links_worth_following", "mirror_hosts",
]

SKETCH = 64        # S: fingerprints per document kept in the index (the S smallest)
RESEMBLANCE = 0.5  # near-duplicate if estimated resemblance >= this ...
CONTAINMENT = 0.8  # ... or the new page's estimated containment in a stored one >= this
MIN_SAMPLE = 16    # an estimate needs at least this many sampled hashes behind it
MAX_DF = 5000      # a sketch hash shared by more stored documents than this is ignored (boilerplate)

_U64 = np.uint64

# The compiled normalisation, k-gram hashing, winnowing selection, and the index's lookups and
# merges, if built (setup.py); SKITTER_PURE_PYTHON=1 runs the NumPy code instead.
# tests/unit/test_speedups.py checks that both give the same results.
_speedups = speedups()

_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_BASE = np.uint64(BASE)  # odd: invertible modulo 2**64
_BASE_INV = np.uint64(BASE_INV)
_C1 = np.uint64(0xFF51AFD7ED558CCD)
_C2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_NONWORD = re.compile(r"[\W_]+")
_EMPTY = np.empty(0, dtype=_U64)


# ----------------------------------------------------------------------------------------------
# main content


def main_text(html: bytes | str, fallback_text: str = "", *, encoding: str | None = None) -> str:
    """The main content of an HTML page as plain text, boilerplate (navigation, header, footer,
    side bars, ads: :mod:`skitter.boilerplate`) left out, from :mod:`skitter.parse`'s own parse.

    ``html``: the page, decoded (``str``) or raw (``bytes``: decoded as the parser decodes a body,
    with ``encoding`` as its declared charset if given). ``fallback_text``: what to return when the
    page has no text with a letter or digit at all.
    """
    from .parse import parse_with_main_text   # lexbor: imported where pages are parsed

    ctype: str | None
    if isinstance(html, str):
        body, ctype = html.encode("utf-8", "replace"), "text/html; charset=utf-8"
    else:
        body, ctype = bytes(html), (f"text/html; charset={encoding}" if encoding else None)
    _, text = parse_with_main_text(body, "http://localhost/", ctype)
    return text if any(c.isalnum() for c in text) else fallback_text


# ----------------------------------------------------------------------------------------------
# fingerprints


def normalise(text: str) -> str:
    """Case-folded ``text`` without white space, punctuation and special characters (every
    character that is not alphanumeric: ``str.isalnum``)."""
    return _NONWORD.sub("", text.casefold())


_ASCII_ALNUM = np.array([chr(c).isalnum() for c in range(128)] + [False], dtype=bool)


_ASCII_NONALNUM = bytes(i for i in range(256) if not (i < 128 and _ASCII_ALNUM[i]))  # bytes.translate drops them


def _ascii_codepoints(b: bytes) -> np.ndarray:
    return np.frombuffer(b.lower().translate(None, _ASCII_NONALNUM), dtype=np.uint8)


def _codepoints(text: str) -> np.ndarray:
    """The code points of ``normalise(text)``, computed in NumPy (6x the regex's speed): uint8 when
    every kept character is ASCII (most pages, © and curly quotes included), else uint32."""
    if text.isascii():   # most pages: one byte a character, and casefold() is lower()
        if _speedups is not None:
            out = np.empty(len(text), dtype=np.uint8)
            return out[:_speedups.ascii_codepoints(text, out)]
        return _ascii_codepoints(text.encode("ascii"))
    cp = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    odd = np.unique(cp[cp >= 128])
    if not any(ch.isalnum() for c in odd.tolist() for ch in chr(c).casefold()):
        # many pages: ASCII words and a few symbols (©, nbsp, quotes, dashes) that normalising drops
        return _ascii_codepoints(text.encode("ascii", "ignore"))
    cp = np.frombuffer(text.casefold().encode("utf-32-le"), dtype=np.uint32)
    keep = _ASCII_ALNUM[np.minimum(cp, 128)]
    high = cp >= 128
    if high.any():
        u = np.unique(cp[high])
        alnum = u[np.fromiter((chr(c).isalnum() for c in u.tolist()), dtype=bool, count=u.size)]
        keep[high] = np.isin(cp[high], alnum)
    return cp[keep]


def _mix(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, vectorised (wrapping uint64 arithmetic), in place."""
    t = x >> _S33
    x ^= t
    x *= _C1
    np.right_shift(x, _S33, out=t)
    x ^= t
    x *= _C2
    np.right_shift(x, _S33, out=t)
    x ^= t
    return x


def kgram_hashes(text: str, k: int = K) -> np.ndarray:
    """64-bit hashes of every k-gram of ``normalise(text)``, in text order (uint64)."""
    if k < 1:
        raise ValueError("k must be >= 1")
    c = _codepoints(text)
    n = c.size
    if n < k:
        return _EMPTY.copy()
    pw, inv = _powers(n)
    if _speedups is not None:
        h = np.empty(n - k + 1, dtype=_U64)
        _speedups.kgram_hashes(c, k, pw, inv, h)
        return h
    return _kgram_hashes_np(c, k, pw, inv)


def _kgram_hashes_np(c: np.ndarray, k: int, pw: np.ndarray, inv: np.ndarray) -> np.ndarray:
    """``kgram_hashes`` of the code points ``c`` in NumPy (the reference for the compiled one)."""
    n = c.size
    with np.errstate(over="ignore"):
        # prefix sums of c[j]·B^j (mod 2**64); h_i = (P[i+k] - P[i]) · B^-i = Σ_j c[i+j]·B^j
        p = np.empty(n + 1, dtype=_U64)
        p[0] = 0
        cp = c.astype(_U64)
        cp += np.uint64(1)
        cp *= pw[:n]
        np.cumsum(cp, out=p[1:])
        m = n - k + 1
        h = p[k:]
        h -= p[:m]
        h *= inv[:m]
    return _mix(h)


_POWERS: list[np.ndarray] = []


_POWERS_KEPT = POWERS_KEPT   # 4 MiB of tables at most; a longer text gets its own, not kept


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """B^j and B^-j (mod 2**64) for j < n, computed once and kept (grown by doubling)."""
    if not _POWERS or _POWERS[0].size < n:
        size = max(n, min(_POWERS_KEPT, 2 * _POWERS[0].size if _POWERS else 1 << 16))
        if size > _POWERS_KEPT:
            return _power_tables(size)
        _POWERS[:] = _power_tables(size)
    return _POWERS[0], _POWERS[1]


def _power_tables(size: int) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(over="ignore"):
        pw = np.full(size, _BASE, dtype=_U64)
        pw[0] = 1
        np.cumprod(pw, out=pw)
        inv = np.full(size, _BASE_INV, dtype=_U64)
        inv[0] = 1
        np.cumprod(inv, out=inv)
    return pw, inv


def _window_min(h: np.ndarray, w: int) -> np.ndarray:
    """The minimum of every window of ``w`` consecutive values (one window if there are fewer):
    minima of widths 1, 2, 4, … p ≤ w by doubling, then two overlapping windows of width p."""
    n = h.size
    if n <= w:
        return h.min(keepdims=True)
    m, p = h, 1
    while 2 * p <= w:
        m = np.minimum(m[:-p], m[p:])
        p *= 2
    r = n - w + 1
    return np.minimum(m[:r], m[w - p:w - p + r])


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    keep = np.empty(x.size, dtype=bool)
    keep[:1] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])   # runs of the same minimum: most windows
    x = np.sort(x[keep])
    keep = np.empty(x.size, dtype=bool)
    keep[:1] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def winnow(text: str, k: int = K, w: int = W) -> np.ndarray:
    """The document fingerprint of ``text``: sorted unique uint64 hashes selected by winnowing.

    Every window of ``w`` consecutive k-gram hashes contributes its minimum; a text shorter than
    ``w + k - 1`` (but at least ``k``) normalised characters is one window. Empty if the text has
    fewer than ``k`` characters. The selected *positions* (rightmost minimum of each window, each
    position once: :func:`winnow_reference`) carry exactly these values; a set of values is what the
    index needs, and it is position independent.
    """
    if w < 1:
        raise ValueError("w must be >= 1")
    h = kgram_hashes(text, k)
    if h.size == 0:
        return h
    return _sorted_unique(_window_min(h, w))


def winnow_smallest(text: str, count: int, k: int = K, w: int = W) -> np.ndarray:
    """``winnow(text, k, w)[:count]``: the ``count`` smallest fingerprints, all that a query of
    :class:`NearDupIndex` needs (:attr:`NearDupIndex.probe`), without winnowing the whole text.

    A hash is selected iff some window of ``w`` positions that holds it (inside the text) holds no
    strictly smaller hash: with ``L`` and ``R`` the nearest positions left and right of it with a
    smaller hash (or the text's ends, -1 and n), iff ``R - L - 1 >= w``. Every hash smaller than a
    hash below a cut ``T`` is below ``T`` too, so the hashes below ``T`` alone decide which of
    them are selected. The cut is set where about 1.5 ``count`` of the text's uniformly spread
    hashes fall, and raised in the rare case that too few of them are selected. The result is
    exactly the first ``count`` values of :func:`winnow` (a hypothesis test checks it), at a
    fraction of the cost: no sliding minimum and no sort of every selected hash.
    """
    if w < 1:
        raise ValueError("w must be >= 1")
    if count < 1:
        return _EMPTY.copy()
    h = kgram_hashes(text, k)
    n = h.size
    if n <= 4 * (count + w):   # short texts: the plain algorithm is as cheap
        return _sorted_unique(_window_min(h, w))[:count] if n else h
    step = (1 << 64) // n
    cut = step * (count + count // 2 + 16)
    sp = _speedups
    out = np.empty(n, dtype=_U64) if sp is not None else None
    while True:
        below = min(cut, (1 << 64) - 1)
        if sp is not None and out is not None:
            kept = np.unique(out[:sp.select_below(h, below, w, out)])
        else:
            pos = np.flatnonzero(h < np.uint64(below))
            v = h[pos]
            kept = np.unique(v[_selected(pos, v, n, w)])
        if kept.size >= count or cut >= (1 << 64) - 1:
            return kept[:count]
        cut *= 4


def _selected(pos: np.ndarray, v: np.ndarray, n: int, w: int) -> np.ndarray:
    """Which of the hashes ``v`` at increasing positions ``pos`` (every hash of the text smaller
    than any of them among them) winnowing selects: ``R - L - 1 >= w`` (see ``winnow_smallest``).
    Only smaller hashes nearer than ``w`` can reject one, so neighbours in ``pos`` are compared
    pairwise, at growing distance, until no pair is that close."""
    left = np.maximum(pos - w, -1)       # "far enough", or the start of the text
    right = np.minimum(pos + w, n)
    m = pos.size
    d = 1
    while d < m:
        close = (pos[d:] - pos[:-d]) < w
        if not close.any():
            break
        smaller_left = close & (v[:-d] < v[d:])       # pos[j] is left of pos[j + d] and smaller
        left[d:] = np.where(smaller_left, np.maximum(left[d:], pos[:-d]), left[d:])
        smaller_right = close & (v[d:] < v[:-d])
        right[:-d] = np.where(smaller_right, np.minimum(right[:-d], pos[d:]), right[:-d])
        d += 1
    return right - left - 1 >= w


def winnow_reference(hashes: Sequence[int], w: int = W) -> list[tuple[int, int]]:
    """Seed 004's selection loop, in plain Python, for reference and tests: ``[(position, hash)]``
    of the minimum of every window of ``w`` hashes (rightmost on ties), each position recorded once,
    in text order."""
    out: list[tuple[int, int]] = []
    n = len(hashes)
    if n == 0:
        return out
    last = -1
    for start in range(max(1, n - w + 1)):
        window = hashes[start:start + w]
        best = start
        for j in range(start, start + len(window)):
            if hashes[j] <= hashes[best]:
                best = j
        if best != last:
            out.append((best, int(hashes[best])))
            last = best
    return out


def fingerprints(html: bytes | str, fallback_text: str = "", *, encoding: str | None = None,
                 k: int = K, w: int = W) -> np.ndarray:
    """``winnow(main_text(html, fallback_text))``: a page's whole fingerprint set (the worker process,
    ``analyse``, computes only its smallest ``NearDupIndex.probe`` values: ``winnow_smallest``)."""
    return winnow(main_text(html, fallback_text, encoding=encoding), k, w)


def _as_fps(fps: Iterable[int] | np.ndarray) -> np.ndarray:
    if isinstance(fps, np.ndarray) and fps.dtype == _U64:
        return fps
    if isinstance(fps, array) and fps.typecode == "Q":   # skitter.winnow's, from the worker
        return np.frombuffer(fps, dtype=_U64)
    a = np.asarray(list(fps) if not isinstance(fps, np.ndarray) else fps)
    if a.dtype == np.int64:
        return a.view(_U64)
    return a.astype(_U64)


def resemblance(a: np.ndarray, b: np.ndarray) -> float:
    """|A∩B| / |A∪B| of two fingerprint sets (sorted unique arrays, as ``winnow`` returns); 0 if
    both are empty."""
    a, b = _as_fps(a), _as_fps(b)
    inter = np.intersect1d(a, b, assume_unique=True).size
    union = a.size + b.size - inter
    return inter / union if union else 0.0


def containment(a: np.ndarray, b: np.ndarray) -> float:
    """|A∩B| / |A|: how much of ``a`` is in ``b`` (0 if ``a`` is empty)."""
    a, b = _as_fps(a), _as_fps(b)
    if a.size == 0:
        return 0.0
    return np.intersect1d(a, b, assume_unique=True).size / a.size


def _sorted_set(fps) -> np.ndarray:
    """``fps`` as a sorted unique uint64 array (``winnow``'s output passes through as it is)."""
    a = _as_fps(fps)
    if a.size < 2 or bool((a[1:] > a[:-1]).all()):
        return a
    return np.unique(a)


def _signed(v: np.ndarray) -> np.ndarray:
    return v.view(np.int64)


# ----------------------------------------------------------------------------------------------
# the index


class _Grow:
    """An append-only NumPy array with capacity doubling."""

    __slots__ = ("a", "n")

    def __init__(self, dtype, cap: int = 1024) -> None:
        self.a = np.empty(cap, dtype=dtype)
        self.n = 0

    def extend(self, values: np.ndarray) -> None:
        need = self.n + values.size
        if need > self.a.size:
            cap = max(need, 2 * self.a.size)
            b = np.empty(cap, dtype=self.a.dtype)
            b[:self.n] = self.a[:self.n]
            self.a = b
        self.a[self.n:need] = values
        self.n = need

    def view(self) -> np.ndarray:
        return self.a[:self.n]

    @property
    def nbytes(self) -> int:
        return self.a.nbytes


# a run is merged into the one before it once that one is at most _MERGE times its size. A query
# looks up every run: 8 keeps fewer of them than doubling did (4 instead of 5 at 7,500 documents,
# queries ~15 % faster) at the same cost per insertion
_MERGE = 8
# a run of at least this many postings gets a bucket directory (see _Run); a smaller one is searched
# by bisection, which stays in the CPU's caches at this size (256 KB of keys)
_DIRECTORY_MIN = 1 << 15
_BUCKET = 8            # postings per directory bucket, on average: 8 to 16 (half a byte a posting)


_NO_POS = np.empty(0, dtype=np.intp)


def _expand(lo: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The positions ``lo[i] .. lo[i] + lens[i] - 1`` of every range, concatenated."""
    ends = np.cumsum(lens)
    return np.arange(int(ends[-1]) if ends.size else 0) + np.repeat(lo - (ends - lens), lens)


class _Run:
    """Postings sorted by *scrambled* hash (hash × an odd constant, mod 2⁶⁴, a bijection), with the
    document index of each (uint32), older documents first among equal hashes.

    Why scrambled: sketch hashes are the smallest of each page, so they crowd the bottom of hash
    space; scrambled, they are uniform, and a run of n postings can have a directory of the
    ~n/8 buckets of its top bits (``starts[b]``: the first posting of bucket b). A lookup then reads
    its bucket's offsets and ~8-16 keys: two or three cache lines, where a binary search in a
    run of a million keys (8 MB) misses the caches on most of its 20 steps: the index is cold
    between two pages of a crawl. Replayed on a benchmark crawl's 19,649 sketches with the caches
    flushed between queries, a query took 119-188 µs before and 110-170 µs with directories; where
    the index is small and stays in the caches, directories cost ~10 % (docs/benchmarks.md)."""

    __slots__ = ("keys", "docs", "starts", "shift", "shift_bits")

    def __init__(self, keys: np.ndarray, docs: np.ndarray) -> None:
        self.keys = keys
        self.docs = docs
        self.starts: np.ndarray | None = None     # None: searched by bisection (shift unused)
        self.shift_bits = 0                         # int(shift), for the compiled lookups
        if keys.size >= _DIRECTORY_MIN:
            self.build_directory((keys.size // _BUCKET).bit_length() - 1)

    def build_directory(self, bits: int) -> None:
        """A directory of the 2**bits buckets of the keys' top ``bits`` bits."""
        self.shift = np.uint64(64 - bits)
        self.shift_bits = 64 - bits
        # the first posting of each bucket: a search for the bucket's lowest key (2 bytes a
        # posting of scratch; the bucket numbers of every key would take 8, at each merge)
        starts = np.empty((1 << bits) + 1, dtype=np.uint32)
        starts[:-1] = np.searchsorted(self.keys, np.arange(1 << bits, dtype=_U64) << self.shift)
        starts[-1] = self.keys.size
        self.starts = starts

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + self.docs.nbytes + (0 if self.starts is None else self.starts.nbytes)

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The postings of ``keys`` (scrambled hashes): their positions, and the key of each."""
        if _speedups is not None:
            found = _speedups.run_lookup(self.keys, self.starts, self.shift_bits,
                                         np.ascontiguousarray(keys, dtype=_U64), _new_positions, _new_keys)
            return (_NO_POS, _EMPTY) if found is None else found
        return self.lookup_np(keys)

    def lookup_np(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``lookup`` in NumPy (the reference for the compiled one)."""
        run = self.keys
        if self.starts is None:
            lo = np.searchsorted(run, keys, "left")
            hit = run[np.minimum(lo, run.size - 1)] == keys
            if not hit.any():
                return _NO_POS, _EMPTY
            lo, keys = lo[hit], keys[hit]
            lens = np.searchsorted(run, keys, "right") - lo
            if lens.size == int(lens.sum()):       # one posting per hash: the common case
                return lo, keys
            return _expand(lo, lens), np.repeat(keys, lens)
        bucket = (keys >> self.shift).astype(np.intp)
        lo = self.starts[bucket].astype(np.intp)
        lens = self.starts[bucket + 1] - lo
        pos = _expand(lo, lens)
        want = np.repeat(keys, lens)
        hit = run[pos] == want
        return pos[hit], want[hit]


def _new_positions(n: int) -> np.ndarray:
    return np.empty(n, dtype=np.intp)


def _new_keys(n: int) -> np.ndarray:
    return np.empty(n, dtype=_U64)


def _scramble(h: np.ndarray) -> np.ndarray:
    return h * _BASE


def _unscramble(h: np.ndarray) -> np.ndarray:
    return h * _BASE_INV


def _merge(older: _Run, newer: _Run) -> _Run:
    """Two sorted runs as one, the older run's postings first among equal hashes (a stable merge):
    each of the newer run's postings goes where a binary search in the older one puts it. Linear,
    and without the index arrays of a sort of both (16 bytes a posting: the peak memory of a merge
    of the largest runs)."""
    k1, d1 = older.keys, older.docs
    k2, d2 = newer.keys, newer.docs
    if _speedups is not None:   # the same merge in one sequential pass, compiled
        keys = np.empty(k1.size + k2.size, dtype=k1.dtype)
        docs = np.empty(keys.size, dtype=d1.dtype)
        _speedups.merge_runs(k1, d1, k2, d2, keys, docs)
        return _Run(keys, docs)
    at = np.searchsorted(k1, k2, "right")
    at += np.arange(k2.size, dtype=at.dtype)
    old = np.ones(k1.size + k2.size, dtype=bool)
    old[at] = False
    keys = np.empty(old.size, dtype=k1.dtype)
    docs = np.empty(old.size, dtype=d1.dtype)
    keys[at] = k2
    keys[old] = k1
    docs[at] = d2
    docs[old] = d1
    return _Run(keys, docs)


class _Generation:
    """The documents indexed between two seals: per document its id, sketch length and threshold
    τ (its largest sketch hash), and one posting (hash -> document) per sketch hash, in sorted runs
    merged as they grow (log-structured: an insertion costs O(log n) amortised)."""

    __slots__ = ("ids", "tau", "n", "runs")

    def __init__(self) -> None:
        self.ids = _Grow(np.int64)
        self.tau = _Grow(_U64)
        self.n = _Grow(np.int32)
        self.runs: list[_Run] = []

    def __len__(self) -> int:
        return self.ids.n

    def add(self, doc_id: int, sk: np.ndarray) -> None:
        i = self.ids.n
        self.ids.extend(np.array([doc_id], dtype=np.int64))
        self.tau.extend(sk[-1:])
        self.n.extend(np.array([sk.size], dtype=np.int32))
        runs = self.runs
        runs.append(_Run(np.sort(_scramble(sk)), np.full(sk.size, i, dtype=np.uint32)))
        while len(runs) > 1 and runs[-2].keys.size <= _MERGE * runs[-1].keys.size:
            newer = runs.pop()
            runs.append(_merge(runs.pop(), newer))

    def seal(self) -> None:
        """One run, arrays at their exact size: the generation takes no more room than it needs."""
        while len(self.runs) > 1:
            newer = self.runs.pop()
            self.runs.append(_merge(self.runs.pop(), newer))
        for g in (self.ids, self.tau, self.n):
            g.a = g.view().copy()

    def sketches(self) -> list[tuple[int, np.ndarray]]:
        """(doc id, sketch) of every document, rebuilt from the postings."""
        if not self.runs:
            return []
        keys = _unscramble(np.concatenate([r.keys for r in self.runs]))
        docs = np.concatenate([r.docs for r in self.runs])
        order = np.lexsort((keys, docs))
        keys, docs = keys[order], docs[order]
        cut = np.flatnonzero(np.diff(docs)) + 1
        ids = self.ids.view()
        return [(int(ids[docs[p[0]]]), p_keys) for p, p_keys in
                zip(np.split(np.arange(docs.size), cut), np.split(keys, cut))]

    @property
    def nbytes(self) -> int:
        return self.ids.nbytes + self.tau.nbytes + self.n.nbytes + sum(r.nbytes for r in self.runs)


def _record(doc_id: int, sketch: np.ndarray) -> tuple[int, bytes]:
    """The persisted form of a document's sketch: ``(doc_id, little-endian uint64 bytes)``."""
    return int(doc_id), sketch.astype("<u8", copy=False).tobytes()


def _probe_size(sketch: int, need: float) -> int | None:
    # S / need + 1 hashes: a stored page that shares sampled hashes only beyond them has resemblance
    # and containment below ``need`` (both are at most S / n_a), see ``query``
    return int(np.ceil(sketch / need)) + 1 if need > 0 else None


class NearDupIndex:
    """Finds the stored near-duplicates of a new page without comparing it with every page.

    Per document: its sketch (the ``sketch`` smallest fingerprints) as one posting per sketch hash
    in an inverted index, plus the sketch's length and largest hash (all the estimators need). See
    the module docstring for the estimators, thresholds and the bytes per page.

    Bounded memory (``window``): documents are indexed in generations of ``window / 4``; when a
    generation is full it is sealed (one sorted run, exact-size arrays) and, once more than
    ``window`` documents are held, the oldest generation is dropped. A page is then compared with
    the last ``window`` to ``5/4 window`` indexed pages (the crawl's exact content-seen test still
    covers every page). ``window=None``: every page, memory growing with the crawl.

    Persistence: :meth:`record_for` gives the record ``(doc_id, sketch)`` (the sketch as
    little-endian uint64 bytes, an SQLite BLOB) to insert with the page, in the crawl's
    transaction, and :meth:`add_records` indexes such records again, oldest first: one row a page.
    """

    def __init__(self, sketch: int = SKETCH, *, resemblance: float = RESEMBLANCE,
                 containment: float = CONTAINMENT, min_sample: int = MIN_SAMPLE,
                 max_df: int = MAX_DF, window: int | None = None) -> None:
        if sketch < 1:
            raise ValueError("sketch must be >= 1")
        if window is not None and window < 4:
            raise ValueError("window must be >= 4 documents (or None)")
        self.sketch = sketch
        self.resemblance = resemblance
        self.containment = containment
        self.min_sample = min_sample
        self.max_df = max_df
        self.window = window
        self._gen_size = None if window is None else window // 4
        self._gens: list[_Generation] = [_Generation()]
        self._count = 0
        self.dropped = 0           # documents dropped out of the window
        self.last_candidates = 0   # stored documents that shared a sketch hash with the last query
        #                            (on an early exit of the query, the postings it found: at most that)
        self.last_compared = 0     # of those, the ones whose estimates were computed
        self.compared = 0          # running total of last_compared

    # -- building ----------------------------------------------------------------------------
    def sketch_of(self, fps: np.ndarray) -> np.ndarray:
        """The bottom-``sketch`` of a fingerprint set (sorted)."""
        return _sorted_set(fps)[:self.sketch]

    def record_for(self, doc_id: int, fps: np.ndarray) -> tuple[int, bytes]:
        """The record ``(doc_id, sketch bytes)`` that persists ``doc_id``'s entry (what
        :meth:`add` returns, without indexing)."""
        return _record(doc_id, self.sketch_of(fps))

    def add_records(self, records: Iterable[tuple[int, bytes]]) -> None:
        """Index persisted ``(doc_id, sketch bytes)`` records, oldest first."""
        for doc_id, blob in records:
            self._add_sketch(int(doc_id), np.frombuffer(blob, dtype="<u8").astype(_U64, copy=False))

    def add(self, doc_id: int, fps: np.ndarray) -> tuple[int, bytes]:
        """Index ``doc_id`` with its fingerprint set (``winnow``'s output) and return the record
        that persists it (:meth:`record_for`). A document with no fingerprints is not indexed."""
        sk = self.sketch_of(fps)
        self._add_sketch(int(doc_id), sk)
        return _record(doc_id, sk)

    def _add_sketch(self, doc_id: int, sk: np.ndarray) -> None:
        if sk.size == 0:
            return
        gen = self._gens[-1]
        if self._gen_size is not None and len(gen) >= self._gen_size:
            gen.seal()
            gen = _Generation()
            self._gens.append(gen)
            window = self.window
            assert window is not None  # _gen_size is set only with a window
            while self._count - len(self._gens[0]) >= window:
                old = self._gens.pop(0)
                self._count -= len(old)
                self.dropped += len(old)
        gen.add(doc_id, sk)
        self._count += 1

    def records(self) -> list[tuple[int, bytes]]:
        """The records of the documents the index holds, oldest first (what :meth:`add` returned
        for them, and what :meth:`add_records` takes)."""
        return [_record(doc_id, sk) for gen in self._gens for doc_id, sk in gen.sketches()]

    def to_rows(self) -> list[tuple[int, int]]:
        """Every ``(doc_id, hash)`` the index holds, hashes as signed 64-bit integers (tests)."""
        out: list[tuple[int, int]] = []
        for gen in self._gens:
            for doc_id, sk in gen.sketches():
                out += [(doc_id, h) for h in _signed(sk).tolist()]
        return out

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        """Bytes held by the index's arrays (capacity included)."""
        return sum(g.nbytes for g in self._gens)

    # -- querying ----------------------------------------------------------------------------
    @property
    def probe(self) -> int | None:
        """How many of a page's smallest fingerprints :meth:`query` looks up (with the index's own
        thresholds), and all that :meth:`add` keeps: a page's fingerprints can be cut to these
        (``winnow_smallest``) with the same answers. None: every fingerprint (a zero threshold)."""
        need = min(self.resemblance, self.containment)
        return _probe_size(self.sketch, need)

    def query(self, fps: np.ndarray, threshold: float | None = None, *,
              containment: float | None = None, limit: int | None = None
              ) -> list[tuple[int, float, float]]:
        """Stored near-duplicates of a page with fingerprint set ``fps``:
        ``[(doc_id, resemblance, containment)]``, best (highest resemblance) first.

        ``threshold``: minimum resemblance (default ``self.resemblance``); ``containment``:
        minimum containment of the new page in the stored one (default ``self.containment``); a
        stored page qualifies if either holds. Both figures are estimates from the sketches.
        ``fps`` may be only the page's smallest :attr:`probe` fingerprints (``winnow_smallest``):
        the answers are the same as long as the thresholds are not below the index's own.
        """
        r_min = self.resemblance if threshold is None else threshold
        c_min = self.containment if containment is None else containment
        self.last_candidates = self.last_compared = 0
        a = _sorted_set(fps)
        if a.size == 0 or not self._count:
            return []
        need = min(r_min, c_min)
        # 1. look the new page's smallest hashes up in every run: their postings. A stored page B
        # shares sampled hashes only below its τ, i.e. with a prefix a[:n_a] of the sorted set,
        # and it can qualify only if n_a < S / need (resemblance and containment are both at most
        # S / n_a): the first ceil(S / need) + 1 hashes find every page that can qualify, with
        # exactly the hits a lookup of all of them would count.
        size = _probe_size(self.sketch, need)
        probe = _scramble(a if size is None else a[:size])
        least = max(1, int(np.floor(need * self.min_sample)))   # floor: a product like 0.28 * 25
        # lands just above 7 in floating point, and 7 of 25 does qualify
        candidates = None
        if _speedups is not None:   # _candidates_np's first test, in one compiled call over every run
            runs = [[(run.keys, run.docs, run.starts, run.shift_bits) for run in gen.runs]
                    for gen in self._gens]
            postings = _speedups.count_postings([r for gen_runs in runs for r in gen_runs], probe)
            if postings < least:
                self.last_candidates = postings
                return []
            if postings <= self.max_df:
                candidates = self._candidates_compiled(runs, probe, need)
        out_ids, out_res, out_con = [], [], []
        for gen, cand, hits in candidates or self._candidates_np(probe, need, least):
            self.last_compared += int(cand.size)
            if cand.size == 0:
                continue
            # 3. the estimates, on the region of hash space where each stored sketch is complete
            sk_len = gen.n.view()[cand]
            complete = sk_len < self.sketch
            tau = gen.tau.view()[cand]
            n_a = np.where(complete, a.size, np.searchsorted(a, tau, "right"))
            union = n_a + sk_len - hits
            res = hits / np.maximum(union, 1)
            con = hits / np.maximum(n_a, 1)
            ok = (((res >= r_min) & (union >= self.min_sample))
                  | ((con >= c_min) & (n_a >= self.min_sample)))
            if ok.any():
                out_ids.append(gen.ids.view()[cand[ok]])
                out_res.append(res[ok])
                out_con.append(con[ok])
        self.compared += self.last_compared
        if not out_ids:
            return []
        ids, res, con = np.concatenate(out_ids), np.concatenate(out_res), np.concatenate(out_con)
        order = np.lexsort((-con, -res))
        if limit is not None:
            order = order[:limit]
        return [(int(ids[i]), float(res[i]), float(con[i])) for i in order]

    def _candidates_compiled(self, runs: list[list[tuple]], probe: np.ndarray, need: float):
        """``_candidates_np``, each generation in one compiled call (``skitter._speedups``; ``runs``:
        each generation's runs as it takes them); used when no hash can be over ``max_df`` (fewer
        postings in all)."""
        sp = _speedups
        assert sp is not None  # only called when the compiled module is there
        for gen, gen_runs in zip(self._gens, runs):
            found, cand, hits = sp.gen_candidates(gen_runs, probe, gen.n.view(), need,
                                                         self.min_sample)
            if found:
                self.last_candidates += found
                yield gen, cand, hits

    def _candidates_np(self, probe: np.ndarray, need: float, least: int):
        """Per generation with postings of ``probe``: ``(generation, documents, their hits)``, the
        documents that share enough sampled hashes with the new page to be worth the estimates
        (``query``'s steps 1 and 2; ``last_candidates`` counts the documents met)."""
        found = []                                  # (generation, run, posting positions, their hashes)
        postings = 0
        for g, gen in enumerate(self._gens):
            for run in gen.runs:
                pos, hs = run.lookup(probe)
                if pos.size:
                    found.append((g, run, pos, hs))
                    postings += pos.size
        # a page qualifies only on at least min_sample * need shared sampled hashes (resemblance
        # needs a union, containment an n_a, of min_sample): with fewer postings found in all,
        # none can (most queries stop here; last_candidates is then the postings, an upper bound)
        if postings < least:
            self.last_candidates = postings
            return
        if self.max_df < postings:                  # a hash in too many documents is boilerplate
            uh, df = np.unique(np.concatenate([f[3] for f in found]), return_counts=True)
            common = uh[df > self.max_df]
            if common.size:
                found = [(g, run, pos[keep], hs[keep]) for g, run, pos, hs in found
                         for keep in [~np.isin(hs, common)]]
        per_gen: dict[int, list[np.ndarray]] = defaultdict(list)
        for g, run, pos, _ in found:
            if pos.size:
                per_gen[g].append(run.docs[pos])
        for g, parts in per_gen.items():
            gen = self._gens[g]
            docs = np.sort(np.concatenate(parts))
            starts = np.flatnonzero(np.concatenate(([True], docs[1:] != docs[:-1])))
            cand = docs[starts].astype(np.int64)
            hits = np.diff(np.append(starts, docs.size))
            self.last_candidates += int(cand.size)
            # 2. a cheap necessary condition before the estimates: enough shared sampled hashes
            sk_len = gen.n.view()[cand]
            worth = hits >= np.maximum(1, np.floor(need * np.minimum(sk_len, self.min_sample)))
            yield gen, cand[worth], hits[worth]


# ----------------------------------------------------------------------------------------------
# what to do with a near-duplicate


def _url_of(link) -> str:
    return link if isinstance(link, str) else link.url


def links_worth_following(page_links: Iterable, original_links: Iterable) -> bool:
    """True iff the near-duplicate's links (URLs or :class:`~skitter.models.Link`) include one
    its original lacks: only then is it worth following the near-duplicate's links."""
    original = {_url_of(l) for l in original_links}
    return any(_url_of(l) not in original for l in page_links)


def _host(url: str) -> str:
    try:
        return host_key(url)
    except URLError:
        return url


def mirror_hosts(pairs: Iterable[tuple[str, str]], pages_per_host: Mapping[str, int] | None = None,
                 *, min_share: float = 0.5, min_pages: int = 5) -> list[tuple[str, str, float]]:
    """Hosts whose pages are mostly near-duplicates of another host's: ``[(mirror, other,
    share)]``, largest share first, one entry per pair of hosts.

    ``pairs``: near-duplicate URL pairs (any order; same-host pairs are ignored).
    ``pages_per_host``: pages crawled per host (``host`` as in ``urls.host_key``, the fetches table's host); share =
    the part of ``mirror``'s pages with a near-duplicate on ``other``. Without it the share is
    taken over the host's pages that appear in ``pairs`` at all (an upper bound). A pair of hosts
    is reported when the share reaches ``min_share`` and at least ``min_pages`` pages are involved.
    """
    dup_pages: dict[tuple[str, str], set[str]] = defaultdict(set)
    seen: dict[str, set[str]] = defaultdict(set)
    for u, v in pairs:
        hu, hv = _host(u), _host(v)
        seen[hu].add(u)
        seen[hv].add(v)
        if hu == hv:
            continue
        dup_pages[(hu, hv)].add(u)
        dup_pages[(hv, hu)].add(v)
    best: dict[frozenset, tuple[str, str, float]] = {}
    for (ha, hb), urls in dup_pages.items():
        total = pages_per_host.get(ha, 0) if pages_per_host is not None else len(seen[ha])
        if len(urls) < min_pages or total <= 0:
            continue
        share = min(1.0, len(urls) / total)
        if share < min_share:
            continue
        key = frozenset((ha, hb))
        if key not in best or (share, hb) > (best[key][2], best[key][1]):
            best[key] = (ha, hb, share)
    return sorted(best.values(), key=lambda x: (-x[2], x[0], x[1]))


# -- the crawl's duplicate stage --------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Verdict:
    """What the duplicate tests found for one 2xx response."""

    duplicate_of: str | None = None        # the content-seen test: the URL first seen with this body
    near_duplicate_of: str | None = None   # the stored page this one is a near-duplicate of
    follow_links: bool = True


class DuplicateStore(Protocol):
    """What the tests read and write (skitter.store.crawlstore.CrawlStore)."""

    def first_with_content(self, digest: str, url: str) -> str: ...
    def page_url(self, fp: int) -> str | None: ...
    def link_targets(self, fp: int) -> list[str]: ...
    def add_sketch(self, record: tuple[int, bytes]) -> None: ...


class DuplicateTests:
    """The content-seen test over the whole crawl (exact body hash, through the store), then the
    near-duplicate test against the last ``window`` pages (``index``; None: off). ``follow``:
    "new-links" follows a near-duplicate's links only if it has links its original lacks, "all"
    always."""

    def __init__(self, store: DuplicateStore, index: NearDupIndex | None, follow: str = "new-links") -> None:
        self.store = store
        self.index = index
        self.follow = follow

    def test(self, url: str, content_hash: str | None, page, fps: np.ndarray | array | None) -> Verdict | None:
        """The verdict on one response (``analyse``'s content hash, page and fingerprints), or
        None when there is no body to test (not a 2xx)."""
        if content_hash is None:
            return None
        first = self.store.first_with_content(content_hash, url)
        if first != url:   # (the same URL fetched again is never its own duplicate)
            # the same bytes at another URL resolve their relative links elsewhere: follow them if
            # they lead where the original's do not
            follow = page is not None and links_worth_following(page.links, self.store.link_targets(fingerprint(first)))
            return Verdict(duplicate_of=first, follow_links=follow)
        if page is None or self.index is None or fps is None or not len(fps):
            return Verdict()
        near, follow = None, True
        own = fingerprint(url)
        fps = _as_fps(fps)   # the worker's array('Q'): a NumPy view of it, no copy
        match = [m for m in self.index.query(fps) if m[0] != own]   # a recrawled page's older version
        if match:
            near = self.store.page_url(match[0][0])
            if near is not None and self.follow == "new-links":
                follow = links_worth_following(page.links, self.store.link_targets(match[0][0]))
        self.store.add_sketch(self.index.add(own, fps))
        return Verdict(near_duplicate_of=near, follow_links=follow)
