"""The Redis frontier's membership layer on a real redis-server: hand-off to a host's owner, host
leases with fencing tokens, and global termination across two workers (the single-worker
contract is tests/contract/)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from redis.asyncio import Redis

from skitter.distributed.frontier import RedisFrontier
from skitter.distributed.ring import Ring
from skitter.frontier.politeness import Politeness
from skitter.models import Candidate, Outcome
from skitter.store.db import CrawlDB


class Worker:
    def __init__(self, url: str, name: str, crawl: str, **timing) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="skitter-rf-"))
        self.db = CrawlDB(self.dir)
        self.client = Redis.from_url(url)
        self.f = RedisFrontier(self.client, crawl, self.db, Politeness(delay=0.0), worker=name, immediate=True,
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
                got_c = await asyncio.wait_for(c.f.next_ready(), 5)
                await c.f.done(got_c, Outcome(response_time=0.0))
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
