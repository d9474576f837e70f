"""Near-duplicate detection with document fingerprints (seed 004: winnowing over K-length substrings).

Pure: no I/O, no event loop, no database. ``main_text`` and ``winnow`` are the CPU part and run
where the page is parsed (``analyse``, in an analysis process, through the compiled
:mod:`skitter.winnow` where it was built: the NumPy code here is its reference).

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

The index of the stored pages' sketches that finds a new page's near-duplicates, and the crawl's
duplicate stage, are :mod:`skitter.neardup`'s (no NumPy there: it runs in the crawl process); its
names are also importable from here.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Sequence

import numpy as np

from .compiled import speedups
# the index and the duplicate stage, and their thresholds: importable from here as before
from .neardup import (CONTAINMENT, MAX_DF, MIN_SAMPLE, RESEMBLANCE, SKETCH, DuplicateStore, DuplicateTests,
                      NearDupIndex, Verdict, links_worth_following, mirror_hosts)
from .winnow import BASE, BASE_INV, K, POWERS_KEPT, W   # k-gram length 20, window 12: t = W + K - 1 = 31

__all__ = [
    "K", "W", "SKETCH", "RESEMBLANCE", "CONTAINMENT", "MIN_SAMPLE", "MAX_DF",
    "main_text", "normalise", "kgram_hashes", "winnow", "winnow_reference", "fingerprints",
    "resemblance",
    "containment", "NearDupIndex", "Verdict", "DuplicateStore", "DuplicateTests", "links_worth_following",
    "mirror_hosts",
]

_U64 = np.uint64

# The compiled normalisation, k-gram hashing and winnowing selection, if built (setup.py);
# SKITTER_PURE_PYTHON=1 runs the NumPy code instead.
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
