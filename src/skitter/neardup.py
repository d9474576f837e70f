"""The near-duplicate index and the crawl's duplicate stage (seed 004; the fingerprints themselves
are :mod:`skitter.winnow`'s, computed in the analysis processes, and :mod:`skitter.dedup` has the
algorithm and its NumPy reference).

No NumPy: the index lives in the crawl process, and NumPy would cost that process about 15 MB of
RSS (its libraries and 80-odd modules) for a few sorted arrays. Postings are ``array`` buffers; the
lookups, merges and bucket directories are compiled loops over them (``skitter._speedups``), or
``bisect`` where the module was not built (``SKITTER_PURE_PYTHON=1``: the reference the tests
compare the compiled code with). :class:`DuplicateTests` is the crawl's duplicate stage: the
content-seen test, then the near-duplicate test, reading and writing through the store it is given.

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

import sys
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass
from heapq import merge as _merged
from math import ceil, floor
from typing import Protocol
from collections.abc import Iterable, Mapping

from .compiled import speedups
from .urls import URLError, fingerprint, host_key
from .winnow import BASE, BASE_INV

__all__ = [
    "SKETCH", "RESEMBLANCE", "CONTAINMENT", "MIN_SAMPLE", "MAX_DF", "NearDupIndex", "Verdict",
    "DuplicateTests", "links_worth_following", "mirror_hosts",
]

SKETCH = 64        # S: fingerprints per document kept in the index (the S smallest)
RESEMBLANCE = 0.5  # near-duplicate if estimated resemblance >= this ...
CONTAINMENT = 0.8  # ... or the new page's estimated containment in a stored one >= this
MIN_SAMPLE = 16    # an estimate needs at least this many sampled hashes behind it
MAX_DF = 5000      # a sketch hash shared by more stored documents than this is ignored (boilerplate)

# the index's lookups, merges and directories, if built (setup.py); SKITTER_PURE_PYTHON=1 runs the
# Python code instead (tests/unit/test_speedups.py checks that both give the same results)
_speedups = speedups()

_M64 = (1 << 64) - 1
_LITTLE = sys.byteorder == "little"


def _sorted_set(fps) -> list[int]:
    """A fingerprint set (``skitter.winnow``'s ``array('Q')``, a NumPy array of the reference
    code, or any iterable of integers; signed 64-bit values are read as their unsigned form) as a
    sorted list of distinct unsigned 64-bit integers."""
    values = fps.tolist() if hasattr(fps, "tolist") else list(fps)
    if not (isinstance(fps, array) and fps.typecode == "Q"):
        values = [int(v) & _M64 for v in values]
    return sorted(set(values))


def _scrambled(hashes: Iterable[int]) -> list[int]:
    """Hash × an odd constant, mod 2⁶⁴ (a bijection: see ``_Run``)."""
    return [(h * BASE) & _M64 for h in hashes]


def _zeros(typecode: str, n: int) -> array:
    return array(typecode, [0]) * n


# ----------------------------------------------------------------------------------------------
# the index


# a run is merged into the one before it once that one is at most _MERGE times its size. A query
# looks up every run: 8 keeps fewer of them than doubling did (4 instead of 5 at 7,500 documents,
# queries ~15 % faster) at the same cost per insertion
_MERGE = 8
# a run of at least this many postings gets a bucket directory (see _Run); a smaller one is searched
# by bisection, which stays in the CPU's caches at this size (256 KB of keys)
_DIRECTORY_MIN = 1 << 15
_BUCKET = 8            # postings per directory bucket, on average: 8 to 16 (half a byte a posting)


class _Run:
    """Postings sorted by *scrambled* hash (hash × an odd constant, mod 2⁶⁴, a bijection), with the
    document index of each (``array('I')``), older documents first among equal hashes.

    Why scrambled: sketch hashes are the smallest of each page, so they crowd the bottom of hash
    space; scrambled, they are uniform, and a run of n postings can have a directory of the
    ~n/8 buckets of its top bits (``starts[b]``: the first posting of bucket b). A lookup then reads
    its bucket's offsets and ~8-16 keys: two or three cache lines, where a binary search in a
    run of a million keys (8 MB) misses the caches on most of its 20 steps: the index is cold
    between two pages of a crawl. Replayed on a benchmark crawl's 19,649 sketches with the caches
    flushed between queries, a query took 119-188 µs before and 110-170 µs with directories; where
    the index is small and stays in the caches, directories cost ~10 % (docs/benchmarks.md)."""

    __slots__ = ("keys", "docs", "starts", "shift_bits")

    def __init__(self, keys: array, docs: array) -> None:
        self.keys = keys
        self.docs = docs
        self.starts: array | None = None     # None: searched by bisection (shift_bits unused)
        self.shift_bits = 0
        if len(keys) >= _DIRECTORY_MIN:
            self.build_directory((len(keys) // _BUCKET).bit_length() - 1)

    def build_directory(self, bits: int) -> None:
        """A directory of the 2**bits buckets of the keys' top ``bits`` bits (0 to 63)."""
        shift = 64 - bits
        starts = _zeros("I", (1 << bits) + 1)
        if _speedups is not None:
            _speedups.bucket_starts(self.keys, shift, starts)
        else:
            keys = self.keys
            for b in range(1 << bits):
                starts[b] = bisect_left(keys, b << shift)
            starts[-1] = len(keys)
        self.shift_bits = shift
        self.starts = starts

    @property
    def nbytes(self) -> int:
        return sys.getsizeof(self.keys) + sys.getsizeof(self.docs) + (
            0 if self.starts is None else sys.getsizeof(self.starts))

    def lookup(self, keys: Iterable[int]) -> tuple[list[int], list[int]]:
        """The postings of ``keys`` (scrambled hashes): their positions, and the key of each, key
        by key in the order given, each key's postings in run order."""
        run = self.keys
        if _speedups is not None:
            found = _speedups.run_lookup(run, self.starts, self.shift_bits, array("Q", keys),
                                         _positions, _keys)
            return ([], []) if found is None else (found[0].tolist(), found[1].tolist())
        pos: list[int] = []
        hs: list[int] = []
        n = len(run)
        for k in keys:
            lo = bisect_left(run, k)
            if lo < n and run[lo] == k:
                hi = bisect_right(run, k, lo)
                pos += range(lo, hi)
                hs += [k] * (hi - lo)
        return pos, hs


