"""A page's smallest winnowing fingerprints in the analysis process, without NumPy.

:func:`skitter.dedup.winnow_smallest` is the reference (NumPy, and the compiled loops when they are
built). The analysis worker needs only its answer, and NumPy was 10 MB of that process's memory
(issue #18: the crawl's processes together against Scrapy's one), so the worker computes the same
values here with the same compiled loops (``skitter._speedups``) over ``array`` buffers, and gives
them to the crawl process as an ``array('Q')``, which :class:`~skitter.neardup.NearDupIndex` reads
without a copy. Without the compiled module (``SKITTER_PURE_PYTHON=1``, or not built) it calls the
reference, NumPy and all. ``tests/unit/test_speedups.py`` checks that both give the same values.
"""

from __future__ import annotations

from array import array
from types import ModuleType

from .compiled import speedups

__all__ = ["K", "W", "BASE", "BASE_INV", "POWERS_KEPT", "smallest"]

K = 20             # k-gram length, in normalised characters
W = 12             # winnowing window, in k-grams; t = W + K - 1 = 31
BASE = 0x9E3779B97F4A7C15                 # of the k-gram hash's polynomial: odd, invertible mod 2**64
BASE_INV = pow(BASE, -1, 1 << 64)
POWERS_KEPT = 1 << 18   # the power tables kept: 4 MiB at most; a longer text gets its own

_MASK = (1 << 64) - 1
_ZERO = array("Q", [0])
_ZERO32 = array("I", [0])
_powers: list[array] = []            # [B^j, B^-j] for j < their length

_speedups = speedups()
if _speedups is not None and not hasattr(_speedups, "fill_powers"):   # built before these functions
    _speedups = None


def _tables(n: int, sp: ModuleType) -> tuple[array, array]:
    """B^j and B^-j (mod 2**64) for j < n, grown by doubling and kept up to ``POWERS_KEPT``
    (``skitter.dedup._powers``)."""
    if not _powers or len(_powers[0]) < n:
        size = max(n, min(POWERS_KEPT, 2 * len(_powers[0]) if _powers else 1 << 16))
        tables = [_ZERO * size, _ZERO * size]
        sp.fill_powers(BASE, tables[0])
        sp.fill_powers(BASE_INV, tables[1])
        if size > POWERS_KEPT:
            return tables[0], tables[1]
        _powers[:] = tables
    return _powers[0], _powers[1]


def _codepoints(text: str, sp: ModuleType):
    """The code points of ``dedup.normalise(text)`` (letters and digits, case-folded) as a buffer:
    of uint8 when all of them are ASCII (most pages: ASCII words and a few symbols), else of
    uint32. The hashes depend on the values only. ``sp``: the compiled module."""
    out8 = bytearray(len(text))
    m = sp.ascii_codepoints(text, out8)
    if m >= 0:
        return memoryview(out8)[:m]
    folded = text.casefold()
    out32 = _ZERO32 * len(folded)
    return memoryview(out32)[:sp.alnum_codepoints(folded, out32)]


def smallest(text: str, count: int, k: int = K, w: int = W):
    """``skitter.dedup.winnow_smallest(text, count, k, w)`` as an ``array('Q')`` (ascending),
    computed without NumPy when the compiled module is there (else the NumPy reference's array)."""
    sp = _speedups
    if sp is None or count < 1 or k < 1 or w < 1:
        from .dedup import winnow_smallest

        return winnow_smallest(text, count, k, w)
    c = _codepoints(text, sp)
    n = len(c) - k + 1            # k-gram hashes
    if n < 1:
        return array("Q")
    pw, inv = _tables(len(c), sp)
    h = _ZERO * n
    sp.kgram_hashes(c, k, pw, inv, h)
    if n < w:                     # fewer hashes than a window: the text is one window
        return array("Q", [min(h)])
    out = _ZERO * n
    # the cut where about 1.5 ``count`` hashes fall, raised until enough are selected (the
    # reference's reasoning); a short text is winnowed whole, as the reference does
    cut = _MASK if n <= 4 * (count + w) else ((1 << 64) // n) * (count + count // 2 + 16)
    while True:
        below = min(cut, _MASK)
        kept = sorted(set(out[:sp.select_below(h, below, w, out)]))
        if len(kept) >= count or below == _MASK:
            break
        cut *= 4
    if n <= 4 * (count + w) and _MASK in h:   # a short text is winnowed whole by the reference,
        from .dedup import winnow_smallest     # and a hash of 2**64 - 1 is below no cut

        return winnow_smallest(text, count, k, w)
    return array("Q", kept[:count])
