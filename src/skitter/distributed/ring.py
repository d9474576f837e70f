"""Consistent hashing of hosts to workers (UbiCrawler, seeds 000/004), pure: no I/O.

Every member (a worker id) is placed on a 64-bit circle at ``vnodes`` points, each the xxh3-64
hash of ``b"<member>#<i>"``. A host key (:func:`skitter.urls.host_key`) is hashed the same way
and belongs to the member of the first point strictly after it, wrapping round at 2**64. So:

- the owner depends only on the set of members, never on the order they were added in or on
  the process (xxh3, not Python's salted ``hash()``), so every worker computes the same
  assignment from the same membership list;
- when a member leaves, only the hosts it owned move (its points disappear, all others stay),
  each to the member of the next point, so they spread over the survivors; when one joins,
  hosts move only to it. With N members each move is about 1/N of the hosts;
- with many points per member the arcs even out: a member's share of the circle is the sum of
  ``vnodes`` arcs, so its relative spread falls as 1/sqrt(vnodes). ``DEFAULT_VNODES`` was
  chosen by ``bench/ring_sim.py`` (docs/distributed.md, "The ring"): hosts per worker within
  ±10% of the mean with 100 and with 1,000 workers.

The points live in an ``array('Q')`` (8 bytes each, plus 4 for the owner's index): at 1,000
workers the ring is 3 M points, 36 MB, where a list of Python ints would take 120 MB. A lookup is
one xxh3 hash, a table of where each value of a point's top 16 bits starts, and a ``bisect`` of
the few dozen points there (a bisect of all 3 M points would miss the CPU cache at each probe:
2.3 times slower at 1,000 workers). Building sorts with NumPy (about 1 s at 3 M points), as
Python's sort of (point, member) tuples takes several times longer.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable

import numpy as np
import xxhash

__all__ = ["DEFAULT_VNODES", "Ring"]

DEFAULT_VNODES = 3072
"""Points per member: bench/ring_sim.py's choice (docs/distributed.md, "The ring")."""

_CIRCLE = 1 << 64
_INDEX_BITS = 16        # a point's top bits -> where its run starts: bisect a few dozen points,
_INDEX_SIZE = 1 << _INDEX_BITS        # not 3 M (each probe of a big ring is a cache miss)
_INDEX_SHIFT = 64 - _INDEX_BITS


def _key_point(key: str) -> int:
    return xxhash.xxh3_64_intdigest(key.encode())


class Ring:
    """A consistent-hash ring of named members with ``vnodes`` points each.

    ``owner(host_key)`` is the member responsible for a host; ``add``/``remove`` change the
    membership (rebuilding the sorted points: a membership change is rare, lookups are not).
    Iterating or ``len()`` sees the members; ``shares()`` the fraction of the circle each owns.
    """

    def __init__(self, members: Iterable[str] = (), *, vnodes: int = DEFAULT_VNODES) -> None:
        if vnodes < 1:
            raise ValueError(f"vnodes must be at least 1, got {vnodes}")
        self.vnodes = vnodes
        self._points_of: dict[str, np.ndarray] = {}
        for member in members:
            self._place(member)
        self._rebuild()

    # --- membership -------------------------------------------------------------------------

    def add(self, member: str) -> None:
        """Add ``member`` (no-op if present): it takes about 1/N of the hosts, from all others."""
        if member not in self._points_of:
            self._place(member)
            self._rebuild()

    def remove(self, member: str) -> None:
        """Remove ``member`` (no-op if absent): only its hosts move, spread over the others."""
        if self._points_of.pop(member, None) is not None:
            self._rebuild()

    def __contains__(self, member: object) -> bool:
        return member in self._points_of

    def __iter__(self):
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)

    def __repr__(self) -> str:
        return f"Ring({len(self._members)} members, vnodes={self.vnodes})"

    # --- lookups ----------------------------------------------------------------------------

    def owner(self, host_key: str) -> str:
        """The member that crawls ``host_key``. Raises :class:`LookupError` on an empty ring."""
        points = self._points
        if not points:
            raise LookupError("the ring has no members")
        h = _key_point(host_key)
        top = h >> _INDEX_SHIFT
        i = bisect_right(points, h, self._index[top], self._index[top + 1])
        return self._members[self._owner[i if i < len(points) else 0]]

    def shares(self) -> dict[str, float]:
        """Fraction of the hash circle each member owns (what its share of hosts tends to)."""
        if not self._members:
            return {}
        points = np.frombuffer(self._points, dtype=np.uint64)
        owners = np.frombuffer(self._owner, dtype=np.uint32)
        arcs = np.empty(len(points), dtype=np.float64)
        arcs[1:] = np.diff(points).astype(np.float64)        # (points[i-1], points[i]] -> owner i
        arcs[0] = float(int(points[0]) + _CIRCLE - int(points[-1]))   # the arc across zero
        total = np.bincount(owners, weights=arcs, minlength=len(self._members)) / float(_CIRCLE)
        return dict(zip(self._members, total.tolist()))

    # --- internals --------------------------------------------------------------------------

    def _place(self, member: str) -> None:
        if not isinstance(member, str) or not member:
            raise ValueError(f"a ring member is a non-empty string, got {member!r}")
        name = member.encode()
        self._points_of[member] = np.fromiter(
            (xxhash.xxh3_64_intdigest(b"%s#%d" % (name, i)) for i in range(self.vnodes)),
            dtype=np.uint64, count=self.vnodes)

    def _rebuild(self) -> None:
        """Sort all points; equal points (a 64-bit collision) go to the smaller member name, so
        the ring stays a function of the member set alone."""
        self._members: tuple[str, ...] = tuple(sorted(self._points_of))
        self._points = array("Q")
        self._owner = array("I")
        self._index = array("I")      # _index[t]: the first point whose top bits are >= t
        if not self._members:
            return
        points = np.concatenate([self._points_of[m] for m in self._members])
        ids = np.repeat(np.arange(len(self._members), dtype=np.uint32), self.vnodes)
        order = np.lexsort((ids, points))
        self._points.frombytes(points[order].tobytes())
        self._owner.frombytes(ids[order].tobytes())
        tops = np.arange(_INDEX_SIZE, dtype=np.uint64) << np.uint64(_INDEX_SHIFT)
        starts = np.searchsorted(points[order], tops)
        self._index.frombytes(np.append(starts, len(points)).astype(np.uint32).tobytes())