def _positions(n: int) -> array:
    return _zeros("q", n)


def _keys(n: int) -> array:
    return _zeros("Q", n)


def _merge(older: _Run, newer: _Run) -> _Run:
    """Two sorted runs as one, the older run's postings first among equal hashes (a stable merge),
    in one sequential pass."""
    k1, d1 = older.keys, older.docs
    k2, d2 = newer.keys, newer.docs
    if _speedups is not None:
        keys = _zeros("Q", len(k1) + len(k2))
        docs = _zeros("I", len(keys))
        _speedups.merge_runs(k1, d1, k2, d2, keys, docs)
        return _Run(keys, docs)
    # the older run's documents have the smaller numbers, and a run's postings of one hash are in
    # document order: (hash, document) order is the stable merge
    pairs = list(_merged(zip(k1, d1), zip(k2, d2)))
    return _Run(array("Q", [k for k, _ in pairs]), array("I", [d for _, d in pairs]))


class _Generation:
    """The documents indexed between two seals: per document its id, sketch length and threshold
    τ (its largest sketch hash), and one posting (hash -> document) per sketch hash, in sorted runs
    merged as they grow (log-structured: an insertion costs O(log n) amortised)."""

    __slots__ = ("ids", "tau", "n", "runs")

    def __init__(self) -> None:
        self.ids = array("q")
        self.tau = array("Q")
        self.n = array("i")
        self.runs: list[_Run] = []

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, doc_id: int, sk: list[int]) -> None:
        i = len(self.ids)
        self.ids.append(doc_id)
        self.tau.append(sk[-1])
        self.n.append(len(sk))
        runs = self.runs
        runs.append(_Run(array("Q", sorted(_scrambled(sk))), array("I", [i]) * len(sk)))
        while len(runs) > 1 and len(runs[-2].keys) <= _MERGE * len(runs[-1].keys):
            newer = runs.pop()
            runs.append(_merge(runs.pop(), newer))

    def seal(self) -> None:
        """One run, arrays at their exact size: the generation takes no more room than it needs."""
        while len(self.runs) > 1:
            newer = self.runs.pop()
            self.runs.append(_merge(self.runs.pop(), newer))
        self.ids, self.tau, self.n = array("q", self.ids), array("Q", self.tau), array("i", self.n)

    def sketches(self) -> list[tuple[int, list[int]]]:
        """(doc id, sketch) of every document, rebuilt from the postings."""
        per_doc: defaultdict[int, list[int]] = defaultdict(list)
        for run in self.runs:
            for key, doc in zip(run.keys, run.docs):
                per_doc[doc].append((key * BASE_INV) & _M64)
        return [(self.ids[d], sorted(per_doc[d])) for d in sorted(per_doc)]

    @property
    def nbytes(self) -> int:
        return (sys.getsizeof(self.ids) + sys.getsizeof(self.tau) + sys.getsizeof(self.n)
                + sum(r.nbytes for r in self.runs))


