"""The Redis frontier's membership layer on a real redis-server: hand-off to a host's owner, host
leases with fencing tokens, and global termination across two workers (the single-worker
contract is tests/contract/)."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from redis.asyncio import Redis

from skitter.distributed.frontier import RedisFrontier
from skitter.distributed.ring import Ring
from skitter.frontier.politeness import Politeness
from skitter.models import Candidate, Outcome
from skitter.store.db import CrawlDB
from skitter.urls import fingerprint, host_key


class Worker:
    def __init__(self, url: str, name: str, crawl: str, immediate: bool = True, **timing) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="skitter-rf-"))
        self.db = CrawlDB(self.dir)
        self.client = Redis.from_url(url)
        self.f = RedisFrontier(self.client, crawl, self.db, Politeness(delay=0.0), worker=name, immediate=immediate,
                               **timing)

    async def close(self) -> None:
        await self.client.aclose()
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def owned_by(ring: Ring, member: str, n: int = 1) -> list[str]:
    hosts = [f"h{i}.test" for i in range(200)]
    return [h for h in hosts if ring.owner(h) == member][:n]


def test_hand_off_fencing_and_termination(redis_server):
    async def go():
        a = Worker(redis_server.url, "wa", "t1", heartbeat=0.05, member_ttl=5.0, lease_ttl=0.3)
        b = Worker(redis_server.url, "wb", "t1", heartbeat=0.05, member_ttl=5.0, lease_ttl=5.0)
        try:
            for w in (a, b, a):     # heartbeats: both see both
                await w.f._tick()
            ring = Ring(["wa", "wb"])
            assert a.f.members == b.f.members == ["wa", "wb"]
            host_b, = owned_by(ring, "wb")
            host_a, = owned_by(ring, "wa")
            # a finds URLs of both hosts: its own it leases at once, b's go to b's inbox
            new = await a.f.add([Candidate(f"http://{host_a}/1"), Candidate(f"http://{host_b}/1"),
                                 Candidate(f"http://{host_b}/2")])
            assert len(new) == 3 and a.f.pending == 3
            assert await a.f.add([Candidate(f"http://{host_b}/1")]) == []   # seen: once in the cluster
            assert a.f.queued == 1 and b.f.queued == 0
            await b.f._tick()                     # b reads its inbox: the host is its, to lease
            assert host_b in b.f.wanted
            await b.f._scan()
            assert b.f.queued == 2 and host_b in b.f.local.held
            # a takes its URL; its lease lapses (no renewal); a third worker leases the host
            got = await asyncio.wait_for(a.f.next_ready(), 5)
            assert got.url == f"http://{host_a}/1"
            await asyncio.sleep(0.4)
            c = Worker(redis_server.url, "wc", "t1", lease_ttl=5.0)
            try:
                await c.f._acquire([host_a])
                assert host_a in c.f.local.held and c.f.queued == 1    # the URL a had in flight
                await a.f.done(got, Outcome(response_time=0.0))       # fenced: a lost the host
                assert a.f.fenced >= 1 and host_a not in a.f.local.held   # and let go of
                assert await a.client.hlen(a.f.keys.host(host_a, "q")) == 1
                # a's ring still gives it the host: asked for with each heartbeat, not only when idle
                assert host_a in a.f.wanted
                await a.f._scan()
                assert host_a in a.f.wanted and host_a not in a.f.local.held   # c holds it
                got_c = await asyncio.wait_for(c.f.next_ready(), 5)
                await c.f.done(got_c, Outcome(response_time=0.0))
                assert not c.f.wants_commit
                c.f._lost(host_a)                                      # c lets it go: a takes it
                assert c.f.wants_commit       # the hand-over waits for a commit: the loop makes one soon
                await c.f._release_leaving()
                assert not c.f.wants_commit
                await a.f._scan()
                assert host_a in a.f.local.held and host_a not in a.f.wanted
            finally:
                await c.close()
            for _ in range(2):
                try:
                    got = await asyncio.wait_for(b.f.next_ready(), 5)
                except TimeoutError:
                    L = b.f.local
                    raise AssertionError((b.f.queued, L.held, L.leaving, L._ready, L._timers, L._leases,
                                          {k: (h.window, h.ready, h.scheduled, h.entry) for k, h in L.hosts.items()})
                                         ) from None
                await b.f.done(got, Outcome(response_time=0.0))
            # nothing queued or in flight anywhere: both see the end
            assert b.f.pending == 0
            await a.f._tick()
            assert await asyncio.wait_for(a.f.next_ready(), 5) is None
            assert await asyncio.wait_for(b.f.next_ready(), 5) is None
        finally:
            await a.close()
            await b.close()

    asyncio.run(go())


def test_a_hand_off_that_reached_a_worker_the_ring_moved_past_goes_on_to_the_owner(redis_server):
    """A hand-off sent on an older ring reaches a worker that no longer owns the host; the owner
    already holds the host (it loads a host's queue only when it leases it). The URL goes on to the
    owner with the next heartbeat, once, and is crawled at once, not when the whole cluster idles
    (hold-out runs: 30 s late, at the end of the crawl)."""
    async def go():
        a = Worker(redis_server.url, "wa", "t12", heartbeat=0.05, member_ttl=5.0, lease_ttl=5.0)
        b = Worker(redis_server.url, "wb", "t12", heartbeat=0.05, member_ttl=5.0, lease_ttl=5.0)
        try:
            for w in (a, b, a):
                await w.f._tick()
            host, = owned_by(Ring(["wa", "wb"]), "wa")
            await a.f.add([Candidate(f"http://{host}/1")])
            assert host in a.f.local.held and a.f.local.queued == 1
            # a URL of a's host, written to its queue in Redis and handed to b by a worker whose
            # ring was older (as RedisFrontier.add does: the record, then the owner's inbox)
            from skitter.distributed.frontier import _record

            rec = _record(Candidate(f"http://{host}/2"), 99)
            await a.client.hset(a.f.keys.host(host, "q"), str(fingerprint(f"http://{host}/2")), rec)
            await a.client.incr(a.f.keys.pending)
            await b.client.rpush(b.f.keys.inbox("wb"), json.dumps({host: [rec]}))
            before = a.f.local.queued
            await b.f._tick()      # b reads it: the ring gives the host to a
            assert host not in b.f.wanted and host not in b.f.local.held
            await b.f._tick()      # sent on with b's heartbeat
            await a.f._tick()      # a admits it
            assert a.f.local.queued == before + 1
            # forwarded once: a worker that does not own the host either drops it (the owner's
            # resync loads it from Redis), so two rings that disagree cannot pass it back and forth
            await b.client.rpush(b.f.keys.inbox("wb"), json.dumps(["forwarded", {host: [rec]}]))
            await b.f._tick()
            assert not b.f._forward_out
        finally:
            await a.close()
            await b.close()

    asyncio.run(go())


def test_a_lease_that_lapsed_while_no_one_took_the_host_is_still_its_holders(redis_server):
    """A Redis outage longer than the lease's time lets the leases expire with no renewal; when
    Redis is back the URLs done meanwhile are written, not fenced (and so not fetched again by the
    host's next holder), and the renewal takes the lease back, as long as the host's fencing
    counter is still at the holder's token: no one acquired the host since."""
    async def go():
        a = Worker(redis_server.url, "wa", "t2", heartbeat=0.05, member_ttl=5.0, lease_ttl=0.3)
        try:
            await a.f._tick()
            host, = owned_by(Ring(["wa"]), "wa")
            await a.f.add([Candidate(f"http://{host}/1"), Candidate(f"http://{host}/2")])
            got = await asyncio.wait_for(a.f.next_ready(), 5)
            lease = a.f.keys.host(host, "lease")
            token = a.f.tokens[host]
            await asyncio.sleep(0.45)                              # the outage: no renewal
            assert await a.client.get(lease) is None               # the lease lapsed
            await a.f.done(got, Outcome(response_time=0.0))
            assert a.f.fenced == 0 and host in a.f.local.held      # written under the lapsed lease
            assert await a.client.hlen(a.f.keys.host(host, "q")) == 1
            await a.f._renew()
            assert host in a.f.local.held and (await a.client.get(lease)).decode() == token
            assert 200 < await a.client.pttl(lease) <= 300         # held again for a lease's time
            # lapsed again, it is released all the same: left 'free' (a patient acquirer takes a free
            # lease, not a lapsed one), the host's politeness state saved for its next holder
            await asyncio.sleep(0.45)
            from skitter.distributed.frontier import _RELEASE

            pol = a.f.keys.host(host, "pol")
            assert await a.f._scripts(_RELEASE, [(host, [lease, pol, a.f.keys.host(host, "tok")],
                                                  [token, "123.0 0.0 0.0"])]) == [1]
            assert await a.client.get(lease) == b"free" and await a.client.get(pol) == b"123.0 0.0 0.0"
            # and once another worker has acquired the host, the lease is not taken back
            c = Worker(redis_server.url, "wc", "t2", lease_ttl=5.0)
            try:
                await c.f._acquire([host])
                assert host in c.f.local.held
                await a.f._renew()
                assert host in a.f.local.leaving and await a.client.get(lease) != token.encode()
            finally:
                await c.close()
        finally:
            await a.close()

    asyncio.run(go())


def test_new_urls_of_a_held_host_are_not_queued_locally_after_it_is_dropped(redis_server):
    """A page's new URLs go to the hosts this worker holds at once, before the hand-off of the
    others waits for Redis: a host dropped in that wait (the ring gave it away) takes none of them
    into the local frontier, where no one would hand them out and the worker could not finish (its
    queue count above 0); its next holder loads them from Redis."""
    async def go():
        a = Worker(redis_server.url, "wa", "t11", heartbeat=0.05, member_ttl=5.0, lease_ttl=5.0)
        b = Worker(redis_server.url, "wb", "t11", heartbeat=0.05, member_ttl=5.0, lease_ttl=5.0)
        try:
            for w in (a, b, a):
                await w.f._tick()
            ring = Ring(["wa", "wb"])
            mine, = owned_by(ring, "wa")
            theirs, = owned_by(ring, "wb")
            await a.f.add([Candidate(f"http://{mine}/1")])
            assert mine in a.f.local.held and a.f.local.queued == 1
            hand_off = a.f._hand_off

            async def dropped_meanwhile(batch):   # the host leaves while the hand-off waits for Redis
                a.f._drop(mine)
                await hand_off(batch)

            a.f._hand_off = dropped_meanwhile
            new = await a.f.add([Candidate(f"http://{mine}/2"), Candidate(f"http://{theirs}/1")])
            assert len(new) == 2
            assert mine not in a.f.local.held and a.f.local.queued == 0
            q = a.f.keys.host(mine, "q")
            assert await a.client.hexists(q, str(fingerprint(f"http://{mine}/2")))   # for its next holder
        finally:
            await a.close()
            await b.close()

    asyncio.run(go())


def test_a_url_done_while_a_flush_waits_for_redis_waits_for_the_next_commit(redis_server):
    """The loop's committer commits the store, then has the frontier write the URLs done to Redis
    (``committed``). A URL done while that write waits for Redis (here: for the seen set, with a
    URL robots.txt disallowed) was not in the store's commit: it is written with the next one. It
    used to be written at once, so a kill -9 before the next commit lost it: its record gone from
    its host's queue in Redis, its page not in the store (a page never fetched again)."""
    async def go():
        a = Worker(redis_server.url, "wa", "t10", immediate=False, heartbeat=0.05, member_ttl=5.0, lease_ttl=5.0)
        try:
            await a.f._tick()
            one, two = owned_by(Ring(["wa"]), "wa", 2)
            await a.f.add([Candidate(f"http://{one}/1"), Candidate(f"http://{two}/1")])
            first = await asyncio.wait_for(a.f.next_ready(), 5)
            second = await asyncio.wait_for(a.f.next_ready(), 5)
            await a.f.add([Candidate(f"http://{one}/private")], decided=True)   # robots.txt: seen at the commit
            await a.f.done(first, Outcome(response_time=0.0))
            # the store commits here (with `first`), then the committer calls committed()
            flushing = asyncio.ensure_future(a.f.committed())
            await asyncio.sleep(0)                                 # the flush waits for Redis ...
            await a.f.done(second, Outcome(response_time=0.0))    # ... when `second` is done
            await flushing
            queue = [a.f.keys.host(host_key(c.url), "q") for c in (first, second)]
            fps = [str(fingerprint(c.url)) for c in (first, second)]
            assert not await a.client.hexists(queue[0], fps[0])   # committed: done in Redis
            assert await a.client.hexists(queue[1], fps[1])       # not committed yet: still queued
            assert await a.f.seen.contains_many([fingerprint(f"http://{one}/private")]) == [True]
            await a.f.committed()                                  # the next commit has it
            assert not await a.client.hexists(queue[1], fps[1])
            assert int(await a.client.get(a.f.keys.pending)) == 0
        finally:
            await a.close()

    asyncio.run(go())


def test_a_lease_request_that_waited_out_a_redis_hang_takes_no_lapsed_lease(redis_server):
    """A request to lease a host sent just before Redis hung runs when Redis answers again, before
    the holder (back from the same outage) has renewed its lapsed lease. A request that reached Redis
    more than half a lease's time after it was sent takes no lapsed lease: the host stays wanted, and
    the holder takes its lease back. A fresh request takes a lapsed lease as before, and any request
    a free one (released, or never leased)."""
    from skitter.distributed.frontier import _ACQUIRE

    async def go():
        a = Worker(redis_server.url, "wa", "t9", heartbeat=0.05, member_ttl=5.0, lease_ttl=0.3)
        b = Worker(redis_server.url, "wb", "t9", heartbeat=0.05, member_ttl=5.0, lease_ttl=5.0)
        try:
            await a.f._tick()
            await b.f._tick()
            assert abs(b.f._offset) < 0.05 and b.f._offset_rtt < 1.0   # one machine: the same clock
            host, = owned_by(Ring(["wa"]), "wa")
            await a.f.add([Candidate(f"http://{host}/1"), Candidate(f"http://{host}/2")])
            got = await asyncio.wait_for(a.f.next_ready(), 5)
            token = a.f.tokens[host]
            keys = [a.f.keys.host(host, k) for k in ("lease", "tok", "q", "pol")]
            await asyncio.sleep(0.45)                              # a's lease lapses: Redis "hung"
            assert await a.client.get(keys[0]) is None

            def request(sent_ms_ago: float) -> tuple:
                now = int((time.time() + b.f._offset) * 1000)
                return (host, keys, ["wb", 5000, 0, now - int(sent_ms_ago), 2500])

            assert await b.f._scripts(_ACQUIRE, [request(3000)]) == [0]   # sent 3 s before it ran: refused
            await a.f.done(got, Outcome(response_time=0.0))        # the holder is back: written,
            await a.f._renew()                                     # and its lease taken back
            assert a.f.fenced == 0 and (await a.client.get(keys[0])).decode() == token
            # lapsed again and asked for at once: taken (the holder was not back in time)
            await asyncio.sleep(0.45)
            await b.f._acquire([host])
            assert host in b.f.local.held and host not in b.f.wanted
            # a free lease (released) is taken by a request however old
            await b.f._release_leaving()
            b.f._lost(host)
            await b.f._release_leaving()
            assert await b.client.get(keys[0]) == b"free"
            (reply,) = await b.f._scripts(_ACQUIRE, [request(3000)])
            assert reply is not None
        finally:
            await a.close()
            await b.close()

    asyncio.run(go())


class _Skewed:
    """The ``time`` module as the frontier sees it, with this machine's clock ``by`` seconds off."""

    def __init__(self, by: float) -> None:
        self.by = by

    def time(self) -> float:
        return time.time() + self.by

    def monotonic(self) -> float:
        return time.monotonic()


def test_a_heartbeat_that_fails_to_read_redis_clock_keeps_what_it_took_from_its_inbox(redis_server):
    """The heartbeat pops the worker's inbox (URLs other workers found for its hosts) and reads
    Redis's clock last: a failure there (Redis gone at that moment) leaves the hand-off received,
    its host wanted, instead of dropped with the heartbeat's other answers."""
    from redis import exceptions as rex

    async def go():
        a = Worker(redis_server.url, "wa", "t13", heartbeat=0.05, member_ttl=5.0, lease_ttl=5.0)
        b = Worker(redis_server.url, "wb", "t13", heartbeat=0.05, member_ttl=5.0, lease_ttl=5.0)
        try:
            for w in (a, b, a, b):
                await w.f._tick()
            theirs, = owned_by(Ring(["wa", "wb"]), "wb")
            await a.f.add([Candidate(f"http://{theirs}/1")])     # handed to b's inbox

            async def unreachable():
                raise rex.ConnectionError("Redis went away")

            b.f.client.time = unreachable
            b.f._offset_next = 0.0
            with pytest.raises(rex.ConnectionError):
                await b.f._tick()
            assert theirs in b.f.wanted
        finally:
            await a.close()
            await b.close()

    asyncio.run(go())


def test_lease_requests_on_a_clock_apart_from_redis_and_a_patient_worker(redis_server, monkeypatch):
    """The send time of a lease request is on Redis's clock: a worker whose own clock is 3 s behind
    reads the difference with its heartbeat and its fresh requests take a lapsed lease. Clocks
    that disagree all the same (a Redis Cluster's nodes apart) make a request look old: refused, the
    host stays wanted, and after a lease's time it is asked for without the test, so that a dead
    worker's host is not left unleased. A worker back from a gap in its own heartbeats (patient)
    takes no lapsed lease, and a free one."""
    import skitter.distributed.frontier as frontier_module

    async def go():
        a = Worker(redis_server.url, "wa", "t12", heartbeat=0.05, member_ttl=5.0, lease_ttl=0.3)
        b = Worker(redis_server.url, "wb", "t12", heartbeat=0.05, member_ttl=5.0, lease_ttl=0.3)
        try:
            await a.f._tick()
            one, two, three = owned_by(Ring(["wa"]), "wa", 3)
            await a.f.add([Candidate(f"http://{h}/1") for h in (one, two, three)])
            assert a.f.local.held == {one, two, three}
            monkeypatch.setattr(frontier_module, "time", _Skewed(-3.0))
            await b.f._tick()
            assert 2.9 < b.f._offset < 3.1                       # Redis's clock 3 s ahead of b's
            await asyncio.sleep(0.45)                            # a's leases lapse (a is gone)
            await b.f._acquire([one])
            assert one in b.f.local.held                         # fresh on Redis's clock: taken
            # clocks that disagree in spite of the heartbeat's reading: every request looks old
            b.f._offset -= 3.0
            await b.f._acquire([two])
            assert two not in b.f.local.held and two in b.f.wanted
            await asyncio.sleep(0.35)                            # refused for a lease's time:
            await b.f._acquire([two])                            # asked for without the test
            assert two in b.f.local.held and two not in b.f.wanted
            # back from a gap in its heartbeats: patient, no lapsed lease; a released one it takes
            monkeypatch.setattr(frontier_module, "time", time)
            b.f._offset = 0.0
            b.f._grace = (0.0, time.time() + 60)
            await b.f._acquire([three])
            assert three not in b.f.local.held and three in b.f.wanted
            lease = a.f.keys.host(three, "lease")
            await a.client.set(lease, "free")
            await b.f._acquire([three])
            assert three in b.f.local.held
        finally:
            monkeypatch.setattr(frontier_module, "time", time)
            await a.close()
            await b.close()

    asyncio.run(go())


def test_importance_is_the_clusters_and_moves_with_its_host(redis_server):
    """OPIC cash (and in-link counts alike) is summed in Redis over the workers: a URL of b's host
    linked from a page of a and a page of b gets both shares; its priority is written to its record
    in Redis, so the worker that leases the host next has it."""
    from skitter.models import Link, Page
    from skitter.strategies.base import ParentContext
    from skitter.strategies.importance import OPICScorer
    from skitter.urls import fingerprint

    async def go():
        a = Worker(redis_server.url, "wa", "t2", heartbeat=0.05, member_ttl=5.0, lease_ttl=5.0)
        b = Worker(redis_server.url, "wb", "t2", heartbeat=0.05, member_ttl=5.0, lease_ttl=0.3)
        c = None
        try:
            for w in (a, b, a):
                await w.f._tick()
            ring = Ring(["wa", "wb"])
            host_b, = owned_by(ring, "wb")
            host_a, = owned_by(ring, "wa")
            scorers = {a: OPICScorer(), b: OPICScorer()}
            for w, s in scorers.items():
                w.f.share_importance(s)
            target, other = f"http://{host_b}/t", f"http://{host_b}/u"
            await b.f.add([Candidate(other, priority=0.0), Candidate(target, priority=0.0)])
            assert host_b in b.f.local.held
            # a page of each worker (cash 1 each) links to target; a's page also to another URL
            for w, src, links in ((a, f"http://{host_a}/p", [target, f"http://{host_a}/q"]),
                                  (b, f"http://{host_b}/p", [target])):
                s = scorers[w]
                s.seed_priority(src)
                page = Page(links=[Link(u) for u in links])
                parent = ParentContext(url=src, page=page, depth=0, priority=0.0, relevance=s.relevance(src, page))
                await w.f.reprioritize(s.on_page(parent, page.links))
            assert scorers[a].cash[target] == 0.5   # its own half: the total when it added it
            assert scorers[b].cash[target] == 1.5   # a's half and b's whole
            record = json.loads(await a.client.hget(a.f.keys.host(host_b, "q"), str(fingerprint(target))))
            assert record[3] == 1.5
            # b, the host's holder, hands out the target first (queued after the other URL, at 0)
            got = await asyncio.wait_for(b.f.next_ready(), 5)
            assert (got.url, got.priority) == (target, 1.5)
            # b's lease lapses; the next holder loads the priority with the host's queue
            await asyncio.sleep(0.4)
            c = Worker(redis_server.url, "wc", "t2", lease_ttl=5.0)
            await c.f._acquire([host_b])
            got = await asyncio.wait_for(c.f.next_ready(), 5)
            assert (got.url, got.priority) == (target, 1.5)
        finally:
            for w in (a, b, c):
                if w is not None:
                    await w.close()

    asyncio.run(go())


def test_importance_is_shared_only_for_urls_that_may_enter(redis_server):
    """A page's links out of the crawl's scope (or too long, or a trap of repeated segments) get no
    entry in their host's importance hash: only URLs the link filter may ever admit are shared."""
    from skitter.config import CrawlConfig
    from skitter.linkfilter import LinkFilter
    from skitter.models import Link, Page
    from skitter.strategies.base import ParentContext
    from skitter.strategies.importance import BacklinkScorer
    from skitter.urls import fingerprint

    async def go():
        a = Worker(redis_server.url, "wa", "t-scope")
        try:
            seed = "http://inside.test/"
            scorer = BacklinkScorer()
            link_filter = LinkFilter(CrawlConfig(seeds=(seed,), max_repeated_segments=2), [seed])
            a.f.share_importance(scorer, link_filter.may_enter)
            inside, outside = "http://inside.test/a", "http://outside.test/b"
            trap = "http://inside.test/x/y/x/y/x/y/x/y/"
            page = Page(links=[Link(inside), Link(outside), Link(trap)])
            parent = ParentContext(url=seed, page=page, depth=0, priority=0.0, relevance=scorer.relevance(seed, page))
            await a.f.reprioritize(scorer.on_page(parent, page.links))
            imp = a.f.keys.host("inside.test", "imp")
            assert await a.client.hgetall(imp) == {str(fingerprint(inside)).encode(): b"1"}
            assert await a.client.exists(a.f.keys.host("outside.test", "imp")) == 0
            assert not link_filter.rejected   # nothing counted as rejected: no URL was offered
        finally:
            await a.close()

    asyncio.run(go())


def test_a_host_that_moves_keeps_its_politeness_state(redis_server):
    """Its next allowed time, robots.txt's Crawl-delay and its last response time (the adaptive
    delay) go with the host to its next holder."""
    async def go():
        a = Worker(redis_server.url, "wa", "t3", lease_ttl=5.0)
        b = None
        try:
            await a.f.add([Candidate("http://moving.test/1"), Candidate("http://moving.test/2")])
            assert "moving.test" in a.f.local.held
            clock = a.f.local.hosts["moving.test"].clock
            clock.crawl_delay, clock.last_elapsed = 7.0, 0.25
            clock.next_time = a.f.clock.monotonic() + 30.0
            leaves_at = clock.next_time + a.f.local._epoch
            a.f._lost("moving.test")
            await a.f._release_leaving()
            assert "moving.test" not in a.f.local.held
            b = Worker(redis_server.url, "wb", "t3", lease_ttl=5.0)
            await b.f._acquire(["moving.test"])
            moved = b.f.local.hosts["moving.test"].clock
            assert (moved.crawl_delay, moved.last_elapsed) == (7.0, 0.25)
            assert abs(moved.next_time + b.f.local._epoch - leaves_at) < 0.01
            assert b.f.queued == 2
        finally:
            for w in (a, b):
                if w is not None:
                    await w.close()

    asyncio.run(go())


def test_a_revisit_stays_one_when_its_host_moves(redis_server):
    """A URL due again as a revisit (``Outcome.revisit``: it takes turns with its host's new URLs)
    is still one at the host's next holder, and a retry is not; a record written without the
    field (an older worker's) loads as not a revisit."""
    from skitter.distributed.frontier import _decode

    async def go():
        a = Worker(redis_server.url, "wa", "t4", lease_ttl=5.0)
        b = None
        try:
            await a.f.add([Candidate("http://moving.test/1"), Candidate("http://moving.test/2")])
            for revisit in (True, False):
                c = await a.f.next_ready()
                await a.f.done(c, Outcome(due=a.f.clock.time() + 3600.0, revisit=revisit))
            a.f._lost("moving.test")
            await a.f._release_leaving()
            b = Worker(redis_server.url, "wb", "t4", lease_ttl=5.0)
            await b.f._acquire(["moving.test"])
            got = dict(b.db.conn.execute("SELECT url, revisit FROM urls WHERE due IS NOT NULL"))
            assert got == {"http://moving.test/1": 1, "http://moving.test/2": 0}
        finally:
            for w in (a, b):
                if w is not None:
                    await w.close()

    asyncio.run(go())
    old = json.dumps(["http://x.test/", 0, None, 1.0, 3, 0, 0, 12.5])
    assert _decode(old)[1:] == (3, 12.5, 0)


class Killed(BaseException):
    """The worker dies here (as kill -9 would: nothing after this point runs)."""


@pytest.mark.parametrize("at", ["records", "seen", "end"])
def test_a_worker_killed_while_admitting_on_a_cluster_loses_nothing(redis_cluster, at):
    """On a Redis Cluster admission takes several round trips: killed between any two, the URLs it
    was admitting are never left seen and not queued; the host's owner loads them."""
    from skitter.distributed.redis_url import connect
    from skitter.urls import fingerprint

    crawl = f"kill-{at}"

    async def go():
        dirs, frontiers, clients = [], [], []
        try:
            for name in ("wa", "wb"):
                d = Path(tempfile.mkdtemp(prefix="skitter-rf-"))
                client = await connect(redis_cluster.url)
                db = CrawlDB(d)
                f = RedisFrontier(client, crawl, db, Politeness(delay=0.0), worker=name, immediate=True)
                dirs.append((d, db))
                clients.append(client)
                frontiers.append(f)
            a, b = frontiers
            for f in (a, b, a):
                await f._tick()
            host_b, = owned_by(Ring(["wa", "wb"]), "wb")
            urls = [f"http://{host_b}/{i}" for i in range(5)]

            # the step at which it dies: before the pipeline that writes the records, before the
            # one that adds to the seen set (and hands off), or just after that one ran
            from skitter.distributed.frontier import _QUEUE_NX
            from skitter.distributed.seen import _ADD

            real = a._pipeline
            script, after = {"records": (_QUEUE_NX, False), "seen": (_ADD, False), "end": (_ADD, True)}[at]

            async def pipeline(calls, extra=()):
                if any(c[0] is script for c in calls):
                    if after:
                        await real(calls, extra)
                    raise Killed
                return await real(calls, extra)
            a._pipeline = pipeline
            with pytest.raises(Killed):
                await a.add([Candidate(u) for u in urls])
            q = await clients[1].hgetall(b.keys.host(host_b, "q"))
            seen = await b.seen.contains_many([fingerprint(u) for u in urls])
            queued = [str(fingerprint(u)).encode() in q for u in urls]
            assert all(qd or not s for qd, s in zip(queued, seen)), "a URL seen and not queued"
            assert int(await clients[1].get(b.keys.pending) or 0) >= sum(queued)
            # found again by b: only those not queued yet are new; b's scan loads the others
            new = await b.add([Candidate(u) for u in urls])
            assert sorted(c.url for c in new) == [u for u, qd in zip(urls, queued) if not qd]
            await b._scan()
            got = set()
            for _ in urls:
                cand = await asyncio.wait_for(b.next_ready(), 5)
                got.add(cand.url)
                await b.done(cand, Outcome(response_time=0.0))
            assert got == set(urls)
        finally:
            for client in clients:
                await client.aclose()
            for d, db in dirs:
                db.close()
                shutil.rmtree(d, ignore_errors=True)

    asyncio.run(go())


async def _cluster_workers(url: str, crawl: str, names: Sequence[str], **kw) -> tuple[list, list, list]:
    """Frontiers on the Redis Cluster (with their clients and directories), each seeing the others."""
    from skitter.distributed.redis_url import connect

    dirs, frontiers, clients = [], [], []
    for name in names:
        d = Path(tempfile.mkdtemp(prefix="skitter-rf-"))
        client = await connect(url)
        db = CrawlDB(d)
        dirs.append((d, db))
        clients.append(client)
        frontiers.append(RedisFrontier(client, crawl, db, Politeness(delay=0.0), worker=name, immediate=True, **kw))
    for f in [*frontiers, frontiers[0]]:
        await f._tick()
    return frontiers, clients, dirs


async def _close_all(clients: list, dirs: list) -> None:
    for client in clients:
        await client.aclose()
    for d, db in dirs:
        db.close()
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("paused", [False, True])
def test_a_url_done_during_an_admission_on_a_cluster_is_not_queued_again(redis_cluster, paused):
    """The race of the cluster's admission in three steps: worker a's seen test (step 1) finds a
    URL new; before a's records go in (step 2), worker b admits the same URL, fetches it and marks
    it done (its record removed). a must not queue it again: it is fetched once in the cluster.
    ``paused``: a stops after step 1 for longer than the horizon of the set of URLs done recently
    (b's entry gone), and its step 2 tests the seen set again."""
    from skitter.distributed.frontier import _QUEUE_NX
    from skitter.distributed.seen import _CONTAINS
    from skitter.urls import fingerprint

    horizon = {"done_horizon": 0.2} if paused else {}

    async def go():
        (a, b), clients, dirs = await _cluster_workers(redis_cluster.url, f"race-done-{paused}", ("wa", "wb"),
                                                       **horizon)
        try:
            host_b, = owned_by(Ring(["wa", "wb"]), "wb")
            url = f"http://{host_b}/found-by-both"
            q, fp = b.keys.host(host_b, "q"), str(fingerprint(url))
            real = a._pipeline
            meanwhile: list[str] = []

            async def b_fetches_it() -> None:
                assert [c.url for c in await b.add([Candidate(url)])] == [url]
                cand = await asyncio.wait_for(b.next_ready(), 5)
                meanwhile.append(cand.url)
                await b.done(cand, Outcome(response_time=0.0))
                assert not await clients[1].hexists(q, fp)

            async def pipeline(calls, extra=()):
                if meanwhile:
                    return await real(calls, extra)
                if paused and any(c[0] is _CONTAINS for c in calls):     # a's step 1, then a pause
                    out = await real(calls, extra)
                    await b_fetches_it()
                    await asyncio.sleep(0.3)
                    assert await clients[1].exists(b.keys.host(host_b, "done")) == 0
                    return out
                if any(c[0] is _QUEUE_NX for c in calls):                 # just before a's step 2
                    await b_fetches_it()
                return await real(calls, extra)

            a._pipeline = pipeline
            assert await a.add([Candidate(url)]) == [], "a URL done meanwhile admitted again"
            assert meanwhile == [url]
            assert await clients[1].hlen(q) == 0, "a URL done meanwhile queued again"
            assert int(await clients[1].get(b.keys.pending) or 0) == 0
            assert (await b.seen.contains_many([int(fp)])) == [True]
            assert await a.add([Candidate(url)]) == []   # and seen from now on
        finally:
            await _close_all(clients, dirs)

    asyncio.run(go())


def test_the_set_of_urls_done_recently_is_bounded(redis_cluster, monkeypatch):
    """On a cluster a host's URLs done are kept for the horizon only (trimmed by the script that
    writes the next ones, the key expiring with the horizon) and at most DONE_MAX of them."""
    import skitter.distributed.frontier as frontier_module
    from skitter.urls import fingerprint

    monkeypatch.setattr(frontier_module, "DONE_MAX", 4)

    async def go():
        (a,), clients, dirs = await _cluster_workers(redis_cluster.url, "done-bound", ("wa",), done_horizon=1.0)
        try:
            host = "bounded.test"
            done = a.keys.host(host, "done")

            async def fetch(tag: str, n: int = 1) -> None:
                assert len(await a.add([Candidate(f"http://{host}/{tag}{i}") for i in range(n)])) == n
                for _ in range(n):
                    cand = await asyncio.wait_for(a.next_ready(), 5)
                    await a.done(cand, Outcome(response_time=0.0))

            await fetch("a", 6)
            assert await clients[0].zcard(done) == 4              # DONE_MAX (the oldest dropped)
            assert 0 < await clients[0].pttl(done) <= 1000        # the horizon
            await asyncio.sleep(1.1)
            assert await clients[0].exists(done) == 0             # expired with the horizon
            await fetch("b", 2)
            await asyncio.sleep(0.6)
            await fetch("c")
            assert await clients[0].zcard(done) == 3
            await asyncio.sleep(0.6)                              # b's over the horizon, c's not
            await fetch("d")
            assert set(await clients[0].zrange(done, 0, -1)) == {
                str(fingerprint(f"http://{host}/{t}0")).encode() for t in "cd"}
        finally:
            await _close_all(clients, dirs)

    asyncio.run(go())


def test_a_single_redis_keeps_no_set_of_urls_done(redis_server):
    """On a single Redis the seen test and the records are one script: no set of URLs done."""
    async def go():
        a = Worker(redis_server.url, "wa", "single-done")
        try:
            await a.f.add([Candidate("http://single.test/1")])
            cand = await asyncio.wait_for(a.f.next_ready(), 5)
            await a.f.done(cand, Outcome(response_time=0.0))
            assert await a.client.hlen(a.f.keys.host("single.test", "q")) == 0
            assert await a.client.exists(a.f.keys.host("single.test", "done")) == 0
        finally:
            await a.close()

    asyncio.run(go())


@pytest.mark.parametrize("where", ["single", "cluster"])
def test_a_url_decided_without_a_request_is_seen_once_its_record_is_committed(request, where):
    """A URL robots.txt disallows is recorded by the worker's store, never fetched (``add(...,
    decided=True)``): it goes into the crawl's seen set only once the store has committed its record
    (:meth:`committed`). A worker killed in between loses the record with its uncommitted batch,
    and the URL stays new for the worker that finds it again (from its parent, fetched again),
    instead of being seen in Redis and recorded nowhere."""
    from skitter.distributed.redis_url import connect
    from skitter.urls import fingerprint

    server = request.getfixturevalue("redis_server" if where == "single" else "redis_cluster")
    crawl = f"decided-{where}"
    url = "http://robots.test/cart?add=1"

    def found() -> list[Candidate]:
        return [Candidate(url, depth=1, parent="http://robots.test/item?id=1")]

    async def go():
        dirs, frontiers, clients = [], [], []
        try:
            for name in ("wa", "wb", "wc"):   # with a store: immediate=False, as a worker runs
                d = Path(tempfile.mkdtemp(prefix="skitter-rf-"))
                client = await connect(server.url)
                db = CrawlDB(d)
                dirs.append((d, db))
                clients.append(client)
                frontiers.append(RedisFrontier(client, crawl, db, Politeness(delay=0.0), worker=name))
            a, b, c = frontiers
            assert [x.url for x in await a.add(found(), decided=True)] == [url]
            assert await a.add(found(), decided=True) == []          # once per worker
            assert await a.seen.contains_many([fingerprint(url)]) == [False]
            # a is killed here (no commit, no committed()): b finds the URL again and records it
            assert [x.url for x in await b.add(found(), decided=True)] == [url]
            await b.committed()                                      # b's store committed its record
            assert await b.seen.contains_many([fingerprint(url)]) == [True]
            assert await c.add(found(), decided=True) == []          # from now on: seen
            assert await c.add(found()) == []                        # (a URL to fetch, too)
            assert int(await clients[2].get(c.keys.pending) or 0) == 0
        finally:
            await _close_all(clients, dirs)

    asyncio.run(go())


def test_a_worker_whose_lease_renewals_are_stale_hands_out_nothing_until_one(redis_server):
    """A worker paused (SIGSTOP, a VM or GC stall: its event loop frozen) for longer than most of a
    lease's time to live may have lost its hosts to another worker meanwhile: on resuming, it
    hands out no URL until a lease renewal has said which hosts are still its. A host taken over
    is dropped without one request; a host still held is crawled on after the renewal."""
    import threading
    import time

    ttl = 1.0

    def pause(seconds: float, meanwhile=None) -> float:
        """Freeze this worker's event loop (every task of it) for ``seconds``; ``meanwhile`` runs
        in another thread (another worker, its own loop) during the pause. Returns when it ended."""
        time.sleep(seconds)
        if meanwhile is not None:
            t = threading.Thread(target=asyncio.run, args=(meanwhile(),))
            t.start()
            t.join(30)
        return time.monotonic()

    async def take_over(host: str) -> None:
        b = Worker(redis_server.url, "wb", "stale", lease_ttl=5.0)
        try:
            await b.f._acquire([host])
            assert host in b.f.local.held
        finally:
            await b.close()

    async def go():
        a = Worker(redis_server.url, "wa", "stale", heartbeat=0.05, member_ttl=5.0, lease_ttl=ttl)
        try:
            await a.f.add([Candidate("http://taken.test/1"), Candidate("http://kept.test/1")])
            assert a.f.local.held == {"taken.test", "kept.test"}
            a.f.start()
            await asyncio.sleep(0.2)                  # heartbeats and renewals as usual
            # paused past the leases' time to live; meanwhile b leases taken.test
            resumed = pause(ttl + 0.2, lambda: take_over("taken.test"))
            got = await asyncio.wait_for(a.f.next_ready(), 5)
            assert got.url == "http://kept.test/1"   # never taken.test's URL: b holds that host
            assert a.f._renew_sent >= resumed, "a URL handed out before a renewal"
            # kept.test's lease lapsed in the pause with no one taking the host: the renewal took it
            # back (_RENEW); taken.test is released (a script call after that renewal)
            for _ in range(40):
                if "taken.test" not in a.f.local.held:
                    break
                await asyncio.sleep(0.05)
            assert a.f.local.held == {"kept.test"}
            with pytest.raises(TimeoutError):         # nothing else is a's
                await asyncio.wait_for(a.f.next_ready(), 0.5)
        finally:
            a.f.stop()
            await a.f.aclose()
            await a.close()

    asyncio.run(go())


def test_a_worker_with_stale_leases_still_sees_the_budget_spent(redis_server):
    """While its leases are stale (no renewal for most of their time to live) a worker hands out
    nothing, but it still sees the ends of the crawl: the cluster's --max-pages spent, it stops at
    once instead of waiting for a renewal that may never come (a worker left alone after the
    others ended once waited there for good). The watchdog's report says what it waits for."""
    import time

    def freeze(seconds: float) -> None:
        """Block this worker's event loop (every task of it) for ``seconds``."""
        time.sleep(seconds)

    async def go():
        a = Worker(redis_server.url, "wa", "spent", heartbeat=0.05, member_ttl=5.0, lease_ttl=1.0, budget=1)
        try:
            await a.f.add([Candidate("http://x.test/1"), Candidate("http://x.test/2")])
            assert a.f.local.held == {"x.test"}
            a.f.start()
            await asyncio.sleep(0.2)
            await a.client.set(a.f.keys.budget, 1)     # another worker reserved the last page
            for _ in range(100):                        # a's heartbeats read it (every 0.05 s;
                if a.f.budget_used == 1:                # up to 5 s on a loaded machine)
                    break
                await asyncio.sleep(0.05)
            assert a.f.budget_used == 1
            freeze(1.0)                                 # a's event loop frozen past 0.8 of the lease time
            frozen_until = time.monotonic()
            assert "not renewed" in (a.f.waiting_for() or "")
            assert await asyncio.wait_for(a.f.next_ready(), 5) is None
            assert a.f._renew_sent < frozen_until, "it waited for a renewal"
            assert a.f.budget_spent
        finally:
            a.f.stop()
            await a.f.aclose()
            await a.close()

    asyncio.run(go())


@pytest.mark.parametrize("fault", ["reply lost", "reply lost, a record changed", "cluster down"])
def test_an_admission_on_a_cluster_outlives_a_node_that_stops_answering(redis_cluster, fault):
    """A hold-out test stopped one node of a Redis Cluster for 8 s (SIGSTOP), and killed and
    restarted one: workers died with "TimeoutError: Timeout reading from ..." in the admission's
    step that writes the records (not tried again once sent, as a second run finds its own
    records there), or with "ClusterDownError: The cluster is down", which was no "Redis away".
    Now the step is tried again: a record found there that is this worker's own (the same record,
    sequence number and all) was written by the lost try; and CLUSTERDOWN is waited out."""
    from redis import exceptions as rex

    from skitter.distributed.frontier import _QUEUE_NX
    from skitter.urls import fingerprint

    async def go():
        crawl = "node-" + "".join(ch for ch in fault if ch.isalpha())
        (a, b), clients, dirs = await _cluster_workers(redis_cluster.url, crawl, ("wa", "wb"))
        try:
            host = owned_by(Ring(["wa", "wb"]), "wa")[0]
            urls = [f"http://{host}/{i}" for i in range(6)]
            real = a._pipeline
            faults = []

            async def pipeline(calls, extra=()):
                if any(c[0] is _QUEUE_NX for c in calls) and not faults:
                    faults.append(fault)
                    if fault.startswith("reply lost"):   # it ran; its reply never came
                        await real(calls, extra)
                        if fault.endswith("changed"):   # e.g. another worker raised its priority since
                            key = a.keys.host(host, "q")
                            fp = str(fingerprint(urls[0]))
                            rec = json.loads(await clients[0].hget(key, fp))
                            rec[3] += 1.0
                            await clients[0].hset(key, fp, json.dumps(rec, separators=(",", ":")))
                        raise rex.TimeoutError("Timeout reading from 127.0.0.1:1")
                    raise rex.ClusterDownError("The cluster is down")   # it did not run
                return await real(calls, extra)
            a._pipeline = pipeline
            new = await a.add([Candidate(u) for u in urls])
            assert faults == [fault]
            # the count of URLs pending is never below the records queued (too low ends the crawl early)
            assert int(await clients[0].get(a.keys.pending)) >= len(urls)
            if fault.endswith("changed"):   # not recognised as its own: queued all the same, not seen
                assert sorted(c.url for c in new) == sorted(urls[1:])
            else:
                assert sorted(c.url for c in new) == sorted(urls)      # all its own, each once
            if not fault.endswith("changed"):
                assert await b.add([Candidate(u) for u in urls]) == []  # seen in the cluster
            q = await clients[0].hgetall(a.keys.host(host, "q"))
            assert sorted(q) == sorted(str(fingerprint(u)).encode() for u in urls)
            if fault.endswith("changed"):
                await a._scan()   # its own host's queue, loaded (as the owner's heartbeat does)
            got = set()
            for _ in urls:
                cand = await asyncio.wait_for(a.next_ready(), 5)
                got.add(cand.url)
                await a.done(cand, Outcome(response_time=0.0))
            assert got == set(urls)
        finally:
            await _close_all(clients, dirs)

    asyncio.run(go())
