"""The local frontier: SQLite on disk, a small window of each host's best URLs in memory.

Mercator-style: one queue per host (politeness needs it), a heap of hosts that may be contacted
now ordered by the priority of their best URL, and a timer heap of hosts waiting for their
politeness clock or for their URLs' due times. The ``urls`` table is both the frontier and the
exact URL-seen set (found by fingerprint through a unique index), so nothing lives only in memory:

    state 0, due NULL   queued on disk, ready   -> refilled into its host's window (state 1)
    state 0, due T      queued on disk, due at T (epoch seconds: a retry, a revisit) -> made
                        ready (due NULL) when T has come; ``revisit`` = 1 for a revisit
    state 1             in a window or in flight -> 2 when done, or 0 with a due time again
    state 2             done

Rows are written inside the store's current transaction (``CrawlDB.ensure_tx``); on resume,
``release_leases`` turns every 1 back into 0. Each host window holds at most ``window`` URLs; a
new URL goes to the window only if it beats the window's worst (which then returns to disk), so
memory stays bounded whatever the crawl order (DFS included). The two partial indexes (ready rows
by priority, waiting rows by due time) make a host's next URL or next due time one B-tree seek,
however many URLs wait on disk.

A URL back from a due time goes first: a retry, or a URL put back behind its host's robots.txt,
comes back as if it had never left. A revisit (a recrawl's schedule, ``Outcome.revisit``) instead
takes turns with its host's other URLs, so revisits at the host's polite pace do not starve the
host's discovery, nor new URLs its revisits.
"""

from __future__ import annotations

import asyncio
import heapq
from bisect import insort
from collections import deque
from dataclasses import replace
from collections.abc import Callable, Iterable, Sequence

from ..clock import SYSTEM, Clock, wait_event
from ..models import Candidate, Outcome
from ..store.db import CrawlDB
from ..urls import fingerprint, host_key
from .politeness import HostClock, Politeness


# A URL due within this many seconds is due now: due times are epoch seconds (~1.7e9), converted to
# and from the monotonic clock, and a robots.txt read puts its URL back "due now" exactly.
DUE_SLACK = 0.001
_MIN_WAIT = 1e-6   # seconds: next_ready's shortest wait for a host timer
_FIRST = float("inf")   # a window key ahead of every priority: URLs back from a due time


class _Host:
    __slots__ = ("key", "clock", "window", "first", "revisits", "revisit_turn", "ready", "waiting", "next_due",
                 "scheduled", "entry", "ready_priority")

    def __init__(self, key: str, policy: Politeness) -> None:
        self.key = key
        self.clock = HostClock(policy)
        # sorted ascending by (priority, -seq): the best candidate is window[-1]
        self.window: list[tuple[float, int, Candidate]] = []
        self.first = 0            # of those, URLs back from a due time (window key +inf, see _promote)
        self.revisits: deque[Candidate] = deque()   # revisits fallen due, in that order (see take)
        self.revisit_turn = False  # the host's next URL is a revisit, if it has one
        self.ready = 0            # rows of this host on disk, ready (state 0, due NULL)
        self.waiting = 0          # rows of this host on disk with a due time (state 0, due T)
        self.next_due: float | None = None   # the earliest of those due times (epoch seconds)
        self.scheduled = False    # in the ready heap or the timer heap
        self.entry = 0            # tiebreak of its live heap entry; other entries of it are stale
        self.ready_priority: float | None = None  # its key in the ready heap (None: in the timers)

    def has_ready(self) -> bool:
        return bool(self.window) or bool(self.revisits) or self.ready > 0

    def has_work(self) -> bool:
        return self.has_ready() or self.waiting > 0

    def revisit_next(self) -> bool:
        """Whether the host's next URL is its oldest revisit: a URL back from a due time (a retry)
        goes first, and revisits and the host's other URLs take turns."""
        if not self.revisits:
            return False
        return not self.window or (self.revisit_turn and self.window[-1][0] != _FIRST)

    def take(self) -> Candidate:
        """The host's next URL, out of its window or its revisits (``revisit_next``)."""
        if self.revisit_next():
            self.revisit_turn = False
            return self.revisits.popleft()
        prio, _, cand = self.window.pop()
        if prio == _FIRST:
            self.first -= 1
        elif self.revisits:
            self.revisit_turn = True
        return cand


