"""The frontier's memory stays bounded on broad crawls: a global cap over all host windows."""

import asyncio

from skitter.frontier.local import LocalFrontier
from skitter.frontier.politeness import Politeness
from skitter.models import Candidate, Outcome
from skitter.store.db import CrawlDB


def test_memory_cap_over_many_hosts(tmp_path):
    db = CrawlDB(tmp_path)
    f = LocalFrontier(db, Politeness(delay=0.0, per_host=1, adaptive=0.0), window=32, memory_cap=50)
    hosts = 10
    urls = [f"http://h{h}.example/p{i}" for h in range(hosts) for i in range(100)]
    assert len(f.admit(Candidate(url=u, depth=1, priority=-1.0) for u in urls)) == len(urls)
    in_memory = sum(len(h.window) for h in f.hosts.values())
    assert in_memory <= 50 + hosts  # a ready host holds at least its best URL
    on_disk = db.conn.execute("SELECT count(*) FROM urls WHERE state = 0").fetchone()[0]
    assert on_disk == len(urls) - in_memory

    async def drain():
        out = []
        while (c := await f.next_ready()) is not None:
            out.append(c.url)
            f.finish(c, Outcome(response_time=0.0))
            # a ready host holds at least its best URL; beyond that the cap holds
            assert sum(len(h.window) for h in f.hosts.values()) <= 50 + hosts
        return out

    got = asyncio.run(drain())
    assert sorted(got) == sorted(urls)
