"""The local frontier: SQLite on disk, a small window of each host's best URLs in memory.

Mercator-style: one queue per host (politeness needs it), a heap of hosts that may be contacted
now ordered by the priority of their best URL, and a timer heap of hosts waiting for their
politeness clock. The ``urls`` table is both the frontier and the exact URL-seen set (the
fingerprint is its primary key), so nothing lives only in memory:

    state 0  queued on disk          -> refilled into a host's window (state 1) when it runs low
    state 1  in a window / in flight -> state 2 when the loop stores its fetch record
    state 2  done

Rows are written inside the loop's current transaction (``CrawlDB.ensure_tx``); on resume,
``release_leases`` turns every 1 back into 0. Each host window holds at most ``window`` URLs; a
new URL goes to the window only if it beats the window's worst (which then returns to disk), so
memory stays bounded whatever the crawl order (DFS included).
"""

from __future__ import annotations

import asyncio
import heapq
import time
from bisect import insort
from typing import Callable, Iterable

from ..models import Candidate
from ..store.db import CrawlDB
from ..urls import fingerprint, host_key
from .politeness import HostClock, Politeness


class _Host:
    __slots__ = ("key", "clock", "window", "backlog", "scheduled", "entry", "ready_priority")

    def __init__(self, key: str, policy: Politeness) -> None:
        self.key = key
        self.clock = HostClock(policy)
        # sorted ascending by (priority, -seq): the best candidate is window[-1]
        self.window: list[tuple[float, int, Candidate]] = []
        self.backlog = 0          # rows of this host queued on disk (state 0)
        self.scheduled = False    # in the ready heap or the timer heap
        self.entry = 0            # tiebreak of its live heap entry; other entries of it are stale
        self.ready_priority: float | None = None  # its key in the ready heap (None: in the timers)

    def has_work(self) -> bool:
        return bool(self.window) or self.backlog > 0


_YIELD = Candidate(url="")   # _pop_ready's "not yet: let the event loop run, then ask again"


