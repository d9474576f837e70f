"""The frontier seam's contract: what the crawl loop relies on from ANY frontier backend.

Every backend in ``BACKENDS`` runs the same suite (the local SQLite frontier now; the Redis one of
distributed crawling joins the list). A hypothesis state machine drives random sequences of
add / next_ready / done / requeue / reprioritize / stop while the clock moves by a random amount on
EVERY reading (zero, sub-millisecond, seconds and jumps of hours), and checks after each step:

- exactly once: every admitted URL is handed out once, plus once per requeue, and never while it is
  in flight; ``add`` admits a URL only the first time (the URL-seen test);
- never spins: a ``next_ready`` call returns or parks within a bounded number of clock readings
  (the clock raises ``ClockSpin`` beyond it: the hang of issue 17 was a synchronous loop);
- liveness: ``next_ready`` does not park while some host has queued work, a free slot and a due
  politeness time;
- politeness: never more than ``per_host`` in flight on a host; a start is never before the host's
  due time, computed by an independent model of the rules (delay, adaptive × last response time,
  Retry-After, a requeue's wait) from the readings the backend took;
- order: within a host, a requeued URL first, then the best priority, ties in admission order;
- the crawl ends: once everything is done, ``next_ready`` returns None within a bounded number of
  calls, and after ``stop()`` it returns None at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from skitter.frontier.local import LocalFrontier
from skitter.frontier.politeness import Politeness
from skitter.models import Candidate
from skitter.store.db import CrawlDB
from skitter.testing import FakeClock
from skitter.urls import fingerprint, host_key

HOSTS = ["http://a.test", "http://b.test", "http://c.test:8080", "http://d.test"]
BLOCKED = object()
MAX_READS = 400          # clock readings one next_ready / done / add call may take


# -- backends --------------------------------------------------------------------------------------

class LocalBackend:
    """The embedded default: LocalFrontier on a real SQLite crawl database in a temporary directory."""

    name = "local"

    def __init__(self, policy: Politeness, clock: FakeClock, window: int) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="skitter-contract-"))
        self.db = CrawlDB(self.dir)
        self.frontier = LocalFrontier(self.db, policy, window=window, clock=clock)

    def finish(self, cand: Candidate) -> None:
        """What the loop does when it stores the fetch record: the URL is done for good."""
        self.db.ensure_tx()
        self.db.conn.execute("UPDATE urls SET state = 2 WHERE fp = ?", (fingerprint(cand.url),))

    def close(self) -> None:
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)


BACKENDS = {"local": LocalBackend}


# -- the model ---------------------------------------------------------------------------------------

@dataclass
class HostModel:
    active: int = 0
    due: float = float("-inf")     # no start before this (the politeness rules, recomputed here)
    last_elapsed: float = 0.0


def gap(policy: Politeness, last_elapsed: float) -> float:
    return max(policy.delay, policy.adaptive * last_elapsed)


JUMPS = st.sampled_from([(0.0,), (0.0, 0.0001, 0.001), (0.001,), (0.0, 0.5, 2.0), (0.0, 0.01, 100.0, 10_000.0),
                         (0.0, 0.0001, 0.3, 5.0, 3600.0)])
urls = st.builds(lambda h, p: f"{HOSTS[h]}/p{p}", st.integers(0, len(HOSTS) - 1), st.integers(0, 40))
cands = st.builds(lambda u, p: Candidate(url=u, priority=float(p)), urls, st.integers(-2, 3))


class FrontierContract(RuleBasedStateMachine):
    backend_name = "local"

    @initialize(jumps=JUMPS, seed=st.integers(0, 2**16), per_host=st.sampled_from([1, 2, 3]),
                delay=st.sampled_from([0.0, 0.001, 1.0]), adaptive=st.sampled_from([0.0, 10.0]),
                window=st.sampled_from([1, 2, 32]))
    def setup(self, jumps, seed, per_host, delay, adaptive, window):
        self.clock = FakeClock(jumps=jumps, seed=seed, max_reads=MAX_READS)
        self.policy = Politeness(delay=delay, per_host=per_host, adaptive=adaptive)
        self.loop = asyncio.new_event_loop()
        self.backend = BACKENDS[self.backend_name](self.policy, self.clock, window)
        self.f = self.backend.frontier
        self.admitted: list[str] = []             # admission order
        self.queued: dict[str, tuple[float, int]] = {}   # url -> (priority, admission rank)
        self.requeued: dict[str, int] = {}        # url -> requeue rank (first out of its host)
        self.in_flight: dict[str, Candidate] = {}
        self.handed: Counter = Counter()
        self.requeues: Counter = Counter()
        self.hosts: dict[str, HostModel] = defaultdict(HostModel)
        self.rank = 0
        self.stopped = False

    def teardown(self):
        if not hasattr(self, "backend"):
            return
        try:
            if not self.stopped:
                self._drain()
        finally:
            self.loop.close()
            self.backend.close()

    # -- helpers -------------------------------------------------------------------------------
    def _now(self) -> float:
        return self.clock.now()

    def _poll(self):
        """What next_ready hands out now: a Candidate, None, or BLOCKED (it parked)."""
        async def go():
            task = asyncio.ensure_future(self.f.next_ready())
            for _ in range(8):
                await asyncio.sleep(0)
                if task.done():
                    return task.result()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return BLOCKED
        self.clock.reset_reads()
        return self.loop.run_until_complete(go())

    def _ready_hosts(self, t: float) -> list[str]:
        """Hosts that the model says may start now: queued work, a free slot, due."""
        with_work = {host_key(u) for u in self.queued}
        return [h for h in with_work
                if self.hosts[h].active < self.policy.per_host and self.hosts[h].due <= t]

    def _expected_head(self, host: str) -> str:
        mine = [u for u in self.queued if host_key(u) == host]
        again = [u for u in mine if u in self.requeued]
        if again:
            return min(again, key=self.requeued.__getitem__)
        return min(mine, key=lambda u: (-self.queued[u][0], self.queued[u][1]))

    def _take(self, c: Candidate) -> None:
        assert c.url in self.queued, f"{c.url} handed out but not queued (twice, or never admitted)"
        assert c.url not in self.in_flight
        host = host_key(c.url)
        hm = self.hosts[host]
        assert hm.active < self.policy.per_host, f"more than per_host={self.policy.per_host} in flight on {host}"
        t = self._now()
        assert t >= hm.due, f"{c.url} started at {t} before its host was due at {hm.due}"
        assert c.url == self._expected_head(host), "a host's URLs out of order"
        del self.queued[c.url]
        self.requeued.pop(c.url, None)
        self.in_flight[c.url] = c
        self.handed[c.url] += 1
        hm.active += 1
        hm.due = max(hm.due, t + gap(self.policy, hm.last_elapsed))

    def _finish(self, url: str, elapsed: float | None, retry_after: float | None, *, requeue_wait=None) -> None:
        c = self.in_flight.pop(url)
        hm = self.hosts[host_key(url)]
        self.clock.reset_reads()
        if requeue_wait is not None:
            self.f.requeue(c, not_before=requeue_wait)
            t = self._now()
            if requeue_wait:
                hm.due = max(hm.due, t + min(requeue_wait, self.policy.max_retry_after))
            self.rank += 1
            self.requeued[url] = self.rank
            self.queued[url] = (c.priority, self.rank)
            self.requeues[url] += 1
        else:
            self.backend.finish(c)
        self.f.done(c, elapsed=elapsed, retry_after=retry_after)
        t = self._now()
        hm.active -= 1
        if elapsed is not None:
            hm.last_elapsed = elapsed
        hm.due = max(hm.due, t + gap(self.policy, hm.last_elapsed))
        if retry_after:
            hm.due = max(hm.due, t + min(retry_after, self.policy.max_retry_after))

    def _drain(self) -> None:
        """Finish everything; the crawl must end with every admitted URL handed out."""
        for url in list(self.in_flight):
            self._finish(url, 0.0, None)
        bound = 50 * (len(self.admitted) + sum(self.requeues.values())) + 50
        for _ in range(bound):
            got = self._poll()
            if got is None:
                break
            if got is BLOCKED:
                self.clock.advance(max(self.policy.delay, 1.0) + 700.0)   # past any delay or Retry-After
                continue
            self._take(got)
            self._finish(got.url, 0.0, None)
        else:
            pytest.fail(f"the crawl did not end within {bound} calls of next_ready")
        assert not self.queued and not self.in_flight
        expected = Counter({u: 1 + self.requeues[u] for u in self.admitted})
        assert self.handed == expected, "not every admitted URL was handed out exactly once (+ requeues)"

    # -- rules ---------------------------------------------------------------------------------
    @precondition(lambda self: not self.stopped)
    @rule(batch=st.lists(cands, max_size=10))
    def add(self, batch):
        fresh = []
        for c in batch:
            if c.url not in self.handed and c.url not in self.queued and c.url not in self.in_flight \
                    and c.url not in fresh:
                fresh.append(c.url)
        self.clock.reset_reads()
        new = self.f.add(batch)
        assert new == len(fresh), "add() must admit exactly the URLs never seen before"
        for c in batch:
            if c.url in fresh and c.url not in self.queued:
                self.rank += 1
                self.queued[c.url] = (c.priority, self.rank)
                self.admitted.append(c.url)

    @precondition(lambda self: not self.stopped)
    @rule()
    def next_ready(self):
        t0 = self._now()
        ready_before = self._ready_hosts(t0)
        got = self._poll()
        if got is None:
            assert not self.queued and not self.in_flight, "next_ready said the crawl ended with work left"
        elif got is BLOCKED:
            assert not ready_before, f"next_ready parked while {ready_before} could start"
        else:
            self._take(got)

    @precondition(lambda self: self.in_flight and not self.stopped)
    @rule(i=st.integers(0, 100), elapsed=st.sampled_from([None, 0.0, 0.0001, 0.01, 0.5, 3.0]),
          retry_after=st.sampled_from([None, None, 0.0, 5.0, 1000.0]))
    def done(self, i, elapsed, retry_after):
        url = sorted(self.in_flight)[i % len(self.in_flight)]
        self._finish(url, elapsed, retry_after)

    @precondition(lambda self: self.in_flight and not self.stopped)
    @rule(i=st.integers(0, 100), wait=st.sampled_from([0.0, 1.0, 30.0]))
    def requeue(self, i, wait):
        url = sorted(self.in_flight)[i % len(self.in_flight)]
        self._finish(url, 0.001, None, requeue_wait=wait)

    @precondition(lambda self: self.queued and not self.stopped)
    @rule(i=st.integers(0, 1000), raise_by=st.sampled_from([0.5, 1.0, 10.0]))
    def reprioritize(self, i, raise_by):
        url = sorted(self.queued)[i % len(self.queued)]
        prio, rank = self.queued[url]
        self.clock.reset_reads()
        self.f.reprioritize(url, prio + raise_by)
        if url not in self.requeued:
            self.queued[url] = (prio + raise_by, rank)

    @rule(seconds=st.sampled_from([0.001, 1.0, 60.0]))
    def wait(self, seconds):
        self.clock.advance(seconds)

    @precondition(lambda self: not self.stopped and len(self.handed) > 3)
    @rule()
    def stop(self):
        self.f.stop()
        self.stopped = True
        assert self._poll() is None, "next_ready must return None once stop() was called"

    @invariant()
    def counters_agree(self):
        if hasattr(self, "f") and not self.stopped:
            assert self.f.in_flight == len(self.in_flight)
            assert self.f.queued == len(self.queued)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_frontier_contract(backend):
    machine = type(f"FrontierContract_{backend}", (FrontierContract,), {"backend_name": backend})
    run = settings(max_examples=120, stateful_step_count=60, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])(machine)
    run.TestCase().runTest()