def _record(doc_id: int, sketch: list[int]) -> tuple[int, bytes]:
    """The persisted form of a document's sketch: ``(doc_id, little-endian uint64 bytes)``."""
    a = array("Q", sketch)
    if not _LITTLE:
        a.byteswap()
    return int(doc_id), a.tobytes()


def _from_record(blob: bytes) -> list[int]:
    a = array("Q")
    a.frombytes(blob)
    if not _LITTLE:
        a.byteswap()
    return a.tolist()


def _probe_size(sketch: int, need: float) -> int | None:
    # S / need + 1 hashes: a stored page that shares sampled hashes only beyond them has resemblance
    # and containment below ``need`` (both are at most S / n_a), see ``query``
    return ceil(sketch / need) + 1 if need > 0 else None


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

    Fingerprint sets (``fps``) are ``skitter.winnow``'s ``array('Q')``, or any sequence of
    64-bit integers (a NumPy array of :mod:`skitter.dedup`'s reference functions included).
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
    def sketch_of(self, fps) -> list[int]:
        """The bottom-``sketch`` of a fingerprint set (sorted)."""
        return _sorted_set(fps)[:self.sketch]

    def record_for(self, doc_id: int, fps) -> tuple[int, bytes]:
        """The record ``(doc_id, sketch bytes)`` that persists ``doc_id``'s entry (what
        :meth:`add` returns, without indexing)."""
        return _record(doc_id, self.sketch_of(fps))

    def add_records(self, records: Iterable[tuple[int, bytes]]) -> None:
        """Index persisted ``(doc_id, sketch bytes)`` records, oldest first."""
        for doc_id, blob in records:
            self._add_sketch(int(doc_id), _from_record(blob))

    def add(self, doc_id: int, fps) -> tuple[int, bytes]:
        """Index ``doc_id`` with its fingerprint set (``winnow``'s output) and return the record
        that persists it (:meth:`record_for`). A document with no fingerprints is not indexed."""
        return self._add_set(doc_id, _sorted_set(fps))

    def _add_set(self, doc_id: int, fps: list[int]) -> tuple[int, bytes]:
        sk = fps[:self.sketch]
        self._add_sketch(int(doc_id), sk)
        return _record(doc_id, sk)

    def _add_sketch(self, doc_id: int, sk: list[int]) -> None:
        if not sk:
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
        return [(doc_id, h - (1 << 64) if h >> 63 else h)
                for gen in self._gens for doc_id, sk in gen.sketches() for h in sk]

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

    def query(self, fps, threshold: float | None = None, *,
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
        return self._query_set(_sorted_set(fps), threshold, containment, limit)

    def _query_set(self, a: list[int], threshold: float | None = None, containment: float | None = None,
                   limit: int | None = None) -> list[tuple[int, float, float]]:
        """``query`` of a fingerprint set that is a sorted list of distinct unsigned integers."""
        r_min = self.resemblance if threshold is None else threshold
        c_min = self.containment if containment is None else containment
        self.last_candidates = self.last_compared = 0
        if not a or not self._count:
            return []
        need = min(r_min, c_min)
        # 1. look the new page's smallest hashes up in every run: their postings. A stored page B
        # shares sampled hashes only below its τ, i.e. with a prefix a[:n_a] of the sorted set,
        # and it can qualify only if n_a < S / need (resemblance and containment are both at most
        # S / n_a): the first ceil(S / need) + 1 hashes find every page that can qualify, with
        # exactly the hits a lookup of all of them would count.
        size = _probe_size(self.sketch, need)
        probe = array("Q", _scrambled(a if size is None else a[:size]))
        least = max(1, floor(need * self.min_sample))   # floor: a product like 0.28 * 25
        # lands just above 7 in floating point, and 7 of 25 does qualify
        candidates = None
        if _speedups is not None:   # _candidates' first test, in one compiled call over every run
            runs = [[(run.keys, run.docs, run.starts, run.shift_bits) for run in gen.runs]
                    for gen in self._gens]
            postings = _speedups.count_postings([r for gen_runs in runs for r in gen_runs], probe)
            if postings < least:
                self.last_candidates = postings
                return []
            if postings <= self.max_df:
                candidates = self._candidates_compiled(runs, probe, need)
        out: list[tuple[int, float, float]] = []
        n_sample = self.min_sample
        for gen, cand, hits in candidates or self._candidates(probe, need, least):
            self.last_compared += len(cand)
            # 3. the estimates, on the region of hash space where each stored sketch is complete
            sk_lens, taus, ids = gen.n, gen.tau, gen.ids
            for d, h in zip(cand, hits):
                sk_len = sk_lens[d]
                n_a = len(a) if sk_len < self.sketch else bisect_right(a, taus[d])
                union = n_a + sk_len - h
                res = h / max(union, 1)
                con = h / max(n_a, 1)
                if (res >= r_min and union >= n_sample) or (con >= c_min and n_a >= n_sample):
                    out.append((ids[d], res, con))
        self.compared += self.last_compared
        out.sort(key=lambda m: (-m[1], -m[2]))
        return out if limit is None else out[:limit]

    def _candidates_compiled(self, runs: list[list[tuple]], probe: array, need: float):
        """``_candidates``, each generation in one compiled call (``skitter._speedups``; ``runs``:
        each generation's runs as it takes them); used when no hash can be over ``max_df`` (fewer
        postings in all)."""
        sp = _speedups
        assert sp is not None  # only called when the compiled module is there
        for gen, gen_runs in zip(self._gens, runs):
            found, cand, hits = sp.gen_candidates(gen_runs, probe, gen.n, need, self.min_sample)
            if found:
                self.last_candidates += found
                yield gen, cand, hits

    def _candidates(self, probe: array, need: float, least: int):
        """Per generation with postings of ``probe``: ``(generation, documents, their hits)``, the
        documents that share enough sampled hashes with the new page to be worth the estimates
        (``query``'s steps 1 and 2; ``last_candidates`` counts the documents met)."""
        found = []                                  # (generation, run, posting positions, their hashes)
        postings = 0
        for g, gen in enumerate(self._gens):
            for run in gen.runs:
                pos, hs = run.lookup(probe)
                if pos:
                    found.append((g, run, pos, hs))
                    postings += len(pos)
        # a page qualifies only on at least min_sample * need shared sampled hashes (resemblance
        # needs a union, containment an n_a, of min_sample): with fewer postings found in all,
        # none can (most queries stop here; last_candidates is then the postings, an upper bound)
        if postings < least:
            self.last_candidates = postings
            return
        common: set[int] = set()
        if self.max_df < postings:                  # a hash in too many documents is boilerplate
            df: Counter[int] = Counter()
            for f in found:
                df.update(f[3])
            common = {h for h, c in df.items() if c > self.max_df}
        per_gen: defaultdict[int, Counter[int]] = defaultdict(Counter)
        for g, run, pos, hs in found:
            docs = run.docs
            per_gen[g].update([docs[p] for p, h in zip(pos, hs) if h not in common] if common
                              else [docs[p] for p in pos])
        for g, hits_of in per_gen.items():
            gen = self._gens[g]
            cand = sorted(hits_of)
            self.last_candidates += len(cand)
            # 2. a cheap necessary condition before the estimates: enough shared sampled hashes
            sk_lens = gen.n
            worth = [d for d in cand if hits_of[d] >= max(1, floor(need * min(sk_lens[d], self.min_sample)))]
            yield gen, worth, [hits_of[d] for d in worth]


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
    def near_original(self, fp: int) -> str | None: ...
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

    def test(self, url: str, content_hash: str | None, page, fps: Iterable[int] | None) -> Verdict | None:
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
        if page is None or self.index is None or fps is None:
            return Verdict()
        fps = _sorted_set(fps)
        if not fps:
            return Verdict()
        near, follow = None, True
        own = fingerprint(url)
        match = [m for m in self.index._query_set(fps) if m[0] != own]   # a recrawled page's older version
        if match:
            near = self.store.page_url(match[0][0])
            if near is not None and self.follow == "new-links":
                follow = links_worth_following(page.links, self.store.link_targets(match[0][0]))
            near = self._original(near, own)
            if near is None:   # the family's original after all: its links are followed
                follow = True
        self.store.add_sketch(self.index._add_set(own, fps))
        return Verdict(near_duplicate_of=near, follow_links=follow)

    def _original(self, url: str | None, own: int, hops: int = 16) -> str | None:
        """The family's original: ``url``, or the page it was marked a near-duplicate of, and so
        on up the chain, so that every member points at one page (search shows one result a
        family: a page marked against a near-duplicate of a third made two families). None when
        the chain leads back to the page being tested: a recrawled original whose new version
        matches one of its own near-duplicates stays the original (they pointed at each other)."""
        seen: set[int] = set()
        while url is not None and hops > 0:
            fp = fingerprint(url)
            if fp == own:
                return None
            if fp in seen:   # a loop not through this page (marked before this rule): any member
                return url
            seen.add(fp)
            up = self.store.near_original(fp)
            if up is None:
                return url
            url, hops = up, hops - 1
        return url