class LocalFrontier:
    """Implements :class:`skitter.frontier.base.Frontier` on a :class:`CrawlDB`."""

    gate_batch = 256   # candidates the gate may consume in one synchronous pass

    def __init__(self, db: CrawlDB, policy: Politeness, *, window: int = 32, memory_cap: int = 50_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.db = db
        self.policy = policy
        self.window = window
        # All windows together hold at most this many candidates (the rest wait on disk), so a
        # broad crawl over many hosts keeps flat memory too.
        self.memory_cap = memory_cap
        self._mem = 0
        self.clock = clock
        self.hosts: dict[str, _Host] = {}
        self._ready: list[tuple[float, int, str]] = []   # (-best priority, tiebreak, host)
        self._timers: list[tuple[float, int, str]] = []  # (next_time, tiebreak, host)
        self._tick = 0
        # A bounded memory of recently seen fingerprints in front of the database's exact set:
        # most links of a page (navigation) were seen moments ago. Two generations of at most
        # ``recent_size`` each (~60 bytes an entry), so memory stays flat on long crawls.
        self.recent_size = 100_000
        self._recent: set[int] = set()
        self._recent_old: set[int] = set()
        self._wake = asyncio.Event()
        # Called on each candidate before its host's slot is taken; False = consumed without a
        # request (the gate recorded it, or requeued it for later). The crawl loop checks cached
        # robots.txt rules here.
        self.gate: Callable[[Candidate], bool] | None = None
        self._stopped = False
        self._in_flight = 0
        self._queued = 0
        self.seq = db.counts()["max_seq"]
        self._load()

    # -- resume ----------------------------------------------------------------------------
    def _load(self) -> None:
        for host, n in self.db.conn.execute(
                "SELECT host, count(*) FROM urls WHERE state = 0 GROUP BY host"):
            h = self._host(host)
            h.backlog = n
            self._queued += n
            self._schedule(h, self.clock())

    def _host(self, key: str) -> _Host:
        h = self.hosts.get(key)
        if h is None:
            h = self.hosts[key] = _Host(key, self.policy)
        return h

    # -- the Frontier interface -------------------------------------------------------------
    def add(self, candidates: Iterable[Candidate]) -> int:
        db = self.db
        db.ensure_tx()
        execute = db.conn.execute
        new = 0
        for cand in candidates:
            fp = fingerprint(cand.url)
            if fp in self._recent or fp in self._recent_old:
                continue  # seen lately: no need to ask the database
            self._remember(fp)
            key = host_key(cand.url)
            h = self._host(key)
            self.seq += 1
            in_memory = self._fits(h, cand.priority, self.seq)
            cur = execute(
                "INSERT OR IGNORE INTO urls (fp, url, host, depth, parent, priority, seq, state, redirects)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (fp, cand.url, key, cand.depth, cand.parent, cand.priority, self.seq,
                 1 if in_memory else 0, cand.redirects))
            if cur.rowcount == 0:
                continue  # URL-seen test: already admitted once
            new += 1
            self._queued += 1
            if in_memory:
                insort(h.window, (cand.priority, -self.seq, cand))
                self._mem += 1
                if len(h.window) > self.window or self._mem > self.memory_cap:
                    self._evict(h)
                if h.scheduled and h.ready_priority is not None and cand.priority > h.ready_priority:
                    h.scheduled = False  # a better head: re-rank the host (its old entry goes stale)
            else:
                h.backlog += 1
            self._schedule(h, self.clock())
        if new:
            self._wake.set()
        return new

    def seen_recently(self, url: str) -> bool:
        fp = fingerprint(url)
        return fp in self._recent or fp in self._recent_old

    def _remember(self, fp: int) -> None:
        self._recent.add(fp)
        if len(self._recent) >= self.recent_size:
            self._recent_old = self._recent
            self._recent = set()

    def add_done(self, candidate: Candidate) -> bool:
        """Admit a URL as already done (decided without a request, e.g. disallowed by a cached
        robots.txt): it passes the URL-seen test once and is never handed out."""
        self.db.ensure_tx()
        self.seq += 1
        self._remember(fingerprint(candidate.url))
        cur = self.db.conn.execute(
            "INSERT OR IGNORE INTO urls (fp, url, host, depth, parent, priority, seq, state, redirects)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 2, ?)",
            (fingerprint(candidate.url), candidate.url, host_key(candidate.url), candidate.depth,
             candidate.parent, candidate.priority, self.seq, candidate.redirects))
        return cur.rowcount == 1

    def _fits(self, h: _Host, priority: float, seq: int) -> bool:
        if not h.backlog and len(h.window) < self.window and self._mem < self.memory_cap:
            return True
        return bool(h.window) and (priority, -seq) > h.window[0][:2]

    def _evict(self, h: _Host) -> None:
        """The window is over its size: its worst candidate goes back to disk."""
        _, _, worst = h.window.pop(0)
        self._mem -= 1
        self.db.conn.execute("UPDATE urls SET state = 0 WHERE fp = ?", (fingerprint(worst.url),))
        h.backlog += 1

    def _refill(self, h: _Host) -> None:
        if not h.backlog or len(h.window) >= max(1, self.window // 2):
            return
        room = min(self.window - len(h.window), self.memory_cap - self._mem)
        if room <= 0:
            if h.window:
                return  # over the memory cap: this host works from what it holds
            room = 1    # a ready host needs at least its best URL in memory
        self.db.ensure_tx()
        rows = self.db.conn.execute(
            "SELECT fp, url, depth, parent, priority, seq, redirects, attempts FROM urls"
            " WHERE host = ? AND state = 0 ORDER BY priority DESC, seq LIMIT ?",
            (h.key, room)).fetchall()
        if not rows:
            h.backlog = 0
            return
        self.db.conn.executemany("UPDATE urls SET state = 1 WHERE fp = ?", [(r[0],) for r in rows])
        h.backlog = max(0, h.backlog - len(rows))
        for fp, url, depth, parent, priority, seq, redirects, attempts in rows:
            cand = Candidate(url=url, depth=depth, parent=parent, priority=priority,
                             redirects=redirects, attempts=attempts)
            insort(h.window, (priority, -seq, cand))
        self._mem += len(rows)

    def _schedule(self, h: _Host, now: float) -> None:
        """Put a host with work and a free slot in the ready heap (it may start at ``now``) or the
        timer heap (it may not). Every decision of one ``_pop_ready`` pass uses the same ``now``
        as its ``can_start`` test: with a fresher clock here, a host whose next time fell between
        the two readings went back to the ready heap, was refused again, and so on forever."""
        if h.scheduled or self._stopped or h.clock.active >= self.policy.per_host or not h.has_work():
            return
        self._tick += 1
        if h.clock.next_time > now:
            heapq.heappush(self._timers, (h.clock.next_time, self._tick, h.key))
            h.ready_priority = None
        else:
            self._refill(h)
            if not h.window:
                return
            h.ready_priority = h.window[-1][0]
            heapq.heappush(self._ready, (-h.ready_priority, self._tick, h.key))
        h.entry = self._tick
        h.scheduled = True

    def _pop_ready(self) -> Candidate | None:
        """The best candidate that may start now, or None. One clock reading decides everything in
        the pass, so it ends: a host refused here has its next time after ``now`` and goes to the
        timer heap, and a due timer re-schedules its host at most once (its new entry, if any, is
        also after ``now`` or in the ready heap). Only the gate's consumptions repeat a host, each
        taking one of its candidates, and they are capped per pass (``gate_batch``)."""
        now = self.clock()
        while self._timers and self._timers[0][0] <= now:
            _, tick, key = heapq.heappop(self._timers)
            h = self.hosts[key]
            if tick != h.entry:
                continue  # stale: the host was re-ranked
            h.scheduled = False
            self._schedule(h, now)
        gated = 0
        while self._ready:
            _, tick, key = heapq.heappop(self._ready)
            h = self.hosts[key]
            if tick != h.entry:
                continue  # stale: the host was re-ranked
            h.scheduled = False
            if not h.clock.can_start(now):
                self._schedule(h, now)
                continue
            self._refill(h)
            if not h.window:
                continue
            _, _, cand = h.window.pop()
            self._mem -= 1
            self._queued -= 1
            if self.gate is not None and not self.gate(cand):
                # Decided without a request (e.g. robots.txt disallows it): no politeness slot used.
                self._schedule(h, now)
                gated += 1
                if gated >= self.gate_batch:
                    return _YIELD   # thousands of disallowed URLs: let the event loop run between batches
                continue
            self._in_flight += 1
            h.clock.started(now)
            self._schedule(h, now)
            return cand
        return None

    async def next_ready(self) -> Candidate | None:
        while not self._stopped:
            cand = self._pop_ready()
            if cand is _YIELD:
                await asyncio.sleep(0)
                continue
            if cand is not None:
                return cand
            if not self._timers and not self._ready and self._in_flight == 0:
                # Nothing waits and nothing can bring new work: the crawl is exhausted.
                self._wake.set()
                return None
            self._wake.clear()
            timeout = None
            if self._timers:
                timeout = max(0.0, self._timers[0][0] - self.clock())
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except asyncio.TimeoutError:
                pass
        return None

    def done(self, candidate: Candidate, *, elapsed: float | None, retry_after: float | None = None) -> None:
        h = self.hosts[host_key(candidate.url)]
        now = self.clock()
        h.clock.finished(now, elapsed)
        if retry_after:
            h.clock.back_off(now, retry_after)
        self._in_flight -= 1
        self._schedule(h, now)
        self._wake.set()

    def requeue(self, candidate: Candidate, *, not_before: float = 0.0) -> None:
        """Back into its host's window (it is still leased on disk), ahead of its peers."""
        h = self.hosts[host_key(candidate.url)]
        self._tick += 1
        insort(h.window, (float("inf"), -self._tick, candidate))  # FIFO among requeued ones
        self._mem += 1
        self._queued += 1
        now = self.clock()
        if not_before:
            h.clock.back_off(now, not_before)
        self._schedule(h, now)
        self._wake.set()

    def reprioritize(self, url: str, priority: float) -> None:
        """Raise the priority of a queued URL (in its host's window or on disk) to ``priority``.

        Never lowers a priority; a URL that is not queued (unknown, in flight, done) is left alone.
        For the importance strategies (backlinks, OPIC), whose estimate of a URL grows as in-links
        to it are found. A disk row that now beats its host window's worst is moved into the window
        (the worst goes back to disk), so the window keeps holding the host's best URLs.
        """
        key = host_key(url)
        h = self.hosts.get(key)
        if h is None:
            return
        for i, (prio, neg_seq, cand) in enumerate(h.window):
            if cand.url == url:
                if priority <= prio or prio == float("inf"):
                    return  # not higher, or a requeued candidate (it goes first anyway)
                del h.window[i]
                self.db.ensure_tx()
                self.db.conn.execute("UPDATE urls SET priority = ? WHERE fp = ?", (priority, fingerprint(url)))
                insort(h.window, (priority, neg_seq, _with_priority(cand, priority)))
                self._reschedule(h, priority)
                return
        self.db.ensure_tx()
        fp = fingerprint(url)
        row = self.db.conn.execute("SELECT state, priority, seq FROM urls WHERE fp = ?", (fp,)).fetchone()
        if row is None or row[0] != 0 or priority <= row[1]:
            return  # unknown, leased (in flight: not in the window) or done; or not higher
        seq = row[2]
        if self._fits(h, priority, seq) and h.window:
            row = self.db.conn.execute(
                "SELECT url, depth, parent, redirects, attempts FROM urls WHERE fp = ?", (fp,)).fetchone()
            self.db.conn.execute("UPDATE urls SET priority = ?, state = 1 WHERE fp = ?", (priority, fp))
            h.backlog = max(0, h.backlog - 1)
            cand = Candidate(url=row[0], depth=row[1], parent=row[2], priority=priority,
                             redirects=row[3], attempts=row[4])
            insort(h.window, (priority, -seq, cand))
            if len(h.window) > self.window:
                self._evict(h)
            self._reschedule(h, priority)
        else:
            self.db.conn.execute("UPDATE urls SET priority = ? WHERE fp = ?", (priority, fp))

    def _reschedule(self, h: _Host, priority: float) -> None:
        """A candidate of ``h`` got better: re-rank the host if it now has a better head."""
        if h.scheduled and h.ready_priority is not None and priority > h.ready_priority:
            h.scheduled = False  # its old ready-heap entry goes stale
        self._schedule(h, self.clock())
        self._wake.set()

    def held_hosts(self, limit: int = 3) -> tuple[int, list[tuple[str, float, float]]]:
        """Hosts with work that wait for their politeness time: how many, and the ``limit`` that
        wait the least as (host, seconds left, Crawl-delay). For the watchdog's report."""
        now = self.clock()
        held = sorted((h.clock.next_time - now, key, h.clock.crawl_delay)
                      for _, tick, key in self._timers
                      if (h := self.hosts[key]).entry == tick and h.scheduled and h.ready_priority is None)
        return len(held), [(key, wait, cd) for wait, key, cd in held[:limit]]

    def set_crawl_delay(self, url: str, seconds: float | None) -> None:
        self._host(host_key(url)).clock.crawl_delay = seconds or 0.0

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    @property
    def queued(self) -> int:
        return self._queued

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def active_hosts(self) -> int:
        return sum(1 for h in self.hosts.values() if h.clock.active)


def _with_priority(cand: Candidate, priority: float) -> Candidate:
    return Candidate(url=cand.url, depth=cand.depth, parent=cand.parent, priority=priority,
                     redirects=cand.redirects, attempts=cand.attempts, anchor=cand.anchor)