class LocalFrontier:
    """Implements :class:`skitter.frontier.base.Frontier` (and ``Reprioritizing``) on a
    :class:`CrawlDB`."""

    def __init__(self, db: CrawlDB, policy: Politeness, *, window: int = 32, memory_cap: int = 50_000,
                 clock: Clock = SYSTEM) -> None:
        self.db = db
        self.policy = policy
        self.window = window
        # All windows together hold at most this many candidates (the rest wait on disk), so a
        # broad crawl over many hosts keeps flat memory too.
        self.memory_cap = memory_cap
        self._mem = 0
        self.clock = clock
        mono = clock.monotonic()
        self._epoch = clock.time() - mono   # monotonic + _epoch = seconds since the epoch
        self.hosts: dict[str, _Host] = {}
        self._ready: list[tuple[float, int, str]] = []   # (-best priority, tiebreak, host)
        self._timers: list[tuple[float, int, str]] = []  # (monotonic time, tiebreak, host)
        self._tick = 0
        # A bounded memory of recently seen fingerprints in front of the database's exact set:
        # most links of a page (navigation) were seen moments ago. Two generations of at most
        # ``recent_size`` each (~60 bytes an entry), so memory stays flat on long crawls.
        self.recent_size = 100_000
        self._recent: set[int] = set()
        self._recent_old: set[int] = set()
        self._wake = asyncio.Event()
        self._stopped = False
        self._leases: dict[int, int] = {}    # fingerprint in flight -> its HostClock start token
        # Asked for more URLs when the frontier runs dry, once per drain (no URL finished since the
        # last ask: it found what there was to find); admits them itself and returns how many.
        # The composition root (skitter.api) sets it for dfs and bfs (skitter.depthrepair).
        self.refill: Callable[[], int] | None = None
        self._finished = 0
        self._refilled = -1
        self._queued = 0
        self.seq = db.counts()["max_seq"]
        self._load(mono)

    # -- resume ----------------------------------------------------------------------------
    def _load(self, now: float) -> None:
        """The hosts with URLs queued on disk (a resumed crawl). Each waits one gap before its
        first request (robots.txt's Crawl-delay as last read, or --delay): the crawl before may
        have been killed with a request to it under way that it never recorded, or may have ended
        a moment ago, and a restart is no reason to come back sooner than the host asked. A host
        held by a Retry-After (or robots.txt's retry) stays held as long as it was asked to be
        (``host_holds``)."""
        conn = self.db.conn
        delays = dict(conn.execute("SELECT origin, crawl_delay FROM robots WHERE crawl_delay > 0"))
        epoch = now + self._epoch
        holds = dict(conn.execute("SELECT host, until FROM host_holds WHERE until > ?", (epoch,)))
        for host, ready, waiting, next_due in conn.execute(
                "SELECT host, sum(due IS NULL), sum(due IS NOT NULL), min(due) FROM urls WHERE state = 0"
                " GROUP BY host"):
            h = self._host(host)
            h.ready, h.waiting, h.next_due = ready, waiting, next_due
            h.clock.crawl_delay = delays.get(host, 0.0)
            h.clock.next_time = now + h.clock.gap()
            if host in holds:
                h.clock.back_off(now, holds[host] - epoch)
            self._queued += ready + waiting
            self._schedule(h, now)

    def _host(self, key: str) -> _Host:
        h = self.hosts.get(key)
        if h is None:
            h = self.hosts[key] = _Host(key, self.policy)
        return h

    # -- the Frontier interface -------------------------------------------------------------
    async def add(self, candidates: Sequence[Candidate], *, decided: bool = False) -> list[Candidate]:
        return self.admit(candidates, decided=decided)

    def admit(self, candidates: Iterable[Candidate], *, decided: bool = False) -> list[Candidate]:
        """:meth:`add` without the coroutine (the work is all synchronous here)."""
        db = self.db
        db.ensure_tx()
        execute = db.conn.execute
        new: list[Candidate] = []
        now = self.clock.monotonic()
        for cand in candidates:
            fp = fingerprint(cand.url)
            if fp in self._recent or fp in self._recent_old:
                continue  # seen lately: no need to ask the database
            self._remember(fp)
            key = host_key(cand.url)
            self.seq += 1
            if decided:
                cur = execute(
                    "INSERT OR IGNORE INTO urls (fp, url, host, depth, parent, priority, seq, state, redirects)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, 2, ?)",
                    (fp, cand.url, key, cand.depth, cand.parent, cand.priority, self.seq, cand.redirects))
                if cur.rowcount:
                    new.append(cand)
                continue
            h = self._host(key)
            had_ready = h.has_ready()
            in_memory = self._fits(h, cand.priority, self.seq)
            cur = execute(
                "INSERT OR IGNORE INTO urls (fp, url, host, depth, parent, priority, seq, state, redirects)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (fp, cand.url, key, cand.depth, cand.parent, cand.priority, self.seq,
                 1 if in_memory else 0, cand.redirects))
            if cur.rowcount == 0:
                continue  # URL-seen test: already admitted once
            new.append(cand)
            self._queued += 1
            if in_memory:
                insort(h.window, (cand.priority, -self.seq, cand))
                self._mem += 1
                if len(h.window) > self.window or self._mem > self.memory_cap:
                    self._evict(h)
                if h.scheduled and h.ready_priority is not None and cand.priority > h.ready_priority:
                    h.scheduled = False  # a better head: re-rank the host (its old entry goes stale)
            else:
                h.ready += 1
            if not had_ready and h.scheduled and h.ready_priority is None:
                h.scheduled = False   # its timer waited for a due URL: this one is ready now
            self._schedule(h, now)
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

    def _fits(self, h: _Host, priority: float, seq: int) -> bool:
        if not h.ready and len(h.window) < self.window and self._mem < self.memory_cap:
            return True
        return bool(h.window) and (priority, -seq) > h.window[0][:2]

    def _evict(self, h: _Host) -> None:
        """The window is over its size: its worst candidate goes back to disk."""
        key, _, worst = h.window.pop(0)
        if key == _FIRST:
            h.first -= 1
        self._mem -= 1
        self.db.conn.execute("UPDATE urls SET state = 0 WHERE fp = ?", (fingerprint(worst.url),))
        h.ready += 1

    def _promote(self, h: _Host, now: float) -> None:
        """URLs whose due time has come go into their host's window ahead of its other URLs, in
        the order they fell due: a URL put back (a retry, robots.txt read in its slot) comes back
        first, as if it had never left (the window holds it under priority +inf; its row keeps its
        own); a revisit joins the host's revisits, which take turns with its other URLs. At most a
        window of them at a time; the rest stay due on disk."""
        horizon = now + self._epoch + DUE_SLACK
        room = self.window - h.first - len(h.revisits)
        if h.next_due is None or h.next_due > horizon or room <= 0:
            return
        self.db.ensure_tx()
        conn = self.db.conn
        rows = conn.execute(
            "SELECT fp, url, depth, parent, priority, seq, redirects, attempts, revisit FROM urls"
            " WHERE host = ? AND state = 0 AND due IS NOT NULL AND due <= ? ORDER BY due, seq LIMIT ?",
            (h.key, horizon, room)).fetchall()
        conn.executemany("UPDATE urls SET due = NULL, state = 1 WHERE fp = ?", [(r[0],) for r in rows])
        for _fp, url, depth, parent, priority, _seq, redirects, attempts, revisit in rows:
            cand = Candidate(url=url, depth=depth, parent=parent, priority=priority, redirects=redirects,
                             attempts=attempts)
            self._mem += 1
            if revisit:
                h.revisits.append(cand)
            else:
                self._tick += 1
                insort(h.window, (_FIRST, -self._tick, cand))
                h.first += 1
            if h.window and (len(h.window) > self.window or self._mem > self.memory_cap):
                self._evict(h)
        h.waiting = max(0, h.waiting - len(rows))
        h.next_due = conn.execute("SELECT min(due) FROM urls WHERE host = ? AND state = 0 AND due IS NOT NULL",
                                  (h.key,)).fetchone()[0] if h.waiting else None

    def _refill(self, h: _Host, now: float) -> None:
        self._promote(h, now)
        if not h.ready or len(h.window) >= max(1, self.window // 2):
            return
        room = min(self.window - len(h.window), self.memory_cap - self._mem)
        if room <= 0:
            if h.window:
                return  # over the memory cap: this host works from what it holds
            room = 1    # a ready host needs at least its best URL in memory
        self.db.ensure_tx()
        rows = self.db.conn.execute(
            "SELECT fp, url, depth, parent, priority, seq, redirects, attempts, revisit FROM urls"
            " WHERE host = ? AND state = 0 AND due IS NULL ORDER BY priority DESC, seq LIMIT ?",
            (h.key, room)).fetchall()
        if not rows:
            h.ready = 0
            return
        self.db.conn.executemany("UPDATE urls SET state = 1 WHERE fp = ?", [(r[0],) for r in rows])
        h.ready = max(0, h.ready - len(rows))
        for _fp, url, depth, parent, priority, seq, redirects, attempts, revisit in rows:
            cand = Candidate(url=url, depth=depth, parent=parent, priority=priority,
                             redirects=redirects, attempts=attempts)
            if revisit:   # a revisit that had fallen due before a resume
                h.revisits.append(cand)
            else:
                insort(h.window, (priority, -seq, cand))
        self._mem += len(rows)

    def _schedule(self, h: _Host, now: float) -> None:
        """Put a host with work and a free slot in the ready heap (it may start at ``now``) or the
        timer heap (at its politeness time, or at its next due URL's time when it has nothing
        ready). Every decision of one ``_pop_ready`` pass uses the same ``now`` as its
        ``can_start`` test: with a fresher clock here, a host whose next time fell between the
        two readings went back to the ready heap, was refused again, and so on forever."""
        if h.scheduled or self._stopped or h.clock.active >= self.policy.per_host or not h.has_work():
            return
        start = h.clock.next_time
        if not h.has_ready():   # has_work: something waits for its due time
            assert h.next_due is not None  # rows waiting have a due time
            start = max(start, h.next_due - self._epoch - DUE_SLACK)
        if start <= now:
            self._refill(h, now)
            if not h.window and not h.revisits:
                if not h.waiting:
                    return
                assert h.next_due is not None  # rows waiting have a due time
                start = max(h.clock.next_time, h.next_due - self._epoch - DUE_SLACK, now + 1e-6)
        self._tick += 1
        if start > now:
            heapq.heappush(self._timers, (start, self._tick, h.key))
            h.ready_priority = None
        else:
            h.ready_priority = _FIRST if h.revisit_next() else h.window[-1][0]
            heapq.heappush(self._ready, (-h.ready_priority, self._tick, h.key))
        h.entry = self._tick
        h.scheduled = True

    def _pop_ready(self) -> Candidate | None:
        """The best candidate that may start now, or None. One clock reading decides everything in
        the pass, so it ends: a host refused here has its next time after ``now`` and goes to the
        timer heap, and a due timer re-schedules its host at most once (its new entry, if any, is
        also after ``now`` or in the ready heap)."""
        now = self.clock.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, tick, key = heapq.heappop(self._timers)
            h = self.hosts[key]
            if tick != h.entry:
                continue  # stale: the host was re-ranked
            h.scheduled = False
            self._schedule(h, now)
        while self._ready:
            _, tick, key = heapq.heappop(self._ready)
            h = self.hosts[key]
            if tick != h.entry:
                continue  # stale: the host was re-ranked
            h.scheduled = False
            if not h.clock.can_start(now):
                self._schedule(h, now)
                continue
            self._refill(h, now)
            if not h.window and not h.revisits:
                self._schedule(h, now)
                continue
            cand = h.take()
            self._mem -= 1
            self._queued -= 1
            self._leases[fingerprint(cand.url)] = h.clock.started(now)
            self._schedule(h, now)
            return cand
        return None

    async def next_ready(self) -> Candidate | None:
        while not self._stopped:
            cand = self._pop_ready()
            if cand is not None:
                return cand
            if not self._timers and not self._ready and not self._leases:
                if self.refill is not None and self._refilled != self._finished:
                    self._refilled = self._finished
                    if self.refill():
                        continue
                # Nothing waits and nothing can bring new work: the crawl is exhausted.
                self._wake.set()
                return None
            self._wake.clear()
            timeout = None
            if self._timers:
                # at least a microsecond: a timer computed from an epoch due time (float rounding
                # at 1.7e9) can sit a fraction of a nanosecond after now, below the event loop's
                # clock resolution; waiting that long returns at once and with the loop's time
                # unchanged, forever in fake time (and as a busy wait in real time)
                timeout = max(_MIN_WAIT, self._timers[0][0] - self.clock.monotonic())
            await wait_event(self._wake, timeout)
        return None

    async def done(self, candidate: Candidate, outcome: Outcome) -> None:
        self.finish(candidate, outcome)

    def finish(self, candidate: Candidate, outcome: Outcome) -> None:
        """:meth:`done` without the coroutine."""
        h = self.hosts[host_key(candidate.url)]
        now = self.clock.monotonic()
        fp = fingerprint(candidate.url)
        token = self._leases.pop(fp, None)
        self._finished += 1
        if outcome.crawl_delay is not None:   # first: the next gap is the new one
            h.clock.crawl_delay = outcome.crawl_delay
        if outcome.requested:
            was = h.clock.next_time
            h.clock.finished(now, outcome.response_time)
            if h.clock.next_time < was and h.scheduled and h.ready_priority is None:
                # a fast response after a slow one: the timer set at the start (10 x the slow
                # one, with a slot still free) is re-timed (it held --per-host 2 crawls 36 s)
                h.scheduled = False
        else:
            h.clock.cancelled(-1 if token is None else token)
            if h.scheduled and h.ready_priority is None:
                h.scheduled = False   # its time may have gone back: re-time its timer
        self.db.ensure_tx()
        if outcome.retry_after:   # the hold kept for a resumed crawl too (_load)
            h.clock.back_off(now, outcome.retry_after)
            self.db.conn.execute("INSERT OR REPLACE INTO host_holds (host, until) VALUES (?, ?)",
                                 (h.key, h.clock.backed_off + self._epoch))
        if outcome.due is None:
            self.db.conn.execute("UPDATE urls SET state = 2 WHERE fp = ?", (fp,))
        else:
            self.db.conn.execute("UPDATE urls SET state = 0, due = ?, attempts = ?, redirects = ?, revisit = ?"
                                 " WHERE fp = ?",
                                 (outcome.due, candidate.attempts, candidate.redirects, int(outcome.revisit), fp))
            h.waiting += 1
            self._queued += 1
            if h.next_due is None or outcome.due < h.next_due:
                h.next_due = outcome.due
            if h.scheduled and h.ready_priority is None:
                h.scheduled = False   # its timer may be later than this URL's due time: re-time it
        self._schedule(h, now)
        self._wake.set()

    async def reprioritize(self, changes: Sequence[tuple[str, float]]) -> None:
        for url, priority in changes:
            self.raise_priority(url, priority)

    def raise_priority(self, url: str, priority: float) -> None:
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
                if priority <= prio:
                    return
                del h.window[i]
                self.db.ensure_tx()
                self.db.conn.execute("UPDATE urls SET priority = ? WHERE fp = ?", (priority, fingerprint(url)))
                insort(h.window, (priority, neg_seq, _with_priority(cand, priority)))
                self._reschedule(h, priority)
                return
        self.db.ensure_tx()
        fp = fingerprint(url)
        row = self.db.conn.execute("SELECT state, priority, seq, due FROM urls WHERE fp = ?", (fp,)).fetchone()
        if row is None or row[0] != 0 or priority <= row[1]:
            return  # unknown, leased (in flight: not in the window) or done; or not higher
        seq = row[2]
        if row[3] is None and self._fits(h, priority, seq) and h.window:
            row = self.db.conn.execute(
                "SELECT url, depth, parent, redirects, attempts FROM urls WHERE fp = ?", (fp,)).fetchone()
            self.db.conn.execute("UPDATE urls SET priority = ?, state = 1 WHERE fp = ?", (priority, fp))
            h.ready = max(0, h.ready - 1)
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
        self._schedule(h, self.clock.monotonic())
        self._wake.set()

    async def reschedule(self, changes: Sequence[tuple[Candidate, float]]) -> None:
        self.requeue(changes)

    def requeue(self, changes: Iterable[tuple[Candidate, float]]) -> None:
        """:meth:`reschedule` without the coroutine (``Rescheduling``, frontier/base.py)."""
        self.db.ensure_tx()
        conn = self.db.conn
        now = self.clock.monotonic()
        touched: dict[str, _Host] = {}
        for cand, due in changes:
            fp = fingerprint(cand.url)
            row = conn.execute("SELECT state, due FROM urls WHERE fp = ?", (fp,)).fetchone()
            h = self._host(host_key(cand.url))
            if row is None:   # never admitted: admitted now, due then
                self._remember(fp)
                self.seq += 1
                conn.execute(
                    "INSERT INTO urls (fp, url, host, depth, parent, priority, seq, state, redirects, due, revisit)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, 1)",
                    (fp, cand.url, h.key, cand.depth, cand.parent, cand.priority, self.seq, cand.redirects, due))
                h.waiting += 1
                self._queued += 1
                if h.next_due is None or due < h.next_due:
                    h.next_due = due
                touched[h.key] = h
                continue
            state, old_due = row
            if state == 1 or (state == 0 and old_due is None):
                continue   # in a window, in flight, or ready now
            if state == 2:
                conn.execute("UPDATE urls SET state = 0, due = ?, attempts = 0, priority = max(priority, ?), revisit = 1"
                             " WHERE fp = ?", (due, cand.priority, fp))
                h.waiting += 1
                self._queued += 1
            else:
                conn.execute("UPDATE urls SET due = ? WHERE fp = ?", (due, fp))
            if h.next_due is None or due < h.next_due:
                h.next_due = due   # (one that moved later leaves next_due early: _promote then re-reads it)
            touched[h.key] = h
        for h in touched.values():
            if h.scheduled and h.ready_priority is None:
                h.scheduled = False   # its timer may be later than the new due time: re-time it
            self._schedule(h, now)
        if touched:
            self._wake.set()

    def held_hosts(self, limit: int = 3) -> tuple[int, list[tuple[str, float, str]]]:
        now = self.clock.monotonic()
        held = sorted((when - now, key) for when, tick, key in self._timers if self.hosts[key].entry == tick)
        return len(held), [(key, wait, self._why_held(self.hosts[key], now + wait)) for wait, key in held[:limit]]

    def _why_held(self, h: _Host, when: float) -> str:
        """What the host's timer at ``when`` waits for: its politeness time (HostClock.why), or
        its next URL's own due time (a retry, a revisit) when that is later."""
        if when > h.clock.next_time + 1e-3:
            return "a URL's due time: a retry or a revisit"
        return h.clock.why()

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    @property
    def queued(self) -> int:
        return self._queued

    @property
    def in_flight(self) -> int:
        return len(self._leases)

    @property
    def active_hosts(self) -> int:
        return sum(1 for h in self.hosts.values() if h.clock.active)


def _with_priority(cand: Candidate, priority: float) -> Candidate:
    return replace(cand, priority=priority)
